"""dml_core: shared data, models, training and exact evaluation for the DML reproduction suite.

Its parts and the directions their imports may take: docs/package-map.md; the contracts in pyproject.toml
(``[tool.importlinter]``) hold them in the test gate.
"""

__version__ = "0.1.0"
