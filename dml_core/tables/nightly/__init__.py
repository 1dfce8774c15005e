"""The nightly history: every line each nightly measured, with whether it passed, and the latest passing
nightly as the next one's baseline (``history``); the trend figures drawn from it (``trends``).

It may import ``dml_core.tables.gate`` (the check's lines) and ``dml_core.tables.pages`` (the figures' style);
nothing in the tables imports it."""
