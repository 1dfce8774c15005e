"""The commands a part runs as child processes (``dml``, torchrun, pytest): this interpreter, the repository on the
import path whatever the caller's working folder (``PYTHONPATH=DIR:. python3 -m dml_core.gpu_check`` gives relative
entries), output kept in a log file, a time limit that ends the child's whole process group."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from dml_core.gpu_check.part import PartFailed, PartStopped
from dml_core.output_paths import REPOSITORY_ROOT

PYTHON = sys.executable


def child_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment with the repository first on PYTHONPATH and every other entry made absolute (a
    child runs in its own folder), the hub offline (GPU boxes may have no network), and ``extra``."""
    entries = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    paths = [str(REPOSITORY_ROOT), *(str(Path(entry).resolve()) for entry in entries)]
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)),
        "HF_HUB_OFFLINE": "1",
        **(extra or {}),
    }


def last_error_line(text: str) -> str:
    """The line of a child's output that says what went wrong: the last non-empty one (dml's one-line errors and a
    traceback's exception both end the output).

    >>> last_error_line("Traceback ...\\n  File x\\nValueError: bad device\\n\\n")
    'ValueError: bad device'
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


def run_child(
    what: str,
    command: Sequence[str],
    log_path: Path,
    timeout: float,
    env: Mapping[str, str] | None = None,
    deadline: float | None = None,
) -> str:
    """Run ``command`` in the folder of ``log_path`` with its output (stdout and stderr) in that file; return the
    output. A non-zero exit or a run past ``timeout`` seconds raises ``PartFailed`` naming ``what``, the last
    line of the output and the log. A run still going at ``deadline`` (``time.monotonic()``, the check's time
    limit; sooner than the timeout) is stopped and raises ``PartStopped`` instead: the check ran out of time, the
    child did nothing wrong. Either way the child's process group gets SIGTERM (torchrun passes it on to its
    workers), then SIGKILL."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    limit = timeout if deadline is None else min(timeout, deadline - time.monotonic())
    if limit <= 0:
        raise PartStopped(f"time limit reached before {what} started")
    started = time.monotonic()
    with open(log_path, "w", encoding="utf-8") as log:
        process = subprocess.Popen(
            list(command), cwd=log_path.parent, env=child_environment(env), stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            process.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            _end_group(process)
            if limit < timeout:
                seconds = time.monotonic() - started
                raise PartStopped(
                    f"time limit reached: {what} stopped after {seconds:.0f} s (log: {log_path})"
                ) from None
            raise PartFailed(f"{what} ran past {timeout:.0f} s (log: {log_path})") from None
        except BaseException:  # interrupted: leave no child behind
            _end_group(process)
            raise
    output = log_path.read_text(encoding="utf-8", errors="replace")
    if process.returncode != 0:
        raise PartFailed(f"{what} exited {process.returncode}: {last_error_line(output)} (log: {log_path})")
    return output


def _end_group(process: subprocess.Popen) -> None:
    for sig, grace in ((signal.SIGTERM, 30), (signal.SIGKILL, 30)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue
