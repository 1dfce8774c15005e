"""Evaluating a model on its recipe's test split: embed every test image, then ``dml_core.evaluation``; and
keeping the per-query terms of the evaluations a selection rule picks, for the results file's companion."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Subset

from dml_core.data.registry import get_spec
from dml_core.evaluation import Evaluation, KMeansConfig, evaluate
from dml_core.evaluation.per_query import PerQuery
from dml_core.output_paths import data_root as resolve_data_root
from dml_core.pipeline.loaders import batch_to_model_input, kept_loader, loader_workers
from dml_core.query_terms_file import write_query_terms
from dml_core.recipes.settings import Recipe
from dml_core.results import select_every_rule
from dml_core.training import builders
from dml_core.training.checkpoint import load_checkpoint
from dml_core.training.distributed import SINGLE_PROCESS, Process


class NonFiniteEmbeddingsError(RuntimeError):
    """The model produced NaN or infinite embeddings (a diverged run, not bad user input)."""


def kmeans_config(recipe: Recipe) -> KMeansConfig:
    settings = recipe.evaluation
    return KMeansConfig(settings.kmeans_backend, settings.kmeans_iterations, settings.kmeans_seed)


class TestSetEmbedder:
    """This process's share of the test set (all of it with one process), embedded for every evaluation of a run
    through one kept loader (``pipeline.loaders.kept_loader``): its workers start at the first evaluation and stay until
    ``close``."""

    def __init__(
        self, test_set: builders.TestSet, recipe: Recipe, device: torch.device, process: Process = SINGLE_PROCESS
    ) -> None:
        dataset = test_set.dataset
        if process.active:
            dataset = Subset(dataset, process.slice_of(len(dataset)))
        self.model_input = batch_to_model_input(device, test_set.to_model_input)
        workers = loader_workers(recipe.data.num_workers)
        self.loader = kept_loader(
            dataset, batch_size=recipe.training.eval_batch_size, shuffle=False, num_workers=workers, device=device
        )

    def __call__(self, model) -> np.ndarray:
        """Embeddings of every item in order (model in eval mode, no gradients), in fp32 whatever ``training.precision``
        says: bf16 keeps 3 significant digits, which would reorder near neighbours the exact search then ranks."""
        was_training = model.training
        model.eval()
        chunks = []
        with torch.no_grad():
            for images, _, _ in self.loader:
                chunks.append(model.embed(self.model_input(images)).float().cpu())
        model.train(was_training)
        return torch.cat(chunks).numpy()

    def close(self) -> None:
        """Stop the workers (they go with the loader's last reference)."""
        self.loader = None


def evaluate_model(
    model,
    test_set: builders.TestSet,
    recipe: Recipe,
    device: torch.device,
    process: Process = SINGLE_PROCESS,
    embedder: TestSetEmbedder | None = None,
    recall_ks: Sequence[int] | None = None,
) -> Evaluation:
    """The recipe's evaluation protocol (metrics, K list, normalisation, k-means) on the test set.

    With several processes each embeds one contiguous slice of the test set; the embeddings are gathered once
    and rank 0 computes the metrics, which every rank then receives (an error there is raised on every rank).
    ``embedder``: a run's own, kept between its evaluations; None: one for this evaluation only. ``recall_ks``:
    another K list than the recipe's (a rehearsal's: ``recall_ks_within``)."""
    if embedder is None:
        with closing(TestSetEmbedder(test_set, recipe, device, process)) as once:
            return evaluate_model(model, test_set, recipe, device, process, once, recall_ks)
    embeddings = embedder(model)
    if process.active:
        embeddings = process.gather_rows(torch.from_numpy(embeddings).to(device)).cpu().numpy()
    outcome: Evaluation | Exception | None = None
    if process.is_main:
        try:
            outcome = _evaluate_embeddings(embeddings, test_set, recipe, device, recall_ks)
        except Exception as error:  # every rank must learn of it, or the others wait forever
            if not process.active:
                raise
            outcome = error
    outcome = process.broadcast(outcome, long_wait=True)  # rank 0 may cluster for longer than a collective waits
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


def recall_ks_within(recall_ks: Sequence[int], evaluation_set: builders.TestSet) -> list[int]:
    """``recall_ks`` without the Ks beyond what a query of ``evaluation_set`` can retrieve: a rehearsal's K list,
    whose test split may be a few images (CUB's K = 32 needs 33). A run of the recipe keeps its whole list, and a K
    its test set cannot have stays an error there.

    >>> tiny = builders.TestSet(None, np.array([0, 0, 1, 1, 1, 2]), None, None)
    >>> recall_ks_within([1, 2, 4, 8, 16, 32], tiny)
    [1, 2, 4]
    """
    if evaluation_set.gallery_mask is not None:
        retrievable = int(np.count_nonzero(evaluation_set.gallery_mask))
    else:
        retrievable = len(evaluation_set.labels) - 1  # a query's own row is excluded
    return [k for k in recall_ks if k <= retrievable]


def _evaluate_embeddings(
    embeddings: np.ndarray,
    test_set: builders.TestSet,
    recipe: Recipe,
    device,
    recall_ks: Sequence[int] | None = None,
) -> Evaluation:
    bad_rows = int((~np.isfinite(embeddings).all(1)).sum())
    if bad_rows:
        raise NonFiniteEmbeddingsError(f"{bad_rows} of {len(embeddings)} test embeddings are NaN or infinite")
    return evaluate(
        embeddings,
        test_set.labels,
        builders.recall_ks(recipe) if recall_ks is None else recall_ks,
        metrics=recipe.evaluation.metrics,
        normalize=recipe.evaluation.normalize,
        query_mask=test_set.query_mask,
        gallery_mask=test_set.gallery_mask,
        kmeans=kmeans_config(recipe),
        device=device,
    )


class PickedQueryTerms:
    """The per-query terms of the evaluations that some selection rule picks so far (best test R@1, the last one).

    A later evaluation can take a pick over but never gives one back to an evaluation passed over before, so
    every other evaluation's terms are let go at once: at most two evaluations' terms are held (and checkpointed).
    """

    def __init__(self, state: dict | None = None) -> None:
        self.terms = {int(i): PerQuery.from_arrays(arrays, f"checkpoint (per-query terms of iteration {i})")
                      for i, arrays in (state or {}).items()}  # fmt: skip

    def add(self, iteration: int, per_query: PerQuery | None, evaluations: list[dict]) -> None:
        """Keep ``per_query`` of the evaluation at ``iteration`` (the last of ``evaluations``), drop what no rule
        picks any more."""
        if per_query is not None:
            self.terms[iteration] = per_query
        picked = {record["iteration"] for record in select_every_rule(evaluations).values()}
        self.terms = {i: terms for i, terms in self.terms.items() if i in picked}

    def state(self) -> dict[int, dict[str, np.ndarray]]:
        """Plain arrays for the checkpoint (a resumed run keeps the picks of its first part)."""
        return {i: terms.to_arrays() for i, terms in self.terms.items()}

    def write_beside(self, results_path: Path) -> dict | None:
        """Write the companion file of ``results_path``; its record for the results file (None: no terms)."""
        return write_query_terms(results_path, self.terms) if self.terms else None


def evaluate_checkpoint(path: Path, data_root: Path | None = None, device: str | None = None) -> dict:
    """Rebuild the checkpoint's model (its own weights, no pretrained file needed) and evaluate it."""
    state = load_checkpoint(path)
    recipe = Recipe.model_validate({**state["recipe"], "model": {**state["recipe"]["model"], "weights": "random"}})
    device = SINGLE_PROCESS.device(device)
    model = builders.build_model(recipe)
    model.load_state_dict(state["model"])
    model.to(device)
    dataset = get_spec(recipe.data.dataset)
    _, _, test_set, validation_set = builders.build_datasets(
        recipe, dataset, model, resolve_data_root(data_root, recipe.data.root)
    )
    result = evaluate_model(model, test_set, recipe, device)
    validation = {}
    if validation_set is not None:  # the held-out training classes' numbers too, as the run recorded them
        validation = {"validation_metrics": evaluate_model(model, validation_set, recipe, device).metrics}
    return {
        "checkpoint": str(path),
        "recipe_id": state["recipe_id"],
        "recipe_sha256": state["recipe_sha256"],
        "iteration": state["iteration"],
        **result.to_dict(),
        **validation,
    }
