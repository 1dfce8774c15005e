"""Shared readings (``readings.yaml`` beside the paper folders): every run of every paper rests on them, a paper may
take another default with its own why, they are hashed by the settings they set (a run hashed before they existed
keeps its hash), and a bad declaration fails naming the file and field."""

import copy

import pytest
import yaml

from dml_core.errors import InputError
from dml_core.recipes.catalog import load_paper, run_of_file
from tests.recipes.test_compose import ASSUMPTIONS, BASE, _paper

SHARED = {
    "readings": {
        "precision": {
            "question": "fp32 or bf16 on CUDA?",
            "values": {"fp32": "fp32", "bf16": "bf16 autocast"},
            "default": "fp32",
            "why": "as the papers trained",
            "patches": {"fp32": {"training.precision": "fp32"}, "bf16": {"training.precision": "bf16"}},
        }
    }
}
RUN = {**BASE, "id": "one", "targets": ["table1/one"]}


def _with_shared(tmp_path, shared=SHARED, assumptions=ASSUMPTIONS, run=RUN):
    tmp_path.mkdir(exist_ok=True)
    folder = _paper(tmp_path, {"base.yaml": run}, assumptions)
    (tmp_path / "readings.yaml").write_text(yaml.safe_dump(shared, sort_keys=False))
    return folder


def test_every_run_rests_on_a_shared_reading_and_keeps_the_hash_it_had_before_it(tmp_path):
    (tmp_path / "before").mkdir()
    before = run_of_file(_paper(tmp_path / "before", {"base.yaml": RUN}) / "base.yaml").recipe()
    run = run_of_file(_with_shared(tmp_path / "after") / "base.yaml")
    assert run.reading_names == ["precision", "damlrrm.lr"]
    default, bf16 = run.recipe(), run.recipe({"precision": "bf16"})
    assert default.readings == {"precision": "fp32", "damlrrm.lr": "1e-4"} and default.training.precision == "fp32"
    assert default.content_hash() == before.content_hash()  # hashed by training.precision, as it was
    assert bf16.training.precision == "bf16" and bf16.variant == "precision=bf16"
    assert bf16.content_hash() != default.content_hash()


def test_a_paper_takes_its_own_default_of_a_shared_reading(tmp_path):
    own = {**ASSUMPTIONS, "shared_readings": {"precision": {"default": "bf16", "why": "its loss is robust"}}}
    paper = load_paper("damlrrm", _with_shared(tmp_path, assumptions=own).parent)
    reading = paper.assumptions.readings["precision"]
    assert (reading.default, reading.why, reading.question) == (
        "bf16",
        "its loss is robust",
        "fp32 or bf16 on CUDA?",
    )
    recipe = paper.run("one").recipe()
    assert recipe.training.precision == "bf16" and recipe.variant == ""


def _shared_with(mutate):
    shared = copy.deepcopy(SHARED)
    mutate(shared["readings"]["precision"])
    return shared


@pytest.mark.parametrize(
    ("shared", "assumptions", "message"),
    [
        (
            _shared_with(lambda r: r["patches"].pop("fp32")),
            ASSUMPTIONS,
            r"readings\.yaml.*readings\.precision\.patches: expected the settings of each value \(fp32, bf16\), "
            r"found bf16",
        ),
        (
            _shared_with(lambda r: r["patches"].update(fp32={"training.precision": "bf16"})),
            ASSUMPTIONS,
            r"readings\.precision\.patches: two values set the same settings",
        ),
        (
            SHARED,
            {**ASSUMPTIONS, "shared_readings": {"selection": {"default": "final", "why": "-"}}},
            r"assumptions\.yaml: field shared_readings: expected a reading of readings\.yaml \(precision\), "
            r"found 'selection'",
        ),
        (
            SHARED,
            {**ASSUMPTIONS, "shared_readings": {"precision": {"default": "fp16", "why": "-"}}},
            r"field shared_readings\.precision\.default: expected one of fp32, bf16, found 'fp16'",
        ),
        (
            SHARED,
            {**ASSUMPTIONS, "readings": {"lr": ASSUMPTIONS["readings"]["damlrrm.lr"]}},
            r"reading 'lr': expected a name that starts with the paper key, 'damlrrm\.'",
        ),
    ],
)
def test_bad_shared_readings_fail_naming_file_and_field(tmp_path, shared, assumptions, message):
    folder = _with_shared(tmp_path, shared, assumptions)
    with pytest.raises(InputError, match=message):
        run_of_file(folder / "base.yaml")
