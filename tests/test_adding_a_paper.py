"""Adding a paper touches its own folders and at most two package files (docs/contributing.md, "Adding a paper"):
a copy of the repository's package, papers and recipes gains a paper the way the guide says, and its smoke tier runs
end to end there, from the plan to its page. The paper and its numbers are made up: nothing here is a published or
a reproduced result."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.processes import completed_report

ROOT = Path(__file__).resolve().parents[1]
KEY = "added"

PUBLISHED = {
    "paper": {"key": KEY, "title": "A Paper Added To The Suite", "venue": "TEST", "year": 2026},
    "tables": [
        {
            "id": "table1",
            "caption": "Retrieval on CUB-200-2011",
            "kind": "main",
            "rows": [
                {"id": "ours-cub200", "method": "OURS", "proposed": True, "dataset": "cub200",
                 "metrics": {"R@1": 60.0}},
                {"id": "triplet-cub200", "method": "Triplet", "proposed": False, "dataset": "cub200",
                 "metrics": {"R@1": 50.0}},
            ],
        }
    ],
}  # fmt: skip
# Its method at full scale, and the smoke tier's shrink of it kept as small as a run goes: a 1/8-width backbone
# from random weights, 32-pixel crops, 2 steps and one evaluation, R@K only.
RECIPE = {
    "id": "ours-cub200",
    "paper": KEY,
    "targets": [{"table": "table1", "row": "ours-cub200"}],
    "description": "The added paper's method.",
    "assumptions": ["The margin is the paper's."],
    "data": {"dataset": "cub200", "num_workers": 0, "transforms": {"train_crop": "random_crop"}},
    "model": {"backbone": "bn_inception", "weights": "random", "width": 0.125, "embedding_dim": 16},
    "loss": {"name": "added_margin", "params": {"margin": 0.2}},
    "sampler": {"name": "pk", "params": {"classes_per_batch": 4, "images_per_class": 2}},
    "optimizer": {"name": "adam", "lr": 1.0e-3},
    "training": {"iterations": 1000, "eval_every": 500, "eval_batch_size": 256},
    "evaluation": {"metrics": ["recall"], "recall_ks": [1, 2]},
    "smoke": {"iterations": 2, "eval_every": 2, "image_size": 32, "resize": 36},
}
BASELINE = {
    "extends": "ours-cub200.yaml",
    "id": "triplet-cub200",
    "targets": [{"table": "table1", "row": "triplet-cub200"}],
    "description": "The baseline it is claimed to beat.",
    "loss": {"name": "triplet", "params": {"margin": 0.1}},
}
MINI = {
    "proposed": "ours-cub200",
    "baselines": ["triplet-cub200"],
    "claim": "OURS beats the triplet loss (Table 1).",
    "why": "The paper's one comparison.",
    "main": "ours-cub200",
}
LOSS_MODULE = '''"""The added paper's loss: a margin between the positive and the negative pairs' mean distances."""

from torch import Tensor

from dml_core.losses.base import MetricLoss, label_masks, pairwise_matrix


class AddedMarginLoss(MetricLoss):
    name = "added_margin"

    def __init__(self, margin: float = 0.2) -> None:
        super().__init__()
        self.margin = margin

    def compute_loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        distances = pairwise_matrix(embeddings, embeddings, "euclidean")
        positive, negative = label_masks(labels)
        return (distances[positive].mean() - distances[negative].mean() + self.margin).clamp_min(0)
'''
# What the paper adds, by path: its own folders and its loss module.
PAPER_FILES = {
    f"papers/{KEY}/published.yaml": yaml.safe_dump(PUBLISHED, sort_keys=False),
    f"reproduce/{KEY}/ours-cub200.yaml": yaml.safe_dump(RECIPE, sort_keys=False),
    f"reproduce/{KEY}/baseline.yaml": yaml.safe_dump(BASELINE, sort_keys=False),
    f"reproduce/{KEY}/mini.yaml": yaml.safe_dump(MINI, sort_keys=False),
    f"dml_core/losses/{KEY}.py": LOSS_MODULE,
}
# The package files it edits besides its loss module: its key beside the others'.
VOCABULARY = "dml_core/vocabulary.py"
PACKAGE_EDITS = (VOCABULARY,)


def add_paper(root: Path) -> None:
    """Copy the package, the papers and the recipes under ``root`` and add the paper there."""
    for part in ("dml_core", "papers", "reproduce"):
        shutil.copytree(ROOT / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
    for relative, text in PAPER_FILES.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    vocabulary = root / VOCABULARY
    text, found = re.subn(r"^(PaperKey = Literal\[.*)\]$", rf'\1, "{KEY}"]', vocabulary.read_text(), flags=re.M)
    assert found == 1, "the paper keys' one declaration"
    vocabulary.write_text(text)


def test_the_guide_names_every_package_file_a_paper_touches():
    guide = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    section = guide[guide.index("## Adding a paper") :]
    assert all(f"`{path}`" in section for path in PACKAGE_EDITS) and "`dml_core/losses/<key>.py`" in section
    assert len(PACKAGE_EDITS) <= 2


@pytest.mark.slow  # a process that imports torch, trains two runs and builds the page
def test_a_paper_added_as_the_guide_says_runs_its_smoke_tier_to_its_page(tmp_path, glyph_data_root):
    add_paper(tmp_path / "repository")
    out = tmp_path / "out"
    command = [
        sys.executable, "-m", "dml_core.cli", "reproduce", KEY, "--smoke", "--no-progress",
        "--runs", str(out / "runs"), "--results", str(out / "results"), "--tables", str(out / "tables"),
        "--data-root", str(glyph_data_root),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "repository")}
    completed = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert completed.returncode == 0, completed_report(completed)
    assert f"{KEY}: 2 trained, 0 skipped (finished), 0 failed" in completed.stdout, completed_report(completed)
    results = json.loads((out / "results" / "smoke" / KEY / "ours-cub200-seed0.json").read_text())
    assert results["paper"] == KEY and results["recipe"]["content"]["loss"]["name"] == "added_margin"
    page = (out / "tables" / "smoke" / f"{KEY}.md").read_text()
    assert page.startswith("# Reproduction: A Paper Added To The Suite (TEST 2026)")
    assert re.search(r"^\| OURS +\| 60\.0 → [\d.]+ .*\(smoke\)", page, flags=re.M), page
    assert re.search(r"^\| Triplet +\| 50\.0 → [\d.]+ .*\(smoke\)", page, flags=re.M), page
