"""Recipe files: extends chains, dotted paths, grids, targets, assumptions by id, readings as patches, and errors
that name the file and field."""

import pytest
import yaml

from dml_core.errors import InputError
from dml_core.recipes.assumptions import load_paper_assumptions
from dml_core.recipes.catalog import load_paper, run_of_file
from dml_core.recipes.compose import expand_file, variant_name, with_overrides

BASE = {
    "paper": "damlrrm",
    "assumptions": ["optimizer"],
    "data": {"dataset": "cub200"},
    "model": {"backbone": "googlenet"},
    "loss": {"name": "triplet", "params": {"margin": 0.1}},
    "sampler": {"name": "pk", "params": {"classes_per_batch": 8, "images_per_class": 4}},
    "optimizer": {"name": "sgd", "momentum": 0.9},
    "readings": {"damlrrm.lr": {"1e-4": {"optimizer.lr": 1.0e-4}, "1e-3": {"optimizer.lr": 1.0e-3}}},
    "training": {"iterations": 100, "eval_every": 50},
}
ASSUMPTIONS = {
    "paper": "damlrrm",
    "assumptions": {"optimizer": "SGD with momentum.", "margin": "Margin 0.1."},
    "readings": {
        "damlrrm.lr": {
            "question": "printed '10e-4'",
            "values": {"1e-4": "as usual", "1e-3": "literal"},
            "default": "1e-4",
            "why": "common",
        }
    },
}


def _paper(tmp_path, files: dict, assumptions=ASSUMPTIONS):
    folder = tmp_path / "damlrrm"
    folder.mkdir(exist_ok=True)
    if assumptions is not None:
        (folder / "assumptions.yaml").write_text(yaml.safe_dump(assumptions))
    for name, tree in files.items():
        (folder / name).write_text(yaml.safe_dump(tree, sort_keys=False) if isinstance(tree, dict) else tree)
    return folder


def test_a_grid_expands_in_axis_order_over_the_extends_chain(tmp_path):
    grid_file = {
        "extends": "base.yaml",
        "loss.params.margin": 0.2,
        "runs": [
            {
                "id": "t-{dim}-{data}",
                "description": "d = {dim} on {data}",
                "targets": ["table1/{id}"],
                "assumptions": ["margin"],
                "grid": {
                    "dim": {64: {"model.embedding_dim": 64}, 128: {"model.embedding_dim": 128}},
                    "data": {"cub": {}, "cars": {"data.dataset": "cars196", "loss.params.margin": 0.3}},
                },
            }
        ],
        "targets": {"t-64-cub": ["table2/extra"]},
    }
    folder = _paper(tmp_path, {"base.yaml": BASE, "grid.yaml": grid_file})
    runs = expand_file(folder / "grid.yaml", load_paper_assumptions(folder))
    assert [run.id for run in runs] == ["t-64-cub", "t-64-cars", "t-128-cub", "t-128-cars"]
    recipes = [run.recipe() for run in runs]
    assert [r.model.embedding_dim for r in recipes] == [64, 64, 128, 128]
    assert [r.loss.params["margin"] for r in recipes] == [0.2, 0.3, 0.2, 0.3]  # the later layer wins
    assert recipes[1].data.dataset == "cars196" and recipes[1].description == "d = 64 on cars"
    assert [(t.table, t.row) for t in recipes[0].targets] == [("table1", "t-64-cub"), ("table2", "extra")]
    assert recipes[0].assumptions == {"optimizer": "SGD with momentum.", "margin": "Margin 0.1."}
    assert recipes[0].optimizer.lr == 1.0e-4 and recipes[0].readings == {"damlrrm.lr": "1e-4"}
    assert recipes[0].variant == "" and recipes[0].run_name == "t-64-cub"
    assert load_paper("damlrrm", tmp_path).run("t-128-cars").id == "t-128-cars"


def test_a_reading_value_is_a_patch_and_names_the_run(tmp_path):
    folder = _paper(tmp_path, {"base.yaml": {**BASE, "id": "one", "targets": ["table1/one"]}})
    run = run_of_file(folder / "base.yaml")
    default, literal = run.recipe(), run.recipe({"damlrrm.lr": "1e-3"})
    assert literal.optimizer.lr == 1.0e-3 and literal.readings == {"damlrrm.lr": "1e-3"}
    assert literal.variant == "damlrrm.lr=1e-3" and literal.run_name == "one~damlrrm.lr=1e-3"
    assert literal.content_hash() != default.content_hash()
    assert variant_name({}) == ""


