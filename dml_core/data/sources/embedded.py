"""The embedded glyph datasets: many-class image sets generated on the spot, for CPU runs without data.

Each class is one printable ASCII character (94 classes, 47 train and 47 test, class-disjoint like the real
benchmarks); each image renders it in one of matplotlib's fonts with random jitter, colours and noise, and its bytes
are a pure function of the seed. Two sets (``GLYPH_SETS``): ``embedded`` for the smoke tier, small so that smoke runs
take seconds, and ``embedded_mini`` for the mini tier, varied enough that retrieval is learnable from random weights in
a few hundred iterations but far from solved (docs/tiers.md).
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

from dml_core.atomic_io import owner_tag, remove_stale_temporaries
from dml_core.data.index import IndexRow

if TYPE_CHECKING:
    from matplotlib.ft2font import FT2Font

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


@dataclass(frozen=True)
class GlyphStyle:
    """How much the images of one set vary; each range is drawn per image. The defaults are the smoke set's
    (the extras at 0 draw nothing, so its bytes stay as they were)."""

    glyph_size: tuple[float, float] = (7 / 16, 5 / 8)  # font size, as a fraction of the image size
    max_angle: float = 20.0  # degrees
    max_shear: float = 0.25
    scale: tuple[float, float] = (0.8, 1.15)
    max_shift: float = 5.0  # pixels, each direction
    noise: tuple[float, float] = (8.0, 8.0)  # standard deviation of the pixel noise, 0-255 scale
    max_stroke: int = 0  # strokes thickened by up to this many pixels (thinning would erase the thin fonts)
    max_blur: float = 0.0  # Gaussian blur radius, pixels
    max_distractors: int = 0  # stray line segments drawn with the glyph
    light_on_dark: float = 0.5  # share of images with a light glyph on a dark background (else dark on light)


MINI_STYLE = GlyphStyle(
    glyph_size=(0.4, 0.65),
    max_angle=25.0,
    max_shear=0.3,
    scale=(0.8, 1.15),
    max_shift=6.0,
    noise=(4.0, 12.0),
    max_stroke=1,
    max_blur=0.6,
    max_distractors=1,
    light_on_dark=0.0,
)


def class_codes() -> list[int]:
    return list(range(FIRST_CODE, LAST_CODE + 1))


def split_of(code: int) -> str:
    """The smoke set's split: the first 47 code points train, the last 47 test."""
    return "train" if code <= LAST_TRAIN_CODE else "test"


def interleaved_split_of(code: int) -> str:
    """The mini set's split: even code points train, odd ones test (47 classes each), so that both halves hold
    digits, capitals, lower case and symbols, as both halves of CUB-200-2011 hold birds (docs/tiers.md: why).

    >>> [interleaved_split_of(code) for code in (33, 34, 126)]
    ['test', 'train', 'train']
    """
    return "train" if code % 2 == 0 else "test"


SPLITS = {"block": split_of, "interleaved": interleaved_split_of}


def relative_image_path(code: int, instance: int) -> str:
    return f"{IMAGE_FOLDER}/{code:03d}/{instance:02d}.png"


@cache
def _font(filename: str) -> FT2Font:
    import matplotlib  # where glyphs are drawn: a run reading a generated set does not load it
    from matplotlib.ft2font import FT2Font

    return FT2Font(str(Path(matplotlib.get_data_path()) / "fonts" / "ttf" / filename))


def font_has_glyph(font_file: str, code: int) -> bool:
    """Whether ``font_file`` (one of ``FONT_FILES``) draws code point ``code`` (not its missing-glyph box).

    >>> font_has_glyph(FONT_FILES[0], ord("A")), font_has_glyph(FONT_FILES[0], 0x3A2)
    (True, False)
    """
    return _font(font_file).get_char_index(code) != 0


def _glyph_coverage(character: str, font_file: str, size: int) -> np.ndarray:
    """Anti-aliased coverage (0-255) of one character, tightly cropped."""
    font = _font(font_file)
    font.set_size(size, 72)
    font.set_text(character)
    font.draw_glyphs_to_bitmap()
    return np.asarray(font.get_image(), dtype=np.uint8)


def _affine_coefficients(rng: np.random.Generator, size: int, style: GlyphStyle) -> tuple[float, ...]:
    """PIL's inverse affine map (output -> input): random rotation, shear, scale, shift about the centre."""
    angle = math.radians(rng.uniform(-style.max_angle, style.max_angle))
    shear = rng.uniform(-style.max_shear, style.max_shear)
    scale = rng.uniform(*style.scale)
    shift_x, shift_y = rng.uniform(-style.max_shift, style.max_shift, size=2)
    forward = np.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])
    forward = scale * forward @ np.array([[1.0, shear], [0.0, 1.0]])
    inverse = np.linalg.inv(forward)
    centre = np.array([size / 2.0, size / 2.0])
    offset = centre - inverse @ (centre + np.array([shift_x, shift_y]))
    return (inverse[0, 0], inverse[0, 1], offset[0], inverse[1, 0], inverse[1, 1], offset[1])


def _restroked(canvas: Image.Image, rng: np.random.Generator, style: GlyphStyle) -> Image.Image:
    """The glyph with its strokes thickened (a max filter) by a random 0..max_stroke pixels."""
    change = int(rng.integers(0, style.max_stroke + 1))
    return canvas.filter(ImageFilter.MaxFilter(2 * change + 1)) if change else canvas


