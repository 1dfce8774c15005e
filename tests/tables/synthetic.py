"""Synthetic inputs for the table builder's tests: a tiny published.yaml, results files valid per
``dml_core.results``'s schema, and recipe files that target rows. Numbers are made up; nothing here is a
published or reproduced result."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from dml_core.recipes.compose import with_overrides
from dml_core.recipes.settings import Recipe
from dml_core.recipes.tiers import smoke_version
from dml_core.results import SCHEMA_VERSION, select, select_every_rule, write_results

PAPER_KEY = "damlrrm"  # the loader only accepts the five real keys; the tables below are synthetic

PUBLISHED = {
    "paper": {"key": PAPER_KEY, "title": "A Synthetic Paper", "venue": "TEST", "year": 2020},
    "tables": [
        {
            "id": "table1",
            "caption": "Retrieval on CUB",
            "kind": "main",
            "rows": [
                {"id": "lifted-cub200", "method": "Lifted", "proposed": False, "dataset": "cub200",
                 "metrics": {"R@1": 43.6, "NMI": 56.5}},
                {"id": "ours-cub200", "method": "OURS", "proposed": True, "dataset": "cub200",
                 "metrics": {"R@1": 55.1, "R@2": 67.0, "NMI": 60.0}},
            ],
        },
        {
            "id": "table8",
            "caption": "Training time",
            "kind": "training_time",
            "rows": [
                {"id": "ours-cub200", "method": "OURS", "proposed": True, "dataset": "cub200",
                 "metrics": {"iterations_per_second": 0.84, "training_hours": 13.2}},
            ],
        },
    ],
}  # fmt: skip

RECIPE = {
    "id": "ours-cub200",
    "paper": PAPER_KEY,
    "targets": [{"table": "table1", "row": "ours-cub200"}, {"table": "table8", "row": "ours-cub200"}],
    "data": {"dataset": "cub200", "num_workers": 0},
    "model": {"backbone": "googlenet", "weights": "pretrained"},
    "loss": {"name": "multi_similarity"},
    "sampler": {"name": "pk", "params": {"classes_per_batch": 4, "images_per_class": 2}},
    "optimizer": {"name": "adam", "lr": 1e-3},
    "training": {"iterations": 10},
    "evaluation": {"metrics": ["recall", "nmi"], "recall_ks": [1, 2]},  # what the synthetic curves hold
}


# Recipe fields (for write_recipe) whose smoke version trains in a few seconds on the CPU: tiny images, 4 steps.
TINY_SMOKE = {
    "data": {"dataset": "cub200", "num_workers": 0, "transforms": {"train_crop": "random_crop"}},
    "model": {"backbone": "bn_inception", "weights": "pretrained", "embedding_dim": 16},
    "training": {"iterations": 1000, "eval_every": 500, "eval_batch_size": 256},
    "evaluation": {"kmeans_iterations": 5},
    "smoke": {"iterations": 4, "eval_every": 2, "image_size": 32, "resize": 40,
              "sampler_params": {"classes_per_batch": 4, "images_per_class": 2}},
}  # fmt: skip


def write_papers_dir(root: Path, published: dict = PUBLISHED) -> Path:
    """``<root>/papers/<key>/published.yaml``; returns the papers folder."""
    folder = root / "papers" / PAPER_KEY
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "published.yaml").write_text(yaml.safe_dump(published, sort_keys=False))
    return root / "papers"


def write_recipe(recipes_dir: Path, **changes) -> Path:
    """A recipe file ``<recipes_dir>/<key>/<id>.yaml`` (top-level fields replaced by ``changes``)."""
    tree = {**copy.deepcopy(RECIPE), **changes}
    path = recipes_dir / PAPER_KEY / f"{tree['id']}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(tree))
    return path


def results_payload(
    recipe_id: str = "ours-cub200",
    *,
    seed: int = 0,
    curve: list[dict[str, float]] | None = None,
    targets: list[dict] | None = None,
    smoke: bool = False,
    gpu: str | None = "NVIDIA H100",
    commit: str = "0123456789abcdef0123",
    paper: str = PAPER_KEY,
    iterations_per_second: float = 2.0,
    train_seconds: float = 7200.0,
    rule: str = "best_r1",
    variant: str = "",
) -> dict:
    """A complete results file; ``curve`` is the metrics of each evaluation (every 100 iterations); ``variant``:
    the non-default readings it ran under, recorded as the recipe layer does (``recipe.content``)."""
    curve = curve or [{"R@1": 50.0, "R@2": 62.0, "NMI": 58.0}]
    evaluations = [
        {"iteration": 100 * (i + 1), "epoch": float(i + 1), "metrics": metrics, "seconds": 1.0}
        for i, metrics in enumerate(curve)
    ]
    return {
        "schema_version": SCHEMA_VERSION,
        "status": "complete",
        "created": "2026-01-01T00:00:00+00:00",
        "recipe": {
            "id": recipe_id,
            "path": None,
            "sha256": "a" * 64,
            "overrides": [],
            "content": {"variant": variant, "readings": dict(r.split("=") for r in variant.split("~") if r)},
        },
        "paper": paper,
        "targets": targets if targets is not None else RECIPE["targets"],
        "dataset": "cub200",
        "backbone": "googlenet",
        "weights": {"requested": "pretrained", "id": "googlenet-1378be20.pth"},
        "seed": seed,
        "smoke": smoke,
        "world_size": 1,
        "git": {"commit": commit, "dirty": False},
        "environment": {"gpu": gpu, "device": "cuda" if gpu else "cpu"},
        "evaluation_protocol": {
            "protocol": "single-set",
            "self_exclusion": "by index",
            "normalize": True,
            "knn": {"recall_ks": [1, 2]},
            "clustering": {"backend": "faiss", "iterations": 20, "seed": 0, "nmi_normalization": "arithmetic"},
            "selection_rule": rule,
        },
        "evaluations": evaluations,
        "selection": select(evaluations, rule),
        "timing": {
            "iterations": 100 * len(curve),
            "train_seconds": train_seconds,
            "data_wait_seconds": 1.0,
            "compute_seconds": train_seconds - 1.0,
            "iterations_per_second": iterations_per_second,
            "evaluation_seconds": 1.0,
            "resumed_runs": 0,
        },
    }


def pinned_payload(
    recipe_changes: dict | None = None,
    *,
    seed: int = 0,
    smoke: bool = False,
    curve: list[dict[str, float]] | None = None,
    **options,
) -> dict:
    """:func:`results_payload` as the trainer writes it for the recipe ``write_recipe(**recipe_changes)`` pins
    (seed ``seed`` as an override, smoke-shrunk when ``smoke``), so that the results gate admits it: the recipe
    record and its hash, the recipe's dataset and backbone, the evaluations spread evenly up to the recipe's last
    iteration, and every rule's pick."""
    tree = {**copy.deepcopy(RECIPE), **(recipe_changes or {})}
    overrides = [f"training.seed={seed}"]
    recipe = with_overrides(Recipe.model_validate(tree), overrides)
    recipe = smoke_version(recipe) if smoke else recipe
    payload = results_payload(tree["id"], seed=seed, smoke=smoke, curve=curve, targets=tree["targets"], **options)
    total, evaluations = recipe.training.iterations, payload["evaluations"]
    for number, evaluation in enumerate(evaluations, start=1):
        evaluation["iteration"] = total * number // len(evaluations)
    payload["recipe"] = {
        "id": recipe.id,
        "path": None,
        "sha256": recipe.content_hash(),
        "overrides": overrides,
        "content": recipe.model_dump(mode="json"),
    }
    payload.update(
        dataset=recipe.data.dataset,
        backbone=recipe.model.backbone,
        selection=select(evaluations, payload["selection"]["rule"]),
        selections=select_every_rule(evaluations),
    )
    payload["timing"]["iterations"] = total
    return payload


