"""Finding annotation files and image folders inside a prepared dataset folder, whatever the nesting.

Archives and mirrors nest differently (``CUB_200_2011/images.txt`` or ``images.txt``; a folder the user
linked in), so sources look a few levels deep instead of assuming one layout.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from dml_core.errors import InputError

SEARCH_DEPTH = 3
MAX_LISTED = 5


def _hidden(path: Path, dataset_dir: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(dataset_dir).parts[:-1])


def find_files(dataset_dir: Path, name: str, depth: int = SEARCH_DEPTH) -> list[Path]:
    """Files or folders called ``name`` at most ``depth`` levels below ``dataset_dir`` (links followed).

    Hidden folders are not searched: they hold the suite's staging copies (an extraction in progress, or one a
    killed ``prepare`` left), never a second copy of the dataset.
    """
    dataset_dir = Path(dataset_dir)
    found: list[Path] = []
    for level in range(depth + 1):
        matches = dataset_dir.glob("/".join(["*"] * level + [name]))
        found.extend(sorted(path for path in matches if not _hidden(path, dataset_dir)))
    return found


def find_one(dataset_dir: Path, name: str, dataset: str, expected: str) -> Path | None:
    """The single file ``name`` under ``dataset_dir``; None if absent, an error if ambiguous."""
    found = [path for path in find_files(dataset_dir, name) if path.is_file()]
    if len(found) > 1:
        listed = ", ".join(str(path) for path in found[:MAX_LISTED])
        raise InputError(
            f"{dataset}: {name}: expected one copy under {dataset_dir} ({expected}), "
            f"found {len(found)}: {listed}; remove the extra copies"
        )
    return found[0] if found else None


def require_one(dataset_dir: Path, name: str, dataset: str, expected: str, hint: str = "") -> Path:
    """Like :func:`find_one` but a missing file is an error saying what was expected and what to do."""
    path = find_one(dataset_dir, name, dataset, expected)
    if path is None:
        raise InputError(
            f"{dataset}: {name} not found under {dataset_dir} (searched {SEARCH_DEPTH} levels deep); "
            f"expected {expected}.{' ' + hint if hint else ''}"
        )
    return path


def resolve_image_base(
    candidates: Iterable[Path], sample: str, dataset: str, annotation: Path, dataset_dir: Path
) -> Path:
    """The first candidate folder inside ``dataset_dir`` holding the annotation's first image ``sample``."""
    tried: list[Path] = []
    for base in candidates:
        if base in tried or not (base == dataset_dir or dataset_dir in base.parents):
            continue
        tried.append(base)
        if (base / sample).is_file():
            return base
    raise InputError(
        f"{dataset}: {annotation} lists {sample!r}, but no such image under "
        f"{', '.join(str(path) for path in tried)}; extract the image archive next to it"
    )


def check_images_exist(dataset: str, dataset_dir: Path, relative_paths: Sequence[str]) -> None:
    """Every listed image must be on disk: a partial extraction is refused, naming the first missing files."""
    missing = [relative for relative in relative_paths if not (dataset_dir / relative).is_file()]
    if missing:
        listed = ", ".join(missing[:MAX_LISTED])
        raise InputError(
            f"{dataset}: {len(missing)} of {len(relative_paths)} listed images are missing under "
            f"{dataset_dir} (first: {listed}); the extraction is incomplete, extract the archive again"
        )


def relative_to(folder: Path, dataset_dir: Path) -> Callable[[str], str]:
    """A function taking an annotation's image path (relative to ``folder``) to the path the index stores: relative
    to the dataset folder, POSIX separators. It joins strings, not a Path per image: every load re-reads SOP's
    120,053 entries (the difference: docs/performance.md).

    >>> relative_to(Path("/d/Stanford_Online_Products"), Path("/d"))("bicycle_final/1_0.JPG")
    'Stanford_Online_Products/bicycle_final/1_0.JPG'
    """
    prefix = Path(folder).relative_to(dataset_dir).as_posix()
    return lambda path: posixpath.normpath(posixpath.join(prefix, path))


def read_table(path: Path, dataset: str, columns: int, skip: int = 0) -> list[list[str]]:
    """Whitespace-separated rows with at least ``columns`` fields, after ``skip`` header lines."""
    rows = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for line_number, line in enumerate(lines[skip:], start=skip + 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) < columns:
            raise InputError(f"{dataset}: {path}: line {line_number}: expected {columns} fields, found {line!r}")
        rows.append(fields)
    return rows
