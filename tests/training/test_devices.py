"""Which device a process trains on (``Process.device``) and how a GPU job joins its process group, on a machine
with GPUs faked: torch's own ``torch.cuda.set_device`` runs (its argument handling is what crashed every single-GPU
run on torch 2.11); only the driver calls below it are replaced."""

import inspect

import pytest
import torch
import torch.distributed as dist
from torch.distributed.constants import default_pg_nccl_timeout, default_pg_timeout

from dml_core.errors import InputError
from dml_core.training.distributed import SINGLE_PROCESS, Process
from dml_core.training.run_description import PlannedRun, RunToTrain


@pytest.fixture
def two_gpus(monkeypatch):
    """A machine with two CUDA GPUs, the second current; returns the indices torch's set_device passed to the
    driver."""
    selected = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    monkeypatch.setattr(torch._C, "_cuda_setDevice", selected.append)
    return selected


@pytest.mark.parametrize("requested", [None, "cuda"])
def test_cuda_without_an_index_is_the_current_gpu_of_a_single_process(two_gpus, requested):
    assert SINGLE_PROCESS.device(requested) == torch.device("cuda", 1)
    assert two_gpus == [1]


def test_an_indexed_gpu_is_taken_as_asked_by_a_single_process(two_gpus):
    assert SINGLE_PROCESS.device("cuda:0") == torch.device("cuda", 0)
    assert two_gpus == [0]


@pytest.mark.parametrize("requested", [None, "cuda"])
def test_each_torchrun_process_takes_the_gpu_of_its_local_rank(two_gpus, requested):
    assert Process(rank=2, world_size=4, local_rank=0).device(requested) == torch.device("cuda", 0)
    assert Process(rank=3, world_size=4, local_rank=1).device(requested) == torch.device("cuda", 1)
    assert two_gpus == [0, 1]


def test_an_indexed_gpu_under_torchrun_is_refused_before_any_gpu_is_selected(two_gpus):
    with pytest.raises(InputError, match=r"device 'cuda:1': under torchrun .*share GPU 1.*CUDA_VISIBLE_DEVICES"):
        Process(rank=0, world_size=2, local_rank=0).device("cuda:1")
    assert two_gpus == []


def test_a_gpu_the_process_cannot_see_is_refused_naming_what_it_sees(two_gpus):
    with pytest.raises(InputError, match=r"device 'cuda:2': expected a GPU index below 2 .*found 2"):
        SINGLE_PROCESS.device("cuda:2")
    with pytest.raises(InputError, match=r"LOCAL_RANK 2: expected a GPU index below 2"):
        Process(rank=2, world_size=3, local_rank=2).device(None)
    assert two_gpus == []


def test_cuda_on_a_machine_without_a_gpu_and_a_bad_device_name_are_input_errors(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(InputError, match=r"device 'cuda': expected a CUDA GPU, found none.*--device cpu"):
        SINGLE_PROCESS.device("cuda")
    with pytest.raises(InputError, match=r"device 'gpu': expected a torch device such as cpu, cuda or cuda:1"):
        SINGLE_PROCESS.device("gpu")
    assert SINGLE_PROCESS.device(None) == torch.device("cpu")


def _arguments(function, args, kwargs) -> dict:
    return dict(inspect.signature(function).bind(*args, **kwargs).arguments)


def test_a_gpu_job_binds_nccl_to_its_gpu_and_waits_for_rank_0s_metrics_in_a_cpu_group_of_long_timeout(monkeypatch):
    from dml_core.training.distributed import EVALUATION_WAIT

    calls = []
    real_init, real_new_group = dist.init_process_group, dist.new_group
    monkeypatch.setattr(dist, "is_initialized", lambda: False)
    monkeypatch.setattr(dist, "init_process_group", lambda *a, **k: calls.append(_arguments(real_init, a, k)))
    monkeypatch.setattr(dist, "new_group", lambda *a, **k: calls.append(_arguments(real_new_group, a, k)) or "wait")
    monkeypatch.setattr(dist, "destroy_process_group", lambda: calls.append("destroyed"))
    broadcasts = []
    monkeypatch.setattr(dist, "broadcast_object_list", lambda box, src, group=None: broadcasts.append(group))
    process = Process(rank=1, world_size=2, local_rank=1)

    assert process.init_process_group(torch.device("cuda", 1))
    assert calls == [
        {"backend": "nccl", "rank": 1, "world_size": 2, "device_id": torch.device("cuda", 1)},
        {"backend": "gloo", "timeout": EVALUATION_WAIT},
    ]
    assert EVALUATION_WAIT > max(default_pg_timeout, default_pg_nccl_timeout)
    process.broadcast("metrics", long_wait=True)
    process.broadcast("anything else")
    assert broadcasts == ["wait", None]  # only the wait for the metrics is the long one
    process.leave_process_group()
    process.broadcast("metrics", long_wait=True)
    assert calls[-1] == "destroyed" and broadcasts[-1] is None


@pytest.mark.slow
def test_a_cpu_run_on_a_gpu_machine_records_no_gpu(tmp_path, glyph_data_root, monkeypatch):
    """Tables name a run's device by ``environment.gpu``: the machine's first GPU was recorded for every run."""
    from dml_core import provenance
    from dml_core.recipes import load_recipe
    from dml_core.results import load_results
    from dml_core.training import train
    from tests.training.tiny_runs import TINY_RUN, recipe_file

    machine = provenance.environment()
    monkeypatch.setattr(provenance, "environment", lambda: {**machine, "gpu": "Fake GPU"})  # what it says there
    path = recipe_file(tmp_path, TINY_RUN)
    results_path = train(
        RunToTrain(
            PlannedRun(load_recipe(path), tmp_path / "run"), data_root=glyph_data_root, device="cpu", progress=False
        )
    )
    results = load_results(results_path)
    assert (results.environment["device"], results.environment["gpu"]) == ("cpu", None)
