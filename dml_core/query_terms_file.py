"""The per-query companion of a deep results file: ``<results stem>.queries.npz`` beside ``<results stem>.json``.

It holds the retrieval terms of each query (``dml_core.evaluation.per_query``) for the evaluations some selection
rule picks (the recipe's, best test R@1, the final one), as ``<iteration>/<array>`` entries of a compressed
numpy archive (its size at SOP scale: docs/evaluation.md, "Intervals over queries"). The results file records the
companion's name, sha256, size and iterations (field ``queries``); a companion that is missing, or whose bytes
differ from that record, is an ``InputError``, never read as if it were the run's.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from dml_core.atomic_io import atomic_write_bytes
from dml_core.errors import InputError
from dml_core.evaluation.per_query import PerQuery

SUFFIX = ".queries.npz"


def companion_path(results_path: str | Path) -> Path:
    """``results/cgml/x-seed0.json`` -> ``results/cgml/x-seed0.queries.npz``.

    >>> companion_path("runs/a/results.json").as_posix()
    'runs/a/results.queries.npz'
    """
    path = Path(results_path)
    return path.with_name(path.stem + SUFFIX)


def write_query_terms(results_path: str | Path, terms: Mapping[int, PerQuery]) -> dict:
    """Write the terms of each evaluation (``{iteration: PerQuery}``) atomically beside ``results_path``; return
    the record the results file keeps under ``queries``."""
    arrays = {
        f"{iteration}/{name}": array
        for iteration, per_query in sorted(terms.items())
        for name, array in per_query.to_arrays().items()
    }
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    data = buffer.getvalue()
    path = atomic_write_bytes(companion_path(results_path), data)
    return {
        "file": path.name,
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
        "iterations": sorted(int(iteration) for iteration in terms),
    }


def read_query_terms(results_path: str | Path, record) -> dict[int, PerQuery]:
    """The terms a results file's ``queries`` record (``file``, ``sha256``, ``iterations``) points to, checked
    against it: a missing companion, other bytes than recorded or other iterations are an ``InputError``."""
    results_path = Path(results_path)
    path = results_path.with_name(record.file)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(
            f"{results_path}: field queries.file: expected the per-query file {record.file} beside it, found none "
            "(copy it with the results file, or run again)"
        ) from None
    except OSError as error:
        raise InputError(f"{path}: cannot read the per-query file ({error.strerror or error})") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != record.sha256:
        raise InputError(
            f"{path}: sha256 {digest[:12]}…, but its results file {results_path.name} records "
            f"{record.sha256[:12]}… (field queries.sha256): the per-query file was altered or belongs to another run"
        )
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (zipfile.BadZipFile, ValueError, OSError) as error:
        raise InputError(f"{path}: not a per-query archive ({error})") from None
    by_iteration: dict[str, dict[str, np.ndarray]] = {}
    for name, array in arrays.items():
        iteration, _, field = name.partition("/")
        by_iteration.setdefault(iteration, {})[field] = array
    expected = {str(iteration) for iteration in record.iterations}
    if set(by_iteration) != expected:
        raise InputError(
            f"{path}: expected the iterations {sorted(record.iterations)} (field queries.iterations), found "
            f"{sorted(by_iteration)}"
        )
    return {
        int(iteration): PerQuery.from_arrays(fields, f"{path} (iteration {iteration})")
        for iteration, fields in by_iteration.items()
    }
