"""``dml --help`` lists every subcommand without importing the numeric stack; every subcommand's own parser builds
and its --help names its options; only the invoked subcommand's parser is built."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dml_core.cli import COMMANDS, build_parser, main

HEAVY = ("torch", "torchvision", "pandas", "faiss", "matplotlib", "sklearn", "scipy", "numba")
# Subcommands whose own --help needs no heavy module either (the others list choices that live beside torch code).
LIGHT_HELP = ("train", "evaluate", "reproduce", "tables", "weights")


def _modules_imported_by(*args: str) -> set[str]:
    """Top-level packages imported by ``python -m dml_core.cli ARGS``, read from ``-X importtime``."""
    completed = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "dml_core.cli", *args], capture_output=True, text=True, check=True
    )
    names = [
        line.rsplit("|", 1)[1].strip() for line in completed.stderr.splitlines() if line.startswith("import time:")
    ]
    return {name.split(".")[0] for name in names}


def test_top_level_help_imports_no_heavy_module():
    imported = _modules_imported_by("--help")
    assert "dml_core" in imported  # the parse of -X importtime found the imports at all
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))


@pytest.mark.parametrize("command", LIGHT_HELP)
def test_light_subcommand_help_imports_no_heavy_module(command):
    assert not _modules_imported_by(command, "--help") & set(HEAVY)


def test_top_level_help_lists_every_subcommand_with_its_summary(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    for name, (_, summary) in COMMANDS.items():
        summary = " ".join(summary.split())
        assert name in out and summary in out, name


@pytest.mark.parametrize("command", COMMANDS)
def test_every_subcommand_help_shows_its_own_options(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: dml {command}") and "options:" in out


def test_only_the_invoked_subcommand_gets_its_options():
    parser = build_parser("tables")
    assert parser.parse_args(["tables", "--check"]).check is True
    with pytest.raises(SystemExit):  # train's options are not built when tables runs
        parser.parse_args(["train", "recipe.yaml"])


def test_an_unknown_subcommand_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["tabels"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'tabels'" in capsys.readouterr().err
