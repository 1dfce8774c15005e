"""A recipe's content hash: what changes its numbers, in canonical form, hashed with sha256; and the smoke and
mini hashes of how a tier shrinks it.

The tables below keep every earlier run's hash: a field or reading added after runs were hashed is left out of
the tree at the value that computes what those runs computed. The recipe's own methods (``Recipe.content_hash``
and its kin) call these functions; this module imports the readings' naming rule only, never the schema."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from dml_core.recipes.assumptions import is_shared_reading

if TYPE_CHECKING:
    from dml_core.recipes.settings import Recipe

# Recipe fields and sub-fields that do not change a run's numbers (left out of its content hash).
NOT_COMPUTATION = ("id", "paper", "targets", "description", "assumptions", "variant", "smoke", "mini")
NOT_COMPUTATION_FIELDS = {"data": ("root", "num_workers"), "training": ("checkpoint_every", "sync_every")}
# Fields added after runs were hashed, with the default that means "as before": hashed only when set otherwise.
HASHED_UNLESS_DEFAULT = {
    ("data", "validation"): None,
    ("model", "width"): 1.0,
    ("model", "measure_bn_batches"): 0,
    ("training", "evaluate_at_start"): False,
    ("training", "deterministic"): True,
    ("training", "cuda_graphs"): False,
}
# Readings added after the runs they apply to were hashed, with the value that computes what those runs computed.
READINGS_HASHED_UNLESS_EARLIER = {
    "cgml.reduction": "mean",
    "drml.weight-decay": "coupled",
    "drml.branch-weighting": "mean",
    "fair.search-point": "paper",
}


def sha256_of(tree: Any) -> str:
    canonical = json.dumps(tree, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def computation(recipe: Recipe) -> dict[str, Any]:
    """What changes the numbers, in canonical form: the settings and the readings, without prose, targets,
    ids, the smoke and mini settings (``smoke_hash``, ``mini_hash``) or what only says where or how fast
    (data root, workers, checkpoint interval, host-sync interval). Fields added later are left out at their
    default, so the runs that do not use them keep their hashes."""
    tree = recipe.model_dump(mode="json", exclude=set(NOT_COMPUTATION))
    for section, keys in NOT_COMPUTATION_FIELDS.items():
        for key in keys:
            tree[section].pop(key, None)
    # Hashed by what it computes: both pipelines give the same batches on random crops. "pil" stays in the tree
    # (every hash from before "auto" existed keeps its value).
    tree["data"]["pipeline"] = recipe.data.hashed_pipeline
    # Hashed as the flag it replaced (bf16: true | false), so every earlier run keeps its hash.
    tree["training"]["bf16"] = tree["training"].pop("precision") == "bf16"
    # A shared reading is hashed by the settings its value sets (training.precision, evaluation.selection), which
    # are hashed themselves: runs hashed before it existed keep their hashes.
    tree["readings"] = {name: value for name, value in tree["readings"].items() if not is_shared_reading(name)}
    # A paper's reading added after its runs were hashed is hashed only at another value than "as before" (its
    # default, whose settings are those of the earlier runs); its other values set settings of their own.
    for name, earlier in READINGS_HASHED_UNLESS_EARLIER.items():
        if tree["readings"].get(name) == earlier:
            del tree["readings"][name]
    for (section, key), default in HASHED_UNLESS_DEFAULT.items():
        if tree[section].get(key) == default:
            del tree[section][key]
    return tree


def content_hash(recipe: Recipe) -> str:
    """sha256 of ``computation(recipe)``: rewording an assumption or retargeting a row leaves it unchanged."""
    return sha256_of(computation(recipe))


def hashes_of_this_computation(recipe: Recipe) -> tuple[str, ...]:
    """``content_hash(recipe)`` and the hash earlier versions recorded for the same computation: before the
    pipeline was hashed by what it computes, a run on the cache pipeline was hashed with "cache" even where
    its batches were the PIL path's. Results files and checkpoints that carry either are this run's."""
    if not recipe.data.cache_gives_pil_batches:  # there the cache is another computation, hashed as such
        return (content_hash(recipe),)
    earlier = computation(recipe)
    earlier["data"]["pipeline"] = "cache"
    return (content_hash(recipe), sha256_of(earlier))


def smoke_hash(recipe: Recipe) -> str:
    """sha256 of the smoke settings (how ``--smoke`` shrinks the recipe)."""
    return sha256_of(recipe.smoke.model_dump(mode="json"))


def mini_hash(recipe: Recipe) -> str:
    """sha256 of the mini settings (how ``--mini`` shrinks the recipe); ``start`` only where it is not
    "random", so the hashes from before it existed still hold."""
    settings = recipe.mini.model_dump(mode="json")
    if settings["start"] == "random":
        del settings["start"]
    return sha256_of(settings)
