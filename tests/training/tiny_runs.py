"""The smallest training runs the trainer makes, for the tests of what goes on around training (devices, loader
workers, determinism, timing): a narrow backbone on the embedded glyphs, one iteration, one evaluation."""

import copy
from pathlib import Path

import yaml

TINY_RUN = {
    "id": "tiny",
    "data": {"dataset": "embedded", "num_workers": 0,
             "transforms": {"resize": 40, "crop_size": 32, "train_crop": "random_crop"}},
    "model": {"backbone": "bn_inception", "weights": "random", "width": 0.125, "embedding_dim": 16},
    "loss": {"name": "multi_similarity"},
    "sampler": {"name": "pk", "params": {"classes_per_batch": 4, "images_per_class": 2}},
    "optimizer": {"name": "adam", "lr": 1e-3},
    "training": {"iterations": 1, "eval_every": 1, "checkpoint_every": 1, "eval_batch_size": 512},
    "evaluation": {"recall_ks": [1], "metrics": ["recall"]},
}  # fmt: skip


def tiny_run(**sections: dict) -> dict:
    """``TINY_RUN`` with the settings of the named sections updated: ``tiny_run(training={"iterations": 6})``."""
    tree = copy.deepcopy(TINY_RUN)
    for section, settings in sections.items():
        tree[section].update(settings)
    return tree


def recipe_file(folder: Path, tree: dict) -> Path:
    path = Path(folder) / "recipe.yaml"
    path.write_text(yaml.safe_dump(tree))
    return path
