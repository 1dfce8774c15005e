"""The CSV long form round-trips (types included) and a damaged file is refused naming file and field."""

import pandas as pd
import pytest

from dml_core.errors import InputError
from dml_core.published import load_published
from dml_core.tables.gate.join import COLUMNS, join, load_results_folder
from dml_core.tables.gate.long_form import read_long_form, write_long_form
from dml_core.tables.gate.tolerances import Tolerances
from dml_core.tier import Tier
from tests.tables.synthetic import (
    PAPER_KEY,
    linear_payload,
    results_payload,
    write_linear_file,
    write_papers_dir,
    write_results_file,
)


def test_the_long_form_round_trips(tmp_path):
    paper = load_published(PAPER_KEY, write_papers_dir(tmp_path))
    write_results_file(tmp_path, results_payload(curve=[{"R@1": 55.0, "R@2": 66.5}]))
    frame = join(paper, load_results_folder(tmp_path / PAPER_KEY, tier=Tier.FULL), Tolerances(default=1.5),
                 {("table1", "lifted-cub200"): ["lifted-cub200"]})  # fmt: skip
    path = write_long_form(tmp_path / "damlrrm.csv", frame)
    back = read_long_form(path)
    pd.testing.assert_frame_equal(back, frame, check_dtype=False)
    assert back["quoted"].dtype == bool and back.loc[0, "variant"] == ""


def test_a_linear_note_with_commas_survives(tmp_path):
    write_linear_file(tmp_path, linear_payload())
    frame = join(
        load_published("anml"), load_results_folder(tmp_path / "anml", tier=Tier.FULL), Tolerances(default=1.5)
    )
    back = read_long_form(write_long_form(tmp_path / "anml.csv", frame))
    assert back.loc[0, "note"] == frame.loc[0, "note"] and "," in back.loc[0, "note"]


def test_damaged_files_are_refused(tmp_path):
    with pytest.raises(InputError, match="long-form table not found"):
        read_long_form(tmp_path / "none.csv")
    path = tmp_path / "bad.csv"
    path.write_text("table,row\ntable1,ours\n")
    with pytest.raises(InputError, match=r"bad.csv: field method: expected the columns"):
        read_long_form(path)
    line = {column: "" for column in COLUMNS} | {"quoted": "False", "published": "high"}
    pd.DataFrame([line]).to_csv(path, index=False)
    with pytest.raises(InputError, match=r"field published: expected numbers, found 'high'"):
        read_long_form(path)
