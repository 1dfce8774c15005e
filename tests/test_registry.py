"""The one lookup every registry of named parts goes through: one wording for every unknown name (file, field, the
name found, the accepted names sorted), and each registry holding the names a recipe may give."""

import subprocess
import sys
from typing import get_args

import pytest
import yaml
from pydantic import ValidationError

from dml_core.data import SAMPLERS
from dml_core.data.registry import DATASETS, get_spec
from dml_core.errors import InputError
from dml_core.evaluation.protocols import RECALL_KS, recall_ks_for
from dml_core.evaluation.registry import METRICS, chosen_metrics
from dml_core.gpu_check.registry import PARTS
from dml_core.linear.methods import METHODS
from dml_core.linear.plan import TABLE2_ROW_SLUGS
from dml_core.linear.uci import get_uci_dataset
from dml_core.losses import LOSSES, build_loss
from dml_core.models import BACKBONES, HEADS, build_backbone
from dml_core.models.pooling import POOLINGS
from dml_core.models.weights import WEIGHT_FILES
from dml_core.recipes.catalog import run_of_file
from dml_core.recipes.settings import (
    EvaluationSettings,
    HeadSettings,
    ModelSettings,
    OptimizerSettings,
    ScheduleSettings,
)
from dml_core.registry import Registry
from dml_core.runner.component_check import check_components
from dml_core.training.builders import build_model
from dml_core.training.optim import OPTIMIZERS, SCHEDULES
from tests.recipes.test_compose import BASE


def test_the_error_names_the_file_the_field_the_name_and_the_sorted_accepted_names():
    colours = Registry("colour", "paint.colour", {"red": 1, "blue": 2, "amber": 3})
    with pytest.raises(InputError) as error:
        colours.lookup("green", where="walls.yaml")
    assert (
        str(error.value) == "walls.yaml: field paint.colour: unknown colour 'green'; expected one of amber, blue, red"
    )
    with pytest.raises(InputError) as error:
        colours.lookup(["red"], field="door.colour")  # not even a name: worded alike, no TypeError
    assert str(error.value) == "field door.colour: unknown colour ['red']; expected one of amber, blue, red"
    with pytest.raises(InputError) as error:
        colours.lookup("teal", field="--colours")  # a command-line option, named as typed
    assert str(error.value) == "--colours: unknown colour 'teal'; expected one of amber, blue, red"
    assert colours.lookup("blue") == 2 and list(colours) == ["red", "blue", "amber"] and colours.names[0] == "amber"


# Each registry, hand-listed: the names a recipe may give, and the field that gives one.
REGISTRIES = [
    (HEADS, "head", "model.head.name", "linear, multi_level_fusion, relational"),
    (SAMPLERS, "sampler", "sampler.name", "paired, pk, random, two_stream"),
    (BACKBONES, "backbone", "model.backbone", "bn_inception, googlenet, resnet50"),
    (OPTIMIZERS, "optimizer", "optimizer.name", "adam, adamw, rmsprop, sgd"),
    (DATASETS, "dataset", "data.dataset", "cars196, cub200, embedded, embedded_mini, inshop, sop"),
    (RECALL_KS, "dataset with a Recall@K list", "data.dataset", "cars196, cub200, inshop, sop"),
    (METRICS, "metric", "metrics", "f1, map_at_r, nmi, r_precision, recall"),
    (PARTS, "part", "--parts", ", ".join(sorted(PARTS))),  # the GPU check gains parts often: listed from itself
    (METHODS, "linear method", "method", "euclidean, lanml_minus, lanml_plus, nca, pnca"),
    (POOLINGS, "pooling", "model.pooling", "avg, avg+max, max"),
    (SCHEDULES, "schedule", "schedule.name", "constant, multistep, step"),
    (WEIGHT_FILES, "backbone with a weight file", "model.backbone", "bn_inception, googlenet, resnet50"),
    (TABLE2_ROW_SLUGS, "Table 2 method", "methods", "lanml_minus, lanml_plus, nca, pnca"),
]


@pytest.mark.parametrize(("registry", "kind", "field", "names"), REGISTRIES, ids=[r[1] for r in REGISTRIES])
def test_each_registry_lists_its_names_through_the_one_lookup(registry, kind, field, names):
    assert isinstance(registry, Registry)
    with pytest.raises(InputError) as error:
        registry.lookup("nope")
    named = field if field.startswith("--") else f"field {field}"  # an option is named as typed
    assert str(error.value) == f"{named}: unknown {kind} 'nope'; expected one of {names}"


