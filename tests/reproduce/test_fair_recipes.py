"""The fair study's recipes (reproduce/fair/): every run loads; every run of a data set shares the protocol's
backbone, embedding, preprocessing, optimiser, schedule, length, images per step, validation split and selection
(computed from the expanded recipes and the samplers they build, not restated); each method's loss is its paper
recipe's; cgml's control is cgml without its term on cgml's batches; each search point moves one of a method's own
loss parameters; every method and baseline gets the same validation search (study.yaml), and an unequal one is
found; the default point hashes as before; the study's plan (seeds, the mini tier's runs)."""

import inspect
import re
import shutil

import numpy as np
import pytest

from dml_core.data.samplers import sampler_record
from dml_core.errors import InputError
from dml_core.losses.contrastive import ContrastiveLoss
from dml_core.output_paths import RECIPES_DIR
from dml_core.recipes import find_run, load_paper, mini_version, smoke_version
from dml_core.recipes.settings import HeadSettings
from dml_core.recipes.study import load_study, search_problems, study_plan
from dml_core.runner.component_check import component_problems
from dml_core.tier import Tier
from dml_core.training.builders import build_sampler

FAIR = load_paper("fair")
RUNS = list(FAIR.runs)
PAPER_METHODS = ("damlrrm", "anml", "gpw", "drml", "cgml")
BASELINES = ("contrastive", "triplet-semihard", "multi-similarity", "proxy-anchor", "npair")
CONTROLS = ("multi-similarity-paired",)
DATASETS = ("cub200", "cars196")
SEARCH = "fair.search-point"

# Each method's run in its paper's recipes (the settings the fair run must keep). The loss parameters do not depend
# on the data set in these recipes; cgml's BN-Inception setting (B) has no CUB run, so its Cars run stands for both.
PAPER_RUN = {
    "damlrrm": "damlrrm/ours-cub200",
    "anml": "anml/danml-cub200",
    "gpw": "gpw/pair-p-cub200",
    "drml": "drml/drml-pa-cub200",
    "cgml": "cgml/cgml-ms-cars196",
    "triplet-semihard": "drml/triplet-sh-cub200",
    "proxy-anchor": "drml/proxyanchor-cub200",
}
# Baselines the suite pins only as a base loss inside a paper's CGML runs (lambda = 0): that base loss.
PAPER_BASE_LOSS = {"multi-similarity": "cgml/ms-cars196", "npair": "cgml/npair-cars196"}


def _method(run) -> str:
    return run.id.rsplit("-", 1)[0]


def _protocol(recipe) -> dict:
    """Everything the protocol fixes for every method, from the expanded recipe."""
    return {
        "backbone": (recipe.model.backbone, recipe.model.weights, recipe.model.frozen_bn, recipe.model.pooling),
        "embedding": recipe.model.embedding_dim,
        "preprocessing": recipe.data.transforms,
        "optimizer": recipe.optimizer,
        "schedule": recipe.schedule,
        "length": (recipe.training.iterations, recipe.training.epochs, recipe.training.eval_every),
        "precision": recipe.training.precision,
        "validation": recipe.data.validation,
        "selection": recipe.evaluation.selection,
        "evaluation": recipe.evaluation,
        "images per step": _images_per_step(recipe),
    }


def _images_per_step(recipe) -> int:
    """The images of one batch of the sampler the recipe builds, on CUB-like labels (80 classes of 59)."""
    sampler = build_sampler(recipe, np.repeat(np.arange(80), 59))
    first = next(iter(sampler))
    assert len(first) == sum(sampler.group_sizes)
    return len(first)


def test_the_study_declares_every_method_on_each_data_set():
    expected = {f"{method}-{dataset}" for method in PAPER_METHODS + BASELINES + CONTROLS for dataset in DATASETS}
    assert {run.id for run in RUNS} == expected
    assert all(run.recipe().data.dataset == run.id.rsplit("-", 1)[1] for run in RUNS)


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.id)
def test_every_run_loads_under_every_reading_and_its_components_accept_their_parameters(run):
    for name in run.reading_names:
        for value in run.paper_assumptions.readings[name].values:
            recipe = run.recipe({name: value})
            assert recipe.paper == "fair" and not recipe.targets
            assert component_problems(recipe) == []
            assert component_problems(smoke_version(recipe)) == []
            assert component_problems(mini_version(recipe)) == []


