"""Whether two of the fair study's runs trained on the same batches under the same code, read from what their results
files record.

A batch sampler's batches are a function of the training labels, its name and every parameter it was built with,
and the seed alone (``dml_core.data.samplers``: deterministic for (seed, epoch); ``training.seed`` seeds it), and each
image's crop a function of (seed, epoch, batch, slot) (``dml_core.pipeline.seeded_batches``). Two runs whose results
files record the same sampler (``sampler``: name, seed, every parameter with its defaults filled in, and what it
derived, such as damlrrm's shuffled pool), the same training split and the same code (every start of each run at
one committed version, with the same data-loading pipeline and the same numpy, torch and torchvision) therefore drew
the same images in the same order with the same crops, whatever their losses: their seed is a shared source of
variation, which a paired comparison takes out (``dml_core.tables.fair.verdicts``). Anything less is not shown to
share batches: a file that does not record its sampler, two commits, uncommitted code. tests/tables/fair/
test_batches.py checks the sampler part of the rule against the batches the study's samplers build.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from dml_core.provenance import git_starts
from dml_core.results import ResultsFile

BatchStream = str  # canonical JSON of what decides a run's batches
# the packages whose random streams and image operations draw the batches and their crops
PIPELINE_PACKAGES = ("numpy", "torch", "torchvision")
NOT_RECORDED = "the sampler as built is not recorded"


def batch_stream(sampler: Mapping[str, Any], content: Mapping[str, Any], train_index: str | None = None) -> BatchStream:
    """What decides the batches of a run: its ``sampler`` as built (a results file's ``sampler`` record), the data
    set and validation split of its expanded recipe ``content`` (the classes held out of training), and the hash
    of the training split's index where the run recorded one."""
    data = content.get("data", {})
    decisive = {"sampler": dict(sampler), "dataset": data.get("dataset"), "validation": data.get("validation"),
                "train_index": train_index}  # fmt: skip
    return json.dumps(decisive, sort_keys=True)


def results_batch_stream(results: ResultsFile) -> BatchStream | None:
    """:func:`batch_stream` of a results file; None where it does not record its sampler as built."""
    if results.sampler is None:
        return None
    return batch_stream(results.sampler.model_dump(), results.recipe.content, (results.index_hashes or {}).get("train"))


def code_version(results: ResultsFile) -> dict[str, Any]:
    """The code and pipeline a run trained with: the git state of each of its starts, the data-loading pipeline
    and the versions of ``PIPELINE_PACKAGES``."""
    loading = results.environment.get("data_loading") or {}
    return {
        "git": [(state.get("commit"), state.get("dirty")) for state in git_starts(results.git)],
        "pipeline": loading.get("pipeline"),
        "packages": {name: results.environment.get(name) for name in PIPELINE_PACKAGES},
    }


def _short(commit: Any) -> str:
    return str(commit)[:7]


def why_not_shared(ours: ResultsFile, reference: ResultsFile) -> str:
    """Why two runs are not shown to have trained on the same batches under the same code; "" where they are."""
    streams = (results_batch_stream(ours), results_batch_stream(reference))
    if None in streams:
        return NOT_RECORDED
    if streams[0] != streams[1]:
        return "other batches: another sampler, seed or training split"
    mine, theirs = code_version(ours), code_version(reference)
    states = mine["git"] + theirs["git"]
    if any(dirty is not False for _, dirty in states):
        return "uncommitted or unknown code"
    if len({commit for commit, _ in states}) > 1:
        commits = " / ".join(", ".join(_short(c) for c, _ in version["git"]) for version in (mine, theirs))
        return f"other code: {commits}"
    if mine["pipeline"] != theirs["pipeline"]:
        return f"another data-loading pipeline: {mine['pipeline']} / {theirs['pipeline']}"
    if mine["packages"] != theirs["packages"]:
        names = [name for name in PIPELINE_PACKAGES if mine["packages"][name] != theirs["packages"][name]]
        return "other package versions: " + ", ".join(
            f"{name} {mine['packages'][name]} / {theirs['packages'][name]}" for name in names
        )
    return ""
