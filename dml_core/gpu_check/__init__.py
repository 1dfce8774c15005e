"""One check that the GPU path works: ``python3 -m dml_core.gpu_check`` (``nox -s gpu-check``).

It runs a list of parts (``registry.PARTS``), each on its own: pass/fail checks here, and the experiments that
measure what a setting would change in ``experiments/``. Each part's status, seconds and figures go to
``tables/benchmarks/gpu-check-<device>.json`` (``report``); what each part does: docs/gpu.md.

The check may import the whole package (it trains, evaluates and reads the mini pages); nothing outside it imports
it but the tests and benchmarks.
"""
