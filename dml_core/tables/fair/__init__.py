"""The fair study's page (``dml tables fair``): its runs grouped and judged (``study``), whether two runs trained
on the same batches (``batches``), the intervals and verdicts (``verdicts``), the validation search (``search``),
the claimed gains (``claims``), the recorded protocol (``protocol``), the page and CSV (``page``), the figure
(``figure``), and the build that writes them (``build``).

It may import ``dml_core.tables.gate`` and ``dml_core.tables.pages``; in the tables only ``builder`` imports it.
Within it, ``build`` sits on top and ``study`` below the page, figure and search."""
