"""What the recipe layer plans, as the tables read it: rows each run targets, schedules, linear plans."""

from dml_core.output_paths import RECIPES_DIR
from dml_core.tables.gate.planned import load_plan, planned_linear_targets
from tests.tables.synthetic import PAPER_KEY, write_recipe


def test_a_papers_runs_their_targets_and_schedules(tmp_path):
    write_recipe(tmp_path)
    write_recipe(tmp_path, id="lifted-cub200", targets=[{"table": "table1", "row": "lifted-cub200"}],
                 training={"iterations": 40000})  # fmt: skip
    plan = load_plan(tmp_path, PAPER_KEY)
    assert plan.deep == {
        ("table1", "lifted-cub200"): ["lifted-cub200"],
        ("table1", "ours-cub200"): ["ours-cub200"],
        ("table8", "ours-cub200"): ["ours-cub200"],
    }
    assert plan.schedules == {"lifted-cub200": 40000, "ours-cub200": 10}
    assert plan.linear == {} and plan.deep_runs == {"lifted-cub200", "ours-cub200"}


def test_a_paper_without_a_folder_plans_nothing(tmp_path):
    plan = load_plan(tmp_path, PAPER_KEY)
    assert (plan.deep, plan.linear, plan.schedules) == ({}, {}, {})


def test_the_pinned_linear_plans_plan_the_table2_rows_they_run():
    planned = planned_linear_targets(RECIPES_DIR, "anml")
    every_method = ("nca", "pnca", "lanml-plus", "lanml-minus")
    methods = {"iris": every_method, "wine": every_method, "glass": every_method, "monk1": every_method,
               "german": every_method, "vehicle": every_method, "letter": ("nca",), "pendigits": ("nca",)}  # fmt: skip
    assert planned == {("table2", f"{m}-uci-{d}"): [f"{m}-uci-{d}"] for d, names in methods.items() for m in names}
    assert not planned_linear_targets(RECIPES_DIR, "damlrrm")  # only anml has linear plans


def test_a_table_lists_the_assumptions_and_readings_its_runs_rest_on():
    plan = load_plan(RECIPES_DIR, "damlrrm")
    assumptions, readings = plan.rests_on("table7")  # OURS 2 and Full PPs: one PK stream, no shuffled pool
    # the shared readings (reproduce/readings.yaml) at their defaults, and no damlrrm.shuffled-pool
    assert readings == {"precision": "fp32", "selection": "best-r1", "damlrrm.lr": "1e-4"}
    assert plan.reading_values["damlrrm.lr"] == ["1e-4", "1e-3"]
    assert "one-stream-batch" in assumptions and "two-stream-batch" not in assumptions
    assumptions, readings = plan.rests_on("table1")
    assert "two-stream-batch" in assumptions and readings["damlrrm.shuffled-pool"] == "cycled"
