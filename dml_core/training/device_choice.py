"""Which device a run trains on, said before it starts: a full-scale run refuses the CPU unless ``--device cpu`` asks
for it, and a GPU that ``nvidia-smi`` lists but torch cannot use is explained (the driver against the CUDA the torch
wheel was built for) with what to install. A paper that silently trains on the CPU for weeks is what this prevents."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from importlib import metadata

import torch

from dml_core.errors import InputError
from dml_core.provenance import cpu_model
from dml_core.tier import Tier

# The oldest Linux driver that runs each CUDA major version's toolkits (minor version compatibility): NVIDIA's CUDA
# Toolkit Release Notes, table "CUDA Toolkit and Minimum Required Driver Version for CUDA Minor Version
# Compatibility", and docs.nvidia.com/deploy/cuda-compatibility ("CUDA 13.x >= 580, 12.x >= 525, 11.x >= 450").
MINIMUM_DRIVER: dict[int, tuple[int, ...]] = {13: (580,), 12: (525, 60, 13), 11: (450, 80, 2)}
# The PyTorch wheel index of each CUDA major version (its builds for the newest toolkits of that major version).
WHEEL_INDEX = {
    13: "https://download.pytorch.org/whl/cu130",
    12: "https://download.pytorch.org/whl/cu126",
    11: "https://download.pytorch.org/whl/cu118",
}
NVIDIA_SMI_QUERY = ("nvidia-smi", "--query-gpu=driver_version,name", "--format=csv,noheader")


@dataclass(frozen=True)
class ListedGpu:
    """A GPU as ``nvidia-smi`` lists it, whatever torch makes of it."""

    name: str
    driver: str


def listed_gpus() -> list[ListedGpu]:
    """The GPUs ``nvidia-smi`` lists with the driver's version; none where it is absent or fails."""
    try:
        listed = subprocess.run(NVIDIA_SMI_QUERY, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if listed.returncode != 0:
        return []
    gpus = []
    for line in listed.stdout.splitlines():
        driver, comma, name = line.partition(",")
        if comma and re.fullmatch(r"\d+(\.\d+)*", driver.strip()):
            gpus.append(ListedGpu(name.strip(), driver.strip()))
    return gpus


def version_numbers(text: str) -> tuple[int, ...]:
    """``"535.104.05"`` -> ``(535, 104, 5)``.

    >>> version_numbers("580.65.06") >= MINIMUM_DRIVER[13], version_numbers("535.104.05") >= MINIMUM_DRIVER[13]
    (True, False)
    """
    return tuple(int(part) for part in re.findall(r"\d+", text))


def newest_cuda_for_driver(driver: str) -> int | None:
    """The newest CUDA major version ``driver`` runs (None: older than every one in ``MINIMUM_DRIVER``).

    >>> newest_cuda_for_driver("580.82.07"), newest_cuda_for_driver("535.104.05"), newest_cuda_for_driver("418.1")
    (13, 12, None)
    """
    numbers = version_numbers(driver)
    fitting = [major for major, minimum in MINIMUM_DRIVER.items() if numbers >= minimum]
    return max(fitting, default=None)


def _pip_install(index: str) -> str:
    pins = [f"torch=={torch.__version__.split('+')[0]}"]
    try:
        pins.append(f"torchvision=={metadata.version('torchvision').split('+')[0]}")
    except metadata.PackageNotFoundError:
        pass
    return f"`pip install {' '.join(pins)} --index-url {index}`"


def why_torch_cannot_use(gpu: ListedGpu) -> str:
    """Why torch has no CUDA device although ``nvidia-smi`` lists ``gpu``, and what to install."""
    listed = f"nvidia-smi lists {gpu.name} with driver {gpu.driver}"
    built = torch.version.cuda
    fits = newest_cuda_for_driver(gpu.driver)
    wheel_for_driver = f"a torch wheel built for CUDA {fits}.x, {_pip_install(WHEEL_INDEX[fits])}" if fits else None
    if built is None:
        instead = wheel_for_driver or "a newer NVIDIA driver, then a CUDA build of torch"
        return f"{listed}, but torch {torch.__version__} is a CPU-only build; install {instead}"
    needed = MINIMUM_DRIVER.get(version_numbers(built)[0])
    if needed and version_numbers(gpu.driver) < needed:
        minimum = ".".join(str(number) for number in needed)
        alternative = f", or {wheel_for_driver}" if wheel_for_driver else ""
        return (
            f"{listed}, but torch {torch.__version__} is built for CUDA {built}, which needs driver {minimum} or "
            f"newer; install a newer NVIDIA driver (>= {needed[0]}){alternative}"
        )
    return (
        f"{listed}, new enough for torch {torch.__version__}'s CUDA {built}, but torch finds no usable GPU; check "
        "CUDA_VISIBLE_DEVICES and that this process (in a container: its --gpus option) may open the GPU's devices"
    )


def unusable_gpu() -> str | None:
    """Why torch cannot use the GPU ``nvidia-smi`` lists; None where torch has a GPU or none is listed."""
    if torch.cuda.is_available():
        return None
    gpus = listed_gpus()
    return why_torch_cannot_use(gpus[0]) if gpus else None


def chosen_device(requested: str | None) -> torch.device:
    """The device a run trains on: the one asked for, else the GPU where torch has one, else the CPU (no GPU index
    chosen, nothing started on it). A string torch does not read as a device is an ``InputError``.

    >>> chosen_device("cpu"), chosen_device("cuda:1")
    (device(type='cpu'), device(type='cuda', index=1))
    >>> chosen_device("gpu0")
    Traceback (most recent call last):
    dml_core.errors.InputError: device 'gpu0': expected a torch device such as cpu, cuda or cuda:1
    """
    try:
        return torch.device(requested or ("cuda" if torch.cuda.is_available() else "cpu"))
    except RuntimeError:
        raise InputError(f"device {requested!r}: expected a torch device such as cpu, cuda or cuda:1") from None


def check_run_device(requested: str | None, tier: Tier) -> None:
    """Refuse a full-scale run that would fall back to the CPU: only ``--device cpu`` trains one there. The smoke and
    mini tiers are CPU tiers and take it."""
    if requested is not None or tier != Tier.FULL or torch.cuda.is_available():
        return
    found = unusable_gpu() or f"torch {torch.__version__} finds no CUDA GPU on this machine"
    raise InputError(
        f"a full-scale run trains on a GPU, and {found}; pass --device cpu to train it on the CPU anyway (days where "
        "a GPU takes hours), or --smoke / --mini for the CPU tiers"
    )


def describe_device(device: torch.device) -> str:
    """The device as a run's first line names it: the GPU with torch's and its CUDA's versions, or the CPU with
    torch's version (and, on a machine whose GPU torch cannot use, why)."""
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)} ({device}), torch {torch.__version__}, CUDA {torch.version.cuda}"
    if device.type != "cpu":
        return f"{device}, torch {torch.__version__}"
    unusable = unusable_gpu()
    return f"CPU ({cpu_model()}), torch {torch.__version__}" + (f" ({unusable})" if unusable else "")


def gpu_driver(device: torch.device) -> str | None:
    """The NVIDIA driver's version a CUDA run trains under (one per machine), for its results file."""
    if device.type != "cuda":
        return None
    gpus = listed_gpus()
    return gpus[0].driver if gpus else None
