"""Synthetic results files of the fair study for the fair table's tests: made-up numbers, valid per
``dml_core.results``'s schema, selected on a validation split. Nothing here is a published or reproduced result."""

from __future__ import annotations

from pathlib import Path

from dml_core.output_paths import results_file
from dml_core.results import select, select_every_rule, write_results
from dml_core.tier import Tier
from dml_core.vocabulary import FAIR_KEY
from tests.tables.synthetic import results_payload

# A planted test-only signal: the first evaluation has the best TEST numbers of the run and the worst validation
# R@1, so a table that selected on the test classes would show it.
PLANTED = 99.0

COMMIT = "0123456789abcdef0123"
# what a run records of the code that drew its batches, beside its commit (dml_core.tables.fair.batches)
ENVIRONMENT = {"data_loading": {"pipeline": "pil"}, "numpy": "2.0", "torch": "2.5", "torchvision": "0.20"}
RECIPE_CONTENT = {
    "variant": "",
    "readings": {},
    "data": {
        "dataset": "cub200",
        "validation": {"fraction": 0.2, "seed": 0},
        "transforms": {"resize_mode": "squash", "resize": 256, "train_crop": "random_crop", "crop_size": 227,
                       "hflip": True},
    },
    "model": {"backbone": "bn_inception", "embedding_dim": 512, "frozen_bn": True},
    "sampler": {"name": "pk", "params": {"classes_per_batch": 30, "images_per_class": 4}},
    "optimizer": {"name": "adam", "lr": 1e-5, "weight_decay": 1e-4},
    "schedule": {"name": "constant"},
}  # fmt: skip


def fair_payload(
    method: str,
    dataset: str,
    seed: int,
    r1: float,
    *,
    rule: str = "best_val_r1",
    tier: Tier = Tier.FULL,
    sampler: dict | None = None,
    variant: str = "",
    validation_r1: float | None = None,
    map_r: float | None = None,
    commit: str = COMMIT,
    record_sampler: bool = True,
    untrained: tuple[float, float] | None = None,
) -> dict:
    """One run whose validation-selected evaluation has test R@1 ``r1`` (MAP@R ``map_r``, default ``r1 - 20``; NMI
    ``r1 + 5``) and validation R@1 ``validation_r1`` (default ``r1 - 1``; validation MAP@R 20 below it), under the
    readings ``variant`` (``name=value~...``), trained at ``commit``; its sampler as built recorded unless not
    ``record_sampler``. ``untrained``: (test R@1, validation R@1) of an evaluation before the first update, which
    the selection picks where its validation R@1 is the best."""
    payload = results_payload(f"{method}-{dataset}", seed=seed, paper=FAIR_KEY, variant=variant, commit=commit)
    val = r1 - 1 if validation_r1 is None else validation_r1
    map_r = r1 - 20 if map_r is None else map_r
    evaluations = [
        {"iteration": 100, "epoch": 1.0, "seconds": 1.0, "metrics": {"R@1": PLANTED, "MAP@R": PLANTED, "NMI": PLANTED},
         "validation_metrics": {"R@1": 1.0, "MAP@R": 0.5, "NMI": 30.0}},
        {"iteration": 200, "epoch": 2.0, "seconds": 1.0, "metrics": {"R@1": r1, "MAP@R": map_r, "NMI": r1 + 5},
         "validation_metrics": {"R@1": val, "MAP@R": val - 20, "NMI": val + 5}},
    ]  # fmt: skip
    if untrained is not None:
        test, validation = untrained
        evaluations.insert(
            0,
            {
                "iteration": 0,
                "epoch": 0.0,
                "seconds": 1.0,
                "metrics": {"R@1": test, "MAP@R": test / 10, "NMI": test + 5},
                "validation_metrics": {"R@1": validation, "MAP@R": validation / 10, "NMI": 30.0},
            },
        )
    sampler = sampler or RECIPE_CONTENT["sampler"]
    content = {**RECIPE_CONTENT, **payload["recipe"]["content"], "sampler": sampler, "training": {"seed": seed}}
    payload["recipe"]["content"] = content
    payload["evaluations"] = evaluations
    payload["selection"] = select(evaluations, rule)
    payload["selections"] = select_every_rule(evaluations)
    payload["evaluation_protocol"]["selection_rule"] = rule
    payload["evaluation_protocol"]["validation_split"] = {"fraction": 0.2, "seed": 0, "classes": 20,
                                                          "classes_sha256": "c" * 64}  # fmt: skip
    payload["environment"] = {**payload["environment"], **ENVIRONMENT}
    if record_sampler:
        payload["sampler"] = {"name": sampler["name"], "seed": seed, "settings": sampler["params"], "derived": {}}
    payload["backbone"] = "bn_inception"
    payload["timing"]["iterations"] = 200
    del payload["smoke"]
    payload["tier"] = tier.value
    return payload


def write_fair_result(results_root: Path, payload: dict) -> Path:
    """Where the trainer writes it: ``<results_root>/[mini/]fair/<method>-<dataset>[~<variant>]-seed<N>.json``."""
    variant = payload["recipe"]["content"]["variant"]
    name = payload["recipe"]["id"] + (f"~{variant}" if variant else "")
    return write_results(results_file(results_root, FAIR_KEY, name, payload["seed"], Tier(payload["tier"])), payload)


def write_runs(results_root: Path, runs: dict[str, list[float]], dataset: str = "cub200", **options) -> None:
    """``{method: [R@1 of seed 0, seed 1, ...]}`` as results files."""
    for method, values in runs.items():
        for seed, r1 in enumerate(values):
            write_fair_result(results_root, fair_payload(method, dataset, seed, r1, **options))