def test_switching_a_component_drops_the_parameters_of_the_one_it_replaces(tmp_path):
    entry = {"id": "random", "targets": ["table1/random"], "sampler": {"name": "random", "params": {"batch_size": 32}}}
    folder = _paper(tmp_path, {"base.yaml": BASE, "r.yaml": {"extends": "base.yaml", "runs": [entry]}})
    recipe = run_of_file(folder / "r.yaml").recipe()
    assert recipe.sampler.params == {"batch_size": 32}


def test_overrides_after_the_smoke_shrink_are_kept(tmp_path):
    folder = _paper(tmp_path, {"base.yaml": {**BASE, "id": "one", "targets": ["table1/one"]}})
    recipe = with_overrides(
        run_of_file(folder / "base.yaml").recipe(), ["training.iterations=3", "model.weights=random"]
    )
    assert recipe.training.iterations == 3 and recipe.model.weights == "random"


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            {"a.yaml": {**BASE, "id": "a", "assumptions": ["nope"]}},
            r"a\.yaml: field assumptions: unknown assumption 'nope'",
        ),
        (
            {"a.yaml": {**BASE, "id": "a", "readings": {"damlrrm.lr": {"1e-4": {}}}}},
            r"a\.yaml: field readings\.damlrrm\.lr: expected a patch for each value \(.*\), found 1e-4",
        ),
        ({"a.yaml": {**BASE, "id": "a", "readings": {"other.x": {}}}}, r"unknown reading 'other\.x'"),
        ({"a.yaml": {"extends": "missing.yaml"}}, r"a\.yaml: field extends: .*missing\.yaml not found"),
        ({"a.yaml": {"extends": "a.yaml", "id": "a"}}, r"field extends: a cycle"),
        ({"a.yaml": {**BASE, "runs": [{"id": "x-{nope}"}]}}, r"runs\[0\]: field id: \{nope\} is not a grid axis"),
        ({"a.yaml": {**BASE, "runs": [{"id": "x"}], "targets": {"y": ["t/r"]}}}, r"field targets: y is not a run"),
        ({"a.yaml": {**BASE, "id": "a", "targets": ["no-slash"]}}, r"field targets: expected 'table/row'"),
        ({"a.yaml": "id: [unclosed"}, r"a\.yaml: not valid YAML"),
    ],
)
def test_bad_recipe_files_fail_naming_file_and_field(tmp_path, files, message):
    folder = _paper(tmp_path, files)
    with pytest.raises(InputError, match=message):
        run_of_file(folder / "a.yaml").recipe()


def test_a_bad_value_names_the_file_that_set_it(tmp_path):
    child = {"extends": "base.yaml", "runs": [{"id": "x", "targets": ["t/x"], "training.eval_every": 0}]}
    folder = _paper(tmp_path, {"base.yaml": {**BASE, "optimizer": {"name": "sgdd"}}, "c.yaml": child})
    with pytest.raises(InputError) as error:
        run_of_file(folder / "c.yaml").recipe()
    text = str(error.value)
    assert "base.yaml: run x: field optimizer.name" in text
    assert "c.yaml: runs[0]: run x: field training.eval_every: Input should be greater than 0" in text


def test_ids_are_unique_within_a_paper_and_a_file_of_many_runs_asks_for_an_id(tmp_path):
    two = {"extends": "base.yaml", "runs": [{"id": "x", "targets": ["t/x"]}, {"id": "y", "targets": ["t/y"]}]}
    folder = _paper(tmp_path, {"base.yaml": BASE, "two.yaml": two, "dup.yaml": {**two, "runs": two["runs"][:1]}})
    with pytest.raises(InputError, match=r"declares 2 runs \(x, y\): pass one of their ids"):
        run_of_file(folder / "two.yaml")
    with pytest.raises(InputError, match=r"base file"):
        run_of_file(folder / "base.yaml")
    with pytest.raises(InputError, match=r"run x: the id is also declared in"):
        load_paper("damlrrm", tmp_path)


def test_a_recipe_of_ones_own_states_its_assumptions_as_sentences(tmp_path):
    mine = {k: v for k, v in BASE.items() if k != "readings"}
    mine.update(id="mine", assumptions=["My own sentence."], optimizer={"name": "adam", "lr": 1e-5})
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(mine))
    recipe = run_of_file(tmp_path / "mine.yaml").recipe()
    assert recipe.assumptions == {"1": "My own sentence."} and recipe.readings == {}