@pytest.mark.parametrize("dataset", DATASETS)
def test_every_method_of_a_data_set_shares_the_protocol(dataset):
    protocols = {run.id: _protocol(run.recipe()) for run in RUNS if run.id.endswith(f"-{dataset}")}
    first = next(iter(protocols.values()))
    for run_id, protocol in protocols.items():
        differing = [part for part in first if protocol[part] != first[part]]
        assert differing == [], f"{run_id} departs from the protocol in {differing}"
    # and the protocol is the one the study states: selection on a class-disjoint validation split, no test feedback
    assert first["selection"] == "best_val_r1" and (first["validation"].fraction, first["validation"].seed) == (0.2, 0)
    assert first["images per step"] == 120 and first["embedding"] == 512


def test_the_data_sets_differ_only_in_the_data_set():
    for method in PAPER_METHODS + BASELINES + CONTROLS:
        cub, cars = (FAIR.run(f"{method}-{dataset}").recipe() for dataset in DATASETS)
        assert cub.data.dataset != cars.data.dataset
        assert cub.model_copy(update={"data": cars.data, "id": cars.id, "description": ""}).computation() == (
            cars.model_copy(update={"description": ""}).computation()
        )


def test_each_method_keeps_its_batch_structure():
    structure = {run.id.rsplit("-", 1)[0]: run.recipe().sampler.name for run in RUNS}
    assert structure.pop("damlrrm") == "two_stream" and structure.pop("cgml") == "paired"
    assert structure.pop("multi-similarity-paired") == "paired"
    assert set(structure.values()) == {"pk"}


@pytest.mark.parametrize("dataset", DATASETS)
def test_cgmls_control_is_cgml_without_its_term_on_cgmls_batches(dataset):
    cgml, control = (FAIR.run(f"{method}-{dataset}").recipe() for method in ("cgml", "multi-similarity-paired"))
    assert control.loss.params["lambda_"] == 0.0 and cgml.loss.params["lambda_"] > 0
    assert control.loss.params | {"lambda_": cgml.loss.params["lambda_"]} == cgml.loss.params
    assert (control.sampler, control.mini.sampler_params) == (cgml.sampler, cgml.mini.sampler_params)
    # its base loss is the multi-similarity baseline's, as that baseline runs it
    baseline = FAIR.run(f"multi-similarity-{dataset}").recipe().loss
    assert (control.loss.params["base"], control.loss.params["base_params"]) == (baseline.name, baseline.params)
    assert SEARCH not in FAIR.run(f"multi-similarity-paired-{dataset}").reading_names  # controls are not searched


def test_every_method_and_baseline_gets_the_same_search_and_its_paper_point_hashes_as_before():
    study = load_study(RECIPES_DIR, "fair")
    assert search_problems(FAIR, study) == []
    assert set(study.search.points) == {"loss-x0.5", "loss-x2", "lr-x0.5", "lr-x2"}
    searched = [run for run in RUNS if SEARCH in run.reading_names]
    assert {_method(run) for run in searched} == set(PAPER_METHODS + BASELINES)
    for run in searched:
        paper = run.recipe()
        assert paper.content_hash() == run.recipe({SEARCH: "paper"}).content_hash()
        # the reading at its default is not hashed: the runs hashed before it existed keep their hashes
        assert SEARCH not in paper.computation()["readings"]
        # at the mini tier too, a point of the learning rate halves or doubles every parameter group's rate
        mini, doubled = mini_version(paper), mini_version(run.recipe({SEARCH: "lr-x2"}))
        assert doubled.optimizer.lr == pytest.approx(2 * mini.optimizer.lr)
        assert doubled.optimizer.new_layer_lr_multiplier == mini.optimizer.new_layer_lr_multiplier


