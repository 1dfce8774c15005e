"""The host's load as results files record it (``dml_core.host_load``): a run resumed on a host with another CPU count
is judged per CPU, each sample over its own host's CPUs, and a checkpoint's state from before the per-CPU sums goes
on. Hand-computed loads; the trainer's sampling is tested in tests/training/test_trainer.py."""

from dml_core import host_load
from dml_core.results import HostLoadRecord


def test_a_run_resumed_on_a_bigger_host_is_judged_per_cpu_not_by_its_first_hosts_count():
    state = host_load.new_state()
    for _ in range(3):
        host_load.add_sample(state, 2.0, cpus=2)  # alone on 2 CPUs: its own loader workers
    for _ in range(3):
        host_load.add_sample(state, 8.0, cpus=16)  # alone on 16 CPUs after the resume
    record = HostLoadRecord(**host_load.record(state))
    assert (record.cpus, record.other_cpus, record.samples) == (16, [2], 6)
    assert (record.mean, record.max) == (5.0, 8.0)  # as sampled: 5.0 would read as shared on the first host's 2
    assert (record.mean_per_cpu, record.max_per_cpu) == (0.75, 1.0)
    assert host_load.shared_host_note([record]) == ""
    host_load.add_sample(state, 200.0, cpus=16)  # then beside other work
    busy = HostLoadRecord(**host_load.record(state))
    assert busy.mean_per_cpu == (3 * 1.0 + 3 * 0.5 + 12.5) / 7
    assert host_load.shared_host_note([busy]) == "⚠ host shared (load 2.4 per CPU, hosts of 2 and 16 CPUs)"


def test_a_state_checkpointed_before_the_per_cpu_sums_goes_on_from_its_totals():
    older = {"cpus": 4, "samples": 2, "total": 6.0, "max": 4.0}  # what a checkpoint of the first version holds
    host_load.add_sample(older, 8.0, cpus=4)
    assert host_load.record(older) == {
        "cpus": 4, "samples": 3, "mean": 14.0 / 3, "max": 8.0, "mean_per_cpu": 3.5 / 3, "max_per_cpu": 2.0,
        "other_cpus": [],
    }  # fmt: skip


def test_a_file_written_before_the_per_cpu_mean_is_judged_by_its_mean_over_its_cpus():
    older = HostLoadRecord(cpus=2, samples=4, mean=5.1, max=6.0)
    assert older.load_per_cpu == 2.55
    assert host_load.shared_host_note([older]) == "⚠ host shared (load 5.1 on 2 CPUs)"
