"""The plan's timing of a training shape here: the code a GPU runs before the first run, run on the CPU on a tiny
shape; a fake clock fixes its seconds, so the hours it extrapolates are checked by hand."""

import math

import pytest
import torch

from dml_core.recipes.settings import Recipe
from dml_core.runner import calibration
from dml_core.runner.calibration import Calibration, calibrate, calibrate_shapes
from dml_core.runner.expected_hours import MEASURED_HERE, measured_here
from dml_core.runner.training_shape import run_length, training_shape
from tests.training.tiny_runs import tiny_run

CPU = torch.device("cpu")


def _tiny(**sections) -> Recipe:
    return Recipe.model_validate(tiny_run(**{"training": {"eval_batch_size": 16}, **sections}))


class FakeClock:
    """A clock read before and after each timed block: the steps' block, then the evaluation batches' block."""

    def __init__(self, *readings: float) -> None:
        self.readings = list(readings)

    def now(self) -> float:
        return self.readings.pop(0)


@pytest.fixture
def few_steps(monkeypatch):
    monkeypatch.setitem(calibration.STEPS, "cpu", (0, 2))
    monkeypatch.setitem(calibration.EVALUATION_BATCHES, "cpu", (0, 1))


@pytest.mark.usefixtures("few_steps")
def test_the_hours_are_the_steps_and_the_evaluations_at_the_timed_pace():
    timed = calibrate(_tiny(), CPU, "the CPU", FakeClock(100.0, 103.0, 200.0, 200.5))
    assert timed == Calibration(seconds_per_step=1.5, seconds_per_evaluated_image=0.03125, steps=2, device="the CPU")
    recipe = _tiny(training={"iterations": 4000, "eval_every": 1000})
    length = run_length(recipe)  # 4 evaluations of the embedded set's test split
    expected = measured_here(length, timed)
    images = length.evaluated_images
    assert expected.hours == pytest.approx((4000 * 1.5 + 4 * images * 0.03125) / 3600)
    assert expected.basis == MEASURED_HERE
    assert expected.source() == (
        f"measured here: 0.7 it/s x 4,000 iterations + 4 evaluations of {images:,} images at 32 images/s"
    )


@pytest.mark.usefixtures("few_steps")
def test_each_distinct_shape_is_timed_once_on_the_cpu_as_a_gpu_would_time_it():
    recipes = [
        _tiny(),
        _tiny(optimizer={"lr": 0.5}),
        _tiny(sampler={"params": {"classes_per_batch": 2, "images_per_class": 2}}),
    ]
    timed, failed = calibrate_shapes(recipes, CPU, "the CPU")
    assert failed == {}
    assert list(timed) == [training_shape(recipes[0], "cpu"), training_shape(recipes[2], "cpu")]  # 8, then 4 images
    for figures in timed.values():
        assert figures.steps == 2 and figures.device == "the CPU"
        assert 0 < figures.seconds_per_step < math.inf and 0 < figures.seconds_per_evaluated_image < math.inf


def test_a_shape_that_cannot_be_timed_is_said_and_the_others_are_timed(few_steps, monkeypatch):
    real = calibration.calibrate

    def out_of_memory(recipe, *args):
        if recipe.sampler.params["classes_per_batch"] == 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(recipe, *args)

    monkeypatch.setattr(calibration, "calibrate", out_of_memory)
    small = _tiny(sampler={"params": {"classes_per_batch": 2, "images_per_class": 2}})
    timed, failed = calibrate_shapes([_tiny(), small], CPU, "the CPU")
    assert list(timed) == [training_shape(_tiny(), "cpu")]
    assert failed == {training_shape(small, "cpu"): "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"}
