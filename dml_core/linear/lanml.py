"""The LANML objective, anml Eq. (19), with the experimental choices of section 7.1.1.

    F(M) = sum_i hinge( ds_i(M) - dd_i(M) ) + lam * Omega(M)
    ds_i = b_{gamma1}( {d_M(x_i, x_j) : j in S_i} )      soft radius of the similar set   (Eq. 15)
    dd_i = b_{gamma2}( {d_M(x_i, x_l) : l in D_i} )      soft radius of the dissimilar set (Eq. 16)
    Omega(M) = (1/N) sum_i (1/|S_i|) sum_{j in S_i} d_M(x_i, x_j)
    hinge(x) = max(0, margin + x)

b is the log-exp mean (Eq. 12). gamma1 > 0 is LANML+, gamma1 < 0 is LANML- (convex for gamma2 > 0,
Lemma 3). The paper names the hinge loss but not its margin. With margin 0 the convex problem is solved
by M = 0 (every term vanishes), so a margin is needed to fix the scale of M; ``margin=1`` is our choice,
as in LMNN. The loss is summed and Omega averaged over queries, as Eq. (19) prints them.
Queries with an empty S_i (a class of one sample) have no constraint and are left out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dml_core.linear.kernels import scatter_weights, shifted_exponents
from dml_core.linear.log_exp_mean import EXPONENT_FLOOR, GAMMA_ZERO, log_exp_mean_with_weights

DEFAULT_MARGIN = 1.0


@dataclass(frozen=True)
class PackedSet:
    """A set mask (row i = the members of query i's set) as rectangular blocks of flat (n * n) indices:
    queries with the same set size share a block, so a block's distances are gathered without the entries
    outside the sets (LANML-'s S_i holds 10 of ~100 samples; no pass is spent on the other 90)."""

    queries: tuple[np.ndarray, ...]  # per block: (g,) query rows
    members: tuple[np.ndarray, ...]  # per block: (g, k) flat indices i * n + j of the members, ascending j

    @classmethod
    def from_mask(cls, mask: np.ndarray) -> PackedSet:
        n, sizes = mask.shape[1], mask.sum(axis=1)
        queries, members = [], []
        for size in np.unique(sizes[sizes > 0]):
            rows = np.flatnonzero(sizes == size)
            columns = np.nonzero(mask[rows])[1].reshape(len(rows), size)
            queries.append(rows)
            members.append(rows[:, None] * n + columns)
        return cls(tuple(queries), tuple(members))


@dataclass(frozen=True)
class LanmlSets:
    """S_i and D_i packed once for every objective evaluation on the same samples.

    Queries with an empty S_i or D_i have no constraint and are left out of both."""

    n: int
    queries: np.ndarray  # (n,) bool: the queries that take part
    similar: PackedSet
    dissimilar: PackedSet

    @classmethod
    def from_masks(cls, similar: np.ndarray, dissimilar: np.ndarray) -> LanmlSets:
        if np.any(similar & dissimilar):
            raise ValueError("lanml: a sample cannot be in both S_i and D_i")
        queries = similar.any(axis=1) & dissimilar.any(axis=1)
        packed_similar = PackedSet.from_mask(similar & queries[:, None])
        packed_dissimilar = PackedSet.from_mask(dissimilar & queries[:, None])
        return cls(len(queries), queries, packed_similar, packed_dissimilar)


def lanml_objective(
    distances: np.ndarray,
    similar: np.ndarray,
    dissimilar: np.ndarray,
    gamma1: float,
    gamma2: float,
    lam: float,
    margin: float = DEFAULT_MARGIN,
) -> tuple[float, np.ndarray]:
    """F(M) and dF/dD for the (n, n) squared Mahalanobis ``distances`` and boolean set masks."""
    sets = LanmlSets.from_masks(similar, dissimilar)
    value, gradient = lanml_objectives(distances, sets, gamma1, gamma2, lam, margin)
    return float(value), gradient


def lanml_objectives(
    distances: np.ndarray,
    sets: LanmlSets,
    gamma1: float | np.ndarray,
    gamma2: float | np.ndarray,
    lam: float | np.ndarray,
    margin: float = DEFAULT_MARGIN,
    compiled: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """F and dF/dD for a stack of problems on the same samples: ``distances`` (..., n, n), hyper-parameters
    that broadcast against ``distances.shape[:-2]`` (one value per problem), the sets shared.

    Each problem gets exactly the arithmetic it would get alone. ``compiled`` takes the fused passes of
    ``kernels`` (the same bits) for a stack (..., n, n) whose gammas are all away from 0; otherwise, or
    with ``compiled=False``, every step is a numpy expression.
    """
    n, lead = sets.n, distances.shape[:-2]
    gamma1, gamma2, lam = (np.asarray(h, dtype=np.float64) for h in (gamma1, gamma2, lam))
    flat = distances.reshape(*lead, n * n)
    fused = (
        compiled
        and len(lead) == 1
        and not np.any(
            np.abs(np.concatenate([np.broadcast_to(gamma1, lead), np.broadcast_to(gamma2, lead)])) < GAMMA_ZERO
        )
    )
    radii = _fused_radii if fused else _radii
    similar_radius, similar_weights, similar_sums = radii(flat, n, sets.similar, _per_row(gamma1), means=True)
    dissimilar_radius, dissimilar_weights, _ = radii(flat, n, sets.dissimilar, _per_row(gamma2))
    # np.take keeps the per-query arrays C-contiguous (fancy indexing on the last axis of a stack does not),
    # so that every sum over queries adds in the order a single problem's does.
    queries = np.flatnonzero(sets.queries)
    hinge_argument = margin + np.take(similar_radius, queries, axis=-1) - np.take(dissimilar_radius, queries, axis=-1)
    active = np.zeros(similar_radius.shape, dtype=bool)
    active[..., queries] = hinge_argument > 0
    regulariser = np.sum(np.take(similar_sums, queries, axis=-1), axis=-1) / n
    value = np.sum(np.where(hinge_argument > 0, hinge_argument, 0.0), axis=-1) + lam * regulariser

    # dF/dd_ij = active_i * (dds_i/dd_ij - ddd_i/dd_ij) + lam / (n |S_i|) [j in S_i]; S_i and D_i are disjoint.
    # Each block's entries are written straight into the dense gradient (0 for entries in no set).
    lam_per_entry = _per_row(_per_row(lam)) / n
    similar, dissimilar = sets.similar, sets.dissimilar
    gradient = np.zeros((*lead, n * n))
    if fused:
        lam_per_entry = np.broadcast_to(lam_per_entry, (*lead, 1, 1))[:, 0, 0]
        for rows, members, (exponentials, total) in zip(similar.queries, similar.members, similar_weights, strict=True):
            added = lam_per_entry / members.shape[1]
            scatter_weights(gradient, members, rows, exponentials, total, active, added, False)
        for rows, members, (exponentials, total) in zip(
            dissimilar.queries, dissimilar.members, dissimilar_weights, strict=True
        ):
            scatter_weights(gradient, members, rows, exponentials, total, active, lam_per_entry, True)
        return value, gradient.reshape(distances.shape)
    # (In place on the weights, which are this call's own arrays: the same products, no temporaries.)
    for rows, members, weights in zip(similar.queries, similar.members, similar_weights, strict=True):
        np.multiply(active[..., rows, None], weights, out=weights)
        gradient[..., members] = np.add(weights, lam_per_entry / members.shape[1], out=weights)
    for rows, members, weights in zip(dissimilar.queries, dissimilar.members, dissimilar_weights, strict=True):
        np.multiply(active[..., rows, None], weights, out=weights)
        gradient[..., members] = np.negative(weights, out=weights)
    return value, gradient.reshape(distances.shape)


def _radii(
    flat_distances: np.ndarray, n: int, packed: PackedSet, gamma: np.ndarray, means: bool = False
) -> tuple[np.ndarray, list[np.ndarray], np.ndarray | None]:
    """Per query: the log-exp mean of its set's distances, its weights (one array per block) and, if asked,
    the mean distance over the set (the regulariser's term); 0 for queries without a set."""
    radius = np.zeros((*flat_distances.shape[:-1], n))
    mean = np.zeros((*flat_distances.shape[:-1], n)) if means else None
    weights = []
    for rows, members in zip(packed.queries, packed.members, strict=True):
        values = np.take(flat_distances, members, axis=-1)  # (..., g, k)
        radius[..., rows], block_weights = log_exp_mean_with_weights(values, gamma, None)
        if mean is not None:
            mean[..., rows] = values.sum(axis=-1) / members.shape[1]
        weights.append(block_weights)
    return radius, weights, mean


def _fused_radii(
    flat_distances: np.ndarray, n: int, packed: PackedSet, gamma: np.ndarray, means: bool = False
) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]], np.ndarray | None]:
    """``_radii`` for a stack (B, n * n) with every gamma away from 0, through the compiled passes: the same
    radii and means; the weights stay unnormalised, as (exponentials, row totals) per block, for
    ``scatter_weights`` to divide as ``_radii`` does."""
    problems = flat_distances.shape[0]
    gamma = np.ascontiguousarray(np.broadcast_to(gamma, (problems, 1))[:, 0])
    radius = np.zeros((problems, n))
    mean = np.zeros((problems, n)) if means else None
    weights = []
    for rows, members in zip(packed.queries, packed.members, strict=True):
        exponentials = np.empty((problems, *members.shape))
        shift = np.empty((problems, members.shape[0]))
        raw = np.empty((problems, *members.shape)) if means else np.empty((0, 0, 0))
        shifted_exponents(flat_distances, members, gamma, EXPONENT_FLOOR, exponentials, shift, raw)
        np.exp(exponentials, out=exponentials)
        total = exponentials.sum(axis=-1)
        log_sum = np.log(total) + shift
        radius[:, rows] = -(log_sum - np.log(members.shape[1])) / gamma[:, None]
        if mean is not None:
            mean[:, rows] = raw.sum(axis=-1) / members.shape[1]
        weights.append((exponentials, total))
    return radius, weights, mean


def _per_row(hyper_parameter: np.ndarray) -> np.ndarray:
    """A per-problem value, broadcastable over one more trailing axis (a number stays a number)."""
    return hyper_parameter[..., None] if hyper_parameter.ndim else hyper_parameter
