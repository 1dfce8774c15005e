"""Per-metric tolerances (points, i.e. percent) from one file, ``reproduce/tolerances.yaml``."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dml_core.errors import InputError
from dml_core.output_paths import RECIPES_DIR

DEFAULT_TOLERANCES_PATH = RECIPES_DIR / "tolerances.yaml"


class Tolerances(BaseModel):
    """``default`` for every metric not named in ``metrics``.

    >>> Tolerances(default=1.5, metrics={"NMI": 2.0}).for_metric("NMI"), Tolerances(default=1.5).for_metric("R@1")
    (2.0, 1.5)
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    default: float = Field(ge=0)
    metrics: dict[str, float] = Field(default_factory=dict)

    def for_metric(self, metric: str) -> float:
        return self.metrics.get(metric, self.default)


def load_tolerances(path: str | Path | None = None) -> Tolerances:
    """Read and validate a tolerances file (default: the repository's ``reproduce/tolerances.yaml``)."""
    path = Path(path or DEFAULT_TOLERANCES_PATH)
    if not path.is_file():
        raise InputError(f"{path}: tolerances file not found")
    try:
        raw = yaml.safe_load(path.read_text())
        tolerances = Tolerances.model_validate(raw)
    except yaml.YAMLError as error:
        raise InputError(f"{path}: not valid YAML ({error})") from None
    except ValidationError as error:
        item = error.errors()[0]
        field = ".".join(str(part) for part in item["loc"]) or "(top level)"
        raise InputError(f"{path}: field {field}: {item['msg']}") from None
    if any(value < 0 for value in tolerances.metrics.values()):
        raise InputError(f"{path}: field metrics: expected tolerances >= 0, found {tolerances.metrics}")
    return tolerances
