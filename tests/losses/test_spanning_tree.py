import doctest
import math

import numpy as np
import pytest
import torch
from scipy.sparse.csgraph import minimum_spanning_tree

from dml_core.losses import spanning_tree
from dml_core.losses.spanning_tree import class_forest, connectivity, forest_mask, prim_forest

INF = math.inf


def figure3_graph() -> torch.Tensor:
    """A weighted graph matching damlrrm's Figure 3 and its description (Section 3.3), vertices 1..6 -> 0..5.

    The extracted text keeps Figure 3(a)'s ten edge weights (1, 1.5, 1.5, 2, 3, 3.5, 4, 4, 5, 5) but not which
    edge carries which; they are placed so that Prim from vertex 1 goes 1 -> 2 -> 4 as the text narrates.
    Missing edges are inf.
    """
    edges = {(1, 2): 1.0, (2, 4): 1.5, (4, 5): 1.5, (1, 4): 2.0, (2, 3): 3.0, (4, 6): 3.5, (1, 3): 4.0, (3, 4): 4.0}
    edges.update({(5, 6): 5.0, (3, 5): 5.0})
    w = torch.full((6, 6), INF, dtype=torch.float64)
    for (a, b), weight in edges.items():
        w[a - 1, b - 1] = w[b - 1, a - 1] = weight
    return w


def tree_edges(parent: torch.Tensor) -> set[tuple[int, int]]:
    return {tuple(sorted((int(p), j))) for j, p in enumerate(parent.tolist()) if p >= 0}


def total_weight(weights: torch.Tensor, parent: torch.Tensor) -> float:
    return sum(float(weights[a, b]) for a, b in tree_edges(parent))


def test_figure3_tree_is_the_pair_pool_of_eq3():
    parent = prim_forest(figure3_graph())
    pp = {(a + 1, b + 1) for a, b in tree_edges(parent)}
    assert pp == {(1, 2), (2, 3), (2, 4), (4, 5), (4, 6)}  # Eq. 3
    assert parent[0] == -1  # vertex 1 is the start vertex, as in Figure 3(a)


def test_tree_connects_what_nearest_positive_pairs_leave_apart():
    # Section 3.3: the tree is "quite different from simply choosing the nearest positive pairs", which need
    # not connect the class: on a line at 0, 1, 10, 11 the nearest pairs form two islands.
    x = torch.tensor([[0.0], [1.0], [10.0], [11.0]], dtype=torch.float64)
    d = torch.cdist(x, x).fill_diagonal_(INF)
    nearest = {tuple(sorted((i, int(j)))) for i, j in enumerate(d.argmin(dim=1).tolist())}
    assert nearest == {(0, 1), (2, 3)}
    assert tree_edges(prim_forest(d)) == {(0, 1), (1, 2), (2, 3)}


