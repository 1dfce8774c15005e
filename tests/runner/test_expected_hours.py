"""A run's expected hours and their source: the committed GPU measurement of its recipe on that device class, scaled
to its iterations (the benchmark's own projection is the oracle), else the paper's published training time, else
unknown, said so."""

import json

import pytest

from dml_core.output_paths import RECIPES_DIR
from dml_core.recipes.catalog import load_paper
from dml_core.runner.expected_hours import BENCHMARKS_DIR, expected_hours, measured_speed


def _recipe(key: str, run_id: str):
    (run,) = [run for run in load_paper(key, RECIPES_DIR).runs if run.id == run_id]
    return run.recipe({})


@pytest.fixture(scope="module")
def h200_benchmark():
    """The committed training benchmark of one H200 and its damlrrm figures."""
    report = json.loads((BENCHMARKS_DIR / "training-cuda.json").read_text())
    return report["device"], report["papers"]["damlrrm"]


def test_the_committed_measurement_on_its_device_class_scaled_to_the_recipe(h200_benchmark):
    device, measured = h200_benchmark
    recipe = _recipe("damlrrm", measured["recipe"])
    speed = measured_speed("damlrrm", recipe, device)
    assert speed.pipeline == "cache"  # "auto" on CUDA with random crops: the cache gives the PIL batches
    figures = measured["pipelines"]["cache"]
    assert speed.iterations_per_second == figures["end_to_end_iterations_per_second"]
    expected = expected_hours("damlrrm", recipe, device)
    assert expected.hours == pytest.approx(figures["projected_hours_for_recipe"], rel=1e-9)  # the benchmark's own
    assert expected.source.startswith(f"measured: 12.3 it/s end to end on {device}, cache pipeline")
    assert expected.source.endswith("(tables/benchmarks/training-cuda.json) x 40,000 iterations")
    rehearsal = expected_hours("damlrrm", recipe, device, steps=1000)
    assert rehearsal.hours == pytest.approx(expected.hours / 40) and "x 1,000 iterations" in rehearsal.source


def test_another_device_class_falls_back_to_the_published_time_then_to_unknown():
    recipe = _recipe("damlrrm", "ours-cub200")
    other = expected_hours("damlrrm", recipe, "NVIDIA A100-SXM4-80GB")
    assert other.hours == 13.2  # damlrrm's Table 8
    assert other.source == (
        "the paper's published training time, table8, on its authors' GPU; none measured on NVIDIA A100-SXM4-80GB"
    )
    assert expected_hours("damlrrm", recipe, None, steps=400).hours == pytest.approx(13.2 / 100)  # scaled
    unknown = expected_hours("damlrrm", _recipe("damlrrm", "ours-cars196"), "NVIDIA H200")
    assert unknown.hours is None and unknown.duration() == "unknown"
    assert unknown.source == "no measurement of ours-cars196 on NVIDIA H200 and no published training time"
