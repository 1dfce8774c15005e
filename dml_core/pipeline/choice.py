"""Which pipeline a run's training batches take: ``data.pipeline`` "pil", "cache", or "auto" (the default) resolved
for the run's device.

"auto" takes the cache where it is faster and gives the PIL path's batches, else the PIL path, and says why (the
results file records the pipeline that ran, the setting and the reason: ``PipelineChoice.record``). It takes the
cache when the run trains on CUDA (on a CPU the model is the bottleneck: CPU runs keep the PIL path), when the cache's
batches are the PIL path's (``DataSettings.cache_gives_pil_batches``: random crops of the resized image; random
resized crops are cut from the full-size image, which the cache does not hold, and ``data.pipeline: cache`` runs
them as another computation), when a current cache is there (``cache_preparation``; a generated set's is built on
first use) and when it takes at most ``DEVICE_MEMORY_SHARE`` of the GPU's memory (the model needs the rest). Where
"auto" may choose, both pipelines give the same batches, so the choice stays out of the run's content hash
(``Recipe.computation``): a run finished on either pipeline is finished for both. The speeds behind the default:
docs/performance.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dml_core.readable import readable_bytes

if TYPE_CHECKING:
    from dml_core.recipes.settings import DataSettings, Pipeline, PipelineSetting

# The largest share of the GPU's memory "auto" gives the cache.
DEVICE_MEMORY_SHARE = 0.5
GIB = 2**30


@dataclass(frozen=True)
class PipelineChoice:
    """The pipeline a run takes (``pipeline``), what the recipe said (``setting``) and why."""

    pipeline: Pipeline
    setting: PipelineSetting
    reason: str

    def record(self) -> dict[str, str]:
        """For the results file (``environment.data_loading``)."""
        return {"pipeline": self.pipeline, "pipeline_setting": self.setting, "pipeline_reason": self.reason}


# An explicit setting, taken as it is.
AS_THE_RECIPE_SAYS = {name: PipelineChoice(name, name, "set by the recipe") for name in ("pil", "cache")}


def requires_cache(data: DataSettings) -> bool:
    """Whether a run trains from the cache or not at all: it says "cache", so it has no PIL path to fall back to."""
    return data.pipeline == "cache"


def wants_cache(data: DataSettings, device_type: str) -> bool:
    """Whether a run trains from the cache when a current one is there: it says so, or it says "auto", trains on
    CUDA and the cache gives its batches."""
    automatic = data.pipeline == "auto" and device_type == "cuda" and data.cache_gives_pil_batches
    return requires_cache(data) or automatic


def choose_pipeline(
    data: DataSettings, device_type: str, cache_problem: str | None, cache_bytes: int, device_bytes: int | None
) -> PipelineChoice:
    """The run's pipeline. ``cache_problem``: why the cache cannot be used (``image_cache.cache_problem``), None
    when it is there and current; ``cache_bytes``: its size then; ``device_bytes``: the GPU's memory (None off CUDA).
    An explicit setting is taken as it is (a missing cache then fails when it is loaded, saying what to run)."""
    if data.pipeline != "auto":
        return AS_THE_RECIPE_SAYS[data.pipeline]
    if device_type != "cuda":
        reason = f"auto on {device_type}: the PIL path (decoding costs little beside the model)"
        return PipelineChoice("pil", "auto", reason)
    if not data.cache_gives_pil_batches:
        return PipelineChoice(
            "pil", "auto", "auto: random resized crops are cut from the full-size image, which the cache does not hold"
        )
    if cache_problem:
        return PipelineChoice("pil", "auto", f"auto: no current cache: {cache_problem}")
    if device_bytes is not None and cache_bytes > DEVICE_MEMORY_SHARE * device_bytes:
        return PipelineChoice(
            "pil",
            "auto",
            f"auto: the cache ({readable_bytes(cache_bytes)}) would take over {DEVICE_MEMORY_SHARE:.0%} of the GPU's "
            f"{readable_bytes(device_bytes)}",
        )
    return PipelineChoice("cache", "auto", f"auto on CUDA: the decoded uint8 cache ({readable_bytes(cache_bytes)})")
