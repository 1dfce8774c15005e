"""Sweep tables are found from the rows' settings (or embedding sizes), and only those."""

from dml_core.published import load_all
from dml_core.tables.pages.sweeps import sweep_points

# (paper, table) -> (panels, lines, parameter names): the parameter studies of the five papers.
EXPECTED = {
    ("damlrrm", "table4"): ({""}, {"OURS"}, {"α"}),
    ("damlrrm", "table5"): ({""}, {"OURS"}, {"β"}),
    ("drml", "table1"): ({""}, {"DRML-PA"}, {"K"}),
    ("cgml", "table2"): ({""}, {"CGML(tri)", "CGML(N-Pair)", "CGML (Binomial)"}, {"λ"}),
    ("cgml", "table3"): ({""}, {"Binomial", "CGML(Binomial)"}, {"embedding size"}),
    ("gpw", "table3"): (
        {f"{loss} · {family}" for loss in ("Pair-based loss", "Triplet-based loss")
         for family in ("Power weighting", "Exponential weighting")},
        {"v0", "v1", "v2"},
        {"p, q", "α, β", "p", "α"},
    ),
}  # fmt: skip


def test_the_five_papers_sweep_tables_and_nothing_else():
    found = {}
    for key, paper in load_all().items():
        for table in paper.tables:
            points = sweep_points(table)
            if points:
                found[(key, table.id)] = (
                    {p.panel for p in points},
                    {p.line for p in points},
                    {p.parameter for p in points},
                )
    assert found == EXPECTED


def test_points_carry_the_printed_value_and_its_numbers():
    damlrrm = load_all()["damlrrm"]
    points = sweep_points(damlrrm.table("table5"))
    assert [(p.row, p.label, p.order) for p in points][:2] == [
        ("ours-beta-0.1-cub200", "0.1", (0.1,)), ("ours-beta-0.3-cub200", "0.3", (0.3,)),
    ]  # fmt: skip
    assert not sweep_points(damlrrm.table("table1"))  # no settings: a main table
