"""The hyper-parameter grids of anml Table 2's linear methods and how they are searched (section 7.1.2).

``PAPER_GRIDS`` maps a method's name (a key of ``methods.METHODS``) to the paper's grid of each hyper-parameter
(empty: nothing tuned), searched jointly by ``N_FOLDS``-fold cross-validation. Apart from the methods (scikit-learn,
numba) so that planning a linear run loads neither.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dml_core.errors import InputError

Grid = Mapping[str, Sequence[float]]
N_FOLDS = 5


def _powers_of_two(first: float, last: float, step: float) -> tuple[float, ...]:
    """(2**first, 2**(first+step), ..., 2**last).

    >>> _powers_of_two(-1, 1, 1)
    (0.5, 1.0, 2.0)
    """
    count = round((last - first) / step) + 1
    return tuple(float(2.0 ** (first + i * step)) for i in range(count))


_LAMBDAS = tuple(round(0.1 + 0.2 * i, 10) for i in range(8))  # {0.1, 0.3, ..., 1.5}
_GAMMAS = _powers_of_two(-5, 5, 0.5)  # {2^-5, 2^-4.5, ..., 2^5}

# Section 7.1.2. Tuned jointly (one Cartesian product) by 5-fold cross-validation.
PAPER_GRIDS: dict[str, dict[str, tuple[float, ...]]] = {
    "euclidean": {},
    "nca": {},
    "lanml_plus": {"lam": _LAMBDAS, "gamma1": _GAMMAS, "gamma2": _GAMMAS},
    "lanml_minus": {"lam": _LAMBDAS, "gamma1": tuple(-g for g in _GAMMAS), "gamma2": _GAMMAS},
    "pnca": {"alpha": _powers_of_two(-8, 10, 1)},
}


def thin_grid(grid: Grid, every: int) -> dict[str, tuple[float, ...]]:
    """Every ``every``-th value of each hyper-parameter, from the first: a cheaper, coarser grid.

    >>> thin_grid({"lam": (0.1, 0.3, 0.5, 0.7, 0.9)}, 2)
    {'lam': (0.1, 0.5, 0.9)}
    """
    if every < 1:
        raise InputError(f"grid thinning: expected a step of at least 1, found {every}")
    return {name: tuple(values)[::every] for name, values in grid.items()}
