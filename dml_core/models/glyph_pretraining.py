"""A narrowed backbone pretrained on other glyphs: the mini tier's stand-in for ImageNet weights (``mini.start``).

Every recipe fine-tunes ImageNet weights; the mini tier cannot (no published file fits a narrowed backbone, and
none can be downloaded), so it starts from random weights by default. ``mini.start: glyph-pretrained`` starts
instead from the same narrowed backbone trained by softmax classification on glyph classes that the mini set does
not contain (Greek and Cyrillic letters, in the mini set's rendering style): features that already tell glyphs
apart, as ImageNet features tell birds apart, before any metric-learning update.

The pretraining is a pure function of its settings (``GlyphPretraining``) and the backbone: it runs on one CPU
thread with its own generators, so the weights are the same on every run of one machine, whatever its core count
and whatever the caller seeded. They are cached under ``<data root>/glyph_pretrained/``, written atomically, and
reused by every run, seed and paper of that backbone and width.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from dml_core.atomic_io import atomic_write
from dml_core.cpu_cores import one_cpu_thread
from dml_core.data.sources.embedded import FONT_FILES, MINI_STYLE, font_has_glyph, render_glyph
from dml_core.data.transforms import ToInputSpec
from dml_core.errors import InputError
from dml_core.models.backbones import RANDOM, Backbone, build_backbone
from dml_core.models.weights import file_sha256

GLYPH_PRETRAINED = "glyph-pretrained"  # the value of model.weights (and mini.start) that asks for these weights
CACHE_FOLDER = "glyph_pretrained"
FORMAT = 1  # of the cached file; a file of another format is an error, not silently used

# Greek capitals and small letters and the Cyrillic block's basic letters: none is an ASCII code point, the mini
# set's classes.
CANDIDATE_CODES = (*range(0x391, 0x3AA), *range(0x3B1, 0x3CA), *range(0x410, 0x450))


def pretraining_codes() -> list[int]:
    """The pretraining classes: the candidates every font of the glyph sets draws (0x3A2 is unassigned).

    >>> codes = pretraining_codes()
    >>> len(codes) > 100, all(code > 0x7F for code in codes)
    (True, True)
    """
    return [code for code in CANDIDATE_CODES if all(font_has_glyph(font, code) for font in FONT_FILES)]


@dataclass(frozen=True)
class GlyphPretraining:
    """How the backbone is pretrained: Adam at ``lr`` on batches of ``batch_size`` random ``crop``-pixel crops of
    ``images_per_class`` renders (``size`` pixels, the mini style) of each pretraining class, for ``steps`` steps;
    a linear classifier on the average-pooled feature map, dropped afterwards."""

    steps: int = 1500
    images_per_class: int = 40
    size: int = 72  # the mini tier's resize
    crop: int = 64  # the mini tier's image size
    batch_size: int = 64
    lr: float = 1.0e-3
    seed: int = 1  # of the renders, the initial weights, the batches and the crops (the mini set's glyphs use 0)

    def file_name(self, backbone: str, width: float) -> str:
        """The cached file's name: the backbone, its width, the steps and a digest of all the settings, so that
        files of other settings never meet.

        >>> GlyphPretraining().file_name("googlenet", 0.25)
        'googlenet-w0.25-1500steps-86c3281f69b6.pt'
        """
        digest = hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:12]
        return f"{backbone}-w{width}-{self.steps}steps-{digest}.pt"


MINI_START = GlyphPretraining()  # what ``mini.start: glyph-pretrained`` uses


def glyph_pretrained_backbone(name: str, width: float, data_root: Path, settings: GlyphPretraining) -> Backbone:
    """Backbone ``name`` at ``width`` with the cached glyph-pretrained weights, pretraining them first if the cache
    has none; its ``weights_id`` names the file and its sha256."""
    path = Path(data_root) / CACHE_FOLDER / settings.file_name(name, width)
    if not path.is_file():  # runs side by side may both pretrain it: same bytes, and the atomic write keeps one
        state = pretrain_on_glyphs(name, width, settings)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, lambda handle: torch.save(state, handle))
    backbone = build_backbone(name, weights=RANDOM, width=width)
    state = _read_cache(path, name, width, settings)
    try:
        backbone.load_state_dict(state["state_dict"], strict=True)
    except RuntimeError as error:
        raise InputError(f"{path}: not a {name} at width {width}: {error}; delete it to pretrain again") from error
    backbone.weights_id = f"{GLYPH_PRETRAINED} {path.name} sha256:{file_sha256(path)}"
    return backbone


def _read_cache(path: Path, name: str, width: float, settings: GlyphPretraining) -> dict:
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # a truncated or foreign file: torch raises several kinds
        first_line = (str(error).strip().splitlines() or [""])[0]  # torch's messages run to many lines
        raise InputError(
            f"{path}: not a glyph-pretraining file ({type(error).__name__}: {first_line}); delete it to pretrain again"
        ) from error
    expected = {"format": FORMAT, "backbone": name, "width": width, "settings": asdict(settings)}
    found = {key: state.get(key) for key in expected} if isinstance(state, dict) else state
    if found != expected or "state_dict" not in state:
        raise InputError(
            f"{path}: expected the glyph pretraining {expected}, found {found}; delete it to pretrain again"
        )
    return state


def pretrain_on_glyphs(name: str, width: float, settings: GlyphPretraining = GlyphPretraining()) -> dict:
    """Train backbone ``name`` at ``width`` from random weights to classify the pretraining glyphs; return what the
    cache stores: the backbone's state dict, the settings and the accuracy on the last 10 batches."""
    images, labels = _render(settings)
    generator = torch.Generator().manual_seed(settings.seed)
    with one_cpu_thread(), torch.random.fork_rng(devices=[]):
        torch.manual_seed(settings.seed)  # the backbone's and the classifier's initial weights
        backbone = build_backbone(name, weights=RANDOM, width=width)
        classifier = torch.nn.Linear(backbone.feature_dim, int(labels.max()) + 1)
        to_input = ToInputSpec(backbone.input_spec)
        optimizer = torch.optim.Adam([*backbone.parameters(), *classifier.parameters()], lr=settings.lr)
        backbone.train()
        correct = []
        for _ in range(settings.steps):
            batch = torch.randint(len(images), (settings.batch_size,), generator=generator)
            crops = _random_crops(images[batch], settings.crop, generator)
            logits = classifier(backbone(to_input(crops)).mean(dim=(2, 3)))
            loss = F.cross_entropy(logits, labels[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            correct = [*correct[-9:], (logits.argmax(dim=1) == labels[batch]).float().mean().item()]
    return {
        "format": FORMAT,
        "backbone": name,
        "width": width,
        "settings": asdict(settings),
        "train_accuracy_last_10_batches": float(np.mean(correct)) if correct else None,
        "state_dict": backbone.state_dict(),
    }


def _render(settings: GlyphPretraining) -> tuple[torch.Tensor, torch.Tensor]:
    """(images uint8 (N, 3, size, size), class indices (N,)) of every pretraining class."""
    images, labels = [], []
    for index, code in enumerate(pretraining_codes()):
        for instance in range(settings.images_per_class):
            image = render_glyph(code, instance, seed=settings.seed, size=settings.size, style=MINI_STYLE)
            images.append(torch.from_numpy(np.array(image)).permute(2, 0, 1))
            labels.append(index)
    return torch.stack(images), torch.tensor(labels)


def _random_crops(images: torch.Tensor, crop: int, generator: torch.Generator) -> torch.Tensor:
    """One random ``crop`` x ``crop`` window of each uint8 image, as floats in [0, 1]."""
    room = images.shape[-1] - crop + 1
    tops, lefts = (torch.randint(room, (len(images),), generator=generator) for _ in range(2))
    corners = zip(images, tops.tolist(), lefts.tolist(), strict=True)
    windows = [image[:, top : top + crop, left : left + crop] for image, top, left in corners]
    return torch.stack(windows).float() / 255.0
