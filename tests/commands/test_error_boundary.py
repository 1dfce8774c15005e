"""The ``dml`` command's one error boundary, case by case as the fault-injection pass found them: every expected
failure is one line on stderr naming the file, field or iteration, exit 2 for bad input, 1 for a failed run, 130
when interrupted; never a traceback unless ``--debug``; unwritable places are found before any work."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest
import yaml

from dml_core.cli import main
from dml_core.error_boundary import BAD_INPUT, FAILED_RUN, INTERRUPTED, Failure, describe_failure
from dml_core.errors import InputError, OutputError
from tests.tables.synthetic import PAPER_KEY, TINY_SMOKE, write_papers_dir, write_recipe

REPOSITORY = Path(__file__).parents[2]

# A run of a few seconds on the CPU: the embedded glyphs, a random 16-dimensional BN-Inception, tiny images.
TINY = {
    "id": "tiny",
    "data": {"dataset": "embedded", "num_workers": 0,
             "transforms": {"resize": 40, "crop_size": 32, "train_crop": "random_crop"}},
    "model": {"backbone": "bn_inception", "weights": "random", "embedding_dim": 16},
    "loss": {"name": "multi_similarity"},
    "sampler": {"name": "pk", "params": {"classes_per_batch": 4, "images_per_class": 2}},
    "optimizer": {"name": "adam", "lr": 1e-3},
    "training": {"iterations": 4, "eval_every": 2, "checkpoint_every": 1, "eval_batch_size": 256},
    "evaluation": {"recall_ks": [1, 2], "kmeans_iterations": 5},
}  # fmt: skip

# The loss overflows at the second step (unnormalised embeddings, squared hinges squared again, lr 1e30).
EXPLODING = {
    "model": {**TINY["model"], "normalize": False},
    "loss": {"name": "contrastive", "params": {"distance": "squared_euclidean", "power": 2}},
    "optimizer": {"name": "sgd", "lr": 1e30},
}

Outcome = namedtuple("Outcome", "code out err")


@pytest.fixture(scope="module")
def data_root(tmp_path_factory, copy_glyph_sets):
    return copy_glyph_sets(tmp_path_factory.mktemp("data"))


@pytest.fixture
def read_only(tmp_path):
    """A folder nothing can be written in, whoever runs the tests: a read-only folder for a user; for root (whom
    permissions do not stop) /sys, which refuses new files to anyone."""
    if os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    try:
        tempfile.TemporaryFile(dir="/sys").close()
    except OSError:
        yield Path("/sys")
    else:
        pytest.skip("no folder here refuses root's files")


def _recipe(tmp_path, **sections) -> Path:
    tree = {**TINY, **sections}
    tree["training"] = {**TINY["training"], **sections.get("training", {})}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tree))
    return path


def _dml(capsys, *args) -> Outcome:
    code = main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return Outcome(code, captured.out, captured.err)


def _one_line(outcome: Outcome, code: int, start: str) -> str:
    """The outcome is exit ``code`` with one line on stderr starting ``error: <start>``; returns that line."""
    assert outcome.code == code, outcome
    assert outcome.err.count("\n") == 1 and "Traceback" not in outcome.err, outcome.err
    assert outcome.err.startswith(f"error: {start}"), outcome.err
    return outcome.err.strip()


def _train(tmp_path, data_root, recipe, *extra):
    return ["train", recipe, "--data-root", data_root, "--device", "cpu", "--no-progress", *extra]  # full scale


# --- a failed run: exit 1 ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_non_finite_loss_names_the_iteration_and_says_which_checkpoint_is_left(tmp_path, data_root, capsys):
    training = {"iterations": 200, "eval_every": 100}
    recipe = _recipe(tmp_path, **EXPLODING, training={**training, "checkpoint_every": 1000})
    line = _one_line(_dml(capsys, *_train(tmp_path, data_root, recipe, "--out", tmp_path / "a")), FAILED_RUN, "")
    assert "recipe tiny: non-finite loss at iteration" in line and "; terms {'loss': " in line
    assert line.endswith(f"no checkpoint was written before it ({tmp_path / 'a' / 'checkpoint.pt'}): a rerun "
                         "starts from iteration 0")  # fmt: skip
    recipe = _recipe(tmp_path, **EXPLODING, training={**training, "checkpoint_every": 1})
    line = _one_line(_dml(capsys, *_train(tmp_path, data_root, recipe, "--out", tmp_path / "b")), FAILED_RUN, "")
    assert line.endswith(f"the last good checkpoint ({tmp_path / 'b' / 'checkpoint.pt'}) is kept")


@pytest.mark.slow
def test_a_full_disk_at_the_first_checkpoint_is_one_line_naming_the_file(tmp_path, data_root, capsys, monkeypatch):
    import shutil

    real = shutil.disk_usage
    full = real(tmp_path)._replace(free=0)  # this test's folder is full; the data folder is not
    monkeypatch.setattr(
        "dml_core.atomic_io.shutil.disk_usage", lambda path: full if Path(path).is_relative_to(tmp_path) else real(path)
    )
    outcome = _dml(capsys, *_train(tmp_path, data_root, _recipe(tmp_path), "--out", tmp_path / "run"))
    # The folder named is where the space is measured: the nearest one that exists (the run folder is made later).
    line = _one_line(outcome, FAILED_RUN, f"{tmp_path}: not enough free space to write checkpoint.pt: needs ")
    assert line.endswith("0 free; free some space or choose another location")


@pytest.mark.slow
def test_ctrl_c_is_one_line_and_exit_130(tmp_path, data_root):
    recipe = _recipe(tmp_path, training={"iterations": 100000, "eval_every": 100000, "checkpoint_every": 1})
    env = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    command = [sys.executable, "-m", "dml_core.cli", *map(str, _train(tmp_path, data_root, recipe)), "--out",
               str(tmp_path / "run")]  # fmt: skip
    # A user's Ctrl-C reaches a foreground process. Started from a background job (`nox -s tests &` in a script),
    # this test would hand the child SIGINT ignored, and Python then installs no KeyboardInterrupt handler: the child
    # must get the default disposition back, as a terminal's foreground job has it.
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        checkpoint = tmp_path / "run" / "checkpoint.pt"
        while not checkpoint.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=120)
    finally:  # a failed check must not leave the run training (and checkpointing) behind the rest of the suite
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == INTERRUPTED, err
    assert err.startswith("error: interrupted; nothing after the last checkpoint is kept") and "Traceback" not in err
    assert err.count("\n") == 1


# --- bad input: exit 2 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("out-is-a-file", "--out {afile}: expected a folder to write in, found a file in the way ({afile})"),
        ("out-under-a-file", "--out {afile}/run: expected a folder to write in, found a file in the way ({afile})"),
        ("results-is-a-folder", "--results {tmp}: expected a file path, found a folder"),
        ("results-under-a-file", "--results {afile}/r.json: expected a folder to write in, found a file in the way"),
    ],
)
def test_train_refuses_a_place_it_cannot_write_before_any_work(tmp_path, capsys, where, expected):
    afile = tmp_path / "afile"
    afile.write_text("in the way")
    recipe = _recipe(tmp_path)
    where_args = {
        "out-is-a-file": ["--out", afile],
        "out-under-a-file": ["--out", afile / "run"],
        "results-is-a-folder": ["--out", tmp_path / "run", "--results", tmp_path],
        "results-under-a-file": ["--out", tmp_path / "run", "--results", afile / "r.json"],
    }[where]
    outcome = _dml(capsys, *_train(tmp_path, tmp_path / "no-data", recipe, *where_args))
    _one_line(outcome, BAD_INPUT, expected.format(afile=afile, tmp=tmp_path))
    assert not (tmp_path / "no-data").exists() and not (tmp_path / "run").exists(), "nothing ran"


def test_read_only_outputs_are_found_before_any_work(tmp_path, capsys, read_only):
    recipe = _recipe(tmp_path)
    where = read_only / "run"
    outcome = _dml(capsys, *_train(tmp_path, tmp_path / "no-data", recipe, "--out", where))
    _one_line(outcome, BAD_INPUT, f"--out {where}: cannot write in {read_only} (")
    outcome = _dml(capsys, *_train(tmp_path, tmp_path / "no-data", recipe, "--out", tmp_path / "run", "--results",
                                   where / "results.json"))  # fmt: skip
    _one_line(outcome, BAD_INPUT, f"--results {where / 'results.json'}: cannot write in {read_only} (")
    _one_line(_dml(capsys, "prepare", "embedded", "--root", where), BAD_INPUT, f"--root {where}: cannot write in")
    _one_line(_dml(capsys, "tables", "--paper", "anml", "--tables", where), BAD_INPUT, f"--tables {where}: cannot")
    assert not (tmp_path / "no-data").exists()


def test_prepare_and_tables_refuse_a_file_in_the_way(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("in the way")
    in_the_way = f"expected a folder to write in, found a file in the way ({afile})"
    _one_line(_dml(capsys, "prepare", "cub200", "--root", afile), BAD_INPUT, f"--root {afile}: {in_the_way}")
    outcome = _dml(capsys, "tables", "--paper", "anml", "--tables", afile / "tables")
    _one_line(outcome, BAD_INPUT, f"--tables {afile / 'tables'}: {in_the_way}")


def test_reproduce_finds_every_unwritable_output_in_its_preflight(tmp_path, capsys):
    write_recipe(tmp_path / "reproduce", **TINY_SMOKE)
    afile = tmp_path / "afile"
    afile.write_text("in the way")
    outcome = _dml(
        capsys, "reproduce", PAPER_KEY, "--smoke", "--recipes", tmp_path / "reproduce", "--runs", tmp_path / "runs",
        "--results", afile, "--tables", afile, "--papers-dir", write_papers_dir(tmp_path),
    )  # fmt: skip
    assert outcome.code == BAD_INPUT and "Traceback" not in outcome.err
    assert outcome.err.splitlines() == [
        f"error: paper {PAPER_KEY}: outputs that cannot be written:",
        f"  results file {afile}/smoke/{PAPER_KEY}/ours-cub200-seed0.json: expected a folder to write in, found a "
        f"file in the way ({afile})",
        f"  tables folder {afile}: expected a folder to write in, found a file in the way ({afile})",
    ]
    assert not (tmp_path / "runs").exists(), "nothing trained"


def test_a_truncated_checkpoint_is_one_line_on_evaluate(tmp_path, capsys):
    checkpoint = tmp_path / "checkpoint.pt"
    checkpoint.write_bytes(b"PK\x03\x04 truncated")
    _one_line(_dml(capsys, "evaluate", checkpoint), BAD_INPUT, f"{checkpoint}: not a readable checkpoint (")
    checkpoint.write_bytes(b"")
    _one_line(_dml(capsys, "evaluate", checkpoint), BAD_INPUT, f"{checkpoint}: not a readable checkpoint (")
    folder = tmp_path / "folder.pt"
    folder.mkdir()
    _one_line(_dml(capsys, "evaluate", folder), BAD_INPUT, f"{folder}: is a folder, expected a checkpoint file")


@pytest.mark.slow
def test_a_truncated_checkpoint_is_one_line_on_resume(tmp_path, data_root, capsys):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "checkpoint.pt").write_bytes(b"PK\x03\x04 truncated")
    outcome = _dml(capsys, *_train(tmp_path, data_root, _recipe(tmp_path), "--out", tmp_path / "run", "--resume"))
    line = _one_line(outcome, BAD_INPUT, f"{tmp_path / 'run' / 'checkpoint.pt'}: not a readable checkpoint (")
    assert line.endswith("the file is truncated or damaged: remove it to start over, or use another --out")


def test_empty_folder_and_binary_inputs_are_one_line(tmp_path, capsys):
    empty = tmp_path / "empty.yaml"
    empty.write_bytes(b"")
    folder = tmp_path / "folder.yaml"
    folder.mkdir()
    _one_line(_dml(capsys, "train", empty), BAD_INPUT, f"{empty}: expected a mapping at the top level")
    _one_line(_dml(capsys, "train", folder), BAD_INPUT, f"{folder}: expected a recipe file, found a folder")
    np.save(tmp_path / "labels.npy", np.arange(10) % 2)
    for embeddings, expected in (
        (tmp_path / "empty.npy", "expected a .npy array for embeddings, could not read it (No data left in file)"),
        (tmp_path / "folder.npy", "is a folder, expected a .npy file of embeddings"),
        (tmp_path / "binary.npy", "expected a .npy array for embeddings, could not read it ("),
    ):
        if embeddings.name == "folder.npy":
            embeddings.mkdir()
        else:
            embeddings.write_bytes(b"" if embeddings.name == "empty.npy" else b"\x89PNG\r\n\x1a\n\x00\xff")
        outcome = _dml(capsys, "evaluate-embeddings", embeddings, tmp_path / "labels.npy")
        _one_line(outcome, BAD_INPUT, f"{embeddings}: {expected}")
    tolerances = tmp_path / "tolerances.yaml"
    tolerances.write_bytes(b"")
    outcome = _dml(capsys, "tables", "--paper", "anml", "--tables", tmp_path / "t", "--tolerances", tolerances)
    _one_line(outcome, BAD_INPUT, f"{tolerances}: expected a mapping at the top level, found an empty file")


def test_a_binary_results_file_is_refused_by_the_tables_and_one_line_for_reproduce(tmp_path, capsys):
    write_recipe(tmp_path / "reproduce", **TINY_SMOKE)
    folder = tmp_path / "results" / "smoke" / PAPER_KEY
    folder.mkdir(parents=True)
    binary = folder / "ours-cub200-seed0.json"  # where the run's results file goes
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    common = ["--recipes", tmp_path / "reproduce", "--results", tmp_path / "results", "--tables", tmp_path / "tables",
              "--papers-dir", write_papers_dir(tmp_path)]  # fmt: skip
    outcome = _dml(capsys, "tables", "--paper", PAPER_KEY, "--smoke", "--no-plots", *common)
    assert outcome.code == 0 and "Traceback" not in outcome.err
    assert f"REFUSED {binary}: not valid JSON (not UTF-8 text); expected the results file" in outcome.err
    outcome = _dml(capsys, "reproduce", PAPER_KEY, "--smoke", "--runs", tmp_path / "runs", *common)
    _one_line(outcome, BAD_INPUT, f"{binary}: not valid JSON (not UTF-8 text); expected the results file")


@pytest.mark.parametrize(
    ("setting", "field"),
    [
        ("training.iterations=0", "training.iterations: Input should be greater than 0"),
        ("training.eval_every=0", "training.eval_every: Input should be greater than 0"),
        ("training.checkpoint_every=-1", "training.checkpoint_every: Input should be greater than 0"),
        ("optimizer.lr=-0.1", "optimizer.lr: Input should be greater than 0"),
        ("optimizer.momentum=-1", "optimizer.momentum: Input should be greater than or equal to 0"),
        ("model.embedding_dim=0", "model.embedding_dim: Input should be greater than 0"),
    ],
)
def test_out_of_range_settings_are_one_line_naming_the_field(tmp_path, capsys, setting, field):
    outcome = _dml(capsys, "train", _recipe(tmp_path), "--set", setting, "--out", tmp_path / "run")
    line = _one_line(outcome, BAD_INPUT, "--set: run tiny: field ")
    assert field in line


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["evaluate-embeddings", "e.npy", "l.npy", "--kmeans-iterations", "-5"],
         "argument --kmeans-iterations: expected a positive integer, found -5"),
        (["evaluate-embeddings", "e.npy", "l.npy", "--k", "0"], "argument --k: expected a positive integer, found 0"),
        (["evaluate-embeddings", "e.npy", "l.npy", "--seed", "-1"],
         "argument --seed: expected a non-negative integer, found -1"),
        (["prepare", "embedded", "--root", "x", "--cache-size", "0"], "argument --cache-size: expected a positive"),
        (["reproduce", "anml", "--seeds", "-1"], "argument --seeds: expected a non-negative integer, found -1"),
        (["reproduce", "anml", "--linear-jobs", "0"], "argument --linear-jobs: expected a positive integer, found 0"),
        (["reproduce", "anml", "--mem-gb", "nan"], "argument --mem-gb: expected a number above 0, found nan"),
        (["linear-table2", "Iris", "--splits", "0"], "argument --splits: expected a positive integer, found 0"),
        (["linear-table2", "Iris", "--jobs", "0"], "argument --jobs: expected a positive integer, found 0"),
        (["linear-table2", "Iris", "--seed", "-1"], "argument --seed: expected a non-negative integer, found -1"),
    ],
)  # fmt: skip
def test_numeric_flags_out_of_range_are_usage_errors(capsys, args, message):
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code == BAD_INPUT
    assert message in capsys.readouterr().err


# --- the boundary itself -------------------------------------------------------------------------------------


def test_debug_shows_the_traceback_before_or_after_the_command(tmp_path):
    folder = tmp_path / "folder.yaml"
    folder.mkdir()
    for args in (["--debug", "train", str(folder)], ["train", str(folder), "--debug"]):
        with pytest.raises(InputError, match="expected a recipe file, found a folder"):
            main(args)


def test_a_bug_keeps_its_traceback(monkeypatch):
    def broken(args):
        return 1 / 0

    monkeypatch.setattr("dml_core.commands.recipes.run", broken)
    with pytest.raises(ZeroDivisionError):
        main(["recipes", "list"])


def test_each_expected_failure_has_its_exit_status_and_line():
    from dml_core.errors import NonFiniteError

    cases = [
        (InputError("a.yaml: field x: expected 1, found 2"), BAD_INPUT, "a.yaml: field x: expected 1, found 2"),
        (PermissionError(13, "Permission denied", "data/x"), BAD_INPUT, "data/x: Permission denied"),
        (OutputError("runs/x: not enough free space"), FAILED_RUN, "runs/x: not enough free space"),
        (NonFiniteError("recipe r: NaN at iteration 7"), FAILED_RUN, "recipe r: NaN at iteration 7"),
    ]  # fmt: skip
    for error, status, line in cases:
        assert describe_failure(error) == Failure(status, line)
    assert describe_failure(KeyboardInterrupt()).exit_status == INTERRUPTED
    assert describe_failure(ZeroDivisionError()) is None and describe_failure(SystemExit(2)) is None


def test_a_corrupt_image_found_by_a_loader_worker_is_named_without_the_workers_traceback(tmp_path):
    from torch.utils.data import DataLoader

    from dml_core.data.images import ImageDataset
    from dml_core.data.index import SplitIndex

    corrupt = tmp_path / "001.Bird" / "a.jpg"
    corrupt.parent.mkdir()
    corrupt.write_bytes(b"\xff\xd8\xff\xe0 not a whole JPEG")
    split = SplitIndex("cub200", "test", tmp_path, ("001.Bird/a.jpg",), np.array([1]))
    loader = DataLoader(ImageDataset(split), batch_size=1, num_workers=1, collate_fn=lambda items: items)
    with pytest.raises(InputError) as caught:
        next(iter(loader))
    assert "Original Traceback" in str(caught.value)  # how torch hands a worker's error over
    failure = describe_failure(caught.value)
    assert failure.exit_status == BAD_INPUT
    assert failure.line.startswith(f"{corrupt}: cannot decode image (") and "\n" not in failure.line
    assert failure.line.endswith("the file is corrupt or truncated")
