"""Each paper's loss within its budget of dispatched ops per training step (``loss_ops.BUDGETS``), damlrrm's count
independent of the number of classes in its batch, and the counter itself."""

import pytest
import torch

from dml_core.losses.damlrrm import DAMLRRMLoss
from tests.benchmarks.loss_ops import BUDGETS, MAIN_RECIPES, DispatchedOps, loss_ops_per_step


def test_every_paper_has_a_budget():
    assert set(BUDGETS) == set(MAIN_RECIPES)


@pytest.mark.parametrize("paper", sorted(BUDGETS))
def test_the_papers_loss_stays_within_its_op_budget(paper):
    count = loss_ops_per_step(paper)
    assert count <= BUDGETS[paper], f"{paper}: {count} ops per training step, over its budget of {BUDGETS[paper]}"


def damlrrm_ops(classes: int, per_class: int = 5) -> int:
    n = classes * per_class
    gen = torch.Generator().manual_seed(classes)
    labels = torch.cat([torch.arange(classes).repeat_interleave(per_class), torch.randint(0, classes, (n,))])
    embeddings = (20.0 * torch.randn(2 * n, 16, generator=gen)).requires_grad_(True)
    loss = DAMLRRMLoss(group_sizes=(n, n), images_per_class=per_class)
    with DispatchedOps() as ops:
        loss(embeddings, labels).backward()
    return ops.count


def test_damlrrms_step_does_not_grow_with_the_classes_of_its_neat_stream():
    # Prim's loop runs K steps (the images per class): m*K steps made the count grow with the m classes. (From 6
    # classes up: torch.cdist takes its matrix-product path, other ops, beyond 25 rows.)
    assert damlrrm_ops(6) == damlrrm_ops(12) == damlrrm_ops(20)
    assert damlrrm_ops(12, per_class=6) > damlrrm_ops(12)  # one more step


def test_the_counter_counts_every_op_forward_and_backward():
    x = torch.ones(3, requires_grad=True)
    with DispatchedOps() as forward:
        total = (x * 2.0).sum()
    with DispatchedOps() as backward:
        total.backward()
    assert forward.count == 2  # mul, sum
    assert backward.count > 0 and torch.equal(x.grad, torch.full((3,), 2.0))
