"""The repository stands on its own: no tracked file names a path of one particular machine, refers to notes or paper
texts kept outside the repository, or cites a paper by the line numbers of such a text. Papers are cited by section,
equation, table and figure; the project's notes on each paper are ``papers/<key>/method.md``.

This file is the one exception to the scan: its test cases spell out the forbidden forms, and the pattern tests
below check the patterns on them.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Home and scratch folders of Unix, macOS and Windows machines. Not flagged: URLs (the path follows a host name),
# relative paths that contain such a name (`a/home/b`), `~/...`, and the container paths the Dockerfile and docs/gpu.md
# document (/data, /weights, /results, /opt/dml).
MACHINE_PATH = re.compile(
    r"(?<![\w.~/-])/(?:work|home|root|tmp|Users)/"
    r"|(?<![\w\\])[A-Za-z]:\\{1,2}[\w.-]"
    r"|(?<![\w/])[A-Za-z]:/(?:Users|Documents and Settings)/"
)

# Files that live beside a checkout, not in it: the shared folder, its per-paper notes and reference notes, and the
# papers' extracted texts (named by number and hash, or by number under papers/). `.nox/shared` is the project's
# own environment.
OUTSIDE_FILE = re.compile(
    r"\.\./shared\b"
    r"|(?<![\w.])/shared/"
    r"|\b\d{3}_[0-9a-f]{16}\.txt\b"
    r"|\bpapers/\d{3}\b"
)
# Notes known by name; a name becomes legitimate once the repository holds a file of that name.
OUTSIDE_NOTES = re.compile(r"(?<![\w/.-])(?:\w+_method|reference)\.md\b")

# A line-number citation of an extracted text: "L" with 2-4 digits, or "L" with the placeholders nnn / xxx. One digit
# ("L2-normalised", "an L1 norm") and "L_m" are content; so is a GPU model name.
LINE_CITE = re.compile(r"(?<![\w.-])(?<!NVIDIA )L(?:\d{2,4}|nnn|xxx)\b")


def hits(line: str, tracked_names: frozenset[str] = frozenset()) -> list[str]:
    """The problems in one line of text, as "rule: matched text"; ``tracked_names`` are the repository's file names.

    >>> [problem.split(":")[0] for problem in hits("see " + "/work" + "/main/x and L348-350")]
    ['absolute machine path', 'line-number citation']
    >>> hits("notes: papers/drml/method.md, Sec. 3.3")
    []
    """
    found = [f"absolute machine path: {m.group()}" for m in MACHINE_PATH.finditer(line)]
    found += [f"file outside the repository: {m.group()}" for m in OUTSIDE_FILE.finditer(line)]
    found += [
        f"file outside the repository: {m.group()}"
        for m in OUTSIDE_NOTES.finditer(line)
        if m.group() not in tracked_names
    ]
    found += [f"line-number citation: {m.group()}" for m in LINE_CITE.finditer(line)]
    return found


def tracked_files(root: Path = ROOT) -> list[str]:
    """The files git tracks under ``root``; skips the calling test where git or the checkout is missing."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the check reads `git ls-files`")
    listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True, check=False)
    if listed.returncode != 0:
        pytest.skip("not a git checkout: the check reads `git ls-files`")
    return [name for name in listed.stdout.decode().split("\0") if name]


def text_of(path: Path) -> str | None:
    """The file's text, or None for a binary file or one listed by git but absent from the working tree."""
    try:
        data = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def test_no_tracked_file_depends_on_a_machine_or_on_files_outside_the_repository():
    names = tracked_files()
    tracked_names = frozenset(Path(name).name for name in names)
    this_file = Path(__file__).resolve().relative_to(ROOT).as_posix()
    problems = []
    for name in names:
        if name == this_file:
            continue
        text = text_of(ROOT / name)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            problems += [f"{name}:{number}: {problem}" for problem in hits(line, tracked_names)]
    assert not problems, f"{len(problems)} place(s) depend on one machine or on files outside the repository:\n" + (
        "\n".join(problems[:200])
    )


# The examples are two concatenated literals, so that `git grep` for machine paths finds none in this file either.
@pytest.mark.parametrize(
    "line",
    [
        "plan: /work" + "/main/reproduce/anml/linear/table2-wine.yaml",
        "--out /tmp" + "/run",
        "weights in /home" + "/alice/.cache",
        "(/root" + "/data)",
        "'/Users" + "/bob/cub'",
        "C:\\Users\\carol\\data",
        "C:\\\\Users\\\\carol",
        "C:/Users" + "/carol/data",
    ],
)
def test_machine_paths_are_found(line):
    assert any(problem.startswith("absolute machine path") for problem in hits(line))


@pytest.mark.parametrize(
    "line",
    [
        "docker run -v $PWD/data:/data -v $PWD/out:/results dml-repro",
        "COPY . /opt/dml",
        "https://github.com/zbr17/DRML/blob/main/examples/home/x",
        "file a/home/b",
        "weights in ~/.cache/dml/weights",
        ".nox/shared/bin/dml --help",
        'raise RuntimeError(f"trace:\\n{trace}")',
        "ratio 3:1 at 16:9",
    ],
)
def test_container_paths_urls_and_relative_paths_are_not_machine_paths(line):
    assert hits(line) == []


@pytest.mark.parametrize(
    "line",
    [
        "Recall@K lists (.." + "/shared/reference.md section 4)",
        "Counts are from /shared/reference.md section 2",
        "(drml_method.md section 14)",
        "the summary (reference.md)",
        "seed text 004_9e1437aa43afa9a5.txt",
        "seed text papers/001",
    ],
)
def test_references_to_outside_files_are_found(line):
    assert any(problem.startswith("file outside the repository") for problem in hits(line))


@pytest.mark.parametrize(
    "line",
    [
        "notes: papers/drml/method.md (section 3)",
        "see reproduce/anml/table2_linear.md and tables/anml.md",
        "papers/<key>/published.yaml",
        ".nox/shared/.dml-environment",
        "transcribed from the paper's extracted text (the seed text of the notes below)",
    ],
)
def test_repository_files_are_not_outside_references(line):
    assert hits(line, frozenset({"method.md", "table2_linear.md", "anml.md"})) == []


def test_outside_a_git_checkout_the_scan_is_skipped_with_its_reason(tmp_path):
    with pytest.raises(pytest.skip.Exception, match="not a git checkout"):
        tracked_files(tmp_path)


def test_a_notes_name_is_allowed_once_the_repository_holds_it():
    line = "see reference.md"
    assert hits(line) != []
    assert hits(line, frozenset({"reference.md"})) == []


@pytest.mark.parametrize("line", ["(L348-350)", "[L488]", "L2163-2165", "[L209-L211]", '(cited "Lnnn")', "Lxxx"])
def test_line_number_citations_are_found(line):
    assert any(problem.startswith("line-number citation") for problem in hits(line))


@pytest.mark.parametrize(
    "line",
    [
        "features L2-normalised before distances",
        "an L1 norm; L_m is the metric loss",
        "LANML and L2 normalisation",
        "one NVIDIA L40 GPU",
        "Sec. 3.3, Eq. 10, Table 4, Fig. 5",
        "sha256 9f0aL1234b",
    ],
)
def test_legitimate_content_is_not_a_line_citation(line):
    assert hits(line) == []
