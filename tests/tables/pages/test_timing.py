"""Training time: ours beside the paper's training-time table (device, ratio, projection to the schedule in
readable units), and a compact summary for papers that print none."""

import pytest

from dml_core.published import load_published
from dml_core.tables.gate.join import load_results_folder
from dml_core.tables.pages.timing import paper_timing_table, timing_frame, timing_summary
from dml_core.tier import Tier
from tests.tables.synthetic import PAPER_KEY, results_payload, write_papers_dir, write_results_file


@pytest.fixture
def paper(tmp_path):
    return load_published(PAPER_KEY, write_papers_dir(tmp_path))


def test_our_speed_sits_beside_the_papers_with_the_ratio_and_the_projection(tmp_path, paper):
    write_results_file(tmp_path, results_payload(seed=0, iterations_per_second=1.0, train_seconds=3600.0))
    write_results_file(tmp_path, results_payload(seed=1, iterations_per_second=3.0, train_seconds=10800.0))
    loaded = load_results_folder(tmp_path / PAPER_KEY, tier=Tier.FULL)
    timing = timing_frame(paper, loaded, schedules={"ours-cub200": 40000})
    [line] = timing.to_dict("records")
    assert (line["row"], line["iterations_per_second"], line["train_seconds"]) == ("ours-cub200", 2.0, 7200.0)
    assert (line["device"], line["seeds"], line["schedule"]) == ("NVIDIA H100", "0,1", 40000.0)
    [shown] = paper_timing_table(paper.table("table8"), timing).to_dict("records")
    assert shown == {
        "method": "OURS",
        "paper: iterations/s": "0.84",
        "paper: training time": "13.2 h",
        "ours: device": "NVIDIA H100",
        "ours: iterations/s": "2.00",
        "ours / paper": "2.4×",
        "ours: projected training time": "5.6 h (40,000 iterations)",  # 40,000 / 2.0 s
    }


def test_a_speed_measured_on_a_shared_host_says_so_beside_its_device(tmp_path, paper):
    alone, shared = (results_payload(seed=seed, train_seconds=3600.0) for seed in (0, 1))
    alone["timing"]["host_load"] = {"cpus": 16, "samples": 9, "mean": 9.0, "max": 12.0}  # its loader workers
    shared["timing"]["host_load"] = {"cpus": 16, "samples": 9, "mean": 30.5, "max": 41.0}
    write_results_file(tmp_path, alone)
    assert list(timing_frame(paper, load_results_folder(tmp_path / PAPER_KEY, tier=Tier.FULL))["device"]) == [
        "NVIDIA H100"
    ]
    write_results_file(tmp_path, shared)
    [line] = timing_frame(paper, load_results_folder(tmp_path / PAPER_KEY, tier=Tier.FULL)).to_dict("records")
    assert line["device"] == "NVIDIA H100 ⚠ host shared (load 30.5 on 16 CPUs)"


def test_a_timing_row_whose_recipe_has_not_run_says_so(paper):
    timing = timing_frame(paper, [], {("table8", "ours-cub200"): ["ours-cub200"]}, {"ours-cub200": 40000})
    assert list(timing["device"]) == ["not run"] and timing["iterations_per_second"].isna().all()
    [shown] = paper_timing_table(paper.table("table8"), timing).to_dict("records")
    assert (shown["ours: iterations/s"], shown["ours: projected training time"]) == ("—", "—")


def test_a_paper_without_a_timing_table_gets_one_line_per_run_and_nothing_for_planned_ones(tmp_path, paper):
    write_results_file(tmp_path, results_payload(iterations_per_second=0.0000857, train_seconds=0.9))
    timing = timing_frame(
        paper, load_results_folder(tmp_path / PAPER_KEY, tier=Tier.FULL), schedules={"ours-cub200": 10}
    )
    [shown] = timing_summary(timing).to_dict("records")
    assert shown["iterations/s"] == "1 per 3.2 h" and shown["training time"] == "0.9 s"  # never 8.57e-05
    assert shown["projected to the schedule"] == "32.4 h"  # 10 iterations at that speed
    assert timing_summary(timing_frame(paper, [], {("table8", "ours-cub200"): ["ours-cub200"]})).empty
