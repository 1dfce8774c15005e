"""``dml reproduce`` and ``dml nightly`` declare their shared options once: the same names, defaults and help."""

from dml_core import cli
from dml_core.commands.options import run_options
from dml_core.runner.inline import PaperRun
from dml_core.runner.nightly import Nightly
from dml_core.runner.run_options import RunOptions

SHARED = {
    "--data-root", "--device", "--recipes", "--runs", "--results", "--tables", "--papers-dir", "--tolerances",
    "--no-progress", "--linear-jobs", "--pipeline",
}  # fmt: skip


def _options(command):
    parser = cli.build_parser(command)
    (sub,) = [action for action in parser._subparsers._group_actions]  # the subcommands' parsers
    return {
        flag: (action.dest, action.default, action.help, action.type, action.choices)
        for action in sub.choices[command]._actions
        for flag in action.option_strings
    }


def test_reproduce_and_nightly_share_every_run_option_as_one_declaration():
    reproduce, nightly = _options("reproduce"), _options("nightly")
    assert SHARED <= set(reproduce) and SHARED <= set(nightly)
    assert {flag: reproduce[flag] for flag in SHARED} == {flag: nightly[flag] for flag in SHARED}


def test_the_parsed_options_fill_the_dataclass_both_runners_extend(monkeypatch, tmp_path):
    monkeypatch.setenv("DML_RESULTS_DIR", str(tmp_path / "results"))
    args = cli.build_parser("nightly").parse_args(["nightly", "--linear-jobs", "3", "--no-progress"])
    options = RunOptions(**run_options(args))
    assert options.results_root == tmp_path / "results" and options.linear_jobs == 3 and not options.progress
    assert issubclass(PaperRun, RunOptions) and issubclass(Nightly, RunOptions)
    nightly = Nightly(papers=["anml"], tier="smoke", **run_options(args))
    paper = nightly.paper_run("anml", "n1")
    assert paper.results_root == tmp_path / "results" / "nightly" / "n1" and paper.linear_jobs == 3
    assert {**paper.run_options(), "results_root": None, "runs_root": None, "tables_root": None} == {
        **nightly.run_options(), "results_root": None, "runs_root": None, "tables_root": None,
    }  # fmt: skip
