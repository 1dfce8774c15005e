import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from dml_core.data.index import IndexRow, index_path, read_index, write_index
from dml_core.data.loading import load_split
from dml_core.data.prepare import ensure_generated
from dml_core.data.registry import get_spec
from dml_core.data.sources.embedded import IMAGE_SIZE, MINI_SET, SMOKE_SET, generate, render_glyph


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.mark.slow  # generates the full set: about 3 s alone, more on a busy machine
def test_generated_before_a_run_with_disjoint_classes(tmp_path):
    glyphs = get_spec("embedded")
    embedded_root = tmp_path
    assert not index_path(embedded_root / "embedded").exists()
    ensure_generated(glyphs, embedded_root)
    train = load_split(glyphs, embedded_root, "train")
    test = load_split(glyphs, embedded_root, "test")
    assert train.num_classes + test.num_classes >= 80
    assert not set(train.labels.tolist()) & set(test.labels.tolist())
    with Image.open(train.paths[0]) as image:
        assert image.size == (IMAGE_SIZE, IMAGE_SIZE) and image.mode == "RGB"


def test_bytes_are_a_function_of_the_seed(tmp_path):
    generate(tmp_path, images_per_class=4)
    on_disk = (tmp_path / "glyphs" / "065" / "03.png").read_bytes()
    assert on_disk == _png(render_glyph(65, 3))
    assert _png(render_glyph(65, 3, seed=1)) != on_disk
    assert not np.array_equal(np.asarray(render_glyph(65, 3)), np.asarray(render_glyph(65, 4)))


def test_generate_twice_gives_identical_files(tmp_path):
    first = generate(tmp_path / "a", images_per_class=1)
    generate(tmp_path / "b", images_per_class=1)
    assert len(first) == 94
    for row in first:
        assert (tmp_path / "a" / row.path).read_bytes() == (tmp_path / "b" / row.path).read_bytes()


def test_the_mini_split_interleaves_code_points_so_both_halves_hold_every_kind_of_glyph():
    rows = MINI_SET.read_layout(Path("unused"))
    train = {row.label for row in rows if row.split == "train"}
    test = {row.label for row in rows if row.split == "test"}
    assert len(train) == len(test) == 47 and not train & test
    for kind in (str.isdigit, str.isupper, str.islower):
        assert any(kind(chr(code)) for code in train) and any(kind(chr(code)) for code in test)
    assert MINI_SET.split_counts("test") == (47 * 80, 47)


@pytest.mark.slow  # generates the full smoke set
def test_an_index_written_with_another_split_is_written_again_and_the_images_kept(tmp_path):
    glyphs = get_spec("embedded")
    ensure_generated(glyphs, tmp_path)
    dataset_dir = tmp_path / "embedded"
    rows = read_index(dataset_dir)
    image = dataset_dir / rows[0].path
    made = image.stat().st_mtime_ns
    swapped = [IndexRow(row.path, row.label, "test" if row.split == "train" else "train") for row in rows]
    write_index(dataset_dir, swapped)  # as an older version with another split would have left it
    ensure_generated(glyphs, tmp_path)
    assert read_index(dataset_dir) == SMOKE_SET.read_layout(dataset_dir)
    assert image.stat().st_mtime_ns == made
