"""``dml evaluate-embeddings``: all metrics for embeddings a user brings, printed as JSON."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from dml_core.atomic_io import atomic_write_json
from dml_core.commands.options import non_negative_int, positive_int
from dml_core.errors import InputError
from dml_core.evaluation import METRIC_NAMES, RECALL_KS, KMeansConfig, evaluate
from dml_core.writable import require_writable_file


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "evaluate-embeddings",
        description="Evaluate saved embeddings. Without masks every item queries all others (self excluded "
        "by index: CUB, Cars, SOP); with --query-mask/--gallery-mask queries rank the gallery (In-Shop).",
    )
    parser.add_argument("embeddings", type=Path, help="EMB.npy: float array (n, d)")
    parser.add_argument("labels", type=Path, help="LABELS.npy: class labels (n,)")
    parser.add_argument(
        "--k", type=positive_int, nargs="+", help="Recall@K list (default: the dataset's, else 1 2 4 8)"
    )
    parser.add_argument("--dataset", choices=sorted(RECALL_KS), help="take the dataset's standard K list")
    parser.add_argument("--query-mask", type=Path, help="Q.npy: boolean (n,) marking queries")
    parser.add_argument("--gallery-mask", type=Path, help="G.npy: boolean (n,) marking the gallery")
    parser.add_argument(
        "--normalize",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="L2-normalise embeddings first (default: yes)",
    )
    parser.add_argument("--metrics", nargs="+", choices=METRIC_NAMES, default=list(METRIC_NAMES))
    parser.add_argument("--kmeans-backend", choices=("faiss", "sklearn"), default="faiss")
    parser.add_argument("--kmeans-iterations", type=positive_int, default=20)
    parser.add_argument("--seed", type=non_negative_int, default=0, help="k-means seed")
    parser.add_argument("--device", help="torch device for the kNN search (default: cuda if present)")
    parser.add_argument("--json", type=Path, dest="json_out", help="also write the result to this file")
    parser.set_defaults(run=run)


def _load(path: Path, what: str):
    if path is None:
        return None
    if not path.exists():
        raise InputError(f"{path}: {what} file not found")
    if path.is_dir():
        raise InputError(f"{path}: is a folder, expected a .npy file of {what}")
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, EOFError, OSError) as error:  # not .npy, empty or truncated, unreadable
        reason = str(error) or type(error).__name__
        raise InputError(f"{path}: expected a .npy array for {what}, could not read it ({reason})") from None


def run(args: argparse.Namespace) -> int:
    if args.json_out:
        require_writable_file(args.json_out, "--json")
    embeddings = _load(args.embeddings, "embeddings")
    labels = _load(args.labels, "labels")
    ks = args.k or (RECALL_KS[args.dataset] if args.dataset else (1, 2, 4, 8))
    try:
        result = evaluate(
            embeddings,
            labels,
            ks,
            metrics=args.metrics,
            normalize=args.normalize,
            query_mask=_load(args.query_mask, "query mask"),
            gallery_mask=_load(args.gallery_mask, "gallery mask"),
            kmeans=KMeansConfig(args.kmeans_backend, args.kmeans_iterations, args.seed),
            device=args.device,
        )
    except InputError as error:
        raise InputError(f"{args.embeddings} / {args.labels}: {error}") from None
    payload = {"embeddings": str(args.embeddings), "labels": str(args.labels), **result.to_dict()}
    json.dump(payload, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
    if args.json_out:
        atomic_write_json(args.json_out, payload)
    return 0
