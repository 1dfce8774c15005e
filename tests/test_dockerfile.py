"""The Dockerfile (no Docker engine here, so it is parsed): a plain Python base (the pinned torch wheels bring their
CUDA user space), the dependencies installed from constraints.txt in a layer before the source is copied, the
committed results visible in the container, one weights location for host and container, the driver stated, and one
`docker run` that fetches into the mounted folders, trains and writes the tables."""

import json
import re
import shlex
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The minimum NVIDIA driver of a CUDA major (NVIDIA's minor version compatibility: CUDA 13.x needs >= 580).
MINIMUM_DRIVER = {13: 580}


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def _env() -> dict[str, str]:
    pairs = [item for name, args in _instructions() if name == "ENV" for item in shlex.split(args)]
    return dict(pair.split("=", 1) for pair in pairs)


def _index(instructions: list[tuple[str, str]], name: str, pattern: str) -> int:
    [index] = [i for i, (n, args) in enumerate(instructions) if n == name and re.search(pattern, args)]
    return index


def _constraints() -> dict[str, str]:
    lines = (ROOT / "constraints.txt").read_text().splitlines()
    return dict(line.split("==") for line in lines if line.strip() and not line.startswith("#"))


def _docker_run_command() -> str:
    """The `docker run` command of the GPU page (docs/gpu.md), continuation lines joined."""
    page = re.sub(r"\\\n", " ", (ROOT / "docs" / "gpu.md").read_text())
    [command] = [line for line in page.splitlines() if line.lstrip().startswith("docker run")]
    return command


def test_the_base_is_a_plain_python_image_of_a_supported_version():
    instructions = _instructions()
    args = dict(a.split("=", 1) for name, a in instructions if name == "ARG" and "=" in a)
    [base] = [a for name, a in instructions if name == "FROM"]
    image = args.get(base.strip("${}"), base)
    match = re.fullmatch(r"python:(3)\.(\d+)-slim-\w+", image)
    assert match, image  # not a CUDA or PyTorch image: the pinned wheels bring torch and the CUDA libraries
    minimum = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert minimum.startswith(">=3.") and int(match[2]) >= int(minimum.removeprefix(">=3."))


def test_dependencies_are_installed_before_the_source_is_copied():
    instructions = _instructions()
    install = _index(instructions, "RUN", r"pip install -r constraints\.txt")
    copy_source = _index(instructions, "COPY", r"^\. ")
    environment = _index(instructions, "RUN", r"nox -s environment")
    copies_before = [args for name, args in instructions[:install] if name == "COPY"]
    assert copies_before == ["constraints.txt ./"]  # a code edit leaves the dependency layer cached
    assert install < copy_source < environment  # the package itself comes with the source


def test_every_pin_is_the_constraints_file():
    runs = " ".join(args for name, args in _instructions() if name == "RUN")
    assert "==" not in runs  # no version pinned in the Dockerfile itself: constraints.txt is the one lock
    assert "nox" in _constraints()  # the command (CMD nox) comes from the lock, into the venv on the PATH
    env = _env()
    assert env["PATH"].startswith("$DML_VENV/bin:") and env["DML_VENV"].startswith("/")
    [command] = [json.loads(a) for name, a in _instructions() if name == "CMD"]
    assert command[0] == "nox"


def test_the_minimum_driver_of_the_pinned_cuda_is_stated():
    cuda_major = int(_constraints()["nvidia-cuda-runtime"].split(".")[0])
    driver = MINIMUM_DRIVER[cuda_major]  # a new CUDA major: look its minimum driver up and state it
    for name in ("Dockerfile", "docs/gpu.md"):
        text = " ".join((ROOT / name).read_text().split())
        assert f"driver >= {driver}" in text, name
        assert f"CUDA {cuda_major}" in text, name


def test_committed_results_stay_visible_and_runs_write_beside_them():
    env = _env()
    for name in ("DML_RESULTS_DIR", "DML_TABLES_DIR", "DML_RUNS_DIR"):
        assert name not in env, name  # the defaults: results/, tables/, runs/ of the repository copy
    [workdir] = [args for name, args in _instructions() if name == "WORKDIR"]
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    ignored = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    assert "results/" not in ignored and {"data/", "weights/", "runs/"} <= set(ignored)
    command = _docker_run_command()
    for folder in ("results", "tables", "runs"):
        assert f'-v "$PWD/{folder}:{workdir}/{folder}"' in command, folder


def test_host_and_container_share_one_weights_location(monkeypatch):
    from dml_core.models.weights import weights_cache_dir

    monkeypatch.delenv("DML_WEIGHTS_DIR", raising=False)
    host_default = weights_cache_dir().relative_to(Path.home())  # where `dml weights --fetch` saves on the host
    env = _env()
    [volumes] = [json.loads(a) for name, a in _instructions() if name == "VOLUME"]
    assert sorted(volumes) == ["/data", "/weights"]
    assert (env["DML_DATA_ROOT"], env["DML_WEIGHTS_DIR"]) == ("/data", "/weights")
    command = _docker_run_command()
    assert f'-v "${{DML_WEIGHTS_DIR:-$HOME/{host_default.as_posix()}}}:/weights"' in command
    assert '-v "$PWD/data:/data"' in command  # `nox -s dml -- prepare DATASET --root data` on the host


def test_one_docker_run_fetches_into_the_mounted_folders_and_trains():
    env = _env()
    for switch in ("HF_HUB_OFFLINE", "DML_OFFLINE"):
        assert switch not in env, switch  # downloads stay on: the run fetches what it lacks
    command = _docker_run_command()
    assert re.search(r" dml-repro nox -s reproduce-\w+$", command), command  # the one command, nothing before it
    assert '-v "$PWD/data:/data"' in command and ':/weights"' in command  # where it fetches: kept on the host
    page = (ROOT / "docs" / "gpu.md").read_text()
    docker = page[page.index("## Docker") :]
    assert "Prepare data and weights on the host" not in docker
    assert "--no-download" in docker  # the offline form, inputs already on the host
