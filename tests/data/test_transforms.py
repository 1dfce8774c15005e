import re

import numpy as np
import pytest
import torch
from PIL import Image
from pydantic import ValidationError
from torchvision.transforms import v2

from dml_core.data.images import load_image
from dml_core.data.transforms import ToInputSpec, ToModelInput, build_pixel_transform, build_transform
from dml_core.input_spec import CAFFE_BGR, IMAGENET_RGB
from dml_core.models.backbones import BACKBONES
from dml_core.recipes.settings import DataSettings, TransformSettings
from tests.benchmarks.loss_ops import MAIN_RECIPES, main_recipe
from tests.data.layouts import write_photo_jpeg


def _solid(rgb, size=(300, 260)):
    return Image.new("RGB", size, rgb)


def test_caffe_bgr_is_bgr_0_255_minus_mean():
    out = build_transform(CAFFE_BGR, TransformSettings(), train=False)(_solid((200, 100, 50)))
    assert out.shape == (3, 224, 224) and out.dtype == torch.float32
    # x/255*255 in float32 is within an ulp of x
    torch.testing.assert_close(out[:, 0, 0], torch.tensor([50.0 - 104.0, 100.0 - 117.0, 200.0 - 128.0]))
    assert torch.equal(out.amin(dim=(1, 2)), out.amax(dim=(1, 2)))  # a solid image stays solid


def test_imagenet_rgb_is_0_1_standardised():
    out = build_transform(IMAGENET_RGB, TransformSettings(), train=False)(_solid((200, 100, 50)))
    expected = (torch.tensor([200.0, 100.0, 50.0]) / 255 - torch.tensor(IMAGENET_RGB.mean)) / torch.tensor(
        IMAGENET_RGB.std
    )
    torch.testing.assert_close(out[:, 5, 7], expected)


def _top_band_image():
    """40 wide, 80 tall: red top quarter, blue below."""
    pixels = np.zeros((80, 40, 3), dtype=np.uint8)
    pixels[:20, :, 0] = 255
    pixels[20:, :, 2] = 255
    return Image.fromarray(pixels)


def test_squash_keeps_the_whole_frame_shorter_side_crops_the_middle():
    config = dict(resize=32, crop_size=32)
    squash = build_transform(IMAGENET_RGB, TransformSettings(resize_mode="squash", **config), train=False)
    shorter = build_transform(IMAGENET_RGB, TransformSettings(resize_mode="shorter_side", **config), train=False)
    red = (1.0 - 0.485) / 0.229
    assert squash(_top_band_image())[0, 2, 16] == pytest.approx(red, abs=1e-4)  # top quarter still there
    assert shorter(_top_band_image())[0].max() < 0  # shorter side 32 -> 32x64, centre crop drops the band


def test_train_random_crop_is_random_and_seeded():
    transform = build_transform(
        CAFFE_BGR, TransformSettings(resize=64, crop_size=48, train_crop="random_crop"), train=True
    )
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (70, 90, 3), dtype=np.uint8))
    torch.manual_seed(1)
    first = transform(image)
    torch.manual_seed(1)
    assert torch.equal(first, transform(image))
    assert first.shape == (3, 48, 48)
    assert any(not torch.equal(first, transform(image)) for _ in range(5))


def test_random_resized_crop_uses_the_scale_range_and_skips_the_resize():
    config = TransformSettings(train_crop="random_resized_crop", rrc_scale=(0.3, 0.9))
    transform = build_transform(IMAGENET_RGB, config, train=True)
    crops = [step for step in transform.transforms if isinstance(step, v2.RandomResizedCrop)]
    assert len(crops) == 1 and crops[0].scale == (0.3, 0.9) and tuple(crops[0].size) == (224, 224)
    assert not any(isinstance(step, v2.Resize) for step in transform.transforms)
    assert transform(_solid((1, 2, 3), (500, 333))).shape == (3, 224, 224)


