"""Every message and document spells the suite's command one way, `nox -s dml -- ARGS` (the ``dml`` session of
noxfile.py): after set-up the ``dml`` script sits in the shared environment, off the PATH, so a hint that says
`dml prepare ...` fails as typed. Docstrings and comments may name the program ``dml``; what a user reads may not."""

import ast
import re
from pathlib import Path

from dml_core.command_line import DML

ROOT = Path(__file__).resolve().parents[1]
SUBCOMMANDS = "prepare|recipes|train|evaluate-embeddings|evaluate|reproduce|tables|nightly|linear-table2|weights"
BARE = re.compile(rf"(?<![`\w/.-])`dml (?:{SUBCOMMANDS})\b")  # one backtick: a command to type
BARE_LINE = re.compile(rf"^\s*dml (?:{SUBCOMMANDS})\b")  # a line of a code block
DOCUMENTS = ("README.md", "docs/*.md", "reproduce/**/*.md", "reproduce/**/*.yaml", "papers/**/*.md", "tables/**/*.md")


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant | ast.JoinedStr):
                found.add(id(first.value))
    return found


def _message_strings(source: str):
    """Every string literal of ``source`` but its docstrings (an f-string's literal parts included), with its line."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    for node in ast.walk(tree):
        if id(node) not in docstrings and isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def bare_hints_in_messages(source: str) -> list[int]:
    """The lines of ``source`` whose string literals (docstrings aside) name `dml SUBCOMMAND` as a command.

    >>> source = 'def f():\\n    "`dml train` in a docstring"\\n    raise ValueError("run `dml train X`")\\n'
    >>> bare_hints_in_messages(source)
    [3]
    """
    return sorted({line for line, text in _message_strings(source) if BARE.search(text)})


def spelled_out_forms(source: str) -> list[int]:
    """The lines of ``source`` whose string literals (docstrings aside) spell the command form out instead of
    taking ``DML``.

    >>> spelled_out_forms('A = f"`{DML} train`"\\nB = "`nox -s dml -- train`"\\n')
    [2]
    """
    return sorted({line for line, text in _message_strings(source) if "nox -s dml --" in text})


def test_the_form_is_the_nox_session():
    assert DML == "nox -s dml --"


def test_no_message_of_the_package_names_the_bare_command():
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "dml_core").rglob("*.py"))
        for line in bare_hints_in_messages(path.read_text(encoding="utf-8"))
    ]
    assert not found, f"say `{DML} ...` (dml_core.command_line.DML), not `dml ...`: {found}"


def test_every_message_of_the_package_takes_the_form_from_its_one_constant():
    """The form is written once, in ``dml_core.command_line``; a message that spelled it out would keep the old form
    when the constant changes (docstrings, which no user reads as a message, may spell it out)."""
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "dml_core").rglob("*.py"))
        if path != ROOT / "dml_core" / "command_line.py"
        for line in spelled_out_forms(path.read_text(encoding="utf-8"))
    ]
    assert not found, f"take dml_core.command_line.DML, not the form spelled out: {found}"


def test_no_document_names_the_bare_command():
    found = []
    for pattern in DOCUMENTS:
        for path in sorted(ROOT.glob(pattern)):
            in_block = False
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                in_block ^= line.lstrip().startswith("```")
                if BARE.search(line) or (in_block and BARE_LINE.match(line)):
                    found.append(f"{path.relative_to(ROOT)}:{number}")
    assert not found, f"say `{DML} ...`, not `dml ...`: {found}"
