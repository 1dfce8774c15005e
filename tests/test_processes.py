"""The failure reports of tests that start processes: each rank's own output under torchrun, and the process logs
under a failed test's ``tmp_path``."""

from tests.processes import log_files_report
from tests.torchrun import torchrun

RANKS = """
import os, sys, time
rank = os.environ["RANK"]
print(f"rank {rank} starts")
if rank == "1":
    print("rank 1: expected a prepared dataset, found none", file=sys.stderr)
    sys.exit(2)
time.sleep(60)  # rank 0 waits, as in a collective, until torchrun stops it
"""


def test_a_failed_torchrun_reports_each_ranks_own_output_and_torchruns_summary(tmp_path):
    script = tmp_path / "ranks.py"
    script.write_text(RANKS)
    outcome = torchrun(2, str(script))
    assert outcome.returncode != 0
    assert outcome.rank_stdout == ("rank 0 starts\n", "rank 1 starts\n")
    report = outcome.report()
    rank_1 = report.index("===== rank 1 stderr =====\nrank 1: expected a prepared dataset, found none")
    summary = report.index("===== torchrun (exit status 1) =====")
    assert rank_1 < summary and "exitcode  : 2" in report[summary:]  # the root cause, after the ranks' own words


def test_the_process_logs_of_a_folder_are_reported_head_and_tail(tmp_path):
    (tmp_path / "part").mkdir()
    (tmp_path / "part" / "train.log").write_text("".join(f"line {i}\n" for i in range(100)))
    (tmp_path / "notes.txt").write_text("not a log")
    report = log_files_report(tmp_path)
    assert report.startswith("===== part/train.log =====\nline 0\n")
    assert "line 14\n[... 45 lines ...]\nline 60\n" in report and report.endswith("line 99")
    assert "notes" not in report
