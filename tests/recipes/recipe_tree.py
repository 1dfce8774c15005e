"""A small recipe as a settings tree, and a file of it: what the schema, hashing and tier tests load."""

import yaml

BASE = {
    "id": "demo",
    "paper": "cgml",
    "targets": [{"table": "table3", "row": "cgml-cub200"}],
    "data": {"dataset": "cub200"},
    "model": {"backbone": "googlenet", "embedding_dim": 512},
    "loss": {"name": "triplet", "params": {"margin": 0.1}},
    "sampler": {"name": "pk", "params": {"classes_per_batch": 8, "images_per_class": 4}},
    "optimizer": {"name": "adam", "lr": 1e-5},
    "schedule": {"name": "multistep", "milestones": [1000, 2000], "gamma": 0.5},
    # precision: bf16, the default when the hashes were pinned
    "training": {"iterations": 4000, "eval_every": 500, "precision": "bf16"},
}


# BASE's hash before model.width, model.measure_bn_batches, training.evaluate_at_start and data.pipeline "auto" existed
BASE_HASH = "f09a0555d0e155245d78d3b19e3565bba3b6e1714aae1f54d6ed18b672cad4c4"


def write_recipe(tmp_path, tree):
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(tree))
    return path
