"""The report file: round trip, what a damaged one says, the summary table."""

import json

import pytest

from dml_core.errors import InputError
from dml_core.gpu_check.report import PartResult, load_report, report_path, summary_table, write_report


def test_a_written_report_reads_back_and_holds_every_record(tmp_path):
    path = report_path(tmp_path, "NVIDIA H200")
    assert path.name == "gpu-check-nvidia-h200.json"
    parts = {
        "smoke": PartResult("passed", 12.5, "174 runs", {"runs": 174}, {"torch": "2.11.0"}),
        "bench": PartResult("failed: no JSON", 3.0),
    }
    write_report(path, "NVIDIA H200", parts)
    assert load_report(path) == parts
    payload = json.loads(path.read_text())
    assert payload["device"] == "NVIDIA H200" and payload["parts"]["smoke"]["environment"] == {"torch": "2.11.0"}
    assert load_report(tmp_path / "none.json") == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "expected a JSON object, found list"),
        ('{"schema": "dml gpu-check 1", "parts": {"a": {"status": "passed", "colour": 1}}}', "field parts.a: not a"),
        ('{"schema": "dml gpu-check 1", "parts": {"a": {"status": 3}}}', r"field parts.a.status: expected text"),
    ],
)
def test_a_damaged_report_is_an_input_error_naming_the_file(tmp_path, text, message):
    path = tmp_path / "gpu-check-cpu.json"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as error:
        load_report(path)
    assert str(error.value).startswith(str(path))


def test_the_summary_lists_every_part_with_what_ran_now_marked():
    parts = {"a": PartResult("passed", 61.4, "fine"), "b": PartResult("failed: " + "x" * 80, 2.0)}
    lines = summary_table(parts, ["a", "b", "c"], ran_now=["b"]).splitlines()
    assert lines[0].split() == ["part", "status", "time", "key", "figure"]
    assert lines[1].split() == ["a", "passed", "61", "s", "fine"]
    assert lines[2].startswith("b* ") and lines[2].rstrip().endswith("...  2 s")
    assert lines[3].split() == ["c", "not", "run"]


def test_figures_strict_json_cannot_hold_are_written_as_text(tmp_path):
    path = tmp_path / "gpu-check-cpu.json"
    write_report(path, "no usable GPU", {"parity": PartResult("failed: nan", 1.0, figures={"loss": float("nan")})})
    assert load_report(path)["parity"].figures == {"loss": "nan"}