def write_results_file(results_root: Path, payload: dict) -> Path:
    """``<results_root>/[smoke/]<paper>/<id>[~<variant>]-seed<seed>.json``, validated and written like the trainer
    does."""
    folder = results_root / ("smoke" if payload["smoke"] else "") / payload["paper"]
    variant = payload["recipe"]["content"].get("variant")
    name = payload["recipe"]["id"] + (f"~{variant}" if variant else "")
    return write_results(folder / f"{name}-seed{payload['seed']}.json", payload)


def linear_payload(
    accuracies: tuple[float, ...] = (96.0, 100.0, 98.0),
    *,
    row: str = "lanml-plus-uci-iris",
    seed: int = 0,
    smoke: bool = False,
    grid_every: int = 5,
    paper: str = "anml",
) -> dict:
    """A complete linear (anml Table 2) results file with one made-up accuracy (percent, at least 90) per split,
    the best of two K on the test part; the CV-chosen K scores 90."""
    n = len(accuracies)
    mean = sum(accuracies) / n
    std = (sum((a - mean) ** 2 for a in accuracies) / (n - 1)) ** 0.5 if n > 1 else 0.0
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "linear",
        "status": "complete",
        "created": "2026-01-01T00:00:00+00:00",
        "id": row,
        "plan": {"id": "table2-iris", "path": None, "sha256": "b" * 64, "overrides": []},
        "paper": paper,
        "targets": [{"table": "table2", "row": row}],
        "dataset": "uci:iris",
        "method": "lanml_plus",
        "method_name": "LANML+",
        "seed": seed,
        "smoke": smoke,
        "git": {"commit": "0123456789abcdef0123", "dirty": False},
        "environment": {"gpu": None, "device": "cpu"},
        "protocol": {
            "name": "anml-table2",
            "splits": n,
            "seed": seed,
            "test_fraction": 0.3,
            "cv_folds": 5,
            "max_k": 40,
            "k_rule": "test",
            "grid": {"lam": [0.1], "gamma1": [0.03125], "gamma2": [0.03125]},
            "grid_every": grid_every,
            "paper_grid": grid_every == 1,
            "pca_dimensions": None,
            "preprocessing": "z-score",
            "solver": {"max_iterations": 30},
            "n_samples": 150,
            "n_features": 4,
        },
        "splits": [
            {
                "split": i,
                "seed": seed + i,
                "hyper_parameters": {"lam": 0.1, "gamma1": 0.03125, "gamma2": 0.03125},
                "cv_accuracy": 0.95,
                "cv_k": 1,  # K = 1 scores 90% (so the K rule cv reads 90% on every split)
                "best_test_k": 2,
                "test_accuracy_by_k": [0.9, accuracy / 100.0],
                "accuracy": accuracy,
                "seconds": 0.1,
            }
            for i, accuracy in enumerate(accuracies)
        ],
        "summary": {"accuracy": mean, "accuracy_std": std},
        "seconds": 0.3,
    }


def write_linear_file(results_root: Path, payload: dict) -> Path:
    """``<results_root>/[smoke/]<paper>/<row>-seed<seed>.json``, validated, as the linear runner writes it."""
    folder = results_root / ("smoke" if payload["smoke"] else "") / payload["paper"]
    return write_results(folder / f"{payload['id']}-seed{payload['seed']}.json", payload)
