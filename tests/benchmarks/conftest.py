"""Benchmarks run in `nox -s bench` (files are named bench_*.py, which the test gate does not collect);
test_bench_training.py checks in the gate that the training benchmark still runs."""
