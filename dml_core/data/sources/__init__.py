"""One module per dataset: read its own annotation files (in its published layout) into index rows.

Each dataset's module (``cub``, ``cars``, ``sop``, ``inshop``, ``embedded``) exposes ``build_index(dataset_dir) ->
list[IndexRow]``; the registry wires them to dataset names. The others serve them: Cars196's layouts (``cars_mat``,
``cars_kaggle``, ``cars_listing``, ``cars_classes``), the identity checks (``identity``) and the search for
annotation files (``locate``).
"""
