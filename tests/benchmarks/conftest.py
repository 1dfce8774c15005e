"""Benchmarks run only in `nox -s bench` (files are named bench_*.py, which the test gate does not collect)."""
