"""Compiled passes (numba) of the LANML objective: the same floating-point operations as the numpy code they
replace, fused so that each distance is read and written once per pass instead of once per numpy call.

They do no arithmetic of their own: each multiplies, adds, divides and compares in the order, and with the
operands, that ``lanml``'s and ``log_exp_mean``'s numpy expressions do; exponentials and sums stay numpy's
(their SIMD ``exp`` and pairwise sums differ from a compiled loop's in the last bit). So every value they give
is bit for bit the numpy path's (tests/linear/test_lanml_kernels.py checks it on every block shape).
"""

from __future__ import annotations

import numba
import numpy as np

from dml_core.linear.log_exp_mean import EXPONENT_FLOOR


@numba.njit(cache=True)
def shifted_exponents(flat, members, gamma, out, shift, raw):
    """For each problem b and query row r of a block: ``out[b, r] = max(-gamma[b] * v - shift, FLOOR)`` with
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
                # np.maximum(x, FLOOR): x unless x < FLOOR (a NaN stays NaN)
                out[b, r, k] = EXPONENT_FLOOR if shifted < EXPONENT_FLOOR else shifted


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