def test_the_loss_registry_holds_every_loss_and_its_alias():
    assert isinstance(LOSSES, Registry) and {"triplet", "cgml", "graph_consistency", "proxy_anchor"} <= set(LOSSES)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: build_loss("circle"), "field loss.name: unknown loss 'circle'; expected one of binomial, cgml,"),
        (lambda: build_backbone("vgg16"), "field model.backbone: unknown backbone 'vgg16'; expected one of bn_"),
        (lambda: get_spec("cub"), "field data.dataset: unknown dataset 'cub'; expected one of cars196, cub200,"),
        (lambda: recall_ks_for("mnist"), "field data.dataset: unknown dataset with a Recall@K list 'mnist';"),
        (lambda: chosen_metrics(["recall", "mrr"]), "field metrics: unknown metric 'mrr'; expected one of f1,"),
        (lambda: get_uci_dataset("mnist"), "field dataset: unknown UCI data set 'mnist'; expected one of Australian,"),
    ],
)
def test_the_builders_refuse_an_unknown_name_in_the_one_wording(call, message):
    with pytest.raises(InputError) as error:
        call()
    assert str(error.value).startswith(message)


@pytest.mark.parametrize(
    ("change", "field", "wording"),
    [
        ({"model": {"backbone": "googlenet", "head": {"name": "mlp"}}}, "model.head.name", HEADS.unknown("mlp")),
        ({"loss": {"name": "circle"}}, "loss.name", LOSSES.unknown("circle")),
        ({"sampler": {"name": "balanced"}}, "sampler.name", SAMPLERS.unknown("balanced")),
        ({"data": {"dataset": "cub"}}, "data.dataset", DATASETS.unknown("cub")),
    ],
)
def test_a_recipe_naming_an_unknown_part_is_refused_naming_its_file_and_field(tmp_path, change, field, wording):
    mine = {k: v for k, v in BASE.items() if k != "readings"}
    mine.update(id="mine", assumptions=["My own sentence."], optimizer={"name": "adam", "lr": 1e-5}, **change)
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(mine))
    run = run_of_file(path)
    with pytest.raises(InputError) as error:
        check_components(run.recipe(), run.settings.origins, run.file)
    assert f"{path}: run mine: field {field}: {wording}" in str(error.value).splitlines()[1].strip()


def test_the_head_wording_is_hand_written():
    assert HEADS.unknown("mlp") == "unknown head 'mlp'; expected one of linear, multi_level_fusion, relational"


@pytest.mark.parametrize("module", ["dml_core.registry", "dml_core.recipes.settings"])
def test_the_lookup_and_the_recipe_with_its_transforms_load_without_torch(module):
    code = f"import sys, {module}; print('torch' in sys.modules)"
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert found == "False"


@pytest.mark.parametrize(
    ("choices", "registry"),
    [
        (get_args(ModelSettings.model_fields["backbone"].annotation), BACKBONES),
        (get_args(ModelSettings.model_fields["pooling"].annotation), POOLINGS),
        (get_args(ScheduleSettings.model_fields["name"].annotation), SCHEDULES),
    ],
    ids=["backbone", "pooling", "schedule"],
)
def test_the_names_the_schema_refuses_itself_are_its_registrys(choices, registry):
    """Where the torch-free schema lists the names itself (a Literal: refused as the file is read), they are the
    registry's, so a part registered is a part a recipe may name."""
    assert set(choices) == set(registry)


@pytest.mark.parametrize(
    ("settings", "field", "registry"),
    [(EvaluationSettings, "metrics", METRICS), (OptimizerSettings, "name", OPTIMIZERS)],
    ids=["metrics", "optimizer"],
)
def test_a_recipe_may_name_every_registered_part_and_no_other(settings, field, registry):
    """Metrics and optimisers are declared once (the evaluation registry; ``recipes.optimizers``) and the schema
    takes their names from there: each registered name is read, any other refused as the file is read."""
    given = {"lr": 0.1} if settings is OptimizerSettings else {}
    for name in registry:
        value = [name] if field == "metrics" else name
        assert getattr(settings(**given, **{field: value}), field) == value
    with pytest.raises(ValidationError) as refused:
        settings(**given, **{field: ["mrr"] if field == "metrics" else "lamb"})
    assert "Input should be " in str(refused.value) and all(f"'{name}'" in str(refused.value) for name in registry)


def test_head_names_live_in_the_head_registry_alone():
    assert HeadSettings.model_fields["name"].annotation is str and HeadSettings().name in HEADS


def test_build_model_builds_the_head_its_registry_names_and_refuses_another(tmp_path):
    mine = {k: v for k, v in BASE.items() if k != "readings"}
    model = {"backbone": "googlenet", "weights": "random", "width": 0.125, "embedding_dim": 8}
    mine.update(id="mine", assumptions=["Mine."], optimizer={"name": "adam", "lr": 1e-5}, model=model)
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(mine))
    recipe = run_of_file(path).recipe()
    assert isinstance(build_model(recipe).head, HEADS["linear"].cls)
    fusion = run_of_file(path).recipe(overrides=["model.head.name=multi_level_fusion"])
    assert isinstance(build_model(fusion).head, HEADS["multi_level_fusion"].cls)
    with pytest.raises(InputError, match=r"^field model\.head\.name: unknown head 'mlp'; expected one of linear, "):
        build_model(run_of_file(path).recipe(overrides=["model.head.name=mlp"]))
