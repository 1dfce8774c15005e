"""Host syncs per training step (forward and backward) of every guarded loss case, as they would happen on CUDA.

Each count is a decision written down where the sync happens: an index list whose length the loss averages over
(triplet, margin, npair; ``mining``'s docstring says why these stay lists), drml's routed rows per branch, cgml's
alignment check. A change that adds a sync fails here until its count is written down too.
"""

import pytest
import torch

from tests.cuda_guards.host_syncs import HostSyncs
from tests.cuda_guards.loss_cases import CASE_IDS, CASES, loss_and_batch

# By case id (loss-<config index>); every other case: 0.
EXPECTED = {
    "cgml-0": {"equal": 1},  # the alignment check
    "cgml-1": {"equal": 1, "nonzero": 2},  # and npair's pair count on each graph (base_on "each")
    "drml-0": {"nonzero": 5},  # 2 branches' rows, then triplet mining in 2 branches and J_emb
    "drml-1": {"nonzero": 2},  # 2 branches' rows (proxy anchor mines nothing)
    "drml-2": {"nonzero": 5, "_local_scalar_dense": 3},  # margin's draws per anchor, 3 instances
    "graph_consistency-0": {"equal": 1, "nonzero": 1},
    "margin-0": {"nonzero": 1, "_local_scalar_dense": 1},  # the positive pairs, the draw count
    "margin-1": {"nonzero": 1},
    "npair-0": {"nonzero": 1},
    "npair-1": {"nonzero": 1},
    "triplet-0": {"nonzero": 1},
    "triplet-1": {"nonzero": 1},
    "triplet-2": {"nonzero": 1},
}


def test_every_expected_case_exists():
    assert set(EXPECTED) <= set(CASE_IDS)


@pytest.mark.parametrize(("name", "params"), CASES, ids=CASE_IDS)
def test_host_syncs_per_step(request, name, params):
    loss, inputs, labels, _ = loss_and_batch(name, params)
    with HostSyncs() as syncs:
        loss(inputs, labels).backward()
    assert dict(syncs.calls) == EXPECTED.get(request.node.callspec.id, {})


def test_the_counter_sees_what_syncs_and_only_that():
    x, mask = torch.arange(6.0), torch.tensor([True, False] * 3)
    with HostSyncs() as syncs:
        x[mask], x.nonzero(), x.sum().item(), bool(x.any()), torch.equal(x, x)
        x.repeat_interleave(torch.tensor([1, 2, 1, 1, 1, 1])), x.repeat_interleave(2)
        x[torch.tensor([0, 2])], torch.where(mask, x, 0.0), torch.nn.functional.one_hot(torch.tensor([1, 0]), 3)
    assert dict(syncs.calls) == {
        "index": 1,
        "nonzero": 1,
        "_local_scalar_dense": 2,
        "equal": 1,
        "repeat_interleave": 1,
    }
