"""The settings of the PSD solver (``solver``'s docstring says what each does), apart from the solver (numba) so
that planning a linear run does not load it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SolverConfig:
    """The solver's settings (``solver``'s docstring says what each does)."""

    max_iterations: int = 300
    tolerance: float = 1e-6
    initial_step: float = 0.1
    grow: float = 1.1
    shrink: float = 0.5
