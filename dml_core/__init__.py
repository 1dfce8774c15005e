"""dml_core: shared data, models, training and exact evaluation for the DML reproduction suite."""

__version__ = "0.1.0"
