"""The training loop: iterations (or epochs) of sampler batches, evaluation every N, atomic checkpoints,
exact resume, and a results file that says how every number was obtained.

Everything random is a function of the run's seed (the model's start, batch order, each image's augmentation) and
the RNG states go into the checkpoint, so a run killed at any point and resumed ends with the same weights and
metrics as an uninterrupted one (docs/training.md). Under torchrun the recipe's batch stays the global batch
(``distributed``).
"""

from __future__ import annotations

import itertools
from contextlib import closing
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from dml_core import host_load, provenance
from dml_core.data.index import dataset_index_hashes
from dml_core.data.samplers import sampler_record
from dml_core.data.validation_split import validation_record
from dml_core.errors import InputError, NonFiniteError
from dml_core.finished_runs import check_finished_run, is_finished_run
from dml_core.models import BackboneWarmup
from dml_core.models.batchnorm_statistics import measure_batchnorm_statistics
from dml_core.output_paths import data_root as resolve_data_root
from dml_core.output_paths import recorded_path
from dml_core.pipeline.loaders import loading_record
from dml_core.recipes.settings import Recipe
from dml_core.results import deep_results_payload, write_results
from dml_core.tier import Tier
from dml_core.training import builders
from dml_core.training.checkpoint import CHECKPOINT_NAME, keeps_finished_checkpoint, load_checkpoint, save_checkpoint
from dml_core.training.clock import DeviceClock
from dml_core.training.cuda_graphs import check_cuda_graphs, training_forward, uses_cuda_graphs
from dml_core.training.determinism import run_determinism
from dml_core.training.device_choice import gpu_driver
from dml_core.training.distributed import Process
from dml_core.training.evaluation import (
    NonFiniteEmbeddingsError,
    PickedQueryTerms,
    TestSetEmbedder,
    evaluate_model,
    recall_ks_within,
)
from dml_core.training.non_finite import NonFiniteWatch, checkpoint_left
from dml_core.training.run_description import RunToTrain
from dml_core.training.setup import build_run
from dml_core.training.step import train_step

__all__ = ["is_finished_run", "train"]


