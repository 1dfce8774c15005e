"""Whether two of the fair study's runs trained on the same batches, read from what their results files record.

A batch sampler's batches are a function of the training labels, its name and parameters, and the seed alone
(``dml_core.data.samplers``: deterministic for (seed, epoch); ``training.seed`` seeds it), and each image's crop a
function of (seed, epoch, batch, slot) (``dml_core.pipeline.seeded_batches``). Two runs that record the same
sampler, seed and training split therefore drew the same images in the same order with the same crops, whatever
their losses: their seed is a shared source of variation, which a paired comparison takes out
(``dml_core.tables.fair.verdicts``). tests/tables/fair/test_batches.py checks this rule against the batches the
study's samplers build.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from dml_core.results import ResultsFile

BatchStream = str  # canonical JSON of what decides a run's batches


def batch_stream(content: Mapping[str, Any], train_index: str | None = None) -> BatchStream:
    """What decides the batches of a run whose expanded recipe is ``content`` (``recipe.model_dump(mode="json")``,
    as results files record it): its sampler, seed, data set and validation split (the classes held out of
    training), and the hash of the training split's index where the run recorded one."""
    data = content.get("data", {})
    decisive = {
        "sampler": content.get("sampler"),
        "seed": content.get("training", {}).get("seed"),
        "dataset": data.get("dataset"),
        "validation": data.get("validation"),
        "train_index": train_index,
    }
    return json.dumps(decisive, sort_keys=True)


def results_batch_stream(results: ResultsFile) -> BatchStream:
    """:func:`batch_stream` of a results file (its recipe as run, and its training split's index hash)."""
    return batch_stream(results.recipe.content, (results.index_hashes or {}).get("train"))
