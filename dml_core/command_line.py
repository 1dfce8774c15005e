"""How the suite's messages and documents spell its command: ``nox -s dml -- ARGS``, one form that works after the
README's set-up, in the Docker image and in CI alike (the ``dml`` script itself lives in the shared environment,
which is not on the PATH). Every message of the package takes the form from ``DML`` (generated pages too);
``tests/test_command_line.py`` holds every message and document to it."""

DML = "nox -s dml --"
