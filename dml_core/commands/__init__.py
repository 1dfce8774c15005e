"""Subcommands of the ``dml`` command, one module each."""
