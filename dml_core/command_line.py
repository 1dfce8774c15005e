"""How the suite's messages and documents spell its command: ``nox -s dml -- ARGS``, one form that works after the
README's set-up, in the Docker image and in CI alike (the ``dml`` script itself lives in the shared environment,
which is not on the PATH). Standard library only: ``noxfile.py`` reads it by path."""

DML = "nox -s dml --"


def dml(arguments: str) -> str:
    """The command line a message tells the user to type.

    >>> dml("prepare cub200 --root /data")
    'nox -s dml -- prepare cub200 --root /data'
    """
    return f"{DML} {arguments}"
