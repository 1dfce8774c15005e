# The reproduction suite on a GPU machine: a CUDA PyTorch base, the pinned environment (constraints.txt),
# datasets, weights and results as mounted volumes, nox as the command.
#
#   docker build -t dml-repro .
#   docker run --gpus all -v $PWD/data:/data -v $PWD/weights:/weights -v $PWD/out:/results \
#       dml-repro nox -s reproduce-damlrrm            # or: nox -s nightly, nox -s tables, nox (the tests)
#
# Prepare datasets and weights on the host first (no download happens inside a run): `dml prepare <dataset>
# --root data` and `dml weights --fetch` (put the files in ./weights); the reproduce sessions check both.
# The pinned torch wheel brings its own CUDA runtime, so the base only has to provide Python >= 3.11 and the
# NVIDIA container runtime hooks; BASE_IMAGE can be swapped for any CUDA PyTorch image.
ARG BASE_IMAGE=pytorch/pytorch:2.9.1-cuda13.0-cudnn9-runtime
FROM ${BASE_IMAGE}

# git: results files record the commit they were produced at (dml_core/provenance.py).
RUN apt-get update \
    && apt-get install -y --no-install-recommends git \
    && rm -rf /var/lib/apt/lists/*

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    DML_VENV=/opt/dml-venv \
    DML_DATA_ROOT=/data \
    DML_WEIGHTS_DIR=/weights \
    DML_RESULTS_DIR=/results/results \
    DML_TABLES_DIR=/results/tables \
    DML_RUNS_DIR=/results/runs

WORKDIR /opt/dml
COPY . /opt/dml
RUN git config --system --add safe.directory /opt/dml

# The pinned environment in the image's Python (replacing the base's torch when its version differs), then
# nox's shared environment as a view of it (--system-site-packages: nothing is installed twice).
RUN python -m pip install --no-cache-dir -c constraints.txt nox -e ".[test,lint]" \
    && python -m venv --system-site-packages "$DML_VENV" \
    && nox -s environment

VOLUME ["/data", "/weights", "/results"]

CMD ["nox"]
