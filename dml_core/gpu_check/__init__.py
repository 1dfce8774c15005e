"""One check that the GPU path works: ``python3 -m dml_core.gpu_check`` (``nox -s gpu-check``).

It runs a list of parts (``registry.PARTS``), each on its own. The checks pass or fail: the smoke tier of every
paper on both data pipelines (``smoke``), a run killed with SIGKILL and resumed (``resume``), one training step of
every loss on the CPU and the GPU (``parity``), the cache pipeline's batches on the GPU against the PIL path's
(``pipelines``: ``data.pipeline: auto`` counts them as one computation), ``dml train`` under torchrun and the
suite's collectives over NCCL (``torchrun``), an SOP-sized evaluation on both devices, with the kNN stage against
its bound (``evaluation``), and one paper's mini tier (``mini``). The experiments among them (``experiments/``)
measure what a setting would change. Each part's status, seconds, figures and run environment go to
``tables/benchmarks/gpu-check-<device>.json`` (``report``), written atomically after every part; ``--rerun-failed``
runs again only the parts of that report that did not pass. Without a usable GPU every part says "skipped: no
GPU"; a GPU that is present but that torch cannot use makes every part fail (``device``).

The check may import the whole package (it trains, evaluates and reads the mini pages); nothing outside it imports
it but the runner's expected hours (``report.device_slug``) and the tests and benchmarks.
"""
