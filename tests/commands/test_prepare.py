"""``dml prepare`` through the command line: counts and notes, one-line errors, the UCI sets, the data root from
``DML_DATA_ROOT``, ``--verify`` (writes nothing), and what a Ctrl-C says."""

from dml_core.cli import main
from dml_core.commands import prepare as prepare_command
from tests.data.layouts import make_cub, shrink_spec


def test_prepare_prints_the_counts_and_the_index(monkeypatch, tmp_path, capsys):
    expected = make_cub(tmp_path / "src")
    shrink_spec(monkeypatch, "cub200", expected)
    code = main(["prepare", "cub200", "--root", str(tmp_path / "data"), "--archive", str(tmp_path / "src")])
    assert code == 0
    out = capsys.readouterr().out
    assert "cub200: verified (train 6, test 6 images)" in out
    assert f"cub200: note: {(tmp_path / 'src').resolve()}: a folder: no archive md5 to check" in out
    assert (tmp_path / "data" / "cub200" / "dml_index.csv").is_file()


def test_wrong_input_is_one_line_and_exit_2(tmp_path, capsys):
    code = main(["prepare", "cars196", "--root", str(tmp_path), "--no-download"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("error: cars196: no Cars196 annotation files under")
    assert "kaggle datasets download -d jutrera/stanford-car-dataset-by-classes-folder" in err


def test_prepare_a_uci_set_from_scikit_learn(tmp_path, capsys):
    from dml_core.cli import main

    assert main(["prepare", "uci:Wine", "--root", str(tmp_path)]) == 0
    assert (tmp_path / "uci" / "Wine.npz").is_file()
    assert "uci:Wine: verified" in capsys.readouterr().out


def test_prepare_an_unknown_dataset_is_one_line(tmp_path, capsys):
    from dml_core.cli import main

    assert main(["prepare", "cub", "--root", str(tmp_path)]) == 2
    assert (
        "expected one of cars196, cub200, embedded, embedded_mini, inshop, sop or uci:<name>, found 'cub'"
        in capsys.readouterr().err
    )


def test_prepare_uci_prepares_what_it_can_and_names_the_rest(tmp_path, capsys):
    # Offline (--no-download): only the bundled and the generated sets can be had; a failed route is exit 3.
    assert main(["prepare", "uci", "--root", str(tmp_path), "--no-download", "--quiet"]) == 3
    out = capsys.readouterr().out
    assert "uci:Iris: ships with scikit-learn" in out and (tmp_path / "uci" / "Monk1.npz").is_file()
    assert "uci:Glass: NOT prepared: " in out and "r-cran-mlbench" in out
    assert "uci:Cars: NOT prepared: no stable public copy" in out
    assert out.rstrip().endswith("uci: 3 of 15 sets ready; not prepared: " + ", ".join(
        ["Australian", "Cars", "Ecoli", "German", "Glass", "Isolet", "Solar", "Vehicle", "Pendigits", "Coil20",
         "Letter", "Usps"]))  # fmt: skip


def test_the_data_root_defaults_to_dml_data_root_and_verify_writes_nothing(monkeypatch, tmp_path, capsys):
    expected = make_cub(tmp_path / "src")
    shrink_spec(monkeypatch, "cub200", expected)
    monkeypatch.setenv("DML_DATA_ROOT", str(tmp_path / "data"))
    assert main(["prepare", "cub200", "--archive", str(tmp_path / "src" / "CUB_200_2011"), "--quiet"]) == 0
    dataset_dir = tmp_path / "data" / "cub200"
    assert (dataset_dir / "dml_index.csv").is_file()
    capsys.readouterr()
    before = {path: path.lstat().st_mtime_ns for path in (tmp_path / "data").rglob("*")}
    assert main(["prepare", "cub200", "--verify", "--quiet"]) == 0
    assert capsys.readouterr().out.startswith("cub200: the prepared copy checks out (train 6, test 6 images)")
    assert {path: path.lstat().st_mtime_ns for path in (tmp_path / "data").rglob("*")} == before
    broken = tmp_path / "src" / expected[4][0]
    broken.write_bytes(broken.read_bytes()[:40])
    assert main(["prepare", "cub200", "--verify", "--quiet"]) == 2
    assert f"{expected[4][0]}: cannot decode image" in capsys.readouterr().err
    assert {path: path.lstat().st_mtime_ns for path in (tmp_path / "data").rglob("*")} == before


def test_ctrl_c_during_prepare_says_what_it_left_not_how_to_resume_training(monkeypatch, tmp_path, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(prepare_command, "prepare", interrupted)
    assert main(["prepare", "cub200", "--root", str(tmp_path)]) == 130
    err = capsys.readouterr().err
    assert err.startswith("error: interrupted; the dataset folder is as it was before this prepare")
    assert "train" not in err
