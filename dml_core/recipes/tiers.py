"""How a tier shrinks a recipe: ``smoke`` to the embedded glyphs (does it run), ``mini`` to the embedded_mini
glyphs with a narrowed backbone (does it learn), ``full`` as written. Each shrink is a function of the recipe
alone (its ``smoke:`` and ``mini:`` settings say how), so a run resolves to the same recipe wherever it is
shrunk."""

from __future__ import annotations

from typing import Any

from dml_core.errors import InputError
from dml_core.recipes.settings import Recipe
from dml_core.tier import Tier


def smoke_version(recipe: Recipe) -> Recipe:
    """The same recipe shrunk for a CPU smoke run on the embedded dataset (results are marked smoke); its
    ``data.pipeline`` stays (the embedded set's image cache is built on first use)."""
    smoke = recipe.smoke
    tree = _on_embedded_glyphs(recipe, "embedded", smoke.image_size, smoke.resize, smoke.sampler_params)
    tree["training"].update(
        iterations=smoke.iterations, epochs=None, eval_every=smoke.eval_every, checkpoint_every=smoke.eval_every
    )
    _scale_schedule(tree, recipe, smoke.iterations, "iteration")
    return Recipe.model_validate(tree)


# Training batches the mini tier measures a random backbone's BN statistics on before its untrained evaluation.
MINI_BN_BATCHES = 8


def mini_version(recipe: Recipe) -> Recipe:
    """The same recipe shrunk for the CPU mini tier (``MiniSettings``): evaluated before the first update and at
    the end, on the ``embedded_mini`` glyphs, its backbone narrowed to ``mini.backbone_width`` (results are
    marked mini and record the width)."""
    mini = recipe.mini
    unit, length = ("epoch", mini.epochs) if mini.epochs else ("iteration", mini.iterations)
    if unit == "epoch" and not recipe.training.epochs:
        raise InputError(f"recipe {recipe.id}: field mini.epochs: the recipe counts iterations; give mini.iterations")
    if recipe.model.freeze_backbone_epochs and unit != "epoch":
        raise InputError(
            f"recipe {recipe.id}: field mini.iterations: the backbone warm-up counts epochs "
            f"(model.freeze_backbone_epochs {recipe.model.freeze_backbone_epochs}); give mini.epochs so that it "
            "keeps its share of the run"
        )
    tree = _on_embedded_glyphs(recipe, "embedded_mini", mini.image_size, mini.resize, mini.sampler_params)
    tree["model"]["width"] = mini.backbone_width
    tree["model"]["weights"] = mini.start  # "random" or "glyph-pretrained" (dml_core.training.builders.build_model)
    # A random backbone's BN statistics are measured on the glyphs; a glyph-pretrained one keeps its own, as
    # ImageNet weights do.
    tree["model"]["measure_bn_batches"] = MINI_BN_BATCHES if mini.start == "random" else 0
    metrics = tree["evaluation"]["metrics"]  # the mini page reports R@1 and NMI whatever the paper printed
    tree["evaluation"]["metrics"] = metrics + [metric for metric in ("recall", "nmi") if metric not in metrics]
    # The backbone's rate scaled; the new layers' and the loss's rates kept (their multipliers are relative to it).
    scale = mini.trunk_lr_scale
    tree["optimizer"]["lr"] = recipe.optimizer.lr * scale
    tree["optimizer"]["new_layer_lr_multiplier"] = recipe.optimizer.new_layer_lr_multiplier / scale
    tree["loss"]["lr_multiplier"] = recipe.loss.lr_multiplier / scale
    tree["training"].update(
        iterations=mini.iterations,
        epochs=mini.epochs,
        eval_every=length,
        checkpoint_every=length,
        evaluate_at_start=True,
    )
    _scale_schedule(tree, recipe, length, unit)
    if recipe.model.freeze_backbone_epochs:  # the warm-up keeps its share of the run (at least one epoch)
        share = recipe.model.freeze_backbone_epochs / recipe.training.epochs
        tree["model"]["freeze_backbone_epochs"] = max(1, round(share * length))
    return Recipe.model_validate(tree)


def _on_embedded_glyphs(
    recipe: Recipe, dataset: str, image_size: int, resize: int, sampler_params: dict[str, Any]
) -> dict[str, Any]:
    """The recipe's settings moved to a generated glyph set on the CPU: random init, fp32, no loader workers,
    ``image_size`` crops of images resized to ``resize``, the sampler's parameters updated."""
    tree = recipe.model_dump(mode="python")
    tree["data"]["dataset"] = dataset
    tree["data"]["num_workers"] = 0
    tree["data"]["transforms"].update(crop_size=image_size, resize=resize)
    tree["model"]["weights"] = "random"
    tree["sampler"]["params"].update(sampler_params)
    tree["training"]["precision"] = "fp32"
    tree["evaluation"]["recall_ks"] = [1, 2, 4, 8]
    return tree


def _scale_schedule(tree: dict[str, Any], recipe: Recipe, length: int, unit: str) -> None:
    """Keep the schedule's shape: each decay point keeps its share of the run, counted in ``unit`` over a run of
    ``length`` of them."""
    schedule = recipe.schedule
    if schedule.name == "constant":
        return
    if unit == "epoch" and schedule.unit != "epoch":
        raise InputError(f"recipe {recipe.id}: field mini.epochs: the schedule counts iterations; give mini.iterations")
    total = recipe.training.iterations if schedule.unit == "iteration" else recipe.training.epochs
    scale = length / max(total or length, 1)
    tree["schedule"]["unit"] = unit
    if schedule.step_size:
        tree["schedule"]["step_size"] = max(1, round(schedule.step_size * scale))
    tree["schedule"]["milestones"] = [max(1, round(m * scale)) for m in schedule.milestones]


# How each tier shrinks a recipe.
TIER_VERSIONS = {Tier.FULL: lambda recipe: recipe, Tier.SMOKE: smoke_version, Tier.MINI: mini_version}
