"""The finished splits of an unfinished Table 2 run, so that an interrupted run resumes where it stopped.

A full-protocol LANML run takes hours; each split depends only on its seed, so the splits done so far are
kept (atomically, after each one) in the run's folder with the settings hash they were computed under and the
git state of each start that computed some (``provenance.git_record`` segments), and a run under the same
settings starts after them. The file goes once the results file is written.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from pathlib import Path

from dml_core.atomic_io import atomic_write_json, read_json_object
from dml_core.errors import InputError
from dml_core.linear.protocol import SplitResult

SPLIT_FIELDS = {f.name for f in fields(SplitResult)}


def save_done_splits(path: Path, settings_sha256: str, splits: list[SplitResult], git_segments: list[dict]) -> None:
    payload = {"settings_sha256": settings_sha256, "git_segments": git_segments, "splits": [asdict(s) for s in splits]}
    atomic_write_json(path, payload)


def load_done_splits(path: Path, settings_sha256: str) -> tuple[list[SplitResult], list[dict]]:
    """The splits kept at ``path`` and the git segments that computed them, if they were computed under
    ``settings_sha256``; otherwise none."""
    if not path.is_file():
        return [], []
    kept = read_json_object(path, "finished splits")
    if not isinstance(kept.get("splits"), list):
        found = type(kept.get("splits")).__name__
        raise InputError(f"{path}: field splits: expected a list of finished splits, found {found}")
    if kept.get("settings_sha256") != settings_sha256:
        return [], []  # other settings: those splits do not belong to this run
    segments = kept.get("git_segments")
    if not isinstance(segments, list) or not all(isinstance(segment, dict) for segment in segments):
        raise InputError(f"{path}: field git_segments: expected a list of git states, found {segments!r}")
    splits = []
    for number, split in enumerate(kept["splits"]):
        if not isinstance(split, dict) or set(split) != SPLIT_FIELDS:
            found = sorted(split) if isinstance(split, dict) else type(split).__name__
            raise InputError(
                f"{path}: field splits[{number}]: expected the fields {sorted(SPLIT_FIELDS)}, found {found}"
            )
        splits.append(SplitResult(**split))
    return splits, segments
