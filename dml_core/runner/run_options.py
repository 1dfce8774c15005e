"""The options ``dml reproduce`` and ``dml nightly`` share: where a paper's runs read recipes and write, and how
they train. One dataclass that ``PaperRun`` and ``Nightly`` both extend (``dml_core.commands.options.
add_run_options`` declares the flags once)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from dml_core.output_paths import RECIPES_DIR


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    runs_root: Path
    results_root: Path
    tables_root: Path
    recipes_dir: Path = RECIPES_DIR
    papers_dir: Path | None = None  # published tables root (None: the repository's papers/)
    tolerances_path: Path | None = None  # None: reproduce/tolerances.yaml
    data_root: Path | None = None
    device: str | None = None
    pipeline: str | None = None  # "auto", "pil" or "cache" for every deep recipe's data.pipeline; None: the recipe's
    progress: bool = True
    linear_jobs: int = 1  # processes for the linear plans' grid searches (the numbers do not depend on it)

    def run_options(self) -> dict[str, Any]:
        """These options alone, as keyword arguments (of another ``RunOptions``, e.g. each paper of a nightly)."""
        return {option.name: getattr(self, option.name) for option in fields(RunOptions)}
