"""The disk a paper's runs need, stage by stage: each dataset's archives and extracted files, the uint8 cache of its
training split, a checkpoint and a results file per run. One small table of per-dataset figures (each with its
source); everything else is computed from the recipe: the cache from the image headers where the data is here, the
checkpoint from the model's state built on the meta device (no memory, no weights)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from dml_core.data.registry import DatasetSpec
from dml_core.recipes.optimizers import state_slots
from dml_core.recipes.settings import Recipe


@dataclass(frozen=True)
class DatasetBytes:
    """A dataset's published archives as downloaded, and their files once extracted."""

    archives: int
    extracted: int


# Archive sizes: tensorflow-datasets' url_checksums files (the bytes of each URL it downloads). Extracted sizes are
# estimated as the archives': the images are JPEGs, which tar and zip do not compress further.
DATASET_BYTES: dict[str, DatasetBytes] = {
    # CUB_200_2011.tgz: 1,150,585,339 bytes (url_checksums/caltech_birds2011.txt)
    "cub200": DatasetBytes(archives=1_150_585_339, extracted=1_150_585_339),
    # cars_train.tgz 979,269,282 + cars_test.tgz 977,350,468 bytes (url_checksums/cars196.txt): the 16,185 JPEGs
    # every layout of Cars196 holds (car_ims.tgz, the devkit's halves, the class-folder copies)
    "cars196": DatasetBytes(archives=1_956_619_750, extracted=1_956_619_750),
    # Stanford_Online_Products.zip: 3,083,860,082 bytes (url_checksums/stanford_online_products.txt)
    "sop": DatasetBytes(archives=3_083_860_082, extracted=3_083_860_082),
    # In-Shop's img.zip: no published size found (the images are 256 x 256, mmfashion's In-Shop documentation)
}

# A results file and its per-query companion (``query_terms_file``): the JSON holds one record per evaluation, the
# companion each test image's compressed terms for at most three picked evaluations (their measured sizes:
# docs/evaluation.md, "Intervals over queries"). Bounds above them: 100 KB of JSON, and 4 bytes a test image for
# each of three evaluations.
RESULTS_JSON_BYTES = 100_000
QUERY_TERM_BYTES_PER_IMAGE = 3 * 4


def cache_lower_bound(images: int, resize_mode: str, resize: int) -> int:
    """The uint8 cache of ``images`` images without reading them: exact when squashed to ``resize`` x ``resize``,
    a lower bound when the shorter side is resized (the longer side is at least as long).

    >>> cache_lower_bound(59_551, "squash", 256)
    11708203008
    """
    return images * 3 * resize * resize


def training_images(spec: DatasetSpec) -> int:
    """The images of a dataset's training split (the counts every prepared copy is checked against)."""
    return spec.splits["train"].images


def evaluated_images(spec: DatasetSpec) -> int:
    """The images a run evaluates on (In-Shop: query and gallery)."""
    return sum(counts.images for split, counts in spec.splits.items() if split != "train")


def results_bytes(spec: DatasetSpec) -> int:
    """About what one run's results file and its per-query companion take."""
    return RESULTS_JSON_BYTES + QUERY_TERM_BYTES_PER_IMAGE * evaluated_images(spec)


def optimiser_slots(recipe: Recipe) -> int:
    """The state tensors the recipe's optimiser keeps per trainable parameter."""
    return state_slots(recipe.optimizer.name, recipe.optimizer.momentum)


def checkpoint_bytes(recipe: Recipe) -> int:
    """About what the run's checkpoint takes: the model's state and the optimiser's (loss parameters such as proxies
    and the random generators' states are small beside them, and not counted). The model is built on the meta
    device from random weights: shapes only."""
    from dml_core.training.builders import build_model  # here: the runner's plan needs it, not its import

    random_start = recipe.model.model_copy(update={"weights": "random"})
    with torch.device("meta"):
        model = build_model(recipe.model_copy(update={"model": random_start}))
    state = sum(tensor.numel() * tensor.element_size() for tensor in model.state_dict().values())
    parameters = sum(parameter.numel() * 4 for parameter in model.parameters())  # fp32 optimiser state
    return state + optimiser_slots(recipe) * parameters
