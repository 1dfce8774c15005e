"""The training loop: iterations (or epochs) of sampler batches, evaluation every N, atomic checkpoints,
exact resume, and a results file that says how every number was obtained.

Reproducibility: the model is initialised from the run's seed; batch order is a function of (seed, epoch) and
each image's augmentation of (seed, epoch, batch, slot) (``seeded_batches``); the RNG states and every
module's state go into the checkpoint. A run killed at any point and resumed with ``resume=True`` therefore
ends with the same weights and metrics as an uninterrupted one (tested on the CPU with SIGKILL).

Several processes (torchrun, or a Slurm job via submitit): detected from the environment (``distributed``);
the recipe's batch stays the global batch, only rank 0 writes checkpoints and results, and the results file
records the world size.

Speed (CUDA): bf16 autocast for the model (the loss runs in fp32), channels_last, optional torch.compile,
pinned asynchronous copies or the prepared-data path (``data.pipeline: cache``), and no host synchronisation
per iteration: non-finite losses are noticed on the device and read back every ``training.sync_every``.
"""

from __future__ import annotations

import datetime as dt
import itertools
import time
from pathlib import Path

import torch
from tqdm import tqdm

from dml_core import provenance
from dml_core.data.index import dataset_index_hashes
from dml_core.errors import InputError
from dml_core.models import BackboneWarmup
from dml_core.models.batchnorm_statistics import measure_batchnorm_statistics
from dml_core.output_paths import recorded_path
from dml_core.recipe import Recipe
from dml_core.results import SCHEMA_VERSION, ResultsFile, load_results, select, select_every_rule, write_results
from dml_core.training import builders
from dml_core.training.checkpoint import CHECKPOINT_NAME, keeps_finished_checkpoint, load_checkpoint, save_checkpoint
from dml_core.training.distributed import Process
from dml_core.training.evaluation import NonFiniteEmbeddingsError, PickedQueryTerms, evaluate_model
from dml_core.training.non_finite import NonFiniteError, NonFiniteWatch, checkpoint_left
from dml_core.training.setup import build_run
from dml_core.training.step import train_step

RESULTS_NAME = "results.json"

__all__ = ["RESULTS_NAME", "NonFiniteError", "is_finished_run", "train"]


