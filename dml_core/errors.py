"""Errors the suite raises for bad input. The ``dml`` command prints them as one line and exits 2.

Messages name the file (when there is one), the field, what was expected and what was found.
"""


class InputError(ValueError):
    """Bad input from a user: a file, a field, an argument. Never a bug in the suite."""


class NonFiniteError(RuntimeError):
    """The loss (or the test embeddings) became NaN or infinite. Nothing is checkpointed after it: the last good
    checkpoint, if the run wrote one, is kept untouched."""


class OutputError(OSError):
    """A place the suite must write to cannot take the output (unwritable, full, a file in the way).

    The message names the file or folder and the reason; an ``OSError``, so callers that handle OSError still do.
    """
