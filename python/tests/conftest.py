"""Fixtures for the Python module's tests: the CLI to compare with, the models, seeded data."""
import json
import os
import subprocess

import numpy as np
import pytest


def pytest_addoption(parser):
    parser.addoption("--dlakit-cli", required=True, help="the dlakit command-line tool of the same build")


@pytest.fixture(scope="session")
def cli(request):
    exe = request.config.getoption("--dlakit-cli")

    def run(*args, ok=(0,), parse_json=False):
        r = subprocess.run([exe, *map(str, args)], capture_output=True, text=True)
        assert r.returncode in ok, f"dlakit {' '.join(map(str, args))} -> {r.returncode}\n{r.stderr}"
        return json.loads(r.stdout) if parse_json else r

    run.exe = exe
    return run


@pytest.fixture(scope="session")
def models():
    return os.path.join(os.environ["DLAKIT_SOURCE_DIR"], ".cache", "models")


@pytest.fixture(scope="session")
def libcudla(cli):
    path = os.path.join(os.path.dirname(cli.exe), "libcudla.so.1")
    assert os.path.exists(path), path
    return path


@pytest.fixture
def face_samples(tmp_path):
    """Three seeded N(0, 1) samples for BlazeFace's NHWC input, as dicts and as the .npy files the CLI reads."""
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal((1, 128, 128, 3), dtype=np.float32) for _ in range(3)]
    files = []
    for i, a in enumerate(arrays):
        files.append(tmp_path / f"s{i}.npy")
        np.save(files[-1], a)
    return [{"input:0": a} for a in arrays], files
