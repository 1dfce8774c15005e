"""Where a number came from: git state and the software/hardware environment, for results files."""

from __future__ import annotations

import hashlib
import platform
import subprocess
from importlib import metadata
from pathlib import Path

import torch

from dml_core.output_paths import REPOSITORY_ROOT

# What the suite writes, not what it runs: a run that replaces a committed results file (a --rerun of committed mini
# results) must not mark the runs after it dirty, nor change the diff hash of the code they ran.
OUTPUT_FOLDERS = ("results", "tables")
CODE_PATHS = (".", *(f":(exclude){folder}" for folder in OUTPUT_FOLDERS))


def git_state(root: Path = REPOSITORY_ROOT) -> dict:
    """Commit and dirty flag of the checkout (tracked changes outside ``OUTPUT_FOLDERS``); "unknown" outside a git
    checkout (e.g. an installed wheel)."""

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout

    try:
        commit = git("rev-parse", "HEAD").strip()
        dirty = bool(git("status", "--porcelain", "--untracked-files=no", "--", *CODE_PATHS).strip())
    except (OSError, subprocess.CalledProcessError):
        return {"commit": "unknown", "dirty": None}
    return {"commit": commit, "dirty": dirty}


def code_state(root: Path = REPOSITORY_ROOT) -> dict:
    """``git_state`` plus, for a dirty checkout, ``diff``: the sha256 of its tracked changes against HEAD, so two
    different uncommitted states of one commit are told apart (``None`` when clean or outside git)."""
    state = git_state(root)
    diff = None
    if state["dirty"]:
        try:
            patch = subprocess.run(
                ["git", "-C", str(root), "diff", "HEAD", "--binary", "--", *CODE_PATHS], capture_output=True, check=True
            )
            diff = hashlib.sha256(patch.stdout).hexdigest()
        except (OSError, subprocess.CalledProcessError):
            diff = "unknown"
    return {**state, "diff": diff}


def git_record(segments: list[dict]) -> dict:
    """A results file's git record from the git state at each start of a run (``from``: the iteration or split
    where that start took over; a resumed run has several, possibly under different commits).

    Read at the start, not when the file is written: the code a process runs is the code it imported.

    >>> git_record([{"from": 0, "commit": "a", "dirty": False}])
    {'commit': 'a', 'dirty': False}
    >>> resumed = git_record([{"from": 0, "commit": "a", "dirty": False}, {"from": 7, "commit": "b", "dirty": True}])
    >>> resumed["commit"], resumed["segments"][1]
    ('a', {'from': 7, 'commit': 'b', 'dirty': True})
    """
    first = {key: value for key, value in segments[0].items() if key != "from"}
    return first if len(segments) == 1 else {**first, "segments": segments}


def git_starts(record: dict) -> list[dict]:
    """The git state of each start of a run from its ``git_record`` (one for a run never resumed), first first.

    >>> [state["commit"] for state in git_starts({"commit": "a", "dirty": False})]
    ['a']
    >>> [state["commit"] for state in git_starts(git_record([{"from": 0, "commit": "a"}, {"from": 7, "commit": "b"}]))]
    ['a', 'b']
    """
    return record.get("segments", [record])


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def cpu_model() -> str:
    """The CPU's model name (Linux: /proc/cpuinfo), else what ``platform`` knows, else "unknown"."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            name, _, value = line.partition(":")
            if name.strip() == "model name" and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def environment() -> dict:
    cuda = torch.cuda.is_available()
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": torch.__version__,
        "torchvision": _version("torchvision"),
        "timm": _version("timm"),
        "faiss": _version("faiss-cpu"),
        "numpy": _version("numpy"),
        "cuda": torch.version.cuda if cuda else None,
        "gpu": torch.cuda.get_device_name(0) if cuda else None,
        "cpu_threads": torch.get_num_threads(),
        # CPU float results differ between kernel sets (AVX2, AVX-512): with the model, they say which machine
        # a CPU number is comparable with (a tiny run's gain moved from 7.9 to 3.6 between two machines)
        "cpu": cpu_model(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }
