"""Linear (Mahalanobis) metric learning of the anml paper and its Table 2 protocol.

- ``log_exp_mean``: the soft threshold b(gamma) of Eq. (12), the building block of Eq. (15)-(19).
- ``mahalanobis``: squared Mahalanobis distances, PSD projection, the gradient of any distance function.
- ``neighbour_sets``: the similar sets S_i and dissimilar sets D_i of section 7.1.2.
- ``lanml`` / ``pnca``: the objectives of Eq. (19) and Eq. (21) with their exact gradients.
- ``kernels``: LANML's element-wise passes compiled (numba), bit for bit the numpy expressions.
- ``solver``: projected gradient descent over M >= 0; ``solver_config``: its settings.
- ``batched_solver``: the same solver for many problems on the same samples at once (the grid search).
- ``methods``: the registry of methods Table 2 compares (LANML+, LANML-, PNCA, NCA, Euclidean).
- ``grids``: the paper's hyper-parameter grids and their cross-validation folds (planning loads only these).
- ``knn_accuracy``: kNN accuracy for every K in 1..40 in one pass (one learned map, or many at once).
- ``protocol``: the Table 2 protocol (splits, 5-fold CV over the paper's grids, kNN).
- ``uci``: the 15 data sets of Table 2; ``uci_routes``, ``package_files``, ``uci_readers`` and ``monks``: where
  they come from and how they are read.

It may import ``data`` (the one downloader), ``evaluation`` and the top-level helpers; the runner, the commands and
the tables import it.
"""
