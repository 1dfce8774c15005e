"""Compiled passes (numba) of the linear objectives (LANML, PNCA, the distances): the same floating-point operations
as the numpy code they replace, fused so that each distance is read and written once per pass instead of once per
numpy call.

They do no arithmetic of their own: each multiplies, adds, divides and compares in the order, and with the
operands, that ``lanml``'s, ``log_exp_mean``'s and ``mahalanobis``' numpy expressions do; exponentials and sums stay
numpy's (their SIMD ``exp`` and pairwise sums differ from a compiled loop's in the last bit). So every value they
give is bit for bit the numpy path's, for finite inputs (tests/linear/test_kernels.py checks it).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def shifted_exponents(flat, members, gamma, floor, out, shift, raw):
    """For each problem b and query row r of a block: ``out[b, r] = max(-gamma[b] * v - shift, floor)`` with
    ``v = flat[b, members[r]]`` and ``shift[b, r]`` the row's largest ``-gamma[b] * v`` (``log_exp_mean``'s
    ``_closed_form`` before its ``exp``); ``raw[b, r] = v`` where ``raw`` has rows (the regulariser's sums)."""
    problems, rows, size = out.shape
    keep_raw = raw.shape[0] > 0
    for b in range(problems):
        minus_gamma = -gamma[b]
        for r in range(rows):
            largest = -np.inf
            for k in range(size):
                value = flat[b, members[r, k]]
                if keep_raw:
                    raw[b, r, k] = value
                exponent = minus_gamma * value
                out[b, r, k] = exponent
                largest = max(largest, exponent)
            shift[b, r] = largest
            for k in range(size):
                shifted = out[b, r, k] - largest
                # np.maximum(x, floor): x unless x < floor (a NaN stays NaN)
                out[b, r, k] = floor if shifted < floor else shifted


@numba.njit(cache=True)
def masked_shifted_exponents(values, scale, mask, floor, out, shift):
    """For each row r: ``out[r] = max(where(mask[r], -scale * values[r], -inf) - shift[r], floor)`` with ``shift[r]``
    the row's largest masked exponent (``log_exp_mean.masked_log_sum_exp``'s numpy lines before its ``exp``)."""
    rows, size = values.shape
    minus_scale = -scale
    for r in range(rows):
        largest = -np.inf
        for k in range(size):
            exponent = minus_scale * values[r, k] if mask[r, k] else -np.inf
            out[r, k] = exponent
            largest = max(largest, exponent)
        shift[r] = largest
        for k in range(size):
            shifted = out[r, k] - largest
            out[r, k] = floor if shifted < floor else shifted


@numba.njit(cache=True)
def scatter_weights(gradient, members, rows, exponentials, total, active, added, negate):
    """Write a block's gradient entries: ``gradient[b, members[r]] = w'`` with ``w = exponentials / total``
    (the log-exp mean's weights), ``w = active * w``, then ``w + added[b]`` (similar sets) or ``-w``
    (dissimilar sets), as ``lanml_objectives`` computes them."""
    problems, block_rows, size = exponentials.shape
    for b in range(problems):
        for r in range(block_rows):
            on = 1.0 if active[b, rows[r]] else 0.0
            row_total = total[b, r]
            for k in range(size):
                weight = on * (exponentials[b, r, k] / row_total)
                gradient[b, members[r, k]] = -weight if negate else weight + added[b]


@numba.njit(cache=True)
def finish_distances(distances, norms):
    """``pairwise_mahalanobis`` after its product: ``max((-2 c_ij + n_i) + n_j, 0)`` in place, 0 on the diagonal."""
    problems, n, _ = distances.shape
    for b in range(problems):
        for i in range(n):
            for j in range(n):
                value = distances[b, i, j] * -2.0 + norms[b, i] + norms[b, j]
                distances[b, i, j] = 0.0 if value < 0.0 else value
            distances[b, i, i] = 0.0
