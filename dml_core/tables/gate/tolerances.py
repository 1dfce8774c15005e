"""Per-metric tolerances (points, i.e. percent) from one file, ``reproduce/tolerances.yaml``."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, NonNegativeFloat

from dml_core.output_paths import RECIPES_DIR
from dml_core.schema import StrictModel, load_yaml_model

DEFAULT_TOLERANCES_PATH = RECIPES_DIR / "tolerances.yaml"


class Tolerances(StrictModel):
    """``default`` for every metric not named in ``metrics``.

    >>> Tolerances(default=1.5, metrics={"NMI": 2.0}).for_metric("NMI"), Tolerances(default=1.5).for_metric("R@1")
    (2.0, 1.5)
    """

    default: NonNegativeFloat
    metrics: dict[str, NonNegativeFloat] = Field(default_factory=dict)

    def for_metric(self, metric: str) -> float:
        return self.metrics.get(metric, self.default)


def load_tolerances(path: str | Path | None = None) -> Tolerances:
    """Read and validate a tolerances file (default: the repository's ``reproduce/tolerances.yaml``)."""
    return load_yaml_model(Path(path or DEFAULT_TOLERANCES_PATH), Tolerances, "tolerances file")
