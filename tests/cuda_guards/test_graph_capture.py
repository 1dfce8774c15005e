"""What ``training.cuda_graphs`` captures can be captured: a CUDA graph capture stops at the first op that makes the
host wait for the device (``HostSyncs``' list), and a graph cannot hold an output whose size depends on the data.
So each paper's main model, in training mode, must run its forward and backward without one. Counted on the CPU at
the smoke size (the same modules at a narrower width); the capture itself is the GPU check's ``graphs`` part."""

import pytest
import torch

from dml_core.training import builders
from dml_core.training.cuda_graphs import TupleOutput
from tests.benchmarks.loss_ops import MAIN_RECIPES, main_recipe
from tests.cuda_guards.host_syncs import HostSyncs


@pytest.mark.parametrize("paper", sorted(MAIN_RECIPES))
def test_the_main_model_trains_a_step_without_a_host_sync(paper):
    recipe = main_recipe(paper, "smoke")
    torch.manual_seed(0)
    model = builders.build_model(recipe)
    model.train()
    images = torch.randn(4, 3, 64, 64)
    flat = TupleOutput(model)  # the model as the capture sees it
    flat(images)  # a first pass outside the count (lazy set-up of any kind)
    with HostSyncs() as syncs:
        outputs = flat(images)
        trained = [parameter for parameter in model.parameters() if parameter.requires_grad]
        total = sum(output.float().sum() for output in outputs if output.requires_grad)
        torch.autograd.grad(total, trained, allow_unused=True)
    assert syncs.calls == {}, f"{paper}: ops that a capture cannot hold: {dict(syncs.calls)}"
