"""Sessions of the reproduction suite.

Every session runs in ONE shared virtual environment (about 6 GB: torch and its CUDA libraries), built from
constraints.txt and rebuilt only when constraints.txt or pyproject.toml change. nox's own per-session
environments are switched off (venv_backend="none"); ``shared_python`` owns the environment instead. nox itself
runs from a small venv of its own (README: ``.nox/tools``): no step installs into a system Python, which PEP 668
keeps closed to pip on Debian and Ubuntu. Set DML_VENV to put the environment somewhere else (for example one
venv for several checkouts).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
CONSTRAINTS = ROOT / "constraints.txt"
VENV = Path(os.environ.get("DML_VENV", ROOT / ".nox" / "shared"))
TEST_ENV = {"HF_HUB_OFFLINE": "1", "PYTHONHASHSEED": "0"}


def _standard_library_module(name: str):
    """dml_core/<name>.py, read by path: nox runs before the environment (and so before dml_core's dependencies)
    exists, and the modules read so need only the standard library to load."""
    spec = importlib.util.spec_from_file_location(f"dml_{name}", ROOT / "dml_core" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The gate's tests spread over one pytest-xdist worker per core (its ``-n`` after ``--`` overrides it; ``-n 0``: one
# process): most tests hold one core, so on CI's two this halves the gate. tests/conftest.py shares the threads.
PARALLEL = ("-n", str(_standard_library_module("cpu_cores").available_cores()), "--dist", "loadfile")

nox.options.default_venv_backend = "none"
nox.options.sessions = ["tests"]


def _environment_fingerprint() -> str:
    digest = hashlib.sha256()
    for path in (CONSTRAINTS, ROOT / "pyproject.toml"):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def shared_python(session: nox.Session) -> str:
    """Create or refresh the shared environment and return its interpreter."""
    python = VENV / "bin" / "python"
    stamp = VENV / ".dml-environment"
    fingerprint = _environment_fingerprint()
    if not python.exists():
        session.run(sys.executable, "-m", "venv", str(VENV))
    if not stamp.exists() or stamp.read_text() != fingerprint:
        # Not --quiet: a first build downloads about 5 GB for minutes, and pip's lines (one per package, a progress
        # bar on a terminal, the final state only in a CI log) show that it is moving.
        pip = (str(python), "-m", "pip", "install", "--disable-pip-version-check", "-c", str(CONSTRAINTS))
        session.log(f"shared environment {VENV} (1/2): pip and setuptools")
        session.run(*pip, "pip==26.3", "setuptools==84.2.1")
        session.log("shared environment (2/2): the suite and its pinned dependencies (about 6 GB, mostly torch + CUDA)")
        session.run(*pip, "-e", f"{ROOT}[test,lint]", env={"PIP_CONSTRAINT": str(CONSTRAINTS)})
        stamp.write_text(fingerprint)
    return str(python)


@nox.session
def environment(session: nox.Session) -> None:
    """Build or refresh the shared environment only (the Docker image build runs this)."""
    shared_python(session)


@nox.session
def tests(session: nox.Session) -> None:
    """The test gate (CI runs this): unit, parity and end-to-end tests on the CPU."""
    python = shared_python(session)
    session.run(python, "-m", "pytest", *PARALLEL, *session.posargs, env=TEST_ENV)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and format check."""
    python = shared_python(session)
    session.run(python, "-m", "ruff", "check", ".")
    session.run(python, "-m", "ruff", "format", "--check", ".")


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks: tests/benchmarks/bench_*.py (the test gate checks that the training one runs, and holds each
    loss's dispatched ops per step to its budget); JSON lands in tables/benchmarks/.

    DML_BENCH_SCALE=0.1 runs a reduced, quick check of the evaluation benchmark's code; the training one is reduced
    on a CPU (each paper's smoke recipe)."""
    python = shared_python(session)
    session.run(
        python, "-m", "pytest", "tests/benchmarks", "-o", "python_files=bench_*.py", "-s",
        "--benchmark-only", "--benchmark-columns=min,rounds", *session.posargs, env=TEST_ENV,
    )  # fmt: skip


@nox.session(name="gpu-check")
def gpu_check(session: nox.Session) -> None:
    """The GPU check, the first command on a new GPU box: `python -m dml_core.gpu_check` (arguments after `--` go
    to it: `--parts smoke,resume`, `--rerun-failed`, `--time-limit SECONDS`, `--report-dir DIR`).

    Parity of every loss CPU vs GPU, an SOP-sized evaluation on both, a run killed and resumed, torchrun and NCCL,
    every paper's smoke tier on both pipelines, one mini tier, the training benchmark; writes
    tables/benchmarks/gpu-check-<device>.json and exits 1 naming each failed part. Without a usable GPU every
    part says "skipped: no GPU"."""
    session.run(shared_python(session), "-m", "dml_core.gpu_check", *session.posargs, env=TEST_ENV)


# --- Reproduction: one session per paper, the table builder, and the nightly job ---------------------------------
# Thin wrappers: the logic is in dml_core.runner and dml_core.tables (`dml reproduce`, `dml tables`).


_VOCABULARY = _standard_library_module("vocabulary")
PAPERS = _VOCABULARY.PAPER_KEYS
STUDIES = _VOCABULARY.STUDY_KEYS  # recipe folders that are not a paper's: reproduce/fair/


def _dml(session: nox.Session, *args: str, **kwargs) -> None:
    session.run(shared_python(session), "-m", "dml_core.cli", *args, **kwargs)


def _reproduce_session(key: str, doc: str) -> None:
    def reproduce(session: nox.Session) -> None:
        _dml(session, "reproduce", key, *session.posargs)

    reproduce.__doc__ = doc
    nox.session(name=f"reproduce-{key}")(reproduce)


for _key in PAPERS:
    _reproduce_session(
        _key,
        f"Reproduce {_key}: check data and weights, run every reproduce/{_key}/*.yaml (finished runs skipped), "
        f"write results/{_key}/, build tables/{_key}.md. '-- --smoke': CPU smoke versions (results/smoke/); "
        f"'-- --launcher slurm --partition P': each run as a Slurm job (submitit).",
    )
for _key in STUDIES:
    _reproduce_session(
        _key,
        f"The {_key} study (papers/{_key}/method.md): every run of reproduce/{_key}/ over the seeds of its "
        f"study.yaml (finished runs skipped), results/{_key}/, tables/{_key}.md (+ CSV, figure). '-- --mini': its "
        f"runs of one data set on the embedded_mini glyphs on the CPU, seeds 0-2, tables/mini/{_key}.md.",
    )


@nox.session
def dml(session: nox.Session) -> None:
    """The suite's command in the shared environment: `nox -s dml -- ARGS` runs `dml ARGS` (`-- --help` lists its
    subcommands). Every message and document names it in this form."""
    _dml(session, *session.posargs)


@nox.session
def tables(session: nox.Session) -> None:
    """Build tables/<paper>.md (+ plots) from the results files; arguments go to `dml tables`."""
    _dml(session, "tables", *session.posargs)


@nox.session
def nightly(session: nox.Session) -> None:
    """Re-run every paper at this commit into its own dated folders and check it: `dml nightly` (arguments after
    `--` go to it).

    Results go to results/nightly/<date>-<commit>/ (nothing finished elsewhere is skipped); every line is compared
    with the published numbers (full scale) and with the latest passing nightly of the same tier, waived cells are
    listed apart, and tables/nightly/history.csv and tables/nightly/trends/ keep the history. Fails when a line is
    below published or the previous nightly minus its gate, or a run failed. '-- --smoke': the CPU smoke tier; on
    a GPU box '-- --pipeline cache' trains from the decoded uint8 caches (`dml prepare DATASET --cache MODE`)."""
    _dml(session, "nightly", "--no-progress", *session.posargs)
