"""Decoding every image of a dataset once, when it is prepared: a corrupt or truncated file is named by
``prepare`` instead of killing a run at its first evaluation.

PIL releases the GIL while it decodes, so a thread pool decodes in parallel without copying paths to other
processes. Images go to the pool in chunks, in index order, and the first failure in that order is reported, so
the file named does not depend on the number of threads.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from PIL import Image
from tqdm import tqdm

from dml_core.cpu_cores import available_cores
from dml_core.data.images import DECODE_ERRORS, undecodable_message
from dml_core.errors import InputError

CHUNK = 64


def _first_problem(paths: Sequence[Path]) -> str | None:
    for path in paths:
        try:
            with Image.open(path) as image:
                image.load()
        except DECODE_ERRORS as error:
            return undecodable_message(path, error)
    return None


def check_images_decode(
    paths: Sequence[Path], *, progress: bool = True, desc: str = "decode", workers: int | None = None
) -> None:
    """Decode every image in ``paths``; raise one :class:`InputError` naming the first one (in ``paths`` order)
    that PIL cannot decode, with PIL's reason."""
    chunks = [paths[start : start + CHUNK] for start in range(0, len(paths), CHUNK)]
    with (
        ThreadPoolExecutor(max_workers=workers or available_cores()) as pool,
        tqdm(total=len(paths), desc=desc, unit="img", disable=not progress) as bar,
    ):
        try:
            for chunk, problem in zip(chunks, pool.map(_first_problem, chunks), strict=True):
                if problem:
                    raise InputError(f"{problem}; replace it (extract the archive again) and prepare again")
                bar.update(len(chunk))
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)  # stop decoding the rest before reporting
            raise
