"""The graphs part on the CPU, with a stand-in for the capture (the real one needs CUDA): each way starts from the same
state, the comparison finds no drift where there is none, and the part fails on a graphed forward that computes
something else or cannot be captured; the check's time limit stops it between recipes."""

import functools
from types import SimpleNamespace

import pytest
import torch

from dml_core.gpu_check import part as part_module
from dml_core.gpu_check.experiments import graphs
from dml_core.gpu_check.experiments.graphs import run_graphs
from dml_core.gpu_check.part import CheckContext, PartFailed, PartStopped
from dml_core.training.cuda_graphs import GraphedForward
from tests.gpu_check.experiments.small_recipes import narrow_smoke_recipe

RUNS = ("damlrrm/ours-cub200", "drml/drml-pa-cub200")  # a tensor output, a dataclass output


def _eager_capture(module, images):
    """The capture's effect on the model (warm-up passes in training mode), then eager replays."""
    for _ in range(3):
        module(images)
    return module


def _scaled_capture(module, images):
    """A 'graph' that computes something else: every output a little larger."""
    return lambda batch: tuple(output * 1.001 for output in module(batch))


def _failing_capture(module, images):
    raise RuntimeError("operation not permitted when stream is capturing")


def _run(tmp_path, capture, runs=RUNS):
    context = CheckContext(torch.device("cpu"), tmp_path / "work", tmp_path / "data", tmp_path, log=lambda line: None)
    graphed = functools.partial(GraphedForward, capture=capture)
    return run_graphs(context, runs, narrow_smoke_recipe, graphed=graphed, steps=2, warmup=1, timed=2)


@pytest.mark.usefixtures("glyph_data_root")
def test_a_faithful_graph_passes_with_no_drift_and_a_speed_figure(tmp_path):
    outcome = _run(tmp_path, _eager_capture)
    for run in RUNS:
        figures = outcome.figures[run]
        assert figures["eager_drift"] == 0.0 and figures["graphed_drift"] == 0.0, figures
        assert figures["graphed_over_eager"] > 0
    assert outcome.summary.startswith("graphed = eager")


@pytest.mark.usefixtures("glyph_data_root")
def test_a_graph_that_computes_otherwise_or_cannot_be_captured_fails_the_part(tmp_path):
    with pytest.raises(PartFailed, match="damlrrm/ours-cub200, drml/drml-pa-cub200") as failed:
        _run(tmp_path, _scaled_capture)
    assert all(figures["graphed_drift"] > 0 for figures in failed.value.figures.values())
    with pytest.raises(PartFailed) as failed:
        _run(tmp_path, _failing_capture, RUNS[:1])
    assert failed.value.figures["damlrrm/ours-cub200"]["error"].startswith("RuntimeError: operation not permitted")


def test_the_time_limit_stops_the_part_between_recipes_with_the_figures_of_those_done(tmp_path, monkeypatch):
    clock = {"now": 0.0}
    monkeypatch.setattr(part_module, "time", SimpleNamespace(monotonic=lambda: clock["now"]))

    def compare_taking_a_minute(recipe, context, **options):
        clock["now"] += 60
        return {"eager_drift": 0.0, "graphed_drift": 0.0, "graphed_over_eager": 1.5}

    monkeypatch.setattr(graphs, "compare_forwards", compare_taking_a_minute)
    context = CheckContext(torch.device("cpu"), tmp_path / "work", tmp_path / "data", tmp_path, deadline=30.0)
    with pytest.raises(PartStopped, match=r"^time limit reached after 1 of 2 recipes$") as stopped:
        graphs.run_graphs(context, RUNS, recipe_of=lambda run: run)
    assert list(stopped.value.figures) == [RUNS[0]]
