"""One module per dataset: read its own annotation files (in its published layout) into index rows.

Each module exposes ``build_index(dataset_dir) -> list[IndexRow]``; the registry wires them to dataset names.
"""
