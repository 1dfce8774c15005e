"""Test-wide settings: offline hub, an empty torch hub folder, deterministic CPU torch, the cores shared among the
gate's parallel workers (at most two threads each, CI's cores); a tiny CUB for the tests of the data pipeline (its
preparation, caches, batches and the runner's cache preparation); the embedded glyph sets generated once per session,
copied into the data roots of the tests that train on them; a loopback HTTP server."""

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# torch hub's folder is a place weight files are found: a test sees an empty one, never the machine's own.
os.environ["TORCH_HOME"] = os.path.join(tempfile.gettempdir(), f"dml-tests-torch-home-{os.getpid()}")

import pytest
import torch

from dml_core.cpu_cores import available_cores
from dml_core.data.prepare import ensure_generated, prepare
from dml_core.data.registry import get_spec
from tests.data.conftest import loopback_server
from tests.data.layouts import make_cub, shrink_spec, write_jpeg
from tests.processes import log_files_report


def threads_per_worker(cores: int, workers: int) -> int:
    """Torch's threads in a test process where OMP_NUM_THREADS does not say: the cores shared among the
    pytest-xdist workers (the gate runs one per core), at most two (CI's cores). More threads than cores is OpenMP
    oversubscription, which slows conv layers by 10x."""
    return max(1, min(2, cores // workers))


_THREADS = threads_per_worker(available_cores(), int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
if "PYTEST_XDIST_WORKER_COUNT" in os.environ:  # a worker of the parallel gate: so are the processes its tests start
    os.environ.setdefault("OMP_NUM_THREADS", str(_THREADS))
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS") or 0) or _THREADS)
torch.use_deterministic_algorithms(True, warn_only=True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A failed test's report shows the process logs under its ``tmp_path`` (the child logs of the GPU check's parts,
    submitit's job logs), each process's head and tail: the failure's cause is often in a child's own output."""
    report = yield
    tmp_path = getattr(item, "funcargs", {}).get("tmp_path")
    if report.failed and call.when == "call" and tmp_path is not None and Path(tmp_path).is_dir():
        logs = log_files_report(Path(tmp_path))
        if logs:
            report.sections.append(("process logs under tmp_path", logs))
    return report


@pytest.fixture(autouse=True)
def _seed_everything():
    torch.manual_seed(0)


@pytest.fixture(autouse=True)
def _backend_flags_stay_settable():
    """Fail the test that froze ``torch.backends`` flags (importing ``torch.testing._internal.common_utils`` does):
    every later run in this process would fail to set its determinism switches, far from the cause."""
    yield
    if torch.backends.flags_frozen():
        # Unfreeze (the flag is a global of torch.backends' own module), so that this test fails and no other.
        torch.backends.flags_frozen.__globals__["__allow_nonbracketed_mutation_flag"] = True
        pytest.fail("this test froze torch.backends flags (disable_global_flags); run what froze them in a subprocess")


@pytest.fixture
def odd_sized_cub(monkeypatch, tmp_path):
    """A tiny CUB in its real layout with non-square images of several sizes."""
    expected = make_cub(tmp_path / "src")
    for number, (path, _, _) in enumerate(expected):
        write_jpeg(tmp_path / "src" / path, number, size=(60 + 7 * number, 50 + 3 * (number % 4)))
    shrink_spec(monkeypatch, "cub200", expected)
    prepare(get_spec("cub200"), tmp_path / "data", [tmp_path / "src" / "CUB_200_2011"], progress=False)
    return tmp_path / "data"


@pytest.fixture(scope="session")
def generated_glyph_set(tmp_path_factory) -> Callable[[str], Path]:
    """The folder of an embedded glyph set (``embedded``, ``embedded_mini``), generated on first request, once per
    session: 4-6 s (smoke set) and 14-19 s (mini set) of a 2-core CPU that about forty tests would spend again."""
    root = tmp_path_factory.mktemp("generated-glyph-sets")

    def folder(name: str) -> Path:
        ensure_generated(get_spec(name), root)
        return root / name

    return folder


@pytest.fixture(scope="session")
def copy_glyph_sets(generated_glyph_set) -> Callable[..., Path]:
    """``copy_glyph_sets(data_root, *names)``: ``data_root`` holding a copy of each named glyph set (default: the
    smoke set) as a run's first use generates it, index included; returns ``data_root``. A copy, not links: a test
    may write into its data root (caches, damaged files) without touching the others'. For tests whose subject is
    not the generation (tests/data/sources/test_embedded.py, the concurrent preparation of tests/data/test_prepare.py
    and the first-use generation of tests/data/test_loading.py generate their own)."""

    def copy(data_root: Path, *names: str) -> Path:
        for name in names or ("embedded",):
            shutil.copytree(generated_glyph_set(name), Path(data_root) / name)
        return Path(data_root)

    return copy


@pytest.fixture
def glyph_data_root(tmp_path, copy_glyph_sets) -> Path:
    """``tmp_path / "data"`` with the embedded smoke set in it, already generated."""
    return copy_glyph_sets(tmp_path / "data")


@pytest.fixture
def http_server():
    """A loopback HTTP server (``tests/data/conftest.py``): yields (base_url, served); put bytes in
    ``served.files['/name']``."""
    with loopback_server() as server:
        yield server
