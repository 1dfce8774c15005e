"""The Dockerfile (no Docker engine here, so it is parsed): a CUDA PyTorch base, the pinned environment,
datasets/weights/results as volumes that the suite's environment variables point into, nox as the command."""

import json
import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def _env() -> dict[str, str]:
    pairs = [item for name, args in _instructions() if name == "ENV" for item in shlex.split(args)]
    return dict(pair.split("=", 1) for pair in pairs)


def test_the_base_is_a_cuda_pytorch_image():
    instructions = _instructions()
    args = dict(a.split("=", 1) for name, a in instructions if name == "ARG" and "=" in a)
    [base] = [a for name, a in instructions if name == "FROM"]
    image = args.get(base.strip("${}"), base)
    assert re.fullmatch(r"pytorch/pytorch:[0-9.]+-cuda[0-9.]+-cudnn[0-9]+-(runtime|devel)", image), image


def test_the_environment_is_installed_from_the_constraints_and_nox_gets_it():
    runs = " ".join(a for name, a in _instructions() if name == "RUN")
    assert re.search(r"pip install [^&]*-c constraints\.txt[^&]* -e \"?\.\[test,lint\]", runs)
    assert "nox -s environment" in runs  # builds DML_VENV through noxfile's shared_python, once, at build time
    assert _env()["DML_VENV"].startswith("/")


def test_data_weights_and_results_are_volumes_the_suite_writes_into():
    [volumes] = [json.loads(a) for name, a in _instructions() if name == "VOLUME"]
    assert sorted(volumes) == ["/data", "/results", "/weights"]
    env = _env()
    assert (env["DML_DATA_ROOT"], env["DML_WEIGHTS_DIR"]) == ("/data", "/weights")
    for name in ("DML_RESULTS_DIR", "DML_TABLES_DIR", "DML_RUNS_DIR"):
        assert env[name].startswith("/results/"), name
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {"data/", "weights/", "runs/"} <= set(ignored)  # never baked into the image


def test_nox_is_the_command():
    [command] = [json.loads(a) for name, a in _instructions() if name == "CMD"]
    assert command[0] == "nox"