def test_the_study_declares_its_methods_and_a_run_of_each_on_every_data_set():
    """study.yaml lists the methods (the hand list above is the oracle); each has its runs, and the study has no run
    of a method it does not list."""
    methods = load_study(RECIPES_DIR, "fair").methods
    assert (tuple(methods.papers), tuple(methods.baselines), tuple(methods.controls)) == (
        PAPER_METHODS,
        BASELINES,
        CONTROLS,
    )
    assert {run.id for run in RUNS} == {f"{method}-{dataset}" for method in methods.names for dataset in DATASETS}


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        ("  papers: [damlrrm, anml, gpw, drml, cgml]", "  papers: [damlrrm, anml, gpw, drml]",
         "controls.multi-similarity-paired: expected a method of papers and a baseline of baselines, found 'cgml'"),
        ("multi-similarity, proxy-anchor, npair]", "multi-similarity, proxy-anchor, npair, cgml]",
         "expected distinct method names"),
        ("  methods: [damlrrm, anml, gpw, drml, cgml]", "  methods: [damlrrm, anml, gpw, drml, cgml, lifted]",
         "hypotheses.methods"),
    ],
    ids=["control-of-no-paper", "a-name-twice", "hypothesis-of-no-method"],
)  # fmt: skip
def test_a_study_whose_methods_do_not_hold_together_is_refused_naming_the_field(tmp_path, old, new, problem):
    with pytest.raises(InputError, match=re.escape(problem)) as error:
        _folder_with(tmp_path, "study.yaml", old, new)
    assert str(error.value).startswith(str(tmp_path / "fair" / "study.yaml"))


def _folder_with(tmp_path, file: str, old: str, new: str):
    """A copy of reproduce/fair/ with ``old`` replaced by ``new`` in ``file``, loaded."""
    folder = tmp_path / "fair"
    shutil.copytree(RECIPES_DIR / "fair", folder)
    shutil.copy(RECIPES_DIR / "readings.yaml", tmp_path)  # the shared readings
    text = (folder / file).read_text()
    assert old in text
    (folder / file).write_text(text.replace(old, new))
    return load_paper("fair", tmp_path), load_study(tmp_path, "fair")


@pytest.mark.parametrize(
    ("file", "old", "new", "problem"),
    [
        # a paper method searched over a narrower range than the baselines (about +-15%)
        ("methods.yaml", "loss-x0.5: {loss.params.alpha: 15.0}", "loss-x0.5: {loss.params.alpha: 26.0}",
         "damlrrm-cub200: point loss-x0.5 sets loss.params.alpha 30.0 -> 26.0, expected x0.5"),
        # a baseline searched wider (N-pair's L2 weight x1/4 to x4)
        ("baselines.yaml", "loss-x2: {loss.params.l2_weight: 0.004}", "loss-x2: {loss.params.l2_weight: 0.008}",
         "npair-cub200: point loss-x2 sets loss.params.l2_weight 0.002 -> 0.008, expected x2"),
        # a learning-rate point that moves another setting too
        ("searched.yaml", "lr-x2: {optimizer.lr: 2.0e-05}", "lr-x2: {optimizer.lr: 2.0e-05, optimizer.momentum: 0.5}",
         "gpw-cars196: point lr-x2 changes ['optimizer.lr', 'optimizer.momentum'], expected one optimizer.lr setting"),
    ],
    ids=["narrower-method", "wider-baseline", "lr-point-moves-more"],
)  # fmt: skip
def test_an_unequal_search_budget_is_found(tmp_path, file, old, new, problem):
    recipes, study = _folder_with(tmp_path, file, old, new)
    assert problem in search_problems(recipes, study)


def test_a_method_left_out_of_the_search_is_found(tmp_path):
    old = "  readings:\n    fair.search-point:\n      paper: {}\n      loss-x0.5: {loss.params.margin: 0.1}\n"
    new = "  readings:\n    fair.search-point:\n      paper: {}\n      loss-x0.5: {}\n"
    recipes, study = _folder_with(tmp_path, "baselines.yaml", old, new)
    assert "triplet-semihard-cub200: point loss-x0.5 changes [], expected one loss.params.* setting" in (
        search_problems(recipes, study)
    )


