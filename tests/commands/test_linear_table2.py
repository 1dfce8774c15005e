import json

from dml_core.cli import main


def test_runs_the_protocol_and_writes_one_json_per_method(tmp_path, capsys):
    code = main(
        ["linear-table2", "Iris", "--methods", "euclidean", "pnca", "--splits", "2", "--grid-every", "10",
         "--max-iterations", "40", "--out", str(tmp_path)]
    )  # fmt: skip
    assert code == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split("\t")[:2] for line in lines] == [["Iris", "Euclidean"], ["Iris", "PNCA"]]
    saved = json.loads((tmp_path / "anml_table2_Iris_pnca_k-test.json").read_text())
    assert saved["settings"]["grid"] == {"alpha": [2.0**-8, 2.0**2]}
    assert saved["settings"]["solver"]["max_iterations"] == 40
    assert saved["settings"]["n_jobs"] == 1
    assert len(saved["splits"]) == 2


def test_unknown_data_root_is_a_one_line_error(tmp_path, capsys):
    assert main(["linear-table2", "Glass", "--methods", "euclidean", "--root", str(tmp_path)]) == 2
    assert "not prepared" in capsys.readouterr().err


def test_the_data_root_defaults_to_dml_data_root_as_prepares_does(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DML_DATA_ROOT", str(tmp_path / "elsewhere"))
    assert main(["linear-table2", "Glass", "--methods", "euclidean"]) == 2
    assert f"{tmp_path / 'elsewhere' / 'uci'}" in capsys.readouterr().err  # looked where `prepare uci:Glass` writes
