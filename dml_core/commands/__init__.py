"""Subcommands of the ``dml`` command, one module each.

They may import any part below them (runner, tables, training...); only ``cli`` imports them.
"""
