"""Importing the runner and ``dml`` loads only what planning, checking and starting runs need: every process of a
reproduction imports them (the command, side-by-side workers, torchrun ranks, submitit jobs), and scikit-learn,
numba, pandas and matplotlib add about a CPU-second to a start that never uses them (the page builder, the linear
protocol, the kNN ranking and the glyph drawing import them where they work). A training process evaluates, and
its evaluation needs no scikit-learn either (about two CPU-seconds to import): the contingency table behind NMI and
F1 is counted with numpy, and k-means is faiss's unless a recipe asks for scikit-learn's."""

import subprocess
import sys

TRAINING_ENTRIES = ("dml_core.cli", "dml_core.runner.one_run", "dml_core.runner.jobs", "dml_core.runner.inline")
NOT_FOR_TRAINING = ("sklearn", "numba", "joblib", "pandas", "matplotlib", "scipy.io", "scipy.stats")


def _loaded(code: str, modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` a fresh interpreter holds after running ``code``."""
    probe = f"{code}; import sys; print(','.join(m for m in {modules!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return [name for name in done.stdout.strip().split(",") if name]


def test_the_runner_and_the_command_load_no_library_that_only_pages_linear_runs_or_glyphs_need():
    assert _loaded(f"import {', '.join(TRAINING_ENTRIES)}", NOT_FOR_TRAINING) == []


def test_an_evaluation_with_clustering_metrics_loads_no_scikit_learn():
    code = (
        "import numpy as np; from dml_core.evaluation import metrics as M; labels = np.array([0, 0, 1, 1]); "
        "M.normalized_mutual_information(labels, labels[::-1]); M.clustering_f1(labels, labels)"
    )
    assert _loaded(code, ("sklearn", "scipy.sparse")) == []
