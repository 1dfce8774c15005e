"""The ``dml`` command's one error boundary: every expected failure as one line and an exit status.

Bad input exits 2, a failed run 1, Ctrl-C 130, and ``dml reproduce --skip-missing`` 3 when it left runs out for want
of their inputs, so that a script cannot take a paper's partial reproduction for a whole one. Anything else is a bug
in the suite and keeps its traceback; ``dml --debug`` shows the traceback of the expected failures too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dml_core.command_line import DML
from dml_core.errors import InputError, NonFiniteError, OutputError

BAD_INPUT, FAILED_RUN, NOT_ALL_RUN, INTERRUPTED = 2, 1, 3, 130

# How a DataLoader worker's exception reaches the main process: its traceback inside the message.
_WORKER_TRACEBACK = "Original Traceback (most recent call last):"
_EXCEPTION_NAME = re.compile(r"^[A-Za-z_][\w.]*: ")


@dataclass(frozen=True)
class Failure:
    """An expected failure as the command reports it."""

    exit_status: int
    line: str


def without_worker_traceback(message: str) -> str:
    """The error's own message where a DataLoader worker wrapped it with its traceback (a corrupt image found
    while training names the image, not the worker's stack).

    >>> without_worker_traceback(
    ...     "Caught InputError in DataLoader worker process 0.\\nOriginal Traceback (most recent call last):\\n"
    ...     '  File "x.py", line 1, in f\\ndml_core.errors.InputError: a.jpg: cannot decode image (truncated)\\n'
    ... )
    'a.jpg: cannot decode image (truncated)'
    >>> without_worker_traceback("b.jpg: image not found")
    'b.jpg: image not found'
    """
    if _WORKER_TRACEBACK not in message:
        return message
    last = [line for line in message.splitlines() if line.strip()][-1].strip()
    return _EXCEPTION_NAME.sub("", last, count=1)


def _os_error_line(error: OSError) -> str:
    reason = error.strerror or without_worker_traceback(str(error)) or type(error).__name__
    paths = [str(p) for p in (error.filename, error.filename2) if p is not None]
    return f"{' -> '.join(paths)}: {reason}" if paths else reason


# What Ctrl-C leaves, by command: the training commands resume from their last checkpoint; the ones that download
# keep their partial downloads; the others have nothing to resume.
_TRAINING_INTERRUPTED = (
    f"interrupted; nothing after the last checkpoint is kept: `{DML} train ... --resume` (or "
    f"`{DML} reproduce` again) continues from it"
)
_INTERRUPTED = {
    "train": _TRAINING_INTERRUPTED,
    "reproduce": _TRAINING_INTERRUPTED,
    "nightly": _TRAINING_INTERRUPTED,
    "prepare": "interrupted; the dataset folder is as it was before this prepare, and its partial downloads are kept: "
    f"the same `{DML} prepare` again resumes them",
    "weights": f"interrupted; a partial download is kept: `{DML} weights --fetch` again resumes it",
}


def describe_failure(error: BaseException, command: str | None = None) -> Failure | None:
    """The exit status and line of an expected failure; None for anything else (a bug: keep the traceback).

    Bad input: an ``InputError`` (a file, field or argument named with what was expected and found; damaged
    checkpoints, refused recipes and unwritable output locations found before a run are such errors), or an OSError
    on a path the user gave. A failed run: a non-finite loss (``NonFiniteError``, naming the iteration), an output
    that could not be written once the run was under way (``OutputError``: disk full), the GPU out of memory.
    Interrupted: Ctrl-C, with what the ``command`` that was running leaves and how to go on (default: a training
    command's).
    """
    if isinstance(error, KeyboardInterrupt):
        return Failure(INTERRUPTED, _INTERRUPTED.get(command or "train", "interrupted"))
    if isinstance(error, InputError):
        return Failure(BAD_INPUT, without_worker_traceback(str(error)))
    if isinstance(error, NonFiniteError | OutputError):
        return Failure(FAILED_RUN, str(error))
    if type(error).__name__ == "OutOfMemoryError":  # torch.cuda.OutOfMemoryError, without importing CUDA
        first = str(error).strip().splitlines()[0] if str(error).strip() else "out of memory"
        return Failure(FAILED_RUN, f"{first} (a smaller batch, or a device with more memory)")
    if isinstance(error, OSError):
        return Failure(BAD_INPUT, _os_error_line(error))
    return None
