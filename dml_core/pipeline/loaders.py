"""DataLoaders whose workers are safe in a process that uses CUDA and live as long as the run that made them.

Start method: a forked worker inherits the parent's CUDA objects, and one that frees a CUDA tensor of an earlier run
(``dml reproduce`` trains many runs in one process) aborts with "CUDA error: initialization error". Workers
therefore start from the forkserver, a fresh interpreter that never touched CUDA, which preloads the modules the
datasets unpickle into, so that no worker imports torch and the package again (the start times: docs/performance.md).

Lifetime: one loader per run for the training batches and one for the test set, their workers kept between epochs
and evaluations (``persistent_workers``); ``close`` lets them go at the end of the run. ``data.num_workers: auto``
(the default) is this process's share of the machine's cores less one for the training process itself, at most
``MAX_AUTO_WORKERS``; the results file records the number used.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable

import torch
from torch.utils.data import DataLoader

from dml_core.cpu_cores import available_cores
from dml_core.data.transforms import ToModelInput
from dml_core.errors import InputError

WORKER_START_METHOD = "forkserver"
# What a worker needs to unpickle the training and test datasets, imported once in the forkserver.
WORKER_PRELOAD = ["dml_core.data", "dml_core.pipeline.seeded_batches"]
# Enough PIL-path workers to feed one fast GPU (the per-worker throughput against a GPU's: docs/performance.md).
MAX_AUTO_WORKERS = 16


def loader_workers(setting: int | str) -> int:
    """``data.num_workers`` as a number: ``auto`` is the cores this process may use, shared with the other
    training processes of this machine (torchrun's LOCAL_WORLD_SIZE), less one for the process itself, at most
    ``MAX_AUTO_WORKERS``.

    >>> loader_workers(3)
    3
    """
    if setting != "auto":
        return int(setting)
    text = os.environ.get("LOCAL_WORLD_SIZE", "1")
    if not text.isdigit() or int(text) < 1:
        raise InputError(f"environment variable LOCAL_WORLD_SIZE: expected a positive integer, found {text!r}")
    return max(0, min(MAX_AUTO_WORKERS, available_cores() // int(text) - 1))


def worker_context() -> multiprocessing.context.BaseContext:
    context = multiprocessing.get_context(WORKER_START_METHOD)
    context.set_forkserver_preload(WORKER_PRELOAD)  # read when the forkserver starts (once per process)
    return context


def batch_to_model_input(
    device: torch.device, to_model_input: ToModelInput | None
) -> Callable[[torch.Tensor], torch.Tensor]:
    """A loader's image batch -> the model's input on ``device``: copied there (asynchronously, from the loader's
    pinned memory) and, for uint8 images, converted there by ``to_model_input``; None: the images are the model's
    input already."""
    if to_model_input is None:
        return lambda images: images.to(device, non_blocking=True)
    on_device = to_model_input.to(device)
    return lambda images: on_device(images.to(device, non_blocking=True))


def kept_loader(dataset, *, num_workers: int, device: torch.device, **options) -> DataLoader:
    """A DataLoader over ``dataset`` (``options``: batch_size, batch_sampler, ...) whose workers, if any, start from
    the forkserver and are kept between iterations; pinned memory where batches go to a GPU."""
    if num_workers:
        options.update(multiprocessing_context=worker_context(), persistent_workers=True)
    return DataLoader(dataset, num_workers=num_workers, pin_memory=device.type == "cuda", **options)


def loading_record(setting: int | str, num_workers: int) -> dict:
    """How the run loaded its data, for the results file."""
    return {
        "num_workers": num_workers,
        "num_workers_setting": setting,
        "worker_start_method": WORKER_START_METHOD if num_workers else None,
    }
