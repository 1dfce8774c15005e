"""Decoding images and the torch Dataset over a split: ``(image_tensor, label, index)``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from PIL import Image, UnidentifiedImageError
from torch.utils.data import Dataset

from dml_core.data.index import SplitIndex
from dml_core.errors import InputError

# What PIL raises for a file it cannot decode (truncated, corrupt, not an image, absurdly large).
DECODE_ERRORS = (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError)


def undecodable_message(path: Path, error: BaseException) -> str:
    """The one line that names an image PIL cannot decode and PIL's reason."""
    if isinstance(error, FileNotFoundError):
        return f"{path}: image not found; prepare the dataset again"
    return f"{path}: cannot decode image ({error}); the file is corrupt or truncated"


def load_image(path: Path) -> Image.Image:
    """Decode ``path`` fully into an RGB image (greyscale, CMYK and palette images are converted; an RGB one is
    returned as decoded: ``convert("RGB")`` would copy it, for the same pixels, at a cost docs/performance.md
    gives).

    An unreadable, truncated or corrupt file is an :class:`InputError` naming it.
    """
    try:
        with Image.open(path) as image:
            image.load()  # decode now, so truncation surfaces here and not inside a transform
            return image if image.mode == "RGB" else image.convert("RGB")
    except DECODE_ERRORS as error:
        raise InputError(undecodable_message(path, error)) from None


def image_size(path: Path) -> tuple[int, int]:
    """``(width, height)`` of an image from its header alone (no decoding); unreadable: an :class:`InputError`."""
    try:
        with Image.open(path) as image:
            return image.size
    except DECODE_ERRORS as error:
        raise InputError(undecodable_message(path, error)) from None


class ImageDataset(Dataset):
    """A split as a map-style Dataset; item ``i`` is ``(transform(image), label, i)``.

    The index lets a sampler's positions be traced back (two-stream and paired batches, memory banks).
    """

    def __init__(self, split_index: SplitIndex, transform: Callable[[Image.Image], Any] | None = None) -> None:
        self.split_index = split_index
        self.transform = transform
        self._paths = split_index.paths

    def __len__(self) -> int:
        return len(self._paths)

    def __getitem__(self, index: int) -> tuple[Any, int, int]:
        image = load_image(self._paths[index])
        if self.transform is not None:
            image = self.transform(image)
        return image, int(self.split_index.labels[index]), index

    @property
    def labels(self) -> torch.Tensor:
        return torch.as_tensor(self.split_index.labels)
