"""The tables: what the results files say, beside what the papers published. Five jobs, one subpackage each:

- ``gate``: the results gate: which results files are admitted, each number joined to its published row and judged
  against its tolerance and measured noise, the known gaps, the long form and its check (``dml tables --check``).
- ``pages``: the paper pages: paper-shaped tables, claims and their verdicts, figures, timing, the index, and the
  mini tier's pages (``dml tables``).
- ``fair``: the fair study's page (``dml tables fair``).
- ``nightly``: the nightly history and its trend figures.
- ``builder``: the one page builder: the pages some keys take at a tier, and the index (``dml tables``,
  ``dml reproduce`` and ``dml nightly`` all call it).

Imports point one way: ``gate`` imports no other of them; ``pages`` imports ``gate``; ``fair`` and ``nightly``
import ``pages`` and ``gate``, never each other; ``builder`` imports the others, and nothing here imports it.
"""