@pytest.mark.parametrize("method", sorted(PAPER_RUN))
def test_a_method_keeps_its_paper_recipes_loss(method):
    paper = find_run(PAPER_RUN[method]).recipe()
    for dataset in DATASETS:
        fair = FAIR.run(f"{method}-{dataset}").recipe()
        assert fair.loss == paper.loss
        assert fair.model.normalize == paper.model.normalize
        # drml's relational head is its method; every other method has the protocol's one linear layer (gpw's
        # 3-level fusion is an architecture any loss could use: the protocol holds it equal)
        assert fair.model.head == (paper.model.head if method == "drml" else HeadSettings())


def test_damlrrm_draws_its_shuffled_stream_from_its_papers_default_pool():
    # the pool is a setting of damlrrm's sampler that its recipe leaves to a reading (damlrrm.shuffled-pool): at
    # damlrrm's default, not at the sampler's own default (half the split)
    labels = np.repeat(np.arange(80), 59)
    paper = find_run(PAPER_RUN["damlrrm"]).recipe()
    expected = sampler_record(paper.sampler.name, paper.sampler.params, build_sampler(paper, labels))
    for dataset in DATASETS:
        fair = FAIR.run(f"damlrrm-{dataset}").recipe()
        for shrink in (lambda recipe: recipe, mini_version):
            recipe = shrink(fair)
            found = sampler_record(recipe.sampler.name, recipe.sampler.params, build_sampler(recipe, labels))
            pool = {key: found["settings"][key] for key in ("shuffled_pool_size", "reshuffle_pool")}
            assert pool == {key: expected["settings"][key] for key in pool}, dataset
    assert fair.sampler == paper.sampler  # and its batch of 12 x 5 + 60 is damlrrm's own


@pytest.mark.parametrize("method", sorted(PAPER_BASE_LOSS))
def test_a_baseline_keeps_the_base_loss_its_paper_recipe_pins(method):
    paper = find_run(PAPER_BASE_LOSS[method]).recipe()
    for dataset in DATASETS:
        fair = FAIR.run(f"{method}-{dataset}").recipe()
        assert fair.loss.name == paper.loss.params["base"]
        assert fair.loss.params == paper.loss.params["base_params"]
        assert fair.model.normalize == paper.model.normalize


def test_the_contrastive_baseline_takes_the_losss_defaults():
    defaults = {
        name: parameter.default for name, parameter in inspect.signature(ContrastiveLoss.__init__).parameters.items()
    }
    for dataset in DATASETS:
        params = FAIR.run(f"contrastive-{dataset}").recipe().loss.params
        assert {name: defaults[name] for name in params} == params


def test_the_plan_runs_the_study_seeds_at_full_scale_and_one_data_set_at_the_mini_tier():
    study = load_study(RECIPES_DIR, "fair")
    runs, seeds = study_plan(FAIR, study, Tier.FULL, RUNS, None, (0, 1, 2))
    assert runs == RUNS and list(seeds) == study.seeds and len(seeds) >= 3
    runs, seeds = study_plan(FAIR, study, Tier.MINI, RUNS, None, (0, 1, 2))
    assert {_method(run) for run in runs} == set(PAPER_METHODS + BASELINES + CONTROLS) and len(runs) == 11
    assert {run.recipe().data.dataset for run in runs} == {study.mini_dataset} and list(seeds) == [0, 1, 2]
    assert study_plan(FAIR, study, Tier.MINI, RUNS, [4], (0, 1, 2))[1] == [4]  # given seeds win
    # at the mini tier every data set is the same glyph set: the other data set's runs would compute the same
    for method in PAPER_METHODS + BASELINES + CONTROLS:
        mini = {mini_version(FAIR.run(f"{method}-{dataset}").recipe()).content_hash() for dataset in DATASETS}
        assert len(mini) == 1, method


def test_the_mini_tier_keeps_equal_images_per_step():
    images = {run.id: _images_per_step(mini_version(run.recipe())) for run in RUNS}
    assert set(images.values()) == {60}, images
