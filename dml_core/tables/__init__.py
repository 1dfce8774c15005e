"""The table builder: results files joined to the published rows, as paper-shaped Markdown tables with figures
and judged claims, and their CSV long form (``build``); the index of all papers (``index``); and the nightly
gate over the long forms (``check``). ``dml tables`` is the command."""

from dml_core.tables.build import PaperTables, build_paper_tables
from dml_core.tables.check import Failure, GateReport, Waived, check_long_forms, check_paper, summarize
from dml_core.tables.index import write_index
from dml_core.tables.join import join, run_variant, status_of
from dml_core.tables.long_form import read_long_form, write_long_form
from dml_core.tables.timing import timing_frame
from dml_core.tables.tolerances import Tolerances, load_tolerances

__all__ = [
    "Failure",
    "GateReport",
    "PaperTables",
    "Tolerances",
    "Waived",
    "build_paper_tables",
    "check_long_forms",
    "check_paper",
    "join",
    "load_tolerances",
    "read_long_form",
    "run_variant",
    "status_of",
    "summarize",
    "timing_frame",
    "write_index",
    "write_long_form",
]
