"""The paper pages: each paper's page (``build``, ``markdown``), its paper-shaped tables (``paper_tables``,
``cells``, ``labels``, ``summary``), its claims and their verdicts (``claims``, ``claim_verdicts``), its figures
(``figures``, ``sweeps``) and timing (``timing``); the index of all papers (``index``); the mini tier's pages
(``mini``).

It may import ``dml_core.tables.gate``, never ``fair`` or ``nightly``; those two take their shared pieces (labels,
cells, figures' style, the mini page's spreads) from here."""
