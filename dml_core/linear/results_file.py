"""A finished Table 2 protocol run as a results file of kind ``linear`` (schema: ``dml_core.results``)."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

from dml_core.linear.grids import N_FOLDS
from dml_core.linear.plan import TABLE2_ID, table2_row_id
from dml_core.linear.protocol import PAPER_SPLITS, Table2Result
from dml_core.provenance import environment
from dml_core.results import SCHEMA_VERSION, LinearProtocolRecord, write_results
from dml_core.tier import Tier

PREPROCESSING = "z-score per feature, then PCA to 150 dimensions above 150 features; both fitted on the train part"


def linear_results_payload(
    result: Table2Result,
    *,
    paper: str,
    plan: dict,
    grid_every: int,
    tier: Tier,
    git: dict,
) -> dict:
    """The results-file payload of ``result``; ``plan`` is the ``plan`` record (id, path, sha256, overrides);
    ``git``: the record of the git state the run started under (``provenance.git_record``)."""
    settings = result.settings
    row = table2_row_id(settings["method_key"], result.dataset)
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "linear",
        "status": "complete",
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "id": row,
        "plan": plan,
        "paper": paper,
        "targets": [{"table": TABLE2_ID, "row": row}],
        "dataset": f"uci:{result.dataset.lower()}",
        "data_source": settings.get("data_source"),
        "method": settings["method_key"],
        "method_name": result.method,
        "seed": settings["seed"],
        "tier": tier.value,
        "git": git,
        "environment": {**environment(), "device": "cpu", "sklearn": settings["versions"]["sklearn"]},
        "protocol": {
            "name": "anml-table2",
            "splits": settings["n_splits"],
            "seed": settings["seed"],
            "test_fraction": settings["test_fraction"],
            "cv_folds": settings["n_folds"],
            "max_k": settings["max_k"],
            "k_rule": result.k_rule,
            "grid": settings["grid"],
            "grid_every": grid_every,
            "paper_grid": settings["grid_is_paper_grid"],
            "pca_dimensions": settings["pca_dimensions"],
            "preprocessing": PREPROCESSING,
            "solver": settings["solver"],
            "n_samples": settings["n_samples"],
            "n_features": settings["n_features"],
        },
        "splits": [
            {
                "split": split.split,
                "seed": split.seed,
                "hyper_parameters": split.hyper_parameters,
                "cv_accuracy": split.cv_accuracy,
                "cv_k": split.cv_k,
                "best_test_k": split.best_test_k,
                "test_accuracy_by_k": split.test_accuracy_by_k,
                "accuracy": split.accuracy,
                "seconds": split.seconds,
            }
            for split in result.splits
        ],
        "summary": {"accuracy": result.mean_accuracy, "accuracy_std": result.std_accuracy},
        "seconds": result.seconds,
    }


def describe_linear_protocol(protocol: LinearProtocolRecord) -> str:
    """One line saying how a linear number was obtained; anything short of the paper's protocol is flagged.

    >>> record = LinearProtocolRecord(
    ...     name="anml-table2", splits=2, seed=0, test_fraction=0.3, cv_folds=5, max_k=40, k_rule="test",
    ...     grid={"alpha": [0.25, 8.0]}, grid_every=5, paper_grid=False, pca_dimensions=None, preprocessing="z",
    ...     solver={}, n_samples=150, n_features=4)
    >>> describe_linear_protocol(record)
    'NOT the paper protocol: 2 splits (seeds 0..1), 5-fold CV, K rule test, THINNED grid (grid-every 5: 2 points)'
    """
    if not protocol.grid:
        grid = "no hyper-parameters"
    else:
        points = math.prod(len(values) for values in protocol.grid.values())
        grid = (
            f"paper grid ({points} point{'s' if points > 1 else ''})"
            if protocol.paper_grid
            else f"THINNED grid (grid-every {protocol.grid_every}: {points} point{'s' if points > 1 else ''})"
        )
    text = (
        f"{protocol.splits} splits (seeds {protocol.seed}..{protocol.seed + protocol.splits - 1}), "
        f"{protocol.cv_folds}-fold CV, K rule {protocol.k_rule}, {grid}"
    )
    as_paper = protocol.splits == PAPER_SPLITS and protocol.cv_folds == N_FOLDS and protocol.paper_grid
    return text if as_paper else "NOT the paper protocol: " + text


def write_linear_results(path: str | Path, result: Table2Result, **payload_options) -> Path:
    """Validate and write atomically; ``payload_options``: those of :func:`linear_results_payload`."""
    return write_results(path, linear_results_payload(result, **payload_options))
