"""Is there a GPU, and can torch use it? Three answers: usable, absent (the CUDA parts are skipped), or present but
unusable (a driver too old for torch's CUDA, a CPU-only torch build, a broken device): the CUDA parts fail then,
since a GPU box where torch silently falls back to the CPU is exactly what the check is for."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import torch


@dataclass(frozen=True)
class GpuState:
    name: str | None = None  # torch's name of device 0 when usable
    problem: str | None = None  # why a GPU that is present cannot be used

    @property
    def usable(self) -> bool:
        return self.name is not None


def gpu_evidence(dev_dir: Path = Path("/dev"), nvidia_smi: str | None = "nvidia-smi") -> str | None:
    """What says that this machine has an NVIDIA GPU, whatever torch thinks: a device file ``/dev/nvidia<N>``, or a
    GPU that ``nvidia-smi -L`` lists (``nvidia_smi``: the command; None: do not ask); None when neither does."""
    files = sorted(path.name for path in Path(dev_dir).glob("nvidia*") if re.fullmatch(r"nvidia\d+", path.name))
    if files:
        return f"{Path(dev_dir) / files[0]} exists"
    if nvidia_smi is None:
        return None
    try:
        listed = subprocess.run([nvidia_smi, "-L"], capture_output=True, text=True, timeout=60, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    gpus = [line.strip() for line in listed.splitlines() if line.startswith("GPU ")]
    return f"nvidia-smi lists {gpus[0]}" if gpus else None


def _torch_reason() -> str:
    """Why torch has no CUDA device, in torch's words where it has any."""
    if torch.version.cuda is None:
        return f"torch {torch.__version__} is a CPU-only build"
    try:
        torch.cuda.init()
    except Exception as error:  # torch's own explanation (driver too old, no device found, ...)
        return f"torch {torch.__version__} (CUDA {torch.version.cuda}): {str(error).strip().splitlines()[0]}"
    return f"torch {torch.__version__} (CUDA {torch.version.cuda}) finds no CUDA device"


def probe_gpu(dev_dir: Path = Path("/dev"), nvidia_smi: str | None = "nvidia-smi") -> GpuState:
    """This machine's GPU state. A GPU torch reports is also made to run one kernel, so a device that is listed
    but cannot compute counts as present and unusable."""
    if torch.cuda.is_available():
        try:
            name = torch.cuda.get_device_name(0)
            (torch.ones(2, device="cuda") * 2).sum().item()
        except Exception as error:  # a listed device that cannot run a kernel
            return GpuState(problem=f"torch lists a CUDA device but cannot run on it: {error}")
        return GpuState(name=name)
    evidence = gpu_evidence(dev_dir, nvidia_smi)
    if evidence is None:
        return GpuState()
    return GpuState(problem=f"a GPU is present ({evidence}) but torch cannot use it: {_torch_reason()}")
