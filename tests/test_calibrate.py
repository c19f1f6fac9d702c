"""granular calibrate: a model's forces scaled to a lab's own runs (granular.scenarios.calibration)."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
RUNS = [str(ROOT / "data" / "validation" / f"{name}_s1.csv") for name in ("plunge-drag", "diagonal", "arc")]


def granular(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "granular", *map(str, args)], capture_output=True, text=True, cwd=cwd)


def test_sand_calibrated_to_beads_runs_fits_them_better_held_out(tmp_path):
    """RFT sand against the DEM Beads runs: one fitted scale, scored on each run by the scale of the
    others, brings the error down; the written model is the old one times the scale, and says so."""
    from granular.learning import model as wm
    from granular.learning.catalog import load_model

    run = granular("calibrate", "sand", *RUNS, "--out", tmp_path / "cal.h5", "--json")
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["improves"] and result["held_out_after"] < result["held_out_before"]
    assert 1.2 < result["scale"] < 2.0 and len(result["runs"]) == 3
    cal, base = wm.load(tmp_path / "cal.h5"), load_model("sand")
    theta = np.array([[-0.04, 0.3], [-0.02, -0.6]])
    np.testing.assert_allclose(cal.points(theta), result["scale"] * base.points(theta), rtol=1e-6,
                               atol=1e-9 * np.abs(base.points(theta)).max())
    assert cal.dataset.provenance["calibration_scale"] == pytest.approx(result["scale"])
    assert cal.info["calibration"]["held_out_after"] == pytest.approx(result["held_out_after"])


def test_a_calibration_that_does_not_help_writes_nothing(tmp_path):
    """The Beads model on its own medium's runs: no scale helps held out; it says so, writes nothing."""
    run = granular("calibrate", "beads", *RUNS[:2], "--out", tmp_path / "cal.h5")
    assert run.returncode != 0 and "does not improve the held-out fit" in run.stderr and "nothing written" in run.stderr
    assert not (tmp_path / "cal.h5").exists()


def test_runs_of_another_kind_or_outside_the_medium_are_refused(tmp_path):
    path3d = ROOT / "data" / "validation3d" / "sand_turning-drag.h5"
    run = granular("calibrate", "sand", path3d, "--out", tmp_path / "cal.h5")
    assert run.returncode != 0 and "'sand' is a planar medium" in run.stderr
    run = granular("calibrate", "sand3d", path3d, RUNS[0], "--out", tmp_path / "cal.h5")
    assert run.returncode != 0 and "planar runs or 3D paths, not both" in run.stderr
    lines = Path(RUNS[0]).read_text().splitlines()
    header, rows = lines[0], lines[1:]
    z = header.split(",").index("z")
    shallow = [",".join(v if k != z else "0.01" for k, v in enumerate(r.split(","))) for r in rows]
    (tmp_path / "air.csv").write_text("\n".join([header, *shallow]) + "\n")
    (tmp_path / "air.json").write_text(Path(RUNS[0]).with_suffix(".json").read_text())
    run = granular("calibrate", "sand", tmp_path / "air.csv", "--out", tmp_path / "cal.h5")
    assert run.returncode != 0 and "no sample whose lowest point is deeper" in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "cal.h5").exists()


def test_a_3d_model_calibrates_on_3d_paths_of_a_stiffer_medium(tmp_path):
    """sand3d against its own 3D-RFT paths with every wrench doubled (a lab's sand twice as stiff):
    the scale found is near 2, held out it helps, and the model written is 3D and scaled."""
    from dataclasses import replace

    from granular.data import paths3d
    from granular.learning import model3d
    from granular.learning.catalog import load_model

    for name in ("diagonal-sideways", "turning-drag", "vertical-twist"):
        p = paths3d.read(ROOT / "data" / "validation3d" / f"sand_{name}.h5")
        paths3d.write(replace(p, wrench=2.0 * p.wrench), tmp_path / f"{name}.h5")
    run = granular("calibrate", "sand3d", *sorted(tmp_path.glob("*.h5")), "--out", tmp_path / "cal" / "sand2.h5",
                   "--json")
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert 1.8 < result["scale"] < 2.2 and result["held_out_after"] < result["held_out_before"]
    cal, base = model3d.load(tmp_path / "cal" / "sand2.h5"), load_model("sand3d", "3d")
    theta = np.array([[-0.04, 0.3]])
    np.testing.assert_allclose(cal.points(theta), result["scale"] * base.points(theta), rtol=1e-6,
                               atol=1e-9 * np.abs(base.points(theta)).max())
    run = granular("calibrate", "sand3d", tmp_path / "turning-drag.h5", "--out", tmp_path / "x.h5", "--contact",
                   "max-dissipation")
    assert run.returncode != 0 and "data-flow" in run.stderr and not (tmp_path / "x.h5").exists()
