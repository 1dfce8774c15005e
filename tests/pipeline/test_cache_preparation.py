"""The preflight prepares the image caches the runs will train from (data.pipeline cache, or auto on CUDA), saying
what it writes; where the disk cannot hold one, "auto" runs fall back to the PIL path and "cache" runs are refused;
under torchrun it prepares nothing."""

from dataclasses import replace

import pytest

from dml_core.data.registry import get_spec
from dml_core.errors import InputError
from dml_core.pipeline import cache_preparation
from dml_core.pipeline.cache_preparation import caches_to_prepare, prepare_caches
from dml_core.pipeline.image_cache import cache_dir, cache_problem
from dml_core.runner.inline import PaperRun
from dml_core.runner.plan import paper_runs, plan_runs
from dml_core.runner.preflight import missing_inputs
from dml_core.tier import Tier
from tests.tables.synthetic import PAPER_KEY, write_recipe

SQUASHED = {
    "dataset": "cub200",
    "num_workers": 0,
    "transforms": {"resize_mode": "squash", "resize": 40, "crop_size": 32, "train_crop": "random_crop"},
}


@pytest.fixture
def paper(tmp_path, monkeypatch, odd_sized_cub):
    """A paper of two runs on the fixture CUB: random crops of images squashed to 40 px, and the same with random
    resized crops; weights present. Caches are decoded in this process (worker processes: test_image_cache.py)."""
    monkeypatch.setattr(cache_preparation, "loader_workers", lambda setting: 0)
    monkeypatch.setenv("DML_WEIGHTS_DIR", str(tmp_path / "weights"))
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "googlenet-1378be20.pth").write_bytes(b"checked by sha256 when loaded")
    write_recipe(tmp_path / "reproduce", data=SQUASHED)
    resized_crops = {**SQUASHED, "transforms": {**SQUASHED["transforms"], "train_crop": "random_resized_crop"}}
    write_recipe(tmp_path / "reproduce", id="lifted-cub200", data=resized_crops)
    return tmp_path


def _plans(root, pipeline=None):
    runs, _ = paper_runs(root / "reproduce", PAPER_KEY)
    return plan_runs(PAPER_KEY, runs, [0, 1], Tier.FULL, root / "runs", root / "results", pipeline)


def _paper_run(root, data_root, device):
    return PaperRun(
        PAPER_KEY, recipes_dir=root / "reproduce", runs_root=root / "runs", results_root=root / "results",
        tables_root=root / "tables", data_root=data_root, device=device,
    )  # fmt: skip


def _cache_lines(lines: list[str]) -> list[str]:
    """What the preflight said of the caches (the plan it prints first aside)."""
    return [line for line in lines if line.startswith("data.pipeline")]


def test_the_caches_to_prepare_are_those_the_runs_will_train_from(paper, odd_sized_cub):
    assert caches_to_prepare(_plans(paper), odd_sized_cub, "cpu") == []  # auto on the CPU: the PIL path
    (cache,) = caches_to_prepare(_plans(paper), odd_sized_cub, "cuda")  # not the random resized crops' run
    assert cache.name == "cub200/train (squash 40)" and not cache.required
    assert cache.runs == ["ours-cub200 seed 0", "ours-cub200 seed 1"]
    assert cache.folder == cache_dir(odd_sized_cub, get_spec("cub200"), "train", "squash", 40)
    (cache,) = caches_to_prepare(_plans(paper, pipeline="cache"), odd_sized_cub, "cpu")  # both runs, one cache
    assert len(cache.runs) == 4 and cache.required


def test_the_preflight_prepares_the_cache_saying_what_it_writes(paper, odd_sized_cub):
    cub = get_spec("cub200")
    lines = []
    _paper_run(paper, odd_sized_cub, "cpu").preflight(lines.append)
    assert _cache_lines(lines) == [] and cache_problem(cub, odd_sized_cub, "train", "squash", 40)
    lines.clear()
    _paper_run(paper, odd_sized_cub, "cuda").preflight(lines.append)  # only the device type is read: no GPU needed
    lines = _cache_lines(lines)
    folder = cache_dir(odd_sized_cub, cub, "train", "squash", 40)
    assert lines[0].startswith(
        f"data.pipeline: preparing the decoded image cache of cub200/train (squash 40) for 1 run(s): 6 images, "
        f"28.1 KiB, in {folder}; "
    )
    assert lines[0].endswith(" GiB free there; decoding every image once, in this process")
    assert lines[1].startswith("data.pipeline: cache of cub200/train (squash 40) ready in ")
    assert cache_problem(cub, odd_sized_cub, "train", "squash", 40) is None
    assert (folder / "pixels.u8").stat().st_size == 6 * 3 * 40 * 40
    lines.clear()
    _paper_run(paper, odd_sized_cub, "cuda").preflight(lines.append)
    assert _cache_lines(lines) == []  # current: nothing to do


def test_finished_runs_need_no_cache_unless_rerun(paper, odd_sized_cub, monkeypatch):
    cub = get_spec("cub200")
    monkeypatch.setattr("dml_core.runner.run_path.is_finished", lambda plan: True)  # the caches it would prepare
    lines = []
    _paper_run(paper, odd_sized_cub, "cuda").preflight(lines.append)
    assert _cache_lines(lines) == [] and cache_problem(cub, odd_sized_cub, "train", "squash", 40)
    replace(_paper_run(paper, odd_sized_cub, "cuda"), rerun=True).preflight(lines.append)
    assert len(_cache_lines(lines)) == 2 and cache_problem(cub, odd_sized_cub, "train", "squash", 40) is None


def test_a_cache_the_disk_cannot_hold_leaves_auto_runs_on_the_pil_path_and_refuses_cache_runs(
    paper,
    odd_sized_cub,
    monkeypatch,
):
    monkeypatch.setattr(cache_preparation, "free_disk_bytes", lambda folder: cache_preparation.DISK_HEADROOM)
    lines = []
    prepare_caches(caches_to_prepare(_plans(paper), odd_sized_cub, "cuda"), lines.append)
    folder = cache_dir(odd_sized_cub, get_spec("cub200"), "train", "squash", 40)
    assert lines == [
        f"data.pipeline auto: the decoded image cache of cub200/train (squash 40) does not fit (6 images, 28.1 KiB, in "
        f"{folder}; 1.0 GiB free there; 1.0 GiB kept free): 2 run(s) train on the PIL path"
    ]
    with pytest.raises(InputError) as refused:
        prepare_caches(caches_to_prepare(_plans(paper, pipeline="cache"), odd_sized_cub, "cuda"), lines.append)
    assert str(refused.value).startswith(
        f"{folder}: data.pipeline cache: the decoded image cache of cub200/train (squash 40) needs 6 images, "
    )
    assert str(refused.value).endswith("or train on the PIL path (--pipeline pil)")
    assert not folder.exists()


def test_under_torchrun_nothing_is_prepared_and_cache_runs_need_theirs_first(paper, odd_sized_cub, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    lines = []
    _paper_run(paper, odd_sized_cub, "cuda").preflight(lines.append)
    assert _cache_lines(lines) == [] and cache_problem(get_spec("cub200"), odd_sized_cub, "train", "squash", 40)
    (missing,) = missing_inputs(_plans(paper, pipeline="cache")[:1], odd_sized_cub)
    assert "data.pipeline cache: " in missing.problem and missing.problem.endswith("--cache squash --cache-size 40`")
    monkeypatch.delenv("WORLD_SIZE")
    assert missing_inputs(_plans(paper, pipeline="cache"), odd_sized_cub) == []  # one process prepares it