def _with_distractors(glyph: Image.Image, rng: np.random.Generator, style: GlyphStyle) -> Image.Image:
    """Up to ``max_distractors`` stray line segments, in the glyph's colour, a little fainter."""
    size = glyph.size[0]
    draw = ImageDraw.Draw(glyph)
    for _ in range(int(rng.integers(0, style.max_distractors + 1))):
        ends = [float(v) for v in rng.uniform(0, size, size=4)]
        draw.line(ends, fill=int(rng.integers(110, 200)), width=int(rng.integers(1, 3)))
    return glyph


def render_glyph(
    code: int, instance: int, seed: int = SEED, size: int = IMAGE_SIZE, style: GlyphStyle = GlyphStyle()
) -> Image.Image:
    """One RGB image of class ``code``; a pure function of (code, instance, seed, size, style)."""
    rng = np.random.default_rng([seed, code, instance])
    font_file = FONT_FILES[int(rng.integers(len(FONT_FILES)))]
    low, high = (int(size * fraction) for fraction in style.glyph_size)
    coverage = _glyph_coverage(chr(code), font_file, int(rng.integers(low, high)))
    canvas = np.zeros((size, size), dtype=np.uint8)
    height, width = min(coverage.shape[0], size), min(coverage.shape[1], size)
    top, left = (size - height) // 2, (size - width) // 2
    canvas[top : top + height, left : left + width] = coverage[:height, :width]
    glyph = Image.fromarray(canvas)
    if style.max_stroke:
        glyph = _restroked(glyph, rng, style)
    warped = glyph.transform(
        (size, size), Image.Transform.AFFINE, _affine_coefficients(rng, size, style), Image.Resampling.BILINEAR
    )
    if style.max_distractors:
        warped = _with_distractors(warped, rng, style)
    if style.max_blur:
        warped = warped.filter(ImageFilter.GaussianBlur(float(rng.uniform(0.0, style.max_blur))))
    alpha = np.asarray(warped, dtype=np.float64)[..., None] / 255.0
    background = rng.uniform(0, 110, size=3)
    foreground = rng.uniform(150, 255, size=3)
    if rng.random() < 1.0 - style.light_on_dark:
        background, foreground = foreground, background
    low_noise, high_noise = style.noise
    noise = low_noise if low_noise == high_noise else rng.uniform(low_noise, high_noise)
    pixels = background * (1.0 - alpha) + foreground * alpha + rng.normal(0.0, noise, size=(size, size, 3))
    return Image.fromarray(np.clip(np.rint(pixels), 0, 255).astype(np.uint8), mode="RGB")


@dataclass(frozen=True)
class GlyphSet:
    """One generated dataset: its name, how many images each class has and how they vary."""

    name: str
    images_per_class: int
    style: GlyphStyle = GlyphStyle()
    seed: int = SEED
    split: str = "block"  # a key of SPLITS

    def split_of(self, code: int) -> str:
        return SPLITS[self.split](code)

    def split_counts(self, split: str) -> tuple[int, int]:
        """(images, classes) of ``split``."""
        classes = sum(1 for code in class_codes() if self.split_of(code) == split)
        return classes * self.images_per_class, classes

    def read_layout(self, dataset_dir: Path) -> list[IndexRow]:
        """The index rows (a function of the constants above; nothing is read or generated)."""
        return list(_layout(self))

    def build_index(self, dataset_dir: Path) -> list[IndexRow]:
        """Index rows, generating the images first unless all of them are already there."""
        rows = self.read_layout(dataset_dir)
        if all((Path(dataset_dir) / row.path).is_file() for row in rows):
            return rows
        return generate(dataset_dir, self.seed, self.images_per_class, self.style, self.split)


@cache
def _layout(glyphs: GlyphSet) -> tuple[IndexRow, ...]:
    """``glyphs``' index rows, made once per process: every run checks its data against them."""
    return tuple(
        IndexRow(relative_image_path(code, instance), code, glyphs.split_of(code))
        for code in class_codes()
        for instance in range(glyphs.images_per_class)
    )


SMOKE_SET = GlyphSet(DATASET, IMAGES_PER_CLASS)
MINI_SET = GlyphSet("embedded_mini", 80, MINI_STYLE, split="interleaved")
GLYPH_SETS = {glyphs.name: glyphs for glyphs in (SMOKE_SET, MINI_SET)}


def generate(
    dataset_dir: Path,
    seed: int = SEED,
    images_per_class: int = IMAGES_PER_CLASS,
    style: GlyphStyle = GlyphStyle(),
    split: str = "block",
) -> list[IndexRow]:
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
                render_glyph(code, instance, seed, style=style).save(target, format="PNG")
                rows.append(IndexRow(relative, code, SPLITS[split](code)))
        final = dataset_dir / IMAGE_FOLDER
        if final.exists():
            shutil.rmtree(final)
        os.replace(staging / IMAGE_FOLDER, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return rows


def read_layout(dataset_dir: Path) -> list[IndexRow]:
    """The index rows of the smoke set (``embedded``)."""
    return SMOKE_SET.read_layout(dataset_dir)


def build_index(dataset_dir: Path) -> list[IndexRow]:
    """Index rows of the smoke set (``embedded``), generating the images first if need be."""
    return SMOKE_SET.build_index(dataset_dir)
