"""The table builder: results files joined to the published rows, as Markdown tables with plots
(``build``), and the nightly gate (``check``). ``dml tables`` is the command."""

from dml_core.tables.build import PaperTables, build_paper_tables
from dml_core.tables.check import Failure, check_paper, load_summary, summarize, write_summary
from dml_core.tables.join import join, status_of, timing_frame
from dml_core.tables.tolerances import Tolerances, load_tolerances

__all__ = [
    "Failure",
    "PaperTables",
    "Tolerances",
    "build_paper_tables",
    "check_paper",
    "join",
    "load_summary",
    "load_tolerances",
    "status_of",
    "summarize",
    "timing_frame",
    "write_summary",
]
