"""The embedded glyph dataset: a many-class image set generated on the spot, for CPU smoke runs without
data.

Each class is one printable ASCII character (label = its code point, 33-126: 94 classes); each image renders
it in one of the text fonts matplotlib ships, with a random affine jitter (rotation, shear, scale, shift),
random foreground/background colours and pixel noise. Train: code points 33-79 (47 classes); test: 80-126
(47 classes), so the split is class-disjoint like the real benchmarks. Bytes are a pure function of the
seed.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from functools import cache
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.ft2font import FT2Font
from PIL import Image

from dml_core.atomic_io import owner_tag, remove_stale_temporaries
from dml_core.data.index import IndexRow

DATASET = "embedded"
FIRST_CODE, LAST_CODE = 33, 126  # printable ASCII without the space
LAST_TRAIN_CODE = 79
IMAGES_PER_CLASS = 24
IMAGE_SIZE = 64
SEED = 0
IMAGE_FOLDER = "glyphs"
STAGING_PREFIX = ".glyphs-"
# Fonts in matplotlib's wheel that cover all 94 characters with real glyphs (the Computer Modern files remap
# ASCII, LastResort draws boxes).
FONT_FILES = (
    "DejaVuSans.ttf",
    "DejaVuSans-Bold.ttf",
    "DejaVuSans-Oblique.ttf",
    "DejaVuSans-BoldOblique.ttf",
    "DejaVuSansMono.ttf",
    "DejaVuSansMono-Bold.ttf",
    "DejaVuSansMono-Oblique.ttf",
    "DejaVuSansMono-BoldOblique.ttf",
    "DejaVuSerif.ttf",
    "DejaVuSerif-Bold.ttf",
    "DejaVuSerif-Italic.ttf",
    "DejaVuSerif-BoldItalic.ttf",
    "STIXGeneral.ttf",
    "STIXGeneralBol.ttf",
    "STIXGeneralItalic.ttf",
    "STIXGeneralBolIta.ttf",
)


def class_codes() -> list[int]:
    return list(range(FIRST_CODE, LAST_CODE + 1))


def split_of(code: int) -> str:
    return "train" if code <= LAST_TRAIN_CODE else "test"


def relative_image_path(code: int, instance: int) -> str:
    return f"{IMAGE_FOLDER}/{code:03d}/{instance:02d}.png"


@cache
def _font(filename: str) -> FT2Font:
    return FT2Font(str(Path(matplotlib.get_data_path()) / "fonts" / "ttf" / filename))


def _glyph_coverage(character: str, font_file: str, size: int) -> np.ndarray:
    """Anti-aliased coverage (0-255) of one character, tightly cropped."""
    font = _font(font_file)
    font.set_size(size, 72)
    font.set_text(character)
    font.draw_glyphs_to_bitmap()
    return np.asarray(font.get_image(), dtype=np.uint8)


def _affine_coefficients(rng: np.random.Generator, size: int) -> tuple[float, ...]:
    """PIL's inverse affine map (output -> input): random rotation, shear, scale, shift about the centre."""
    angle = math.radians(rng.uniform(-20.0, 20.0))
    shear = rng.uniform(-0.25, 0.25)
    scale = rng.uniform(0.8, 1.15)
    shift_x, shift_y = rng.uniform(-5.0, 5.0, size=2)
    forward = np.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])
    forward = scale * forward @ np.array([[1.0, shear], [0.0, 1.0]])
    inverse = np.linalg.inv(forward)
    centre = np.array([size / 2.0, size / 2.0])
    offset = centre - inverse @ (centre + np.array([shift_x, shift_y]))
    return (inverse[0, 0], inverse[0, 1], offset[0], inverse[1, 0], inverse[1, 1], offset[1])


def render_glyph(code: int, instance: int, seed: int = SEED, size: int = IMAGE_SIZE) -> Image.Image:
    """One RGB image of class ``code``; a pure function of (code, instance, seed, size)."""
    rng = np.random.default_rng([seed, code, instance])
    font_file = FONT_FILES[int(rng.integers(len(FONT_FILES)))]
    coverage = _glyph_coverage(chr(code), font_file, int(rng.integers(size * 7 // 16, size * 5 // 8)))
    canvas = np.zeros((size, size), dtype=np.uint8)
    height, width = min(coverage.shape[0], size), min(coverage.shape[1], size)
    top, left = (size - height) // 2, (size - width) // 2
    canvas[top : top + height, left : left + width] = coverage[:height, :width]
    warped = Image.fromarray(canvas).transform(
        (size, size), Image.Transform.AFFINE, _affine_coefficients(rng, size), Image.Resampling.BILINEAR
    )
    alpha = np.asarray(warped, dtype=np.float64)[..., None] / 255.0
    background = rng.uniform(0, 110, size=3)
    foreground = rng.uniform(150, 255, size=3)
    if rng.random() < 0.5:  # dark-on-light as often as light-on-dark
        background, foreground = foreground, background
    pixels = background * (1.0 - alpha) + foreground * alpha + rng.normal(0.0, 8.0, size=(size, size, 3))
    return Image.fromarray(np.clip(np.rint(pixels), 0, 255).astype(np.uint8), mode="RGB")


def generate(dataset_dir: Path, seed: int = SEED, images_per_class: int = IMAGES_PER_CLASS) -> list[IndexRow]:
    """Write every image under ``dataset_dir/glyphs`` (built in a temporary folder, then moved into place)."""
    dataset_dir = Path(dataset_dir)
    dataset_dir.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(dataset_dir, STAGING_PREFIX)  # what killed generations left
    staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{owner_tag()}.", dir=dataset_dir))
    rows = []
    try:
        for code in class_codes():
            for instance in range(images_per_class):
                relative = relative_image_path(code, instance)
                target = staging / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                render_glyph(code, instance, seed).save(target, format="PNG")
                rows.append(IndexRow(relative, code, split_of(code)))
        final = dataset_dir / IMAGE_FOLDER
        if final.exists():
            shutil.rmtree(final)
        os.replace(staging / IMAGE_FOLDER, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return rows


def read_layout(dataset_dir: Path) -> list[IndexRow]:
    """The index rows of the embedded set (a function of the constants above; nothing is read or generated)."""
    return [
        IndexRow(relative_image_path(code, instance), code, split_of(code))
        for code in class_codes()
        for instance in range(IMAGES_PER_CLASS)
    ]


def build_index(dataset_dir: Path) -> list[IndexRow]:
    """Index rows for the embedded set, generating the images first unless all of them are already there."""
    rows = read_layout(dataset_dir)
    if all((Path(dataset_dir) / row.path).is_file() for row in rows):
        return rows
    return generate(dataset_dir)
