"""k-means for the clustering metrics (NMI, F1): K = number of classes, then every point is assigned
to its nearest final centroid. The backend, iterations and seed travel with every value computed."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np

from dml_core.errors import InputError
from dml_core.evaluation.inputs import check_embeddings

KMeansBackend = Literal["faiss", "sklearn"]


@dataclass(frozen=True)
class KMeansConfig:
    backend: KMeansBackend = "faiss"
    iterations: int = 20
    seed: int = 0

    def describe(self) -> dict:
        return {**asdict(self), "assignment": "nearest final centroid", "subsampling": "none"}


def kmeans_assign(embeddings: np.ndarray, n_clusters: int, config: KMeansConfig) -> np.ndarray:
    """Cluster ``embeddings`` (n, d) into ``n_clusters`` and return each point's cluster id.

    Empty, zero-width or non-finite embeddings and a cluster count outside 1..n are refused first: faiss would
    end the process with SIGFPE on a zero width."""
    points = np.ascontiguousarray(embeddings, dtype=np.float32)
    check_embeddings(points)
    if not 1 <= n_clusters <= len(points):
        raise InputError(f"n_clusters: expected 1 to {len(points)} (the number of points), found {n_clusters}")
    if config.backend == "faiss":
        # Here, not at the top: only the chosen backend is loaded (faiss or scikit-learn, each heavy).
        import faiss

        kmeans = faiss.Kmeans(
            points.shape[1],
            n_clusters,
            niter=config.iterations,
            seed=config.seed,
            verbose=False,
            # Use every point (faiss subsamples above 256 per centroid by default) and do not warn
            # about few points per centroid (SOP has about 5).
            max_points_per_centroid=max(1, -(-len(points) // n_clusters)),
            min_points_per_centroid=1,
        )
        kmeans.train(points)
        _, assignment = kmeans.index.search(points, 1)
        return assignment.ravel().astype(np.int64)
    if config.backend == "sklearn":
        # Here, not at the top: only the chosen backend is loaded.
        from sklearn.cluster import KMeans

        model = KMeans(
            n_clusters=n_clusters, n_init=1, max_iter=config.iterations, random_state=config.seed, tol=0.0
        ).fit(points)
        return model.predict(points).astype(np.int64)
    raise ValueError(f"unknown k-means backend {config.backend!r}; expected 'faiss' or 'sklearn'")
