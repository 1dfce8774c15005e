import io

import numpy as np
import pytest
from PIL import Image

from dml_core.data.index import index_path
from dml_core.data.loading import load_split
from dml_core.data.prepare import ensure_generated
from dml_core.data.sources.embedded import IMAGE_SIZE, generate, render_glyph


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.mark.slow  # generates the full set: about 3 s alone, more on a busy machine
def test_generated_before_a_run_with_disjoint_classes(tmp_path):
    embedded_root = tmp_path
    assert not index_path(embedded_root / "embedded").exists()
    ensure_generated("embedded", embedded_root)
    train = load_split("embedded", embedded_root, "train")
    test = load_split("embedded", embedded_root, "test")
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
