"""Whether a deep run trained and tested on the images this machine's prepared index holds.

A results file records ``index_hashes`` (``dml_core.data.index.index_hashes``: the sha256 of each split's
sorted image paths, and of all splits together). Where the dataset is prepared under the data root, the hashes of
its index must be the recorded ones; a run on another split (two classes swapped between train and test, an
edited index) is refused by name. Where the data is not on this machine, or a file was written before the hashes
were recorded, nothing can be compared: the tables say so once instead.
"""

from __future__ import annotations

from pathlib import Path

from dml_core.data.index import dataset_index_hashes, index_path
from dml_core.errors import InputError
from dml_core.output_paths import DATA_ROOT_VARIABLE
from dml_core.results import ResultsFile


def _short(digest: str | None) -> str:
    return f"{digest[:12]}…" if digest else "none"


class IndexCheck:
    """Compares each results file's recorded index hashes with the index prepared under ``data_root`` (each
    dataset's index hashed once); collects what could not be compared for :meth:`notes`."""

    def __init__(self, data_root: Path) -> None:
        self.data_root = Path(data_root)
        self._hashes: dict[str, dict[str, str] | None] = {}
        self._unreadable: dict[str, str] = {}  # dataset -> why its index could not be read
        self._not_here: set[str] = set()
        self._unrecorded: list[Path] = []

    def _current(self, dataset: str) -> dict[str, str] | None:
        if dataset not in self._hashes:
            folder = self.data_root / dataset
            hashes = None
            if index_path(folder).is_file():
                try:
                    hashes = dataset_index_hashes(folder)
                except (InputError, OSError) as error:
                    self._unreadable[dataset] = str(error)
            self._hashes[dataset] = hashes
        return self._hashes[dataset]

    def problem(self, path: Path, results: ResultsFile) -> str | None:
        """Why ``results`` did not run on this machine's index of its dataset, or None (also when nothing can be
        compared: see :meth:`notes`)."""
        recorded = results.index_hashes
        if recorded is None:
            self._unrecorded.append(path)
            return None
        current = self._current(results.dataset)
        if current is None:
            if results.dataset not in self._unreadable:
                self._not_here.add(results.dataset)
            return None
        splits = sorted((set(recorded) | set(current)) - {"all"})
        for split in [*splits, "all"]:  # a split by name before the hash of them all
            if recorded.get(split) != current.get(split):
                return (
                    f"field index_hashes.{split}: expected {_short(current.get(split))} (the index prepared under "
                    f"{self.data_root / results.dataset}), found {_short(recorded.get(split))}: the run did not use "
                    f"this machine's {results.dataset} {split if split != 'all' else 'splits'}"
                )
        return None

    def notes(self) -> list[str]:
        """One line for each kind of check that could not be made."""
        lines = []
        if self._not_here:
            lines.append(
                f"index hashes not checked for {', '.join(sorted(self._not_here))}: the data is not prepared "
                f"on this machine (looked under the data root: --data-root or ${DATA_ROOT_VARIABLE})"
            )
        lines += [f"index hashes not checked for {name}: {why}" for name, why in sorted(self._unreadable.items())]
        if self._unrecorded:
            lines.append(
                f"index hashes not checked for {len(self._unrecorded)} results file(s) written before they were "
                f"recorded ({', '.join(path.name for path in self._unrecorded[:3])}"
                f"{', …' if len(self._unrecorded) > 3 else ''})"
            )
        return lines
