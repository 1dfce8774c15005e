"""Multi-process training (DDP over gloo, two CPU processes under torchrun) against one process on the same
global batch: same loss values, same parameter updates; and the sharding rules."""

from pathlib import Path

import pytest
import torch

from dml_core.errors import InputError
from dml_core.training.distributed import SINGLE_PROCESS, Process, recipe_order, shard_slots
from dml_core.training.run_description import PlannedRun, RunToTrain
from tests.torchrun import torchrun
from tests.training import ddp_step_worker


@pytest.mark.parametrize(("group_sizes", "world_size"), [((16,), 2), ((8, 8), 2), ((60, 60), 4), ((12,), 3)])
def test_the_shards_cover_the_batch_once_and_the_order_restores_it(group_sizes, world_size):
    shards = [shard_slots(group_sizes, rank, world_size) for rank in range(world_size)]
    gathered = [slot for shard in shards for slot in shard]
    assert sorted(gathered) == list(range(sum(group_sizes)))
    assert [gathered[i] for i in recipe_order(group_sizes, world_size)] == list(range(sum(group_sizes)))
    # every rank gets an equal piece of every stream
    for shard in shards:
        start = 0
        for size in group_sizes:
            assert sum(start <= slot < start + size for slot in shard) == size // world_size
            start += size


def test_a_stream_that_does_not_split_evenly_is_refused_with_the_sizes():
    with pytest.raises(InputError, match=r"2 processes; found a stream of 7 images \(streams \(7, 7\)\)"):
        shard_slots((7, 7), 0, 2)


def test_the_process_comes_from_torchruns_environment(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert Process.from_environment() == Process(rank=3, world_size=4, local_rank=1)
    monkeypatch.setenv("RANK", "x")
    with pytest.raises(InputError, match="RANK: expected a non-negative integer, found 'x'"):
        Process.from_environment()
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name)
    assert Process.from_environment() == SINGLE_PROCESS


def test_evaluation_slices_cover_the_test_set_once():
    slices = [Process(rank, 3).slice_of(10) for rank in range(3)]
    assert [list(s) for s in slices] == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]


@pytest.mark.slow
def test_two_gloo_processes_match_one_process_on_the_same_global_batch(tmp_path):
    out = tmp_path / "ddp.pt"
    completed = torchrun(2, str(Path(ddp_step_worker.__file__)), str(out))
    assert completed.returncode == 0, completed.report()
    distributed = torch.load(out)
    assert distributed["evaluation"] == ddp_step_worker.run_evaluation(SINGLE_PROCESS)
    for name in ddp_step_worker.CASES:
        single = ddp_step_worker.run_case(name, SINGLE_PROCESS)
        assert distributed[name]["losses"] == pytest.approx(single["losses"], rel=1e-5, abs=1e-6), name
        assert single["losses"][0] != pytest.approx(single["losses"][-1]), f"{name}: the steps must change the loss"
        for part in ("model", "loss"):
            assert distributed[name][part].keys() == single[part].keys()
            for key, value in single[part].items():
                # float32 summation order differs (gathered vs whole batch): tolerance relative to the tensor's scale
                scale = max(1.0, value.abs().max().item())
                torch.testing.assert_close(distributed[name][part][key], value, rtol=1e-5, atol=1e-6 * scale)
    # clipping (training.grad_clip_norm) bites in its case: the same loss unclipped trains differently
    clipped, unclipped = distributed["proxy, gradients clipped"]["model"], distributed["proxy (proxy-anchor)"]["model"]
    assert not all(torch.allclose(clipped[key], unclipped[key]) for key in clipped)


@pytest.mark.slow
@pytest.mark.usefixtures("glyph_data_root")
def test_dml_train_on_two_processes_matches_one_and_resumes_after_a_kill(tmp_path):
    import yaml

    from dml_core.errors import InputError
    from dml_core.recipes import load_recipe
    from dml_core.results import load_results
    from dml_core.training import train
    from dml_core.training.checkpoint import load_checkpoint
    from tests.training import stopped_by_the_scheduler

    recipe_path = tmp_path / "recipe.yaml"
    recipe_path.write_text(yaml.safe_dump(ddp_step_worker.TINY_RECIPE))
    data_root = tmp_path / "data"
    train(RunToTrain(PlannedRun(load_recipe(recipe_path), tmp_path / "single"), data_root=data_root, progress=False))

    out = tmp_path / "two"
    train_args = [str(recipe_path), "--out", str(out), "--no-progress", "--device", "cpu"]  # full scale, on the CPU
    args = ["-m", "dml_core.cli", "train", *train_args]
    env = {"DML_DATA_ROOT": str(data_root)}
    # as a scheduler stops a job: SIGTERM to torchrun, which passes it on, right after iteration 2's checkpoint
    stopped = torchrun(2, str(Path(stopped_by_the_scheduler.__file__)), "2", *train_args, env=env)
    assert stopped.returncode != 0, f"the run must have been stopped\n{stopped.report()}"
    checkpoint = out / "checkpoint.pt"
    state = load_checkpoint(checkpoint)
    assert state["iteration"] == 2 and not state["finished"]
    assert state["world_size"] == 2 and len(state["rng"]) == 2

    # resuming on another number of processes (here one, without torchrun) is refused: each process restores its
    # own RNG state
    with pytest.raises(InputError, match=r"written by a run on 2 process\(es\), resumed on 1"):
        train(RunToTrain(PlannedRun(load_recipe(recipe_path), out), resume=True, data_root=data_root, progress=False))
    assert load_checkpoint(checkpoint)["iteration"] == 2, "the refused resume left the checkpoint as it was"

    completed = torchrun(2, *args, "--resume", env=env)
    assert completed.returncode == 0, completed.report()
    two = load_results(out / "results.json")
    assert two.world_size == 2 and two.timing.resumed_runs == 1
    assert two.environment["distributed"] == {
        "world_size": 2,
        "backend": "gloo",
        "images_per_process": 4,
        "batchnorm_statistics": "per rank (SyncBatchNorm needs CUDA); frozen layers use running statistics",
    }
    assert [e.iteration for e in two.evaluations] == [3, 6]
    # The same training as one process: the final parameters agree to float-order noise. (Metrics are not
    # compared: a random-init network's embeddings are so nearly tied that even the evaluation batch size of
    # one process moves its R@1; ``run_evaluation`` above checks the sharded evaluation exactly.)
    for part in ("model", "loss"):
        mine, reference = (
            load_checkpoint(checkpoint)[part],
            load_checkpoint(tmp_path / "single" / "checkpoint.pt")[part],
        )
        for key, value in reference.items():
            if value.is_floating_point():
                scale = max(1.0, value.abs().max().item())
                torch.testing.assert_close(mine[key], value, rtol=1e-5, atol=1e-6 * scale, msg=key)
