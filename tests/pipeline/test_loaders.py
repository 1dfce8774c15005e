"""DataLoader workers of training and evaluation: started in a way that is safe once CUDA is initialised (not by
fork: a forked worker that frees an earlier run's CUDA tensor aborts), kept across epochs and evaluations, gone
when a run ends; and how many there are by default."""

import copy
import multiprocessing
import multiprocessing.process

import pytest
import torch
from torch.utils.data import DataLoader

from dml_core.errors import InputError
from dml_core.recipes import load_recipe
from dml_core.results import load_results
from dml_core.training import train
from dml_core.training.run_description import PlannedRun, RunToTrain
from tests.training.tiny_runs import recipe_file, tiny_run

# Two epochs of two batches, evaluated after each, after a batch that measures BN statistics.
RECIPE = tiny_run(
    data={"num_workers": 1},
    model={"measure_bn_batches": 1},  # a first epoch begun and left before training starts it again
    sampler={"params": {"classes_per_batch": 47, "images_per_class": 12}},
    training={"iterations": None, "epochs": 2},
)


@pytest.fixture
def loaders_and_worker_starts(monkeypatch):
    """Every DataLoader built (its keyword arguments) and every worker process started while the test runs."""
    built, started = [], []
    build, start = DataLoader.__init__, multiprocessing.process.BaseProcess.start

    def recording_build(self, dataset, *args, **kwargs):
        built.append(kwargs)
        build(self, dataset, *args, **kwargs)

    def recording_start(self):
        started.append(self.name)
        start(self)

    monkeypatch.setattr(DataLoader, "__init__", recording_build)
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", recording_start)
    return built, started


def _our_children(before: set) -> list:
    return [child for child in multiprocessing.active_children() if child.pid not in before]


@pytest.mark.slow
@pytest.mark.usefixtures("glyph_data_root")
def test_a_run_s_loaders_start_workers_outside_fork_once_and_leave_none_behind(
    tmp_path, loaders_and_worker_starts, monkeypatch
):
    built, started = loaders_and_worker_starts
    monkeypatch.setenv("DML_DATA_ROOT", str(tmp_path / "data"))
    path = recipe_file(tmp_path, RECIPE)
    before = {child.pid for child in multiprocessing.active_children()}

    for run in ("first", "second"):  # dml reproduce trains many runs in one process
        results_path = train(RunToTrain(PlannedRun(load_recipe(path), tmp_path / run), progress=False))
        assert _our_children(before) == [], f"the {run} run left its loader workers behind"

    with_workers = [options for options in built if options.get("num_workers")]
    assert len(with_workers) == 4  # per run: one training loader, one test-set loader (not one per epoch)
    for options in with_workers:
        assert options["multiprocessing_context"].get_start_method() != "fork"
        assert options["persistent_workers"] is True
    # one worker per loader, kept over 2 epochs and 2 evaluations
    assert len(started) == len(with_workers)
    results = load_results(results_path)
    assert len(results.evaluations) == 2 and results.timing.iterations == 4
    loading = results.environment["data_loading"]
    assert {key: loading[key] for key in ("num_workers", "num_workers_setting", "worker_start_method", "pipeline")} == {
        "num_workers": 1,
        "num_workers_setting": 1,
        "worker_start_method": "forkserver",
        "pipeline": "pil",  # data.pipeline auto, on the CPU
    }
    # the kept loader's batches are those of loading in the training process: the same metrics to the last digit
    in_process = copy.deepcopy(RECIPE)
    in_process["data"]["num_workers"] = 0
    without_workers = load_results(
        train(
            RunToTrain(
                PlannedRun(load_recipe(recipe_file(tmp_path, in_process)), tmp_path / "in-process"), progress=False
            )
        )
    )
    assert [e.metrics for e in without_workers.evaluations] == [e.metrics for e in results.evaluations]


def test_the_default_number_of_workers_fits_the_cores_shared_by_the_processes_of_the_machine(monkeypatch):
    from dml_core.pipeline import loaders

    monkeypatch.setattr(loaders, "available_cores", lambda: 16)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    assert loaders.loader_workers("auto") == 15  # every core but the training process's
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")  # torchrun: four training processes on this machine
    assert loaders.loader_workers("auto") == 3  # 16 / 4, less the training process itself
    monkeypatch.setattr(loaders, "available_cores", lambda: 64)
    monkeypatch.delenv("LOCAL_WORLD_SIZE")
    assert loaders.loader_workers("auto") == loaders.MAX_AUTO_WORKERS == 16
    assert loaders.loader_workers(5) == 5  # a number is taken as it is
    monkeypatch.setattr(loaders, "available_cores", lambda: 1)
    assert loaders.loader_workers("auto") == 0  # one core: loading in the training process
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "x")
    with pytest.raises(InputError, match="LOCAL_WORLD_SIZE: expected a positive integer, found 'x'"):
        loaders.loader_workers("auto")


def test_recipes_default_to_auto_and_the_number_of_workers_leaves_the_content_hash_alone(tmp_path):
    tree = tiny_run()
    del tree["data"]["num_workers"]
    recipe = load_recipe(recipe_file(tmp_path, tree))
    assert recipe.data.num_workers == "auto"
    # the default before "auto" was 4: the recipes hashed then keep their hashes
    assert load_recipe(recipe_file(tmp_path, tiny_run(data={"num_workers": 4}))).content_hash() == recipe.content_hash()


def test_a_kept_loader_without_workers_is_a_plain_one_and_pins_only_for_a_gpu():
    from dml_core.pipeline import loaders

    dataset = torch.utils.data.TensorDataset(torch.arange(4))
    plain = loaders.kept_loader(dataset, num_workers=0, device=torch.device("cpu"), batch_size=2)
    assert (plain.num_workers, plain.persistent_workers, plain.pin_memory) == (0, False, False)
    assert [batch.tolist() for (batch,) in plain] == [[0, 1], [2, 3]]