def test_hflip_switch():
    pixels = np.zeros((32, 32, 3), dtype=np.uint8)
    pixels[:, :16, 0] = 255  # left half red
    image = Image.fromarray(pixels)
    config = dict(resize=32, crop_size=32, resize_mode="squash", train_crop="random_crop")
    flipping = build_transform(CAFFE_BGR, TransformSettings(hflip=True, **config), train=True)
    fixed = build_transform(CAFFE_BGR, TransformSettings(hflip=False, **config), train=True)
    torch.manual_seed(0)
    left_red = {bool(flipping(image)[2, 0, 0] > 0) for _ in range(20)}  # channel 2 of BGR is red
    assert left_red == {True, False}
    assert {bool(fixed(image)[2, 0, 0] > 0) for _ in range(10)} == {True}


def test_eval_is_deterministic_and_crop_defaults_to_the_input_spec():
    spec = IMAGENET_RGB.__class__("RGB", 1.0, (0.5, 0.5, 0.5), (0.5, 0.5, 0.5), input_size=227)
    image = Image.fromarray(np.random.default_rng(1).integers(0, 256, (300, 260, 3), dtype=np.uint8))
    transform = build_transform(spec, TransformSettings(), train=False)
    assert torch.equal(transform(image), transform(image))
    assert transform(image).shape == (3, 227, 227)


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"resize_mode": "stretch"}, "resize_mode"),
        ({"train_crop": "five_crop"}, "train_crop"),
        ({"resize": 200, "crop_size": 224}, "crop_size: expected at most resize (200), found 224"),
    ],
)
def test_bad_settings_are_refused_naming_the_field(fields, named):
    with pytest.raises(ValidationError, match=re.escape(named)):
        TransformSettings(**fields)


def test_the_pipeline_takes_the_recipes_transforms_as_they_are():
    """One type: the recipe's ``data.transforms`` goes to the pipeline uncopied, its defaults the recipe's."""
    settings = DataSettings(dataset="cub200", transforms={"crop_size": 64, "resize": 72}).transforms
    assert type(settings) is TransformSettings and settings.train_crop == "random_resized_crop"
    transform = build_transform(IMAGENET_RGB, settings, train=True)
    assert any(isinstance(step, v2.RandomResizedCrop) for step in transform.transforms)
    assert transform(_solid((1, 2, 3))).shape == (3, 64, 64)


def _per_image_float_reference(spec, config: TransformSettings, train: bool) -> v2.Compose:
    """The transform as the PIL path ran it before the float steps moved out of the loader's workers: the same
    geometric steps, then torchvision's ``ToDtype`` on the image and ``ToInputSpec``, image by image."""
    geometry = build_pixel_transform(spec, config, train).transforms
    assert isinstance(geometry[-1], v2.ToPureTensor)  # left out: the float steps took torchvision's image type
    return v2.Compose([*geometry[:-1], v2.ToDtype(torch.float32, scale=True), ToInputSpec(spec)])


@pytest.mark.parametrize("paper", list(MAIN_RECIPES))
@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
def test_uint8_images_converted_in_batch_are_bitwise_the_per_image_float_transform(paper, train, tmp_path):
    # The loaders' workers give uint8 crops and the batch is converted where it trains (ToModelInput): the model
    # must see bitwise what the per-image float transform gave, at each paper's main settings.
    recipe = main_recipe(paper, "paper")
    config, spec = recipe.data.transforms, BACKBONES.lookup(recipe.model.backbone).input_spec
    sizes = [(500, 375), (375, 500), (640, 427), (300, 300)]
    images = [load_image(write_photo_jpeg(tmp_path / f"{seed}.jpg", seed, size)) for seed, size in enumerate(sizes)]
    pixels, reference = build_pixel_transform(spec, config, train), _per_image_float_reference(spec, config, train)
    expected, crops = [], []
    for seed, image in enumerate(images):  # each image's random draws under its own seed, on both paths
        torch.manual_seed(seed)
        expected.append(reference(image))
        torch.manual_seed(seed)
        crops.append(pixels(image))
    assert all(crop.dtype == torch.uint8 and type(crop) is torch.Tensor for crop in crops)
    batch = ToModelInput(spec)(torch.stack(crops))
    assert batch.dtype == torch.float32 and torch.equal(batch, torch.stack(expected))
    torch.manual_seed(0)
    assert torch.equal(build_transform(spec, config, train)(images[0]), expected[0])  # the image-by-image form too
