"""Getting what a paper's selected runs need and this machine lacks, before anything trains (``dml reproduce`` does it
unless ``--no-download``): the weight file of each backbone those runs load pretrained, and of no other; each dataset
they read that is not prepared (``data.prepare``, from the catalog's sources: all or nothing, downloads resumed);
each UCI set of the linear runs that a route gives. Each fetch says what it gets, each failure one line; what
stays missing is the preflight's to report with the runs it blocks (``--skip-missing`` trains the others)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from dml_core.data.index import index_path
from dml_core.data.prepare import prepare
from dml_core.data.registry import DatasetSpec
from dml_core.errors import InputError
from dml_core.linear.uci import cache_path, get_uci_dataset, prepare_uci
from dml_core.models.weights import WEIGHT_FILES, WeightFile, downloads_allowed, find_weight_file, resolve_weight_file
from dml_core.output_paths import data_root as resolve_data_root
from dml_core.runner.linear import LinearRun
from dml_core.training.run_description import PlannedRun


def pretrained_backbones(plans: Sequence[PlannedRun]) -> list[str]:
    """The backbones whose published weight files ``plans`` load (``model.weights: pretrained``), sorted."""
    return sorted({plan.recipe.model.backbone for plan in plans if plan.recipe.model.weights == "pretrained"})


def missing_weight_files(plans: Sequence[PlannedRun]) -> list[WeightFile]:
    """The weight files ``plans`` load that are in none of the places looked in (``weights.weight_file_places``)."""
    files = [WEIGHT_FILES[backbone] for backbone in pretrained_backbones(plans)]
    return [entry for entry in files if find_weight_file(entry) is None]


def unprepared_datasets(plans: Sequence[PlannedRun], data_root: Path | None) -> list[tuple[DatasetSpec, Path]]:
    """Each (dataset, data root) that ``plans`` read and that has no index there (generated sets aside: a run
    generates them)."""
    found: dict[tuple[str, Path], tuple[DatasetSpec, Path]] = {}
    for plan in plans:
        spec, root = plan.dataset, resolve_data_root(data_root, plan.recipe.data.root)
        if not spec.generated and not index_path(root / spec.name).is_file():
            found.setdefault((spec.name, root), (spec, root))
    return list(found.values())


def unprepared_uci_sets(runs: Sequence[LinearRun], data_root: Path | None) -> list[str]:
    """The UCI sets the linear runs read that are not prepared and that a route gives (a registry package, the
    suite's own generator, OpenML; not a user's CSV)."""
    root = resolve_data_root(data_root)
    sets = {get_uci_dataset(run.plan.dataset).name: get_uci_dataset(run.plan.dataset) for run in runs}
    return [
        name
        for name, dataset in sets.items()
        if dataset.routes and not dataset.bundled and not cache_path(name, root).is_file()
    ]


def fetch_missing_inputs(
    plans: Sequence[PlannedRun],
    linear_runs: Sequence[LinearRun],
    data_root: Path | None,
    log: Callable[[str], None] = print,
    *,
    progress: bool = True,
) -> list[str]:
    """Fetch every input ``plans`` and ``linear_runs`` need and lack (weight files first: they are small); return
    one line for each that could not be had (offline: one line saying downloads are off, and nothing is tried)."""
    weights = missing_weight_files(plans)
    datasets = unprepared_datasets(plans, data_root)
    uci = unprepared_uci_sets(linear_runs, data_root)
    wanted = [f"weight file {entry.file_name}" for entry in weights] + [f"dataset {spec.name}" for spec, _ in datasets]
    wanted += [f"UCI set {name}" for name in uci]
    if not wanted:
        return []
    if not downloads_allowed():
        line = f"not fetched (downloads are off: HF_HUB_OFFLINE or DML_OFFLINE is set): {', '.join(wanted)}"
        log(f"inputs: {line}")
        return [line]
    log(f"inputs: fetching {', '.join(wanted)}")
    root = resolve_data_root(data_root)
    fetches = [(f"weight file {entry.file_name}", partial(_weight, entry)) for entry in weights]
    fetches += [(f"dataset {spec.name}", partial(_dataset, spec, where, log, progress)) for spec, where in datasets]
    fetches += [(f"UCI set {name}", partial(_uci, name, root, log, progress)) for name in uci]
    failures = [_fetch(what, get, log) for what, get in fetches]
    return [failure for failure in failures if failure]


def _fetch(what: str, get: Callable[[], str], log: Callable[[str], None]) -> str | None:
    try:
        log(f"  {what}: {get()}")
    except InputError as error:
        log(f"  {what}: NOT FETCHED: {error}")
        return f"{what}: {error}"
    return None


def _weight(entry: WeightFile) -> str:
    path, sha256 = resolve_weight_file(entry)
    return f"fetched into {path} (sha256 {sha256})"


def _uci(name: str, root: Path, log: Callable[[str], None], progress: bool) -> str:
    return f"cached at {prepare_uci(name, root, progress=progress, report=lambda line: log(f'    {line}'))}"


def _dataset(spec: DatasetSpec, root: Path, log: Callable[[str], None], progress: bool) -> str:
    prepared = prepare(spec, root, progress=progress, report=lambda line: log(f"    {line}"))
    counts = ", ".join(f"{split} {count:,}" for split, count in prepared.images_per_split.items())
    for note in prepared.notes:
        log(f"    note: {note}")
    return f"prepared under {root} ({counts} images)"
