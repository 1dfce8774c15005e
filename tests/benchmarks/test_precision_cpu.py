"""The CPU stand-in for the precision part's recipe figures (``tests/benchmarks/precision_cpu.py``): it really runs
bf16 (without the stand-in the trainer keeps fp32 on the CPU and bf16 would change nothing), reports the figures the
committed report holds, and gives the trainer its own autocast back. At the smoke scale, narrowed, on the smoke glyphs
the session has generated already (the mini scale's figures are the committed report's)."""

import json

from dml_core.training import step
from tests.benchmarks import precision_cpu
from tests.gpu_check.experiments.small_recipes import narrow_smoke_recipe


def test_the_stand_in_runs_bf16_and_writes_its_report(tmp_path, copy_glyph_sets, monkeypatch):
    data_root = copy_glyph_sets(tmp_path / "data")
    trainer_autocast = step.autocast
    monkeypatch.setattr(precision_cpu, "main_run_references", lambda: ("gpw/pair-e-cub200",))
    monkeypatch.setattr(precision_cpu, "mini_version", lambda recipe: narrow_smoke_recipe(f"gpw/{recipe.id}"))
    assert precision_cpu.main(["--out", str(tmp_path / "report.json"), "--data-root", str(data_root)]) == 0
    assert step.autocast is trainer_autocast
    report = json.loads((tmp_path / "report.json").read_text())
    figures = report["recipes"]["gpw/pair-e-cub200"]
    assert figures["bf16_rel"] > 0 and figures["nudge_rel"] > 0 and figures["other_batch_rel"] > 0
    assert list(report["recipes"]) == ["gpw/pair-e-cub200"] and set(report["figures"]) == set(figures) - {
        "batch",
        "steps",
    }
    assert report["environment"]["git"]["commit"] and report["steps"] == precision_cpu.precision.RECIPE_STEPS
