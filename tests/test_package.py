"""The project as an installed package: a wheel in a fresh virtual environment, run from an empty folder.
The wheel's build compiles the kernels (hatch_build.py), so the first command compiles nothing."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_wheel_runs_a_scenario_from_an_empty_folder(tmp_path):
    wheels = tmp_path / "wheels"
    # The kernels this checkout's install built, in the cache the wheel's build looks in first
    # (compiled.install_build): the compilation itself is the install's (test_compiled checks it).
    from granular import compiled

    if compiled.installed() is None or compiled.mode() != "aot" or compiled._verified(compiled.installed(),
                                                                                       compiled.key()) is None:
        pytest.skip("this checkout's install carries no kernels of its sources: reinstall (pip install -e .)")
    shutil.copytree(compiled.installed(), tmp_path / "build-cache" / "kernels" / compiled.key())
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(CHECKOUT)],
                   check=True, capture_output=True, cwd=tmp_path,
                   env={**os.environ, "GRANULAR_CACHE": str(tmp_path / "build-cache")})
    wheel, = wheels.glob("granular-*.whl")
    venv = tmp_path / "venv"
    # The dependencies come from this interpreter's site-packages; granular itself only from the wheel.
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True,
                   capture_output=True)
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {**os.environ, "GRANULAR_CACHE": str(tmp_path / "cache")}
    where = subprocess.run([python, "-c", "import granular; print(granular.__file__)"], cwd=empty, env=env,
                           capture_output=True, text=True, check=True).stdout
    assert str(venv) in where, f"granular imported from {where}, not from the wheel"
    installed = Path(where.strip()).parent
    before = sorted(p for p in installed.rglob("*") if p.suffix != ".pyc")
    out = subprocess.run([venv / "bin" / "granular", "sim", "quad-trot", "--duration", "1", "--json"], cwd=empty,
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["scenario"] == "quad-trot" and summary["medium"] == "sand" and summary["steps"] == 1000
    assert list(empty.iterdir()) == [], "nothing is written into the working folder"
    assert sorted(p for p in installed.rglob("*") if p.suffix != ".pyc") == before, "the package is not written"
    site = installed.parent
    assert (site / "granular_aot" / "manifest.json").is_file(), "the wheel carries the kernels built with it"
    assert not (tmp_path / "cache" / "kernels").exists(), "the first run loaded them: it compiled nothing"
    assert not [p for p in site.rglob("*") if p.suffix in (".nbi", ".nbc")], "no numba cache in site-packages"
    listed = subprocess.run([venv / "bin" / "granular", "sim", "nope"], cwd=empty, env=env, capture_output=True,
                            text=True)
    assert listed.returncode == 2 and "quad-trot" in listed.stderr, "the shipped scenarios are found"
