"""The docstring examples of dml_core.linear are hand-computed values: run them as tests."""

import doctest
import importlib

import pytest

MODULES = [
    "log_exp_mean",
    "batched_solver",
    "mahalanobis",
    "neighbour_sets",
    "knn_accuracy",
    "methods",
    "protocol",
    "uci",
    "plan",
    "results_file",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"dml_core.linear.{name}")
    failures, attempted = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert attempted > 0 and failures == 0
