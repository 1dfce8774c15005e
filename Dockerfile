# The reproduction suite on a GPU machine. From the checkout (docs/gpu.md, "Docker"):
#
#   docker build -t dml-repro .
#   docker run --gpus all \
#       -v "$PWD/data:/data" -v "${DML_WEIGHTS_DIR:-$HOME/.cache/dml/weights}:/weights" \
#       -v "$PWD/results:/opt/dml/results" -v "$PWD/tables:/opt/dml/tables" -v "$PWD/runs:/opt/dml/runs" \
#       dml-repro nox -s reproduce-damlrrm            # or: nox -s nightly, nox -s tables, nox (the tests)
#
# GPU: the pinned torch (constraints.txt) is a CUDA 13 build whose wheels bring the CUDA user space (cuBLAS, cuDNN,
# NCCL, ...) from PyPI, so the base is a plain Python image: a CUDA base image would be dead weight. Only the
# driver comes from the host: NVIDIA driver >= 580 (the minimum for CUDA 13.x, by NVIDIA's minor version
# compatibility), a GPU of compute capability 7.5 or newer (CUDA 13 dropped Maxwell, Pascal and Volta), and the
# NVIDIA Container Toolkit for --gpus.
#
# The one `docker run` does it all: the run fetches the datasets and weight files it needs and lacks into the mounted
# /data and /weights (DML_DATA_ROOT, DML_WEIGHTS_DIR), so they stay on the host and a stopped run's downloads resume
# in the next one; folders already filled on the host (`nox -s dml -- prepare`, `nox -s dml -- weights --fetch`, which
# saves to ~/.cache/dml/weights or $DML_WEIGHTS_DIR) are used as they are, and `-- --no-download` fetches nothing.
# results/, tables/ and runs/ stay in the repository copy (/opt/dml), where the
# suite writes by default: mounting the checkout's own folders there shows the container the committed results and
# every earlier run's, and keeps what it writes on the host. Without those mounts the container sees the committed
# results baked into the image, and what it writes goes with the container.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
FROM ${PYTHON_IMAGE}

# git: results files record the commit they were produced at (dml_core/provenance.py). Its version is the base's
# Debian release's (pinning one would break at its next security update).
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends git \
    && rm -rf /var/lib/apt/lists/*

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    DML_VENV=/opt/dml-venv \
    DML_DATA_ROOT=/data \
    DML_WEIGHTS_DIR=/weights
# nox and dml come from the shared environment.
ENV PATH="$DML_VENV/bin:$PATH"

WORKDIR /opt/dml

# The dependencies first, from the lock alone: this layer (about 6 GB) is rebuilt when constraints.txt changes,
# not on every code edit.
COPY constraints.txt ./
RUN python -m venv "$DML_VENV" \
    && pip install -r constraints.txt

# Then the source. `nox -s environment` (noxfile.py's shared_python) finds every dependency in place and adds the
# package itself (editable) and the stamp that keeps the sessions from rebuilding the environment.
COPY . .
RUN git config --system --add safe.directory /opt/dml \
    && nox -s environment

VOLUME ["/data", "/weights"]

CMD ["nox"]
