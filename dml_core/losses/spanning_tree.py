"""Minimum spanning forests by Prim's algorithm, batched on the device (damlrrm, Section 3.3).

``prim_forest(weights)`` grows one Prim tree in every connected component of an undirected weighted
graph *at the same time*: each step adds, to every component still growing, the unvisited vertex joined
to its tree by the lightest edge (Prim's step 2). Components are the classes of a neat batch when
cross-class weights are ``inf`` (``class_forest``), so all the batch's per-class trees grow together in one
loop whose steps are a few (N, N) tensor operations each: no Python loop over pairs or classes, no host
sync. The loop runs as many steps as the largest component has vertices: the largest class, which the caller
knows without reading the labels (damlrrm: the sampler's K images per class); N steps when it does not.
"""

from __future__ import annotations

import torch
from torch import Tensor


def prim_forest(weights: Tensor, steps: int | None = None, components: Tensor | None = None) -> Tensor:
    """The parent of every vertex in a minimum spanning forest of ``weights``; -1 for each tree's root.

    ``weights`` is a symmetric (N, N) matrix; ``inf`` marks a missing edge, the diagonal is ignored.
    Each component's root is its lowest-index vertex (Prim's "arbitrary start vertex"); ties between equal
    edges go to the lowest vertex index, so the result is deterministic. The forest's edges are
    ``(parent[j], j)`` for every non-root ``j``. ``steps`` bounds the loop: the size of the largest
    component suffices (each step adds one vertex to every component); the default N is always enough. A bound
    that leaves a component unfinished fails an assertion on the device (at once on the CPU, at the next sync on
    CUDA) instead of returning a forest with a missing edge.
    ``components`` (boolean (N, N), whether i and j are connected) saves computing the connectivity when the
    caller knows it (the classes, for ``class_forest``).
    No gradient flows through the choice of edges (the weights are detached).

    >>> w = torch.tensor([[0.0, 1.0, 4.0], [1.0, 0.0, 2.0], [4.0, 2.0, 0.0]])
    >>> prim_forest(w)
    tensor([-1,  0,  1])
    """
    w = weights.detach()
    n = w.shape[0]
    eye = torch.eye(n, dtype=torch.bool, device=w.device)
    w = w.masked_fill(eye, float("inf"))
    # Finite stand-in for "not reachable yet": such a vertex starts a new tree when its component has
    # no reachable vertex left (it sorts after every real edge and before visited vertices).
    unreachable = torch.finfo(w.dtype).max
    best = torch.full((n,), unreachable, dtype=w.dtype, device=w.device)  # lightest edge to the visited set
    best_from = torch.full((n,), -1, dtype=torch.long, device=w.device)
    parent = torch.full((n,), -1, dtype=torch.long, device=w.device)
    visited = torch.zeros(n, dtype=torch.bool, device=w.device)
    vertices = torch.arange(n, device=w.device)
    # Vertices i and j compete in one Prim step when they lie in the same component; edges (finite
    # weights) connect components, so connectivity is the transitive closure of the finite edges.
    if components is None:
        components = connectivity(torch.isfinite(w) | eye)
    # 0 within a component, inf across: added to the keys, row i keeps those of i's component only.
    across = torch.zeros_like(w).masked_fill(~components, float("inf"))
    steps = n if steps is None else min(steps, n)
    for _ in range(steps):
        key = best.masked_fill(visited, float("inf"))
        # Every row of a component holds the same keys, so min (first minimum on ties) picks the same vertex in
        # each: the chosen vertex is the one whose own row chose it (no scatter: CUDA has no bool scatter_reduce
        # kernel, nor a deterministic amax one). A finished component's keys are all inf.
        lightest, chosen = (key + across).min(dim=1)
        added = (lightest < float("inf")) & (chosen == vertices)  # isfinite would dispatch 4 ops
        parent = torch.where(added, best_from, parent)
        visited = visited | added
        # Relax: row j's chosen vertex is the one j's component just added (at most one; w's diagonal is inf).
        # A finished component's rows pick an arbitrary vertex; updating their visited vertices changes nothing.
        via_added = w[chosen, vertices]
        closer = via_added < best
        best = torch.where(closer, via_added, best)
        best_from = torch.where(closer, chosen, best_from)
    if steps < n:  # a device-side check: no host sync
        torch._assert_async(visited.all(), f"prim_forest: {steps} steps leave a component unfinished")
    return parent


def connectivity(adjacency: Tensor) -> Tensor:
    """Boolean (N, N): whether i and j are connected, by repeated squaring of the reachability matrix.

    ``adjacency`` is boolean and symmetric with a True diagonal (every vertex reaches itself).

    >>> connectivity(torch.tensor([[1, 1, 0], [1, 1, 0], [0, 0, 1]], dtype=torch.bool)).int()
    tensor([[1, 1, 0],
            [1, 1, 0],
            [0, 0, 1]], dtype=torch.int32)
    """
    reach = adjacency.float()
    n = reach.shape[0]
    for _ in range(max(1, (n - 1).bit_length())):
        reach = ((reach @ reach) > 0).float()
    return reach > 0


def class_forest(distances: Tensor, labels: Tensor, largest_class: int | None = None) -> Tensor:
    """Parents of one minimum spanning tree per class over ``distances`` (cross-class edges excluded).

    Distances are finite, so each class is one connected component. ``largest_class``, the most samples one class
    has (a PK sampler's K), bounds Prim's loop (its steps); the default N always suffices.

    >>> d = torch.tensor([[0.0, 1.0, 5.0, 3.0], [1.0, 0.0, 2.0, 9.0], [5.0, 2.0, 0.0, 9.0], [3.0, 9.0, 9.0, 0.0]])
    >>> class_forest(d, torch.tensor([0, 0, 0, 1]))
    tensor([-1,  0,  1, -1])
    """
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    return prim_forest(distances.detach().masked_fill(~same, float("inf")), largest_class, components=same)


def forest_mask(parent: Tensor) -> Tensor:
    """Boolean (N, N) with True at (parent[j], j) for every non-root j: each tree edge once."""
    n = parent.shape[0]
    mask = torch.zeros(n, n + 1, dtype=torch.bool, device=parent.device)
    # Roots (parent -1) write into a spare last column that is then dropped: no host sync to filter them.
    rows = torch.where(parent >= 0, parent, torch.full_like(parent, n))
    mask[torch.arange(n, device=parent.device), rows] = True
    return mask[:, :n].T.contiguous()
