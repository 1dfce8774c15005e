"""README.md is a front page a newcomer reads in two minutes: short, the set-up commands near the top, every topic
page under docs/ linked from it, and no relative link in it or in docs/ that leads nowhere."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MAX_LINES, MAX_WIDTH, SETUP_BY_LINE = 130, 120, 40
# The commands the set-up block must hold: the tools venv with nox, and the test command.
SETUP_COMMANDS = ("python3 -m venv .nox/tools", "nox -s tests")
# [text](target): the target up to a space (an optional "title") or the closing parenthesis.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
# A reference definition on a line of its own: [label]: target
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(\S+)", re.MULTILINE)


def _pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def _relative_links(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    targets = LINK.findall(text) + REFERENCE.findall(text)
    return [t for t in targets if not re.match(r"[a-z][a-z+.-]*:", t) and not t.startswith("#")]


def test_the_front_page_is_short():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines, expected at most {MAX_LINES}"


def test_no_line_is_wider_than_the_limit():
    wide = [
        f"{page.relative_to(ROOT)}:{number}"
        for page in _pages()
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if len(line) > MAX_WIDTH
    ]
    assert not wide, f"lines over {MAX_WIDTH} characters: {wide}"


def test_the_setup_block_is_within_the_first_lines():
    lines = README.read_text(encoding="utf-8").splitlines()
    blocks, start = [], None
    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            if start is None:
                start = number
            else:
                blocks.append((start, number))
                start = None
    setup = [
        (first, last)
        for first, last in blocks
        if all(command in "\n".join(lines[first:last]) for command in SETUP_COMMANDS)
    ]
    assert setup, f"no code block of README.md holds all of {SETUP_COMMANDS}"
    assert setup[0][1] <= SETUP_BY_LINE, f"the set-up block ends on line {setup[0][1]}, expected by {SETUP_BY_LINE}"


def test_every_docs_page_is_linked_from_the_front_page():
    pages = sorted(DOCS.glob("*.md"))
    assert pages, "docs/ holds no page"
    linked = {(README.parent / target.split("#")[0]).resolve() for target in _relative_links(README)}
    unlinked = [page.relative_to(ROOT).as_posix() for page in pages if page.resolve() not in linked]
    assert not unlinked, f"docs pages README.md does not link: {unlinked}"


def test_every_relative_link_resolves():
    broken = [
        f"{page.relative_to(ROOT)}: {target}"
        for page in _pages()
        for target in _relative_links(page)
        if not (page.parent / target.split("#")[0]).exists()
    ]
    assert not broken, f"relative links to nothing: {broken}"


SIGNED = re.compile(r"[+−-]\d+(?:\.\d+)?")


def _numbers(text: str) -> list[float]:
    return [float(found.replace("−", "-")) for found in SIGNED.findall(text)]


def test_the_status_tables_gains_are_the_committed_mini_pages():
    """The front page's "Where each paper stands" gains, typed there, must be the figures of tables/mini/<key>.md
    (its run table's Gain column, in its row order: the headline run, then its baselines)."""
    readme = README.read_text(encoding="utf-8")
    status = readme[readme.index("## Where each paper stands") : readme.index("## Documentation")]
    rows = {line.split("|")[1].strip(): line.split("|")[2] for line in status.splitlines() if line.startswith("| ")}
    checked = 0
    for key, cell in rows.items():
        page = ROOT / "tables" / "mini" / f"{key}.md"
        if not page.is_file():
            continue
        lines = page.read_text(encoding="utf-8").splitlines()
        header = next(line for line in lines if line.startswith("| Run |"))
        column = [name.strip() for name in header.split("|")].index("Gain (R@1)")
        start = lines.index(header) + 2
        gains = []
        for line in lines[start:]:
            if not line.startswith("|"):
                break
            gains += _numbers(line.split("|")[column])[:1]
        assert _numbers(cell) == gains[: len(_numbers(cell))], f"README.md, {key}: {cell.strip()} against {page.name}"
        checked += 1
    assert checked == 5