def random_symmetric(seed: int, n: int, density: float = 1.0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    w = torch.rand(n, n, generator=gen, dtype=torch.float64) + 0.01
    w = torch.triu(w, diagonal=1)
    keep = torch.triu(torch.rand(n, n, generator=gen) < density, diagonal=1)
    w = torch.where(keep, w, torch.full_like(w, INF))
    w = torch.minimum(w, w.T)
    return w.fill_diagonal_(0.0)


def scipy_weight(w: torch.Tensor) -> float:
    dense = w.numpy().copy()
    dense[~np.isfinite(dense)] = 0.0  # scipy: 0 is "no edge"
    return float(minimum_spanning_tree(dense).sum())


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("density", [1.0, 0.3])
def test_total_weight_equals_scipy(seed, density):
    w = random_symmetric(seed, n=9 + seed, density=density)
    parent = prim_forest(w)
    assert total_weight(w, parent) == pytest.approx(scipy_weight(w), rel=1e-12)
    # A spanning forest: one root per connected component, N - components edges, all of them real.
    components = connectivity(torch.isfinite(w)).unique(dim=0).shape[0]
    assert int((parent == -1).sum()) == components
    assert all(math.isfinite(float(w[a, b])) for a, b in tree_edges(parent))


@pytest.mark.parametrize("seed", range(4))
def test_class_forest_is_one_tree_per_class_matching_scipy(seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(15, 4, generator=gen, dtype=torch.float64)
    labels = torch.randint(0, 4, (15,), generator=gen)
    d = torch.cdist(x, x)
    parent = class_forest(d, labels)
    for label in labels.unique():
        members = torch.nonzero(labels == label).flatten()
        sub = d[members][:, members]
        edges = [(a, b) for a, b in tree_edges(parent) if labels[a] == label or labels[b] == label]
        assert all(labels[a] == labels[b] for a, b in edges)
        assert len(edges) == len(members) - 1
        assert sum(float(d[a, b]) for a, b in edges) == pytest.approx(scipy_weight(sub), rel=1e-12)
        assert int((parent[members] == -1).sum()) == 1
        assert parent[members[0]] == -1  # the class's first sample is its root


def test_forest_mask_marks_each_edge_once():
    mask = forest_mask(torch.tensor([-1, 0, 1, -1, 3]))
    assert torch.nonzero(mask).tolist() == [[0, 1], [1, 2], [3, 4]]


def test_steps_bound_is_enough_for_the_largest_component():
    w = random_symmetric(3, n=10)
    labels = torch.tensor([0] * 4 + [1] * 6)
    masked = w.masked_fill(labels.unsqueeze(0) != labels.unsqueeze(1), INF)
    torch.testing.assert_close(prim_forest(masked, steps=6), prim_forest(masked))


def sequential_prim(weights: torch.Tensor) -> list[int]:
    """Prim's algorithm one component at a time, in plain Python, by the documented rules: each component's root is
    its lowest-index vertex, the next vertex is the unvisited one with the lightest edge to the tree (ties: the lowest
    index), and its parent the tree vertex that first offered that weight (a later, equal edge does not replace it)."""
    w = weights.tolist()
    n = len(w)
    parent, visited = [-1] * n, [False] * n
    for root in range(n):
        if visited[root]:
            continue
        visited[root] = True
        key = {j: (w[root][j], root) for j in range(n) if not visited[j] and j != root and w[root][j] < INF}
        while key:
            vertex = min(key, key=lambda j: (key[j][0], j))
            parent[vertex] = key.pop(vertex)[1]
            visited[vertex] = True
            for j in range(n):
                if not visited[j] and j != vertex and w[vertex][j] < key.get(j, (INF,))[0]:
                    key[j] = (w[vertex][j], vertex)
    return parent


def neat_stream(seed: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Distances and labels of a random neat stream: m classes x K samples in random order, integer-valued
    coordinates on a small grid (many equal distances, some zero), and K."""
    gen = torch.Generator().manual_seed(seed)
    m, k = int(torch.randint(1, 13, (1,), generator=gen)), int(torch.randint(1, 11, (1,), generator=gen))
    labels = torch.arange(m).repeat_interleave(k)[torch.randperm(m * k, generator=gen)]
    x = torch.randint(0, 3, (m * k, 2), generator=gen).double()
    return torch.cdist(x, x), labels, k


@pytest.mark.parametrize("seed", range(60))
def test_class_forest_in_k_steps_is_the_n_step_forest_and_sequential_prims(seed):
    distances, labels, k = neat_stream(seed)
    bounded = class_forest(distances, labels, largest_class=k)
    assert torch.equal(bounded, class_forest(distances, labels))  # N steps
    assert bounded.tolist() == sequential_prim(distances.masked_fill(labels[:, None] != labels[None], INF))


def test_a_bound_short_of_the_largest_class_fails_instead_of_dropping_edges():
    distances, labels, k = neat_stream(3)
    with pytest.raises(RuntimeError, match=f"prim_forest: {k - 1} steps leave a component unfinished"):
        class_forest(distances, labels, largest_class=k - 1)


def test_selection_carries_no_gradient():
    x = torch.randn(5, 3, requires_grad=True)
    parent = class_forest(torch.cdist(x, x), torch.zeros(5, dtype=torch.long))
    assert not parent.requires_grad


def test_doctests():
    result = doctest.testmod(spanning_tree)
    assert result.failed == 0 and result.attempted > 0
