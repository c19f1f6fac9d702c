import os

# Before numpy loads its BLAS (as the CLI does): two test workers share two cores, and BLAS or OpenMP
# threads that wait by spinning on a busy core made scikit-learn's fits six times slower.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

# Generated files (models trained on first use, compiled kernels) go to a throw-away cache, for this
# process and every `granular` subprocess the tests start: the tests never write into the checkout.
_CACHE = tempfile.mkdtemp(prefix="granular-test-cache-")
os.environ["GRANULAR_CACHE"] = _CACHE
os.environ["NUMBA_CACHE_DIR"] = os.path.join(_CACHE, "numba")
os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = os.path.join(_CACHE, "hypothesis")  # not ./.hypothesis

from granular.data.synth import synthesize  # noqa: E402  (after the cache is set)

CHECKOUT = Path(__file__).resolve().parent.parent
WATCHED = ("granular", "data", "training", "sim", "docs", "README.md", "pyproject.toml")


def _snapshot():
    files = {"(top-level entries)": sorted(p.name for p in CHECKOUT.iterdir() if p.name not in (".git", "out"))}
    for top in WATCHED:
        root = CHECKOUT / top
        for path in ([root] if root.is_file() else root.rglob("*")):
            if path.is_file() and path.suffix != ".pyc":
                files[str(path.relative_to(CHECKOUT))] = path.stat().st_mtime_ns
    return files


@pytest.fixture(scope="session", autouse=True)
def checkout_untouched():
    """Nothing the tests run (sim, view, bench, train, …) writes into the package or the checkout."""
    before = _snapshot()
    yield
    after = _snapshot()
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    shutil.rmtree(_CACHE, ignore_errors=True)
    assert not changed, f"the tests wrote into the checkout: {changed[:20]}"


def run_group(cmd, timeout):
    """subprocess.run(cmd, capture_output=True, text=True) in a session of its own, so that a timeout
    ends the whole process group (a `granular acquire` and the YADE processes it started) instead
    of leaving its children running."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


@pytest.fixture(scope="session")
def sand():
    return synthesize("rft", "sand")


@pytest.fixture(scope="session")
def pebbles():
    return synthesize("rft", "pebbles")


@pytest.fixture(scope="session")
def sand_model(sand):
    from granular.learning import model

    return model.fit(sand)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
