import numpy as np
import pytest
import torch
from PIL import Image
from torch.utils.data import DataLoader

from dml_core.data.images import ImageDataset, load_image
from dml_core.data.index import SplitIndex
from dml_core.data.samplers import PKSampler
from dml_core.data.transforms import build_transform
from dml_core.errors import InputError
from dml_core.input_spec import CAFFE_BGR
from dml_core.recipes.settings import TransformSettings
from tests.data.layouts import write_jpeg


def test_greyscale_and_palette_images_become_rgb(tmp_path):
    Image.new("L", (5, 4), 77).save(tmp_path / "grey.png")
    Image.new("P", (5, 4), 3).save(tmp_path / "palette.png")
    for name in ("grey.png", "palette.png"):
        assert load_image(tmp_path / name).mode == "RGB"
    assert load_image(tmp_path / "grey.png").getpixel((0, 0)) == (77, 77, 77)


def test_an_rgb_jpeg_comes_back_decoded_as_converting_would_give_it_and_usable_after_its_file_is_closed(tmp_path):
    rng = np.random.default_rng(0)
    Image.fromarray(rng.integers(0, 256, (37, 53, 3), dtype=np.uint8)).save(tmp_path / "photo.jpg", quality=90)
    cmyk = Image.frombytes("CMYK", (53, 37), rng.integers(0, 256, 37 * 53 * 4, dtype=np.uint8).tobytes())
    cmyk.save(tmp_path / "cmyk.jpg")  # a CMYK JPEG: converted, as before
    for name in ("photo.jpg", "cmyk.jpg"):
        loaded = load_image(tmp_path / name)
        with Image.open(tmp_path / name) as image:
            converted = np.asarray(image.convert("RGB"))
        assert loaded.mode == "RGB" and np.array_equal(np.asarray(loaded), converted), name
        assert build_transform(CAFFE_BGR, TransformSettings(resize=40, crop_size=32), train=False)(loaded).shape == (
            3, 32, 32,
        )  # fmt: skip


def test_corrupt_and_truncated_files_are_named(tmp_path):
    (tmp_path / "junk.jpg").write_bytes(b"not an image at all")
    write_jpeg(tmp_path / "whole.jpg", 0, size=(64, 64))
    data = (tmp_path / "whole.jpg").read_bytes()
    (tmp_path / "cut.jpg").write_bytes(data[: len(data) // 2])
    for name in ("junk.jpg", "cut.jpg"):
        with pytest.raises(InputError, match=rf"{name}: cannot decode image"):
            load_image(tmp_path / name)
    with pytest.raises(InputError, match=r"absent.jpg: image not found"):
        load_image(tmp_path / "absent.jpg")


def test_dataset_items_and_a_dataloader_with_a_batch_sampler(tmp_path):
    paths = []
    for i in range(8):
        write_jpeg(tmp_path / f"{i}.jpg", i, size=(40, 30))
        paths.append(f"{i}.jpg")
    split = SplitIndex("tiny", "train", tmp_path, tuple(paths), np.array([5, 5, 6, 6, 7, 7, 8, 8]))
    transform = build_transform(
        CAFFE_BGR, TransformSettings(resize=32, crop_size=24, train_crop="random_crop"), train=True
    )
    dataset = ImageDataset(split, transform)
    image, label, index = dataset[3]
    assert image.shape == (3, 24, 24) and (label, index) == (6, 3)
    loader = DataLoader(dataset, batch_sampler=PKSampler(split.labels, 2, 2, seed=0))
    images, labels, indices = next(iter(loader))
    assert images.shape == (4, 3, 24, 24)
    assert torch.equal(labels, torch.as_tensor(split.labels)[indices])
