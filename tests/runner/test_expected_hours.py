"""A run's expected hours and their basis: a committed measurement serves a run of its own training shape and GPU
class as it is (the benchmark's own projection is the oracle), any other run only through the cost model, whose
scaling is said (a bf16 measurement is never an fp32 run's time unscaled); then the paper's published time (a GPU
run at full scale only), else unknown with the reason."""

import json

import pytest

from dml_core.output_paths import RECIPES_DIR
from dml_core.recipes.catalog import load_paper
from dml_core.runner.expected_hours import (
    BENCHMARKS_DIR,
    COMMITTED,
    COST_MODEL,
    FP32_OVER_BF16,
    PUBLISHED,
    UNKNOWN,
    HoursSetting,
    committed_measurements,
    expected_hours,
    other_device,
)

H200 = HoursSetting("cuda", "NVIDIA H200")


def _recipe(key: str, run_id: str):
    (run,) = [run for run in load_paper(key, RECIPES_DIR).runs if run.id == run_id]
    return run.recipe({})


def _in_bf16(recipe):
    return recipe.model_copy(update={"training": recipe.training.model_copy(update={"precision": "bf16"})})


@pytest.fixture(scope="module")
def h200_damlrrm():
    """The committed training benchmark of one H200: damlrrm ours-cub200's figures on the cache pipeline."""
    report = json.loads((BENCHMARKS_DIR / "training-cuda.json").read_text())
    return report["papers"]["damlrrm"]["pipelines"]["cache"]


def test_the_committed_bf16_measurement_serves_a_bf16_run_of_its_shape_as_it_is(h200_damlrrm):
    recipe = _in_bf16(_recipe("damlrrm", "ours-cub200"))  # the shape it was measured in: batch 120, crop 227, bf16
    expected = expected_hours("damlrrm", recipe, H200)
    assert expected.basis == COMMITTED
    assert expected.hours == pytest.approx(h200_damlrrm["projected_hours_for_recipe"], rel=1e-9)  # the benchmark's
    assert expected.source("[1]") == "measured [1]: 12.3 it/s x 40,000 iterations"
    assert expected.duration() == "54 min of training"
    assert expected.reference.file == "tables/benchmarks/training-cuda.json"
    rehearsal = expected_hours("damlrrm", recipe, HoursSetting("cuda", "NVIDIA H200", max_steps=1000))
    assert rehearsal.hours == pytest.approx(expected.hours / 40)
    a100 = "NVIDIA A100-SXM4-80GB"  # another GPU class: the same figure, through the cost model, said so
    other = expected_hours("damlrrm", recipe, HoursSetting("cuda", a100))
    assert (other.basis, other.hours) == (COST_MODEL, expected.hours)
    assert other.detail == "the same shape; 12.3 it/s x 40,000 iterations"
    assert other_device(other.reference, a100) == f"its hours are an NVIDIA H200's, not this {a100}'s"


def test_a_bf16_measurement_is_never_an_fp32_run_s_time_unscaled(h200_damlrrm):
    recipe = _recipe("damlrrm", "ours-cub200")  # fp32: the default precision
    assert recipe.training.precision == "fp32"
    expected = expected_hours("damlrrm", recipe, H200)
    assert expected.basis == COST_MODEL
    measured = h200_damlrrm["end_to_end_iterations_per_second"]
    assert expected.hours == pytest.approx(40_000 * FP32_OVER_BF16 / measured / 3600)  # 1.8 h, not 0.91 h
    assert expected.source("[1]") == (
        "cost model from [1]: fp32 against bf16 x2.00, assumed; 6.1 it/s x 40,000 iterations"
    )


def test_the_cost_model_scales_by_flops_a_step_and_says_what_it_did_not_scale(h200_damlrrm):
    measured = h200_damlrrm["end_to_end_iterations_per_second"]
    half = expected_hours("damlrrm", _recipe("damlrrm", "ours2-cub200"), H200)  # one stream: 12 x 5 = 60 images
    assert half.hours == pytest.approx(40_000 * 0.5 * FP32_OVER_BF16 / measured / 3600)  # same backbone and crop
    assert half.detail.startswith("x1.00 = backbone FLOPs x images a step x0.50 and fp32 against bf16 x2.00, assumed;")
    lifted = expected_hours("damlrrm", _recipe("damlrrm", "lifted-cub200"), H200)  # 60 x 2 = 120 images, other loss
    assert "not scaled: loss lifted against damlrrm;" in lifted.detail
    resnet = expected_hours("drml", _recipe("drml", "margin-dw-cub200"), H200)  # another backbone, 80 images
    assert resnet.basis == COST_MODEL and resnet.detail.startswith("x")
    assert "backbone FLOPs x images a step x" in resnet.detail and "head" not in resnet.detail


def test_every_run_of_a_paper_planned_for_a_gpu_gets_hours():
    # No GPU here (a login node): the committed GPU figures serve, said so in the plan's legend.
    for run in load_paper("damlrrm", RECIPES_DIR).runs:
        expected = expected_hours("damlrrm", run.recipe({}), HoursSetting("cuda", None))
        assert expected.hours is not None and expected.basis in (COMMITTED, COST_MODEL), run.id


def test_a_measurement_serves_only_where_its_file_records_its_shape(tmp_path):
    report = json.loads((BENCHMARKS_DIR / "training-cuda.json").read_text())
    del report["papers"]["damlrrm"]["shape"]  # as the benchmark wrote it before it recorded shapes
    (tmp_path / "training-cuda.json").write_text(json.dumps(report))
    assert committed_measurements(tmp_path) == []
    setting = HoursSetting("cuda", "NVIDIA H200", folder=tmp_path)
    published = expected_hours("damlrrm", _recipe("damlrrm", "ours-cub200"), setting)
    assert (published.hours, published.basis) == (13.2, PUBLISHED)  # damlrrm's Table 8
    assert published.source() == "the paper's published time: table8, on its authors' GPU"
    unknown = expected_hours("damlrrm", _recipe("damlrrm", "ours-cars196"), setting)
    assert (unknown.hours, unknown.basis, unknown.duration()) == (None, UNKNOWN, "unknown")
    assert unknown.source() == "no committed GPU measurement with its shape recorded, and no published training time"


def test_a_cpu_run_is_not_given_a_gpu_s_time():
    cpu = expected_hours("damlrrm", _recipe("damlrrm", "ours-cub200"), HoursSetting("cpu"))
    assert cpu.hours is None
    assert cpu.source().startswith("not measured on the CPU: `--calibrate` times it here")