def test_a_file_adds_to_the_patch_its_base_declares_for_a_reading_value(tmp_path):
    child = {
        "extends": "base.yaml",
        "readings": {"damlrrm.lr": {"1e-4": {}, "1e-3": {"optimizer.weight_decay": 0.01}}},
        "runs": [{"id": "x", "targets": ["t/x"]}],
    }
    bad = {**child, "readings": {"damlrrm.lr": {"1e-3": {}}}}
    folder = _paper(tmp_path, {"base.yaml": BASE, "c.yaml": child, "bad.yaml": bad})
    literal = run_of_file(folder / "c.yaml").recipe({"damlrrm.lr": "1e-3"})
    assert (literal.optimizer.lr, literal.optimizer.weight_decay) == (1.0e-3, 0.01)
    assert run_of_file(folder / "c.yaml").recipe().optimizer.weight_decay == 0.0
    with pytest.raises(InputError, match=r"bad\.yaml: field readings\.damlrrm\.lr: expected the values of its"):
        run_of_file(folder / "bad.yaml")


@pytest.mark.parametrize("section", ["training", "mini"])
def test_setting_one_of_iterations_and_epochs_clears_the_other(tmp_path, section):
    counted_in_iterations = {**BASE, "id": "t", section: {**BASE.get(section, {}), "iterations": 100}}
    _paper(
        tmp_path, {"base.yaml": counted_in_iterations, "epochs.yaml": {"extends": "base.yaml", section: {"epochs": 8}}}
    )
    (run,) = expand_file(tmp_path / "damlrrm" / "base.yaml", load_paper_assumptions(tmp_path / "damlrrm"))
    for recipe in (
        run.recipe(overrides=[f"{section}.epochs=8"]),
        with_overrides(run.recipe(), [f"{section}.epochs=8"]),
    ):
        assert (getattr(recipe, section).epochs, getattr(recipe, section).iterations) == (8, None)
        back = with_overrides(recipe, [f"{section}.iterations=50"])
        assert (getattr(back, section).epochs, getattr(back, section).iterations) == (None, 50)
    # a file over a base counted the other way
    (extended,) = expand_file(tmp_path / "damlrrm" / "epochs.yaml", load_paper_assumptions(tmp_path / "damlrrm"))
    assert getattr(extended.recipe(), section).epochs == 8
    # both in one layer is a conflict, named
    both = {"extends": "base.yaml", section: {"epochs": 8, "iterations": 10}}
    _paper(tmp_path, {"both.yaml": both})
    (conflict,) = expand_file(tmp_path / "damlrrm" / "both.yaml", load_paper_assumptions(tmp_path / "damlrrm"))
    with pytest.raises(InputError, match=rf"run t: field {section}: .*exactly one of iterations or epochs"):
        conflict.recipe()
    with pytest.raises(InputError, match=rf"field {section}: .*exactly one of iterations or epochs"):
        with_overrides(run.recipe(), [f"{section}={{epochs: 8, iterations: 10}}"])


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("pa: &pa {model.backbone: resnet50}\n", "the anchor &pa"),
        ("runs:\n- id: a\n  grid: {d: {x: {}}}\n  model: {backbone: &net resnet50}\n", "the anchor &net"),
        ("runs:\n- id: a\n  <<: {model.backbone: resnet50}\n", "the merge key <<"),
    ],
)
def test_a_recipe_file_with_yaml_anchors_is_refused_naming_the_line(tmp_path, text, found):
    folder = _paper(tmp_path, {"base.yaml": BASE})
    (folder / "runs.yaml").write_text("extends: base.yaml\n" + text)
    with pytest.raises(InputError, match=rf"runs.yaml: line \d+: expected no YAML anchors .*found {found}; share"):
        expand_file(folder / "runs.yaml", load_paper_assumptions(folder))


def test_no_file_under_reproduce_uses_yaml_anchors():
    from dml_core.output_paths import RECIPES_DIR
    from dml_core.recipes.compose import refuse_yaml_anchors

    files = sorted(RECIPES_DIR.rglob("*.yaml"))
    assert len(files) > 30
    for path in files:
        refuse_yaml_anchors(path)  # an InputError names the file, the line and the anchor


def test_mini_epochs_alone_shrinks_drml_under_the_official_code_reading():
    from dml_core.recipes import find_run
    from dml_core.recipes.tiers import mini_version

    recipe = find_run("drml-pa-cub200").recipe({"drml.source": "official-code"})
    # the reading counts its mini run in epochs, as its warm-up (drml/base.yaml counts the others in iterations)
    assert (recipe.mini.epochs, recipe.mini.iterations) == (13, None)
    assert mini_version(recipe).model.freeze_backbone_epochs == 1
    mini = mini_version(with_overrides(recipe, ["mini.epochs=100"]))
    assert (mini.training.epochs, mini.training.iterations, mini.model.freeze_backbone_epochs) == (100, None, 2)
