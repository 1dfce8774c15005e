"""The overhead part's measurement on the CPU (its figures need a GPU): every variant that a CPU can run is timed from
the same weights and the recipe's settings are left as they were; the CUDA-graph variant reports why it cannot run."""

from types import SimpleNamespace

import pytest
import torch

from dml_core.gpu_check import part as part_module
from dml_core.gpu_check.experiments import overhead
from dml_core.gpu_check.experiments.overhead import bound_recipe, measure_variants
from dml_core.gpu_check.part import CheckContext, PartStopped
from dml_core.recipes import smoke_version


@pytest.mark.usefixtures("glyph_data_root")
def test_each_variant_is_timed_or_says_why_not_and_the_model_is_left_as_built(tmp_path):
    recipe = smoke_version(bound_recipe("damlrrm/ours-cub200"))
    deterministic_before = torch.are_deterministic_algorithms_enabled()
    context = CheckContext(torch.device("cpu"), tmp_path / "work", tmp_path / "data", tmp_path)
    figures = measure_variants(recipe, context, ("recipe", "bf16", "contiguous", "cuda_graphs"), warmup=1, timed=2)
    variants = figures["variants"]
    assert list(variants) == ["recipe", "bf16", "contiguous", "cuda_graphs"]
    for name in ("recipe", "bf16", "contiguous"):
        assert variants[name]["iterations_per_second"] > 0, variants[name]
    assert variants["recipe"]["ratio_to_recipe"] == 1.0
    assert variants["cuda_graphs"] == {"error": "RuntimeError: CUDA graphs need a CUDA device"}
    assert figures["run"] == "ours-cub200" and figures["batch"] > 0
    assert torch.are_deterministic_algorithms_enabled() == deterministic_before  # each variant's settings restored


@pytest.mark.usefixtures("glyph_data_root")
def test_the_time_limit_stops_the_part_between_variants_with_the_figures_of_those_done(tmp_path, monkeypatch):
    clock = {"now": 0.0}
    monkeypatch.setattr(part_module, "time", SimpleNamespace(monotonic=lambda: clock["now"]))

    def timed_for_a_minute(step, device, warmup, timed):
        clock["now"] += 60
        return 10.0

    monkeypatch.setattr(overhead, "iterations_per_second", timed_for_a_minute)
    recipe = smoke_version(bound_recipe("damlrrm/ours-cub200"))
    context = CheckContext(torch.device("cpu"), tmp_path / "work", tmp_path / "data", tmp_path, deadline=90.0)
    with pytest.raises(PartStopped, match=r"^time limit reached after 2 of 3 variants$") as stopped:
        measure_variants(recipe, context, ("recipe", "bf16", "contiguous"))
    assert stopped.value.figures["run"] == "ours-cub200"
    assert list(stopped.value.figures["variants"]) == ["recipe", "bf16"]
