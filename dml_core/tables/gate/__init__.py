"""The results gate: which results files a table admits (``admission``, ``index_check``, ``planned``), each
reproduced number joined to its published row with its status (``join``), the tolerances and measured noise it is
judged with (``tolerances``, ``noise``, ``query_intervals``), the reviewed waivers (``known_gaps``), the long form
(``long_form``) and the check over it (``check``).

It may import the package below the tables (results, published, recipes, evaluation, data, linear), never the
other subpackages of ``dml_core.tables``: they all build on it."""
