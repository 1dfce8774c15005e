import pytest
import torch

from dml_core.losses.mining import (
    all_triplets,
    distance_weighted_probabilities,
    distance_weighted_triplets,
    hard_triplets,
    multi_similarity_pairs,
    semihard_triplets,
)

# Three points on a line, A=0 and B=1 of class 0, C=1.5 of class 1 (distances as the dissimilarity).
LINE = torch.tensor([[0.0, 1.0, 1.5], [1.0, 0.0, 0.5], [1.5, 0.5, 0.0]], dtype=torch.float64)
LINE_LABELS = torch.tensor([0, 0, 1])


def as_set(indices):
    return set(zip(*(t.tolist() for t in indices), strict=True))


def test_all_triplets():
    assert as_set(all_triplets(LINE_LABELS)) == {(0, 1, 2), (1, 0, 2)}


def test_semihard_triplets():
    # (A, B, C): d_an - d_ap = 0.5 is semi-hard for margin >= 0.5; (B, A, C): -0.5 is hard, never semi-hard.
    assert as_set(semihard_triplets(LINE, LINE_LABELS, margin=0.6)) == {(0, 1, 2)}
    assert as_set(semihard_triplets(LINE, LINE_LABELS, margin=0.4)) == set()


def test_hard_triplets_pick_farthest_positive_and_nearest_negative():
    labels = torch.tensor([0, 0, 0, 1, 1])
    pts = torch.tensor([[0.0], [1.0], [3.0], [2.2], [10.0]], dtype=torch.float64)
    dist = torch.cdist(pts, pts)
    got = as_set(hard_triplets(dist, labels))
    assert (0, 2, 3) in got and (1, 2, 3) in got and (2, 0, 3) in got
    assert (3, 4, 2) in got and (4, 3, 2) in got and len(got) == 5


def test_multi_similarity_pairs_hand_computed():
    # Dissimilarities: A-B 1.0 (pos), A-C 1.5, B-C 0.5. Anchor A: nearest neg 1.5, farthest pos 1.0.
    # eps 0.1: keep pos (A,B) iff 1.0 + 0.1 > 1.5 -> no; keep neg (A,C) iff 1.5 - 0.1 < 1.0 -> no.
    # Anchor B: pos (B,A) 1.0 + 0.1 > 0.5 -> yes; neg (B,C) 0.5 - 0.1 < 1.0 -> yes. Anchor C has no positive.
    a1, p, a2, n = multi_similarity_pairs(LINE, LINE_LABELS, epsilon=0.1)
    assert as_set((a1, p)) == {(1, 0)}
    assert as_set((a2, n)) == {(1, 2)}
    a1, p, a2, n = multi_similarity_pairs(LINE, LINE_LABELS, epsilon=0.6)
    assert as_set((a1, p)) == {(0, 1), (1, 0)} and as_set((a2, n)) == {(0, 2), (1, 2)}


# Labels [0, 0, 1, 1]. Negative distances: A-C 0.2 (clamped to the 0.5 cutoff), A-D 1.0, B-C 1.0,
# B-D 1.5 (beyond the 1.4 non-zero-loss cutoff). In R^3, q(d) ∝ d, so the weight is 1/d.
DW = torch.tensor(
    [[0.0, 0.3, 0.2, 1.0], [0.3, 0.0, 1.0, 1.5], [0.2, 1.0, 0.0, 0.3], [1.0, 1.5, 0.3, 0.0]],
    dtype=torch.float64,
)
DW_LABELS = torch.tensor([0, 0, 1, 1])


def test_distance_weighted_probabilities_hand_computed():
    probs = distance_weighted_probabilities(DW, DW_LABELS, embedding_dim=3)
    expected = torch.tensor(
        [[0, 0, 2 / 3, 1 / 3], [0, 0, 1, 0], [2 / 3, 1 / 3, 0, 0], [1, 0, 0, 0]], dtype=torch.float64
    )
    torch.testing.assert_close(probs, expected)


def test_distance_weighted_probabilities_in_high_dimension_favour_far_negatives():
    # Dimension 4: 1/q(d) = d^-2 (1 - d^2/4)^-1/2; the anchor's negatives at 0.5 and 1.0.
    d = torch.tensor([[0.0, 0.5, 1.0], [0.5, 0.0, 0.7], [1.0, 0.7, 0.0]], dtype=torch.float64)
    probs = distance_weighted_probabilities(d, torch.tensor([0, 1, 2]), embedding_dim=4)
    w = lambda r: r**-2 * (1 - r * r / 4) ** -0.5  # noqa: E731
    assert probs[0, 1].item() == pytest.approx(w(0.5) / (w(0.5) + w(1.0)))


def test_distance_weighted_falls_back_to_uniform_and_skips_anchors_without_negatives():
    far = torch.full((3, 3), 1.9, dtype=torch.float64).fill_diagonal_(0.0)
    probs = distance_weighted_probabilities(far, torch.tensor([0, 0, 1]), embedding_dim=8)
    torch.testing.assert_close(probs[0], torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64))
    one_class = distance_weighted_probabilities(far, torch.tensor([0, 0, 0]), embedding_dim=8)
    assert one_class.abs().sum() == 0
    assert len(distance_weighted_triplets(far, torch.tensor([0, 0, 0]), 8)[0]) == 0


def test_distance_weighted_triplets_follow_the_probabilities():
    labels = DW_LABELS.repeat(50)  # 200 points; every positive pair draws a negative for its anchor
    dist = DW.repeat(50, 50)
    gen = torch.Generator().manual_seed(0)
    a, p, n = distance_weighted_triplets(dist, labels, embedding_dim=3, generator=gen)
    assert bool((labels[a] == labels[p]).all()) and bool((labels[a] != labels[n]).all())
    from_a = n[a % 4 == 0] % 4  # anchors that are copies of A: negatives C (2/3) and D (1/3)
    share_c = (from_a == 2).double().mean().item()
    assert share_c == pytest.approx(2 / 3, abs=0.03)  # 4950 draws: standard error 0.0067
    again = distance_weighted_triplets(dist, labels, 3, generator=torch.Generator().manual_seed(0))
    assert torch.equal(again[2], n)
