"""How a test that starts processes shows each process's own output when it fails: the head and the tail of every
log, each under its process's name (a traceback's first lines say where, its last what; the middle is cut)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path

HEAD_LINES, TAIL_LINES = 15, 40


def head_and_tail(text: str, head: int = HEAD_LINES, tail: int = TAIL_LINES) -> str:
    """``text``'s first ``head`` and last ``tail`` lines, with how many were left out between them.

    >>> head_and_tail("\\n".join(str(i) for i in range(10)), head=2, tail=3)
    '0\\n1\\n[... 5 lines ...]\\n7\\n8\\n9'
    >>> head_and_tail("one line", head=2, tail=3)
    'one line'
    >>> head_and_tail("")
    '(empty)'
    """
    lines = text.rstrip("\n").splitlines()
    if not lines:
        return "(empty)"
    if len(lines) <= head + tail:
        return "\n".join(lines)
    return "\n".join([*lines[:head], f"[... {len(lines) - head - tail} lines ...]", *lines[-tail:]])


def process_report(outputs: Iterable[tuple[str, str]]) -> str:
    """One block per ``(name, output)``: a header naming the process, then the head and tail of what it wrote."""
    return "\n".join(f"===== {name} =====\n{head_and_tail(output)}" for name, output in outputs)


def log_files_report(folder: Path, patterns: tuple[str, ...] = ("*.log", "*.out", "*.err"), most: int = 12) -> str:
    """Every process log under ``folder`` (torchrun's per-rank logs, a GPU check part's child logs, submitit's job
    logs), as :func:`process_report` blocks named by their path under ``folder``; ``most`` of them, newest last."""
    logs = sorted({path for pattern in patterns for path in Path(folder).rglob(pattern) if path.is_file()})
    logs = sorted(logs, key=lambda path: path.stat().st_mtime)[-most:]
    return process_report(
        (str(path.relative_to(folder)), path.read_text(encoding="utf-8", errors="replace")) for path in logs
    )


def completed_report(completed: subprocess.CompletedProcess) -> str:
    """A finished child's exit status, then the head and tail of its stdout and its stderr."""
    return f"exit status {completed.returncode}\n" + process_report(
        [("stdout", completed.stdout or ""), ("stderr", completed.stderr or "")]
    )
