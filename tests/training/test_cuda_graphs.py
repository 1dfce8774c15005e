"""``training.cuda_graphs`` on the CPU: when it applies, what it refuses, and what the graphed forward does around a
capture (a stand-in for ``make_graphed_callables`` that runs the model as its warm-up does). Whether a real graph
gives eager's numbers is the GPU check's ``graphs`` part."""

import copy
from dataclasses import dataclass

import pytest
import torch
from pydantic import ValidationError
from torch import nn

from dml_core.errors import InputError
from dml_core.recipes.settings import TrainingSettings
from dml_core.training.cuda_graphs import GraphedForward, check_cuda_graphs, training_forward, uses_cuda_graphs

CUDA = torch.device("cuda")  # only named: nothing here runs on it
CPU = torch.device("cpu")


def _settings(**values) -> TrainingSettings:
    return TrainingSettings(iterations=10, **values)


def test_graphs_apply_on_cuda_only_and_only_when_asked():
    assert uses_cuda_graphs(_settings(cuda_graphs=True), CUDA)
    assert not uses_cuda_graphs(_settings(cuda_graphs=True), CPU)
    assert not uses_cuda_graphs(_settings(), CUDA)


def test_a_distributed_run_with_graphs_is_refused_naming_the_recipe_and_the_field():
    with pytest.raises(InputError, match=r"recipe damlrrm/ours: training\.cuda_graphs: expected one process.*found 2"):
        check_cuda_graphs("damlrrm/ours", _settings(cuda_graphs=True), CUDA, world_size=2)
    check_cuda_graphs("damlrrm/ours", _settings(cuda_graphs=True), CUDA, world_size=1)
    check_cuda_graphs("damlrrm/ours", _settings(cuda_graphs=True), CPU, world_size=2)  # ignored there


def test_compile_and_graphs_together_are_refused():
    with pytest.raises(ValidationError, match=r"training\.compile and training\.cuda_graphs"):
        _settings(compile=True, cuda_graphs=True)


def test_the_trainer_forward_is_graphed_only_where_graphs_apply():
    model = nn.Linear(2, 2)
    assert isinstance(training_forward(model, _settings(cuda_graphs=True), CUDA), GraphedForward)
    assert training_forward(model, _settings(cuda_graphs=True), CPU) is model
    assert training_forward(model, _settings(), CUDA) is model


class _Net(nn.Module):
    """Batch norm (running statistics) and dropout (random numbers): what a capture's warm-up would move."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Dropout(0.5), nn.Linear(8, 3))

    def forward(self, x):
        return self.layers(x)


def _warm_up_then_return(module: nn.Module, images: torch.Tensor):
    """What ``make_graphed_callables`` does to the model before its first replay: forward and backward passes (three
    warm-up, one captured), then it hands back something that runs the captured step."""
    for _ in range(4):
        grads = torch.autograd.grad(sum(output.sum() for output in module(images)), list(module.parameters()))
        assert all(grad is not None for grad in grads)
    captures.append(images.shape)
    return module


captures: list = []


@pytest.fixture(autouse=True)
def _no_captures_yet():
    captures.clear()


def test_the_first_training_step_gives_eager_numbers_and_statistics_despite_the_capture_passes():
    torch.manual_seed(0)
    net, batch = _Net(), torch.randn(6, 4)
    eager = copy.deepcopy(net)
    graphed = GraphedForward(net, precision="fp32", capture=_warm_up_then_return)
    torch.manual_seed(1)
    expected = eager(batch)
    torch.manual_seed(1)
    output = graphed(batch)
    assert captures == [torch.Size([6, 4])]
    torch.testing.assert_close(output, expected, rtol=0, atol=0)  # the same dropout mask: random state kept
    for kept, reference in zip(net.buffers(), eager.buffers(), strict=True):  # one step's statistics, not five
        torch.testing.assert_close(kept, reference, rtol=0, atol=0)
    assert int(net.layers[1].num_batches_tracked) == 1


def test_other_calls_run_eagerly_and_are_counted_when_training():
    net = _Net()
    graphed = GraphedForward(net, precision="fp32", capture=_warm_up_then_return)
    graphed(torch.randn(6, 4))
    graphed(torch.randn(5, 4))  # an epoch's short last batch
    assert graphed.eager_calls == 1
    with torch.no_grad():
        graphed(torch.randn(6, 4))
    net.eval()
    graphed(torch.randn(6, 4))
    assert captures == [torch.Size([6, 4])] and graphed.eager_calls == 1


@dataclass
class _Pair:
    embedding: torch.Tensor
    extra: torch.Tensor


class _PairNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 3)

    def forward(self, x):
        z = self.linear(x)
        return _Pair(embedding=z, extra=z.pow(2))


def test_a_dataclass_output_goes_through_the_graph_as_a_tuple_and_comes_back_whole():
    graphed = GraphedForward(_PairNet(), precision="fp32", capture=_warm_up_then_return)
    output = graphed(torch.ones(2, 4))
    assert isinstance(output, _Pair)
    torch.testing.assert_close(output.extra, output.embedding.pow(2))


def test_an_output_a_graph_cannot_hand_back_is_refused_by_name():
    graphed = GraphedForward(_ListNet(), precision="fp32", capture=_warm_up_then_return)
    with pytest.raises(TypeError, match="expected the model to return a tensor or a dataclass of tensors, found list"):
        graphed(torch.ones(2, 4))


class _ListNet(nn.Module):
    def forward(self, x):
        return [x]


def test_graphs_are_hashed_only_when_set():
    from dml_core.recipes import load_recipe

    recipe = load_recipe("damlrrm/ours-cub200")
    graphed = recipe.model_copy(
        update={"training": recipe.training.model_copy(update={"cuda_graphs": True})}
    )  # fmt: skip
    assert "cuda_graphs" not in recipe.computation()["training"]
    assert graphed.content_hash() != recipe.content_hash()
