"""The package map (docs/package-map.md) names every module under its part, and names no module that is not there."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dml_core"
PACKAGE_MAP = ROOT / "docs" / "package-map.md"


def _map_lines() -> dict[str, str]:
    """Each entry of the module map, its wrapped lines joined, keyed by the part it opens with (``dml_core/data/``)."""
    text = PACKAGE_MAP.read_text(encoding="utf-8")
    section = text[text.index("## The package, module by module") :]
    section = re.sub(r"\n  +", " ", section)  # an entry's continuation lines, indented under its bullet
    lines = {}
    for line in section.splitlines():
        match = re.match(r"- `(dml_core/[\w/]*)`", line)
        if match:
            lines[match.group(1)] = line
    return lines


def _named(line: str) -> set[str]:
    return set(re.findall(r"`(\w+)`", line))


def test_every_module_is_named_under_its_part():
    lines = _map_lines()
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "__init__.py":
            continue
        folder = path.parent.relative_to(ROOT).as_posix() + "/"
        part = folder if folder in lines else folder.rsplit("/", 2)[0] + "/"  # sources/, backbones/: their parent's
        if part not in lines or path.stem not in _named(lines[part]):
            missing.append(path.relative_to(ROOT).as_posix())
    assert not missing, f"modules {PACKAGE_MAP.name} does not name: {missing}"


def test_every_part_named_is_a_package_folder():
    for part in _map_lines():
        assert (ROOT / part).is_dir(), part
