"""What sets a run's time, read from its recipe alone: its training shape on each device, its steps and evaluations
as the trainer counts them (an epoch of a random sampler by hand), and the backbone's FLOPs against torchvision's
published count."""

import pytest

from dml_core.output_paths import RECIPES_DIR
from dml_core.recipes.catalog import load_paper
from dml_core.runner.training_shape import RunLength, TrainingShape, run_length, training_shape


def _recipe(key: str, run_id: str, **training):
    (run,) = [run for run in load_paper(key, RECIPES_DIR).runs if run.id == run_id]
    recipe = run.recipe({})
    return recipe.model_copy(update={"training": recipe.training.model_copy(update=training)})


def test_the_shape_is_the_step_the_device_runs():
    ours = _recipe("damlrrm", "ours-cub200")
    on_gpu = training_shape(ours, "cuda")
    assert on_gpu == TrainingShape("googlenet", 1.0, "linear", 120, 227, "fp32", "cache", "damlrrm")  # 2 x 12 x 5
    assert TrainingShape.from_record(on_gpu.record()) == on_gpu
    assert training_shape(_recipe("damlrrm", "ours-cub200", precision="bf16"), "cuda").precision == "bf16"
    on_cpu = training_shape(_recipe("damlrrm", "ours-cub200", precision="bf16"), "cpu")
    assert (on_cpu.precision, on_cpu.pipeline) == ("fp32", "pil")  # the CPU: fp32, decoded in loader workers
    assert training_shape(_recipe("anml", "danml-cub200"), "cuda").pipeline == "pil"  # random resized crops
    assert TrainingShape.from_record({"backbone": "googlenet"}) is None  # a shape not all recorded serves nothing


def test_the_steps_and_evaluations_are_the_trainer_s():
    assert run_length(_recipe("damlrrm", "ours-cub200")) == RunLength(40_000, 40, 5_924)  # every 1,000 and the end
    assert run_length(_recipe("damlrrm", "ours-cub200"), max_steps=1) == RunLength(1, 1, 5_924)  # a rehearsal
    # drml's ael-pa-cub200: random batches of 80 over CUB's 5,864 training images, the last topped up: 74 a
    # epoch; 60 epochs, evaluated every 2 epochs
    ael = run_length(_recipe("drml", "ael-pa-cub200"))
    assert ael == RunLength(60 * 74, 30, 5_924, epochs=60)
    assert ael.text() == "4,440 iterations (60 epochs, estimated from the split's counts)"
    at_start = run_length(_recipe("damlrrm", "ours-cub200", eval_every=3000, evaluate_at_start=True))
    assert at_start.evaluations == 13 + 1 + 1  # 13 x 3,000, the end (40,000), and before the first step


def test_the_backbone_s_flops_are_torchvision_s():
    # torchvision's GoogLeNet_Weights.IMAGENET1K_V1 says 1.5 GFLOPS (multiply-adds) at 224 px; a multiply-add
    # counts two here, so a step of 10 images at 224 px does 10 x 2 x 1.5 G
    shape = TrainingShape("googlenet", 1.0, "linear", 10, 224, "fp32", "pil", "npair")
    assert shape.flops_per_step() == pytest.approx(10 * 2 * 1.5e9, rel=0.03)
    assert TrainingShape("googlenet", 1.0, "linear", 20, 224, "fp32", "pil", "npair").flops_per_step() == (
        2 * shape.flops_per_step()
    )
