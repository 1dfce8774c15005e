"""The CSV long form round-trips (types included) and a damaged file is refused naming file and field."""

import dataclasses

import pandas as pd
import pytest

from dml_core.errors import InputError
from dml_core.published import load_published
from dml_core.tables.gate.join import join, load_results_folder
from dml_core.tables.gate.long_form import COLUMNS, LongFormLine, long_form_frame, read_long_form, write_long_form
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


def test_each_column_is_read_back_as_its_field_declares(tmp_path):
    """The columns and their types are declared once (``LongFormLine``): text that looks like a number or a missing
    value stays text, numbers come back as numbers, the flag as a flag; a long form written before the later columns
    reads them as not measured."""
    nan = float("nan")
    line = LongFormLine(
        table="1", row="NaN", method="N/A", dataset="", quoted=True, recipe="2", variant="", seeds="0,1", unit="seed",
        samples=2, metric="R@1", published=55.1, published_std=nan, reproduced=54.0, std=0.5, final=53.9, spread=0.5,
        spread_basis="std over 2 seeds", interval_low=nan, interval_high=nan, delta=-1.1, tolerance=1.5, gate=1.5,
        gate_basis="tolerance", status="within tolerance", note="",
    )  # fmt: skip
    back = read_long_form(write_long_form(tmp_path / "paper.csv", long_form_frame([line])))
    assert list(back.columns) == [field.name for field in dataclasses.fields(LongFormLine)]
    for field in dataclasses.fields(LongFormLine):
        value, written = back.loc[0, field.name], getattr(line, field.name)
        if field.type == "str":
            assert value == written and isinstance(value, str), field.name
        elif field.type == "bool":
            assert back[field.name].dtype == bool and value == written, field.name
        else:
            assert pd.api.types.is_numeric_dtype(back[field.name]), field.name
            assert value == written or (pd.isna(value) and pd.isna(written)), field.name
    earlier = back.drop(columns=["interval_low", "interval_high"])
    earlier.to_csv(tmp_path / "earlier.csv", index=False)
    assert read_long_form(tmp_path / "earlier.csv")[["interval_low", "interval_high"]].isna().all(axis=None)