def _rng_state(device: torch.device) -> dict:
    state = {"torch": torch.get_rng_state()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def _restore_rng(states: list[dict] | dict, rank: int, device: torch.device) -> None:
    state = states[rank] if isinstance(states, list) else states  # one state per rank (older checkpoints: one)
    torch.set_rng_state(state["torch"])
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


def train(
    recipe: Recipe,
    out_dir: str | Path,
    *,
    recipe_path: str | Path | None = None,
    overrides: list[str] = (),
    smoke: bool = False,
    mini: bool = False,
    resume: bool = False,
    data_root: str | Path | None = None,
    device: str | None = None,
    progress: bool = True,
    results_path: str | Path | None = None,
    rerun: bool = False,
) -> Path:
    """Run ``recipe`` (already smoke- or mini-shrunk when ``smoke`` or ``mini``) and write its results file; return
    its path.

    ``out_dir`` holds the checkpoint (and, by default, ``results.json``). With ``resume`` an existing
    checkpoint is continued and a finished run (its results file records this recipe's hash) is left as it is;
    with ``rerun`` as well, a finished run is trained again from the start (an interrupted rerun continues) and
    its results file is replaced, atomically, only once the new one is complete. A finished smoke run keeps no
    checkpoint (``keeps_finished_checkpoint``): its results file is what says it is finished. Under torchrun
    (WORLD_SIZE > 1 in the environment) every process calls this; the process group is joined here (and left
    again if this call created it).
    """
    process = Process.from_environment()
    torch_device = process.device(device)
    created_group = process.init_process_group(torch_device)
    try:
        return _train(
            recipe, Path(out_dir), process, torch_device, recipe_path=recipe_path, overrides=overrides, smoke=smoke,
            mini=mini, resume=resume, data_root=data_root, progress=progress, results_path=results_path, rerun=rerun,
        )  # fmt: skip
    finally:
        if created_group:
            torch.distributed.destroy_process_group()


def _train(
    recipe: Recipe,
    out_dir: Path,
    process: Process,
    device: torch.device,
    *,
    recipe_path: str | Path | None,
    overrides: list[str],
    smoke: bool,
    mini: bool,
    resume: bool,
    data_root: str | Path | None,
    progress: bool,
    results_path: str | Path | None,
    rerun: bool,
) -> Path:
    out_dir = Path(out_dir)
    results_path = Path(results_path) if results_path else out_dir / RESULTS_NAME
    checkpoint_path = out_dir / CHECKPOINT_NAME
    settings = recipe.training
    if recipe.evaluation.selection == "best_r1" and "recall" not in recipe.evaluation.metrics:
        raise InputError(f"recipe {recipe.id}: evaluation.selection 'best_r1' needs 'recall' in evaluation.metrics")
    if checkpoint_path.exists() and not resume:
        raise InputError(
            f"{checkpoint_path}: a checkpoint of an earlier run is there; pass --resume to continue it "
            f"or choose another --out"
        )
    if resume and not rerun and is_finished_run(results_path, recipe):
        return results_path

    git_at_start = provenance.git_state()  # the code this process imported, whatever HEAD is at the end
    on_cuda = device.type == "cuda"
    if not on_cuda:
        torch.use_deterministic_algorithms(True, warn_only=True)
    torch.manual_seed(settings.seed)
    root = builders.data_root(recipe, data_root)

    parts = build_run(recipe, root, device, process)
    index_hashes = dataset_index_hashes(root / recipe.data.dataset)  # which images it trains and tests on
    model, loss_fn, optimizer, scheduler = parts.model, parts.loss, parts.optimizer, parts.scheduler
    dense_labels, test_set, batches = parts.dense_labels, parts.test_set, parts.batches
    per_epoch = parts.iterations_per_epoch
    total = settings.iterations or settings.epochs * per_epoch
    unit = per_epoch if settings.epochs else 1
    eval_every, checkpoint_every = settings.eval_every * unit, settings.checkpoint_every * unit
    warmup = BackboneWarmup(recipe.model.freeze_backbone_epochs)
    sharding = parts.sharding
    watch = NonFiniteWatch(device)
    sync_every = settings.sync_every if on_cuda else 1

    iteration, evaluations, protocol = 0, [], {}
    timing = {"train_seconds": 0.0, "data_wait_seconds": 0.0, "compute_seconds": 0.0, "evaluation_seconds": 0.0}
    resumed_runs = 0
    query_terms = PickedQueryTerms()  # the per-query terms of the evaluations a selection rule picks
    git_segments = []  # the git state of each start, this one's appended once the resume point is known
    state = load_checkpoint(checkpoint_path) if resume and checkpoint_path.exists() else None
    if state is not None:
        if state["recipe_sha256"] != recipe.content_hash():
            raise InputError(
                f"{checkpoint_path}: written by recipe {state['recipe_id']} with hash {state['recipe_sha256'][:12]}, "
                f"but this run's recipe hash is {recipe.content_hash()[:12]}; use another --out"
            )
        if rerun and state.get("finished"):
            state = None  # the finished run's: start over (this run's first checkpoint replaces it)
    if state is not None:
        model.load_state_dict(state["model"])
        loss_fn.load_state_dict(state["loss"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        saved_world_size = state.get("world_size", 1)
        if saved_world_size != process.world_size:
            raise InputError(
                f"{checkpoint_path}: written by a run on {saved_world_size} process(es), resumed on "
                f"{process.world_size}; resume with the same number of processes (each restores its own RNG state)"
            )
        _restore_rng(state["rng"], process.rank, device)
        iteration, evaluations, protocol = state["iteration"], state["evaluations"], state["protocol"]
        timing, resumed_runs = state["timing"], state["resumed_runs"] + 1
        git_segments = state.get("git_segments", [])
        query_terms = PickedQueryTerms(state.get("query_terms"))  # older checkpoints: none
    git_segments.append({"from": iteration, **git_at_start})

    def check_finite() -> None:
        try:
            watch.check(f"recipe {recipe.id}")
        except NonFiniteError as error:
            raise NonFiniteError(f"{error}; {checkpoint_left(checkpoint_path)}") from None

    def checkpoint(finished: bool = False) -> None:
        check_finite()  # never save the state a bad step produced
        rng_states = process.all_gather_objects(_rng_state(device))
        if not process.is_main:
            return
        save_checkpoint(
            checkpoint_path,
            {
                "recipe_id": recipe.id,
                "recipe_sha256": recipe.content_hash(),
                "recipe": recipe.model_dump(mode="json"),
                "smoke": smoke,
                "iteration": iteration,
                "finished": finished,
                "model": model.state_dict(),
                "loss": loss_fn.state_dict(),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "rng": rng_states,
                "world_size": process.world_size,
                "evaluations": evaluations,
                "protocol": protocol,
                "timing": timing,
                "resumed_runs": resumed_runs,
                "git_segments": git_segments,
                "query_terms": query_terms.state(),
            },
        )

    def run_evaluation() -> None:
        nonlocal protocol
        check_finite()
        started = time.perf_counter()
        process.sync_buffers(model)  # every rank embeds with rank 0's BN statistics
        try:
            result = evaluate_model(model, test_set, recipe, device, process)
        except NonFiniteEmbeddingsError as error:
            raise NonFiniteError(
                f"recipe {recipe.id}: evaluation after iteration {iteration}: {error}; "
                f"{checkpoint_left(checkpoint_path)}"
            ) from None
        seconds = time.perf_counter() - started
        timing["evaluation_seconds"] += seconds
        protocol = result.protocol
        evaluations.append(
            {"iteration": iteration, "epoch": iteration / per_epoch, "metrics": result.metrics, "seconds": seconds}
        )
        query_terms.add(iteration, result.per_query, evaluations)

    show = progress and process.is_main
    bar = tqdm(total=total, initial=iteration, desc=recipe.id, disable=not show, dynamic_ncols=True)
    labels_on_device = torch.as_tensor(dense_labels).to(device)
    forward, frozen_before = None, None
    if recipe.model.measure_bn_batches and iteration == 0:  # a fresh start (a resumed run has them)
        first = itertools.islice(batches.epoch(0, 0), recipe.model.measure_bn_batches)
        measure_batchnorm_statistics(model.backbone, (images for images, _ in first))
    if settings.evaluate_at_start and not evaluations:
        run_evaluation()  # before any update: the untrained numbers a learning check compares with
    while iteration < total:
        epoch, start = divmod(iteration, per_epoch)
        frozen = warmup.on_epoch_start(model, epoch)
        if frozen != frozen_before:  # DDP fixes its synchronised parameters when built: rebuild on a change
            forward, frozen_before = sharding.wrap(model, device), frozen
            forward = torch.compile(forward) if settings.compile else forward
        model.train()
        segment_start = wait_start = time.perf_counter()
        for images, positions in batches.epoch(epoch, start):
            timing["data_wait_seconds"] += time.perf_counter() - wait_start
            labels = labels_on_device[positions]
            loss = train_step(forward, loss_fn, optimizer, scheduler, images, labels, settings, sharding)
            # Terms are read after backward: a loss's last_terms belong to this step until its next forward.
            watch.observe(iteration, loss, getattr(loss_fn, "last_terms", {}))
            iteration += 1
            bar.update(1)
            if iteration % sync_every == 0:
                check_finite()
            if iteration % eval_every == 0 or iteration == total:
                timing["train_seconds"] += time.perf_counter() - segment_start
                run_evaluation()
                if "R@1" in evaluations[-1]["metrics"]:
                    bar.set_postfix(R1=f"{evaluations[-1]['metrics']['R@1']:.2f}")
                segment_start = time.perf_counter()
            if iteration % checkpoint_every == 0 or iteration == total:
                timing["train_seconds"] += time.perf_counter() - segment_start
                checkpoint(finished=iteration == total)
                segment_start = time.perf_counter()
            if iteration >= total:
                break
            wait_start = time.perf_counter()
        timing["train_seconds"] += time.perf_counter() - segment_start
    bar.close()
    timing["compute_seconds"] = timing["train_seconds"] - timing["data_wait_seconds"]

    payload = {
        "schema_version": SCHEMA_VERSION,
        "status": "complete",
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "recipe": {
            "id": recipe.id,
            "path": recorded_path(recipe_path) if recipe_path else None,
            "sha256": recipe.content_hash(),
            "overrides": list(overrides),
            "content": recipe.model_dump(mode="json"),
        },
        "paper": recipe.paper,
        "targets": [target.model_dump() for target in recipe.targets],
        "dataset": recipe.data.dataset,
        "backbone": recipe.model.backbone,
        "backbone_width": recipe.model.width,
        "weights": {"requested": recipe.model.weights, "id": model.weights_id},
        "seed": settings.seed,
        "smoke": smoke,
        "mini": mini,
        "world_size": process.world_size,
        "index_hashes": index_hashes,
        "git": provenance.git_record(git_segments),
        "environment": {
            **provenance.environment(),
            "device": str(device),
            "distributed": {
                "world_size": process.world_size,
                "backend": torch.distributed.get_backend() if process.active else None,
                "images_per_process": len(sharding.slots),  # of the recipe's global batch
                "batchnorm_statistics": parts.batchnorm_statistics,
            },
        },
        "evaluation_protocol": {**protocol, "selection_rule": recipe.evaluation.selection},
        "evaluations": evaluations,
        "selection": select(evaluations, recipe.evaluation.selection),
        "selections": select_every_rule(evaluations),
        "timing": {
            **timing,
            "iterations": total,
            "iterations_per_second": total / max(timing["train_seconds"], 1e-9),
            "resumed_runs": resumed_runs,
        },
    }
    if process.is_main:
        queries = query_terms.write_beside(results_path)  # first: the results file names it
        write_results(results_path, {**payload, "queries": queries} if queries else payload)
    if process.is_main and not keeps_finished_checkpoint("smoke" if smoke else "mini" if mini else "full"):
        checkpoint_path.unlink(missing_ok=True)  # finished: the results file says so, and resume reads it
    process.barrier()  # the file exists when train returns, on every rank
    return results_path


def is_finished_run(results_path: str | Path, recipe: Recipe) -> bool:
    """A deep results file for exactly this recipe (same content hash: same seed and smoke settings) exists."""
    path = Path(results_path)
    if not path.is_file():
        return False
    results = load_results(path)
    return isinstance(results, ResultsFile) and results.recipe.sha256 == recipe.content_hash()
