"""The one page builder (``pages.build_pages``): the pages a tier and its keys take (a paper's page, its mini
page, the fair study's page) and the index, written for ``dml tables``, ``dml reproduce`` and ``dml nightly``
alike.

It may import every other subpackage of ``dml_core.tables``; none of them imports it."""
