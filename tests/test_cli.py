"""CLI smoke tests through the real entry point (the installed ``granular`` script)."""
import json
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest


def granular(*args, ok=True):
    exe = shutil.which("granular")
    cmd = [exe] if exe else [sys.executable, "-m", "granular"]
    proc = subprocess.run(cmd + [str(a) for a in args], capture_output=True, text=True, timeout=600)
    if ok:
        assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A synthetic dataset and its model, trained through the CLI without cross-validation (the
    cross-validations are the slow tier's: ``test_train_json_has_cv_for_every_regressor``)."""
    tmp = tmp_path_factory.mktemp("cli")
    granular("synth", "--source", "rft", "--medium", "pebbles", "--out", tmp / "p.h5")
    out = granular("train", tmp / "p.h5", "--out", tmp / "p_model.h5", "--json", "--figures", tmp / "fig")
    return tmp, json.loads(out.stdout)


@pytest.mark.xdist_group("cli-trained")  # one worker builds the module fixture once
def test_train_json_names_the_model_and_its_figures(trained):
    tmp, result = trained
    assert "cv" not in result and (tmp / "p_model.h5").is_file() and result["figures"]
    for fig in result["figures"]:
        assert (tmp / "fig").exists() and open(fig, "rb").read(8).startswith(b"\x89PNG")


@pytest.mark.slow
@pytest.mark.xdist_group("cli-trained")  # one worker builds the module fixture once
def test_train_json_has_cv_for_every_regressor(trained, tmp_path):
    tmp, _ = trained
    result = json.loads(granular("train", tmp / "p.h5", "--out", tmp_path / "m.h5", "--cv", 3, "--json").stdout)
    assert set(result["cv"]) == {"rbf", "gp", "svr"}
    assert all(0 < v["rel_rmse"] < 1 for v in result["cv"].values())
    assert (tmp_path / "m.h5").is_file()


@pytest.mark.slow
def test_train_on_beads_says_how_much_of_its_error_is_noise(tmp_path):
    """On data with bed-to-bed noise (the shipped Beads), the human summary gives the noise floor and
    the noise budget (a smooth medium measured with that noise), each with its numbers."""
    from pathlib import Path

    data = Path(__file__).resolve().parents[1] / "data" / "beads.h5"
    out = granular("train", data, "--out", tmp_path / "m.h5", "--cv", 3, "--target", "per-depth",
                   "--smoothing", "noise", "--cv-repeats", 4).stdout
    assert "the data's own noise alone would score 0." in out
    repeated = r"rbf over 4 draws of the folds: 0\.\d{4} \(one draw: 0\.\d{3}–0\.\d{3}, ± 0\.\d{3}\)"
    assert re.search(repeated, out), out
    line = next(x for x in out.splitlines() if "the RBF on a smooth medium" in x)
    assert "1 more bed in every cell" in line and "3 more beds in every cell" in line, line
    cells = out.split("where rbf's error lies")[1].splitlines()[1:6]
    assert all(re.search(r"rad: +\d+%, \d\.\d\d \(\d\.\d\d\), \d", c) for c in cells), cells


@pytest.mark.xdist_group("cli-trained")  # one worker builds the module fixture once
def test_inspect_model_at_theta(trained):
    tmp, _ = trained
    out = json.loads(granular("inspect", tmp / "p_model.h5", "--theta", -0.03, 0.2, "--json",
                              "--plot", tmp / "w.png").stdout)
    A, b, pts = np.array(out["A"]), np.array(out["b"]), np.array(out["points"])
    assert A.shape[1] == 3 and len(b) == len(A) and pts.shape == (26, 3)
    assert np.all(pts @ A.T <= b + 1e-6 * np.abs(b).max())
    assert (tmp / "w.png").stat().st_size > 10_000


@pytest.mark.xdist_group("cli-trained")  # one worker builds the module fixture once
def test_inspect_dataset(trained):
    tmp, _ = trained
    from granular.data.media import MEDIA

    out = json.loads(granular("inspect", tmp / "p.h5", "--json").stdout)
    grid = MEDIA["pebbles"]
    assert out["kind"] == "dataset" and out["m_directions"] == 26
    assert out["n_configs"] == len(grid.depths) * len(grid.tilts)


def test_synth_terramechanics_and_58_directions(tmp_path):
    granular("synth", "--source", "terramechanics", "--soil", "lete-sand", "--directions", 58,
             "--depths", "0,-0.02,-0.04", "--tilts", "0,0.5", "--out", tmp_path / "t.h5")
    out = json.loads(granular("inspect", tmp_path / "t.h5", "--json").stdout)
    assert out["source"] == "terramechanics" and out["m_directions"] == 58 and out["n_configs"] == 6


@pytest.mark.parametrize("args,message", [
    (["synth", "--medium", "mud", "--out", "x.h5"], "unknown medium 'mud'"),
    (["synth", "--source", "terramechanics", "--out", "x.h5"], "needs --soil"),
    (["synth", "--medium", "sand", "--directions", "30", "--out", "x.h5"], "2 + 8k"),
    (["inspect", "missing.h5"], "no such file"),
    (["train", "missing.h5", "--out", "m.h5"], "no such file"),
    (["train", "data/sand.h5"], "needs --out"),
    (["train", "data/sand.h5", "--out", "m.h5", "--smoothing", "lots"], "expected a number, got 'lots' (or 'noise')"),
    (["train", "data/sand.h5", "--out", "m.h5", "--smoothing", "noise"], "no configuration measured in two beds"),
    (["train", "data/sand.h5", "--out", "m.h5", "--cv-repeats", "3"], "this job has none: add --cv K"),
])
def test_bad_input_is_one_clear_line(args, message, tmp_path):
    proc = granular(*args, ok=False)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_sim_json_schema_and_outputs(tmp_path):
    out = granular("sim", "drop-upright", "--duration", 0.5, "--json", "--out", tmp_path / "run.h5",
                   "--plot", tmp_path / "fig")
    s = json.loads(out.stdout)
    for key in ("scenario", "medium", "steps", "dt", "wall_time_s", "bodies", "max_penetration_m", "energy"):
        assert key in s
    assert s["scenario"] == "drop-upright" and s["steps"] == 500 and s["dt"] == 0.001
    for when in ("initial", "final"):
        assert set(s["bodies"]["foot"][when]) >= {"x", "z", "angle", "vx", "vz", "omega"}
    assert set(s["energy"]) >= {"initial", "final", "max_step_increase"}
    assert 0 < s["max_penetration_m"] < 0.05
    from granular.simulation import runfile

    run = runfile.read(tmp_path / "run.h5")
    assert run["wrench"].shape == (500, 1, 3) and run["slipping"].dtype == bool
    for name in ("state.png", "wrench.png", "scene.png"):
        assert (tmp_path / "fig" / name).stat().st_size > 10_000


@pytest.mark.parametrize("args,message", [
    (["sim", "no-such-scenario"], "unknown scenario 'no-such-scenario'"),
    (["sim", "drop-upright", "--medium", "mud"], "unknown medium 'mud'"),
    (["sim", "drop-upright", "--dt", "-1"], "--dt: -1 is out of range"),
])
def test_sim_bad_input(args, message):
    proc = granular(*args, ok=False)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_bench_json(tmp_path):
    out = json.loads(granular("bench", "--quick", "--json").stdout)
    scene = out["single_foot"]
    assert {"quadprog/fixed", "cvxpy/exact", "osqp/fixed"} <= set(scene)
    for row in scene.values():
        assert row["us_per_step"] > 0 and row["speedup_vs_reference"] > 0
    assert scene["cvxpy/exact"]["speedup_vs_reference"] == pytest.approx(1.0)


def test_sim_video_gif(tmp_path):
    granular("sim", "drop-tilted", "--duration", 0.3, "--video", tmp_path / "drop.gif")
    from PIL import Image

    with Image.open(tmp_path / "drop.gif") as gif:
        assert gif.n_frames >= 5
    proc = granular("sim", "drop-tilted", "--duration", 0.1, "--video", tmp_path / "drop.avi", ok=False)
    assert proc.returncode == 2 and "must end in .gif or .mp4" in proc.stderr
