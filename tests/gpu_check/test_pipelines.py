"""The pipelines part on the CPU (its GPU verdict needs a GPU): the cached batches and the PIL path's uint8 batches
converted on the device equal the PIL path's image-by-image ones for every setting it checks, and a batch that
differs in one value fails the part, naming the pipeline and the setting."""

import pytest
import torch

from dml_core.data.transforms import ToModelInput
from dml_core.gpu_check import pipelines
from dml_core.gpu_check.part import CheckContext, PartFailed
from dml_core.gpu_check.pipelines import CONFIGURATIONS, KEYS, compare_pipelines, run_pipelines
from dml_core.pipeline.batch_augment import BatchAugmentation


def _context(tmp_path) -> CheckContext:
    return CheckContext(torch.device("cpu"), tmp_path / "work", tmp_path / "data", tmp_path / "report")


@pytest.mark.slow
@pytest.mark.usefixtures("glyph_data_root")
def test_the_cached_batches_are_the_pil_paths_and_a_difference_fails_the_part(tmp_path, monkeypatch):
    figures = compare_pipelines(tmp_path / "data", torch.device("cpu"))
    assert set(figures) == set(CONFIGURATIONS)
    for record in figures.values():
        assert record["keys"] == KEYS and record["differing_values"] == 0 and record["max_abs_difference"] == 0.0
        assert record["pil_on_device"] == {"differing_values": 0, "max_abs_difference": 0.0}
    assert [figures[name]["shape"] for name in CONFIGURATIONS] == [[KEYS, 3, 32, 32], [KEYS, 3, 24, 24]]
    summary = run_pipelines(_context(tmp_path)).summary
    assert summary.startswith(f"{2 * KEYS} cached crops and {2 * KEYS} PIL crops converted on the GPU equal")

    class ConvertedOff(ToModelInput):  # the PIL path's conversion on the device, one value off
        def forward(self, images):
            batch = super().forward(images)
            batch[0, 0, 0, 0] += 1.0
            return batch

    with monkeypatch.context() as patched:
        patched.setattr(pipelines, "ToModelInput", ConvertedOff)
        with pytest.raises(PartFailed, match=r"image by image: pil shorter_side 40, .*: 1 values, up to 1; pil squash"):
            run_pipelines(_context(tmp_path))

    augment = BatchAugmentation.__call__

    def one_value_off(self, positions, seeds):
        batch = augment(self, positions, seeds)
        batch[0, 0, 0, 0] += 1.0
        return batch

    monkeypatch.setattr(BatchAugmentation, "__call__", one_value_off)
    with pytest.raises(PartFailed, match=r"image by image: cache shorter_side 40, .*: 1 values, up to 1; cache squash"):
        run_pipelines(_context(tmp_path))