def _rng_state(device: torch.device) -> dict:
    state = {"torch": torch.get_rng_state()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def _restore_rng(states: list[dict] | dict, rank: int, device: torch.device, source: str = "checkpoint") -> None:
    """Restore this rank's generators; a run saved on another kind of device is refused (its CUDA generator has no
    CPU counterpart, and the kernels differ: no exact resume there)."""
    state = states[rank] if isinstance(states, list) else states  # one state per rank (older checkpoints: one)
    saved_type = "cuda" if "cuda" in state else "cpu"  # a CUDA run saves its CUDA generator's state beside the CPU one
    if saved_type != device.type:
        raise InputError(
            f"{source}: written by a run on {saved_type}, resumed on {device.type}; resume on a {saved_type} device "
            "(random streams and kernels differ between kinds of device: the run would not continue exactly)"
        )
    torch.set_rng_state(state["torch"])
    if device.type == "cuda":
        torch.cuda.set_rng_state(state["cuda"], device)


def train(run: RunToTrain) -> Path:
    """Train ``run.plan`` (its recipe already shrunk to its tier) where ``run`` says, write its results file and
    return its path.

    The run folder holds the checkpoint (and, by default, the results file). With ``resume`` an existing
    checkpoint is continued. A finished run (its results file exists) is left as it is when that file records
    this recipe's hash, and refused (``InputError``) when it records another's, in every tier
    (``dml_core.finished_runs``); with ``rerun``, a finished run is trained again from the start (an interrupted
    rerun continues) and its results file is replaced, atomically, only once the new one is complete. A finished
    smoke or mini run keeps no checkpoint (``keeps_finished_checkpoint``): its results file is what says it is
    finished. Under torchrun (WORLD_SIZE > 1 in the environment) every process calls this; the process group is
    joined here (and left again if this call created it).

    ``max_steps``: a rehearsal, the recipe (and its content hash) as it is but trained for its first ``max_steps``
    iterations only, then evaluated on the Recall@K list its test split allows (``recall_ks_within``); its results
    file says so (``rehearsal``), and the results gate refuses it. A rehearsal always trains (a finished one again),
    keeps no checkpoint once finished, and continues no checkpoint of another length.
    """
    process = Process.from_environment()
    torch_device = process.device(run.device)
    # before any CUDA work of the run (cuBLAS reads its workspace setting when it starts); undone when it ends
    with run_determinism(torch_device, run.plan.recipe.training.deterministic) as determinism:
        created_group = process.init_process_group(torch_device)
        try:
            return _train(run, process, torch_device, determinism)
        finally:
            if created_group:
                process.leave_process_group()


def _train(to_train: RunToTrain, process: Process, device: torch.device, determinism: dict) -> Path:
    plan, max_steps, rerun = to_train.plan, to_train.max_steps, to_train.trains_again
    recipe, tier, results_path = plan.recipe, plan.tier, plan.results_path
    checkpoint_path = plan.run_dir / CHECKPOINT_NAME
    selection = recipe.evaluation.selection
    needed = {"best_r1": "recall", "best_val_r1": "recall", "best_val_map_r": "map_at_r"}.get(selection)
    if needed is not None and needed not in recipe.evaluation.metrics:
        raise InputError(
            f"recipe {recipe.id}: evaluation.selection {selection!r} needs {needed!r} in evaluation.metrics"
        )
    # every tier alike, before the checkpoint: a finished smoke or mini run keeps none
    if not rerun and check_finished_run(results_path, recipe):
        return results_path
    resume = to_train.resume or rerun  # a rerun continues its own interrupted rerun, or starts a finished run over
    if checkpoint_path.exists() and not resume:
        raise InputError(
            f"{checkpoint_path}: a checkpoint of an earlier run is there; pass --resume to continue it "
            f"or choose another --out"
        )

    check_cuda_graphs(recipe.id, recipe.training, device, process.world_size)
    git_at_start = provenance.git_state()  # the code this process imported, whatever HEAD is at the end
    torch.manual_seed(recipe.training.seed)
    root = resolve_data_root(to_train.data_root, recipe.data.root)
    parts = build_run(recipe, root, device, process)
    run = TrainingRun(recipe, process, device, checkpoint_path, parts, tier, max_steps)
    with closing(run):  # its loader workers go when it ends, so a process that trains many runs keeps none
        state = load_checkpoint(checkpoint_path) if resume and checkpoint_path.exists() else None
        if state is not None and run.accepts(state, rerun):
            run.restore(state)
        run.git_segments.append({"from": run.iteration, **git_at_start})
        run.train(to_train.progress)

    payload = deep_results_payload(
        recipe,
        recipe_path=recorded_path(plan.recipe_path) if plan.recipe_path else None,
        overrides=list(plan.overrides),
        tier=tier,
        weights_id=run.parts.model.weights_id,
        index_hashes=dataset_index_hashes(root / recipe.data.dataset),  # which images it trained and tested on
        git=provenance.git_record(run.git_segments),
        environment=_run_environment(run, determinism),
        protocol=run.protocol,
        evaluations=run.evaluations,
        timing={**run.timing, "host_load": host_load.record(run.timing["host_load"])},
        total=run.total,
        resumed_runs=run.resumed_runs,
        world_size=process.world_size,
        device_type=device.type,
        rehearsal=run.rehearsal_record(),
        sampler=sampler_record(recipe.sampler.name, recipe.sampler.params, run.parts.sampler),
    )
    if process.is_main:
        queries = run.query_terms.write_beside(results_path)  # first: the results file names it
        write_results(results_path, {**payload, "queries": queries} if queries else payload)
    if process.is_main and (max_steps is not None or not keeps_finished_checkpoint(tier)):
        checkpoint_path.unlink(missing_ok=True)  # finished: the results file says so, and resume reads it
    process.barrier()  # the file exists when train returns, on every rank
    return results_path


def _run_environment(run: TrainingRun, determinism: dict) -> dict:
    """Where and how the run trained, for its results file."""
    recipe, device = run.recipe, run.device
    return {
        **provenance.environment(),
        "device": str(device),
        # the run's GPU (not the machine's first), none for a CPU run on a GPU machine: tables name the device by it
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        "gpu_driver": gpu_driver(device),  # what the wheel's CUDA ran on (``device_choice``: its minimum)
        "distributed": run.distributed_record(),
        "data_loading": {
            # the training batches' workers (the cache pipeline draws crop boxes in at most one)
            **loading_record(recipe.data.num_workers, run.parts.batches.num_workers),
            **run.parts.batches.pipeline.record(),  # which pipeline ran ("auto" chooses per device), and why
        },
        "determinism": determinism,
        "cuda_graphs": uses_cuda_graphs(recipe.training, device),  # replayed, or eager (the CPU ignores it)
    }


def _length(max_steps: int | None) -> str:
    return (
        f"a rehearsal cut to {max_steps} step{'s' if max_steps > 1 else ''}"
        if max_steps
        else "a run of the whole recipe"
    )


class TrainingRun:
    """One run's state between its checkpoints: where it is (iteration, evaluations, timing, resumes, the git
    state of each start) and the steps that move it on (train, evaluate, checkpoint)."""

    def __init__(
        self,
        recipe: Recipe,
        process: Process,
        device: torch.device,
        checkpoint_path: Path,
        parts,
        tier: Tier,
        max_steps: int | None = None,
    ) -> None:
        self.recipe, self.process, self.device, self.parts = recipe, process, device, parts
        self.checkpoint_path, self.tier, self.max_steps = checkpoint_path, tier, max_steps
        settings = recipe.training
        self.per_epoch = parts.iterations_per_epoch
        self.recipe_total = settings.iterations or settings.epochs * self.per_epoch
        self.total = min(self.recipe_total, max_steps) if max_steps else self.recipe_total
        unit = self.per_epoch if settings.epochs else 1
        self.eval_every, self.checkpoint_every = settings.eval_every * unit, settings.checkpoint_every * unit
        self.watch = NonFiniteWatch(device)
        self.clock = DeviceClock(device)  # waits for the GPU at timing boundaries only
        self.sync_every = settings.sync_every if device.type == "cuda" else 1
        self.iteration, self.evaluations, self.protocol = 0, [], {}
        self.timing = {
            "train_seconds": 0.0,
            "data_wait_seconds": 0.0,
            "compute_seconds": 0.0,
            "evaluation_seconds": 0.0,
            "host_load": host_load.new_state(),
        }
        self.resumed_runs = 0
        self.query_terms = PickedQueryTerms()  # the per-query terms of the evaluations a selection rule picks
        self.git_segments = []  # the git state of each start
        self.test_embedder = TestSetEmbedder(parts.test_set, recipe, device, process)  # kept between evaluations
        self.validation_embedder = (
            TestSetEmbedder(parts.validation_set, recipe, device, process) if parts.validation_set is not None else None
        )

    def close(self) -> None:
        """Let the loader workers of the training batches and of the test and validation sets go."""
        self.parts.batches.close()
        self.test_embedder.close()
        if self.validation_embedder is not None:
            self.validation_embedder.close()

    def accepts(self, state: dict, rerun: bool) -> bool:
        """Whether ``state`` (a checkpoint) is this run's to continue: refused when another recipe wrote it; not
        taken when the run it holds is finished and ``rerun`` asks for a fresh one."""
        if state["recipe_sha256"] not in self.recipe.hashes_of_this_computation():
            raise InputError(
                f"{self.checkpoint_path}: written by recipe {state['recipe_id']} with hash "
                f"{state['recipe_sha256'][:12]}, but this run's recipe hash is {self.recipe.content_hash()[:12]}; "
                "use another --out"
            )
        saved_steps = state.get("max_steps")  # older checkpoints: none, as every run's before rehearsals
        if saved_steps != self.max_steps:
            raise InputError(
                f"{self.checkpoint_path}: written by {_length(saved_steps)}, continued by {_length(self.max_steps)}; "
                "use another --out (a rehearsal never continues or replaces another length's checkpoint)"
            )
        return not (rerun and state.get("finished"))  # a finished run's, under rerun: start over

    def restore(self, state: dict) -> None:
        parts = self.parts
        saved_world_size = state.get("world_size", 1)
        if saved_world_size != self.process.world_size:
            raise InputError(
                f"{self.checkpoint_path}: written by a run on {saved_world_size} process(es), resumed on "
                f"{self.process.world_size}; resume with the same number of processes (each restores its own RNG "
                "state)"
            )
        _restore_rng(state["rng"], self.process.rank, self.device, str(self.checkpoint_path))
        # map_location="cpu" loaded every tensor on the CPU; load_state_dict copies them to the run's device
        parts.model.load_state_dict(state["model"])
        parts.loss.load_state_dict(state["loss"])
        parts.optimizer.load_state_dict(state["optimizer"])
        parts.scheduler.load_state_dict(state["scheduler"])
        self.iteration, self.evaluations, self.protocol = state["iteration"], state["evaluations"], state["protocol"]
        self.timing, self.resumed_runs = state["timing"], state["resumed_runs"] + 1
        self.timing.setdefault("host_load", host_load.new_state())  # older checkpoints: none
        self.git_segments = state.get("git_segments", [])
        self.query_terms = PickedQueryTerms(state.get("query_terms"))  # older checkpoints: none

    def check_finite(self) -> None:
        try:
            self.watch.check(f"recipe {self.recipe.id}")
        except NonFiniteError as error:
            raise NonFiniteError(f"{error}; {checkpoint_left(self.checkpoint_path)}") from None

    def checkpoint(self, finished: bool = False) -> None:
        self.check_finite()  # never save the state a bad step produced
        rng_states = self.process.all_gather_objects(_rng_state(self.device))
        if not self.process.is_main:
            return
        parts, recipe = self.parts, self.recipe
        save_checkpoint(
            self.checkpoint_path,
            {
                "recipe_id": recipe.id,
                "recipe_sha256": recipe.content_hash(),
                "recipe": recipe.model_dump(mode="json"),
                "smoke": self.tier == Tier.SMOKE,
                "max_steps": self.max_steps,
                "iteration": self.iteration,
                "finished": finished,
                "model": parts.model.state_dict(),
                "loss": parts.loss.state_dict(),
                "optimizer": parts.optimizer.state_dict(),
                "scheduler": parts.scheduler.state_dict(),
                "rng": rng_states,
                "world_size": self.process.world_size,
                "evaluations": self.evaluations,
                "protocol": self.protocol,
                "timing": self.timing,
                "resumed_runs": self.resumed_runs,
                "git_segments": self.git_segments,
                "query_terms": self.query_terms.state(),
            },
        )

    def evaluate(self) -> None:
        self.check_finite()
        started = self.clock.now()
        self.process.sync_buffers(self.parts.model)  # every rank embeds with rank 0's BN statistics
        result = self._evaluate_on(self.parts.test_set, self.test_embedder)
        record = {"iteration": self.iteration, "epoch": self.iteration / self.per_epoch, "metrics": result.metrics}
        self.protocol = result.protocol
        validation_set = self.parts.validation_set
        if validation_set is not None:  # the same metrics on the held-out training classes
            record["validation_metrics"] = self._evaluate_on(validation_set, self.validation_embedder).metrics
            split = validation_record(self.recipe.data.validation, np.unique(validation_set.labels))
            self.protocol = {**result.protocol, "validation_split": split}
        seconds = self.clock.now() - started
        self.timing["evaluation_seconds"] += seconds
        self.evaluations.append({**record, "seconds": seconds})
        self.query_terms.add(self.iteration, result.per_query, self.evaluations)  # the test queries' terms

    def _evaluate_on(self, evaluation_set, embedder: TestSetEmbedder):
        recipe = self.recipe
        ks = recall_ks_within(builders.recall_ks(recipe), evaluation_set) if self.max_steps else None
        try:
            return evaluate_model(self.parts.model, evaluation_set, recipe, self.device, self.process, embedder, ks)
        except NonFiniteEmbeddingsError as error:
            raise NonFiniteError(
                f"recipe {self.recipe.id}: evaluation after iteration {self.iteration}: {error}; "
                f"{checkpoint_left(self.checkpoint_path)}"
            ) from None

    def train(self, progress: bool) -> None:
        """From the current iteration to the end: epochs of batches, evaluations and checkpoints on schedule."""
        recipe, parts, settings = self.recipe, self.parts, self.recipe.training
        bar = tqdm(
            total=self.total,
            initial=self.iteration,
            desc=recipe.id,
            disable=not (progress and self.process.is_main),
            dynamic_ncols=True,
        )
        if recipe.model.measure_bn_batches and self.iteration == 0:  # a fresh start (a resumed run has them)
            with closing(parts.batches.epoch(0, 0)) as batches:  # closed: a kept loader's next epoch starts clean
                first = itertools.islice(batches, recipe.model.measure_bn_batches)
                measure_batchnorm_statistics(parts.model.backbone, (images for images, _ in first))
        if settings.evaluate_at_start and not self.evaluations:
            self.evaluate()  # before any update: the untrained numbers a learning check compares with
        warmup = BackboneWarmup(recipe.model.freeze_backbone_epochs)
        labels_on_device = torch.as_tensor(parts.dense_labels).to(self.device)
        forward, frozen_before = None, None
        while self.iteration < self.total:
            epoch, start = divmod(self.iteration, self.per_epoch)
            frozen = warmup.on_epoch_start(parts.model, epoch)
            # DDP fixes its synchronised parameters when built, a graph its trained ones: rebuild on a change
            if frozen != frozen_before:
                forward = training_forward(parts.sharding.wrap(parts.model, self.device), settings, self.device)
                frozen_before = frozen
            parts.model.train()
            with closing(parts.batches.epoch(epoch, start)) as batches:
                self._epoch(forward, batches, labels_on_device, bar)
        bar.close()
        self.timing["compute_seconds"] = self.timing["train_seconds"] - self.timing["data_wait_seconds"]

    def _epoch(self, forward, batches, labels_on_device: torch.Tensor, bar: tqdm) -> None:
        """One epoch's batches from the current iteration, or up to the end of the run."""
        parts, settings, timing = self.parts, self.recipe.training, self.timing
        segment_start = wait_start = self.clock.now()
        for images, positions in batches:
            timing["data_wait_seconds"] += self.clock.host() - wait_start
            labels = labels_on_device[positions]
            loss = train_step(
                forward, parts.loss, parts.optimizer, parts.scheduler, images, labels, settings, parts.sharding
            )
            # Terms are read after backward: a loss's last_terms belong to this step until its next forward.
            self.watch.observe(self.iteration, loss, getattr(parts.loss, "last_terms", {}))
            self.iteration += 1
            bar.update(1)
            if self.iteration % self.sync_every == 0:
                self.check_finite()
            if self.iteration % self.eval_every == 0 or self.iteration == self.total:
                self._add_train_time(segment_start)
                self.evaluate()
                if "R@1" in self.evaluations[-1]["metrics"]:
                    bar.set_postfix(R1=f"{self.evaluations[-1]['metrics']['R@1']:.2f}")
                segment_start = self.clock.now()
            if self.iteration % self.checkpoint_every == 0 or self.iteration == self.total:
                self._add_train_time(segment_start)
                self.checkpoint(finished=self.iteration == self.total)
                segment_start = self.clock.now()
            if self.iteration >= self.total:
                break
            wait_start = self.clock.host()
        self._add_train_time(segment_start)

    def _add_train_time(self, segment_start: float) -> None:
        """Add the training time since ``segment_start`` and sample the host's load (what else shared that time)."""
        self.timing["train_seconds"] += self.clock.now() - segment_start
        host_load.add_sample(self.timing["host_load"], host_load.load_average())

    def rehearsal_record(self) -> dict[str, int] | None:
        """What a rehearsal's results file says of it (None: the run trained as long as its recipe says)."""
        if self.max_steps is None:
            return None
        return {"max_steps": self.max_steps, "recipe_iterations": self.recipe_total}

    def distributed_record(self) -> dict:
        return {
            "world_size": self.process.world_size,
            "backend": torch.distributed.get_backend() if self.process.active else None,
            "images_per_process": len(self.parts.sharding.slots),  # of the recipe's global batch
            "batchnorm_statistics": self.parts.batchnorm_statistics,
        }
