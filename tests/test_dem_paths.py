"""Held-out DEM trajectories (issue 11): the prescribed paths, the 200 Hz resampling, resumability,
and end to end a tiny YADE bed driven along a short path."""
import json
import shutil

import numpy as np
import pytest

from granular.data import dem
from granular.errors import GranularError
from granular.foot import Foot
from conftest import run_group

needs_yade = pytest.mark.skipif(shutil.which("yade") is None,
                                reason="YADE is not installed (tests/setup.sh installs it: apt-get install yade)")


def test_the_validation_paths_are_well_formed_and_fit_the_training_bed():
    assert {"diagonal", "arc", "plunge-drag", "tilted-plunge", "rotate"} <= set(dem.VALIDATION_PATHS)
    scale = np.array(dem.BEADS_VELOCITY_SCALE)
    for name, w in dem.VALIDATION_PATHS.items():
        w = dem.check_path(dem.Bed(), w, Foot(), name)
        assert 0.3 <= w[-1, 0] <= 0.6, name
        assert w[:, 2].min() >= -dem.TRAINING_DEPTH and np.abs(w[:, 3]).max() <= dem.TRAINING_TILT, name
        twist = np.diff(w[:, 1:], axis=0) / np.diff(w[:, :1], axis=0)
        assert np.all(np.abs(twist) <= 2 * scale + 1e-9), f"{name} is far faster than the training runs"
    assert np.ptp(dem.VALIDATION_PATHS["rotate"][:, 3]) == pytest.approx(0.6)
    assert dem.VALIDATION_PATHS["tilted-plunge"][:, 3] == pytest.approx(0.5)


def test_a_path_out_of_the_bed_or_malformed_is_refused():
    bed, foot = dem.Bed(), Foot()
    with pytest.raises(GranularError, match="deep"):
        dem.check_path(bed, [[0, 0, 0, 0], [0.3, 0, -0.2, 0]], foot)
    with pytest.raises(GranularError, match="long"):
        dem.check_path(bed, [[0, 0, 0, 0], [0.3, 0.2, -0.03, 0]], foot)
    with pytest.raises(GranularError, match="long"):   # a tilted foot leans back over the wall
        dem.check_path(bed, [[0, -0.14, 0, 1.0], [0.3, -0.14, -0.06, 1.0]], foot)
    with pytest.raises(GranularError, match="increase"):
        dem.check_path(bed, [[0, 0, 0, 0], [0, 0, -0.01, 0]], foot)
    with pytest.raises(GranularError, match="rows"):
        dem.check_path(bed, [[0, 0, 0]], foot)


def test_resampling_gives_200_hz_keeps_a_constant_and_cuts_noise():
    t = np.arange(0, 0.5, 4.9e-4)    # YADE's record period is not a multiple of 5 ms
    y = np.column_stack([np.full_like(t, 3.5), np.sin(2 * np.pi * 10 * t), np.sin(2 * np.pi * 300 * t)])
    out, z = dem.resample(t, y)
    assert np.allclose(np.diff(out), 1 / dem.PATH_RATE_HZ) and out[0] == 0 and out[-1] <= t[-1]
    assert out[-1] > t[-1] - 1 / dem.PATH_RATE_HZ
    assert np.allclose(z[:, 0], 3.5)
    assert np.max(np.abs(z[20:-20, 1] - np.sin(2 * np.pi * 10 * out[20:-20]))) < 0.01
    assert np.max(np.abs(z[20:-20, 2])) < 0.01


def test_the_commanded_twist_is_the_segments():
    w = dem.VALIDATION_PATHS["plunge-drag"]
    v = dem.path_twist(w, np.array([0.0, 0.1, 0.3, 0.5]))
    assert np.allclose(v, [[0, -0.2, 0], [0, -0.2, 0], [0.2, 0, 0], [0.2, 0, 0]])


def test_resumability_refuses_other_parameters(tmp_path):
    params = {"name": "arc_s1", "waypoints": dem.VALIDATION_PATHS["arc"].tolist(), "seed": 1}
    for suffix in (".csv", ".json"):
        (tmp_path / f"arc_s1{suffix}").write_text("recorded")
    (tmp_path / "arc_s1.params.json").write_text(json.dumps(params))
    assert dem.is_done(params, tmp_path)
    assert not dem.is_done({**params, "waypoints": dem.VALIDATION_PATHS["diagonal"].tolist()}, tmp_path)
    assert not dem.is_done({**params, "seed": 2}, tmp_path)
    dotted = {**params, "name": "plunge_d0.12_phi1.5"}   # not taken for "plunge_d0.csv"
    for suffix in (".csv", ".json", ".params.json"):
        (tmp_path / f"plunge_d0.12_phi1.5{suffix}").write_text(json.dumps(dotted) if "params" in suffix else "recorded")
    assert dem.is_done(dotted, tmp_path)


def test_a_bed_folder_of_another_seed_is_refused_and_an_old_one_is_seed_0(tmp_path):
    for name in ("bed.yade.gz", "bed.yade.gz.json"):
        (tmp_path / name).write_text("{}")
    bed = dem.Bed(600, (0.3, 0.14, 0.3))
    old = {k: v for k, v in dem.asdict(bed).items() if k != "seed"}   # written before beds had seeds
    (tmp_path / "bed.params.json").write_text(json.dumps({**old, "depth": bed.depth}))
    assert dem.prepare_bed(bed, tmp_path) == tmp_path / "bed.yade.gz"
    with pytest.raises(GranularError, match="seed 0"):
        dem.prepare_bed(dem.Bed(600, (0.3, 0.14, 0.3), seed=2), tmp_path)
    assert "seed=P.get(\"seed\")" in dem.BED_SCRIPT


@pytest.mark.slow
@needs_yade
def test_tiny_prescribed_path_run_end_to_end(tmp_path):
    bed = dem.Bed(400, (0.3, 0.14, 0.3), seed=1)
    path = {"tiny": np.array([[0.0, 0.0, 0.0, 0.0], [0.05, 0.005, -0.01, 0.1]])}
    out = tmp_path / "shipped"
    # one YADE thread: a bed prepared on two is not the same bed twice (the threads' sums of forces
    # round in varying order), and in 400 beads the push's end force then varied in sign
    paths = dem.acquire_paths(tmp_path / "runs", [bed], path, workers=1, out=out, threads=1)
    assert [p.endswith("tiny_s1.csv") for p in paths] == [True]
    names = open(paths[0]).readline().strip().split(",")
    assert names == ["t", "x", "z", "phi", "fx", "fz", "tau", "vx", "vz", "omega"]
    rec = np.loadtxt(paths[0], delimiter=",", skiprows=1)
    assert np.allclose(np.diff(rec[:, 0]), 0.005) and len(rec) == 11
    assert np.allclose(rec[:, 1:4], [[0.1 * t, -0.2 * t, 2 * t] for t in rec[:, 0]], atol=1e-6)
    assert np.allclose(rec[:, 7:], [0.1, -0.2, 2.0])
    assert rec[-1, 5] > 0, "pushing down, the beads push back up"
    raw = np.loadtxt(tmp_path / "runs" / "s1" / "tiny_s1.raw.csv", delimiter=",", skiprows=1)
    assert np.median(np.diff(raw[:, 0])) == pytest.approx(dem.RECORD_PERIOD, rel=0.1)
    side = json.loads((out / "tiny_s1.json").read_text())
    assert side["path"] == "tiny" and side["seed"] == 1 and side["medium"] == "beads" and side["seconds"] > 0
    assert side["bed"]["spheres"] > 0 and 0.3 < side["bed"]["packing_measured"] < 0.75
    assert (out / "tiny_s1.csv").read_text() == open(paths[0]).read()
    mtime = (tmp_path / "runs" / "s1" / "tiny_s1.csv").stat().st_mtime_ns
    assert dem.acquire_paths(tmp_path / "runs", [bed], path, workers=1) == paths    # resumed: nothing redone
    assert (tmp_path / "runs" / "s1" / "tiny_s1.csv").stat().st_mtime_ns == mtime
    # the same path on the same bed run softer (``young``, as acquisition runs take it) pushes back less
    params = json.loads((tmp_path / "runs" / "s1" / "tiny_s1.params.json").read_text())
    soft = dem.run_path({**params, "name": "tiny_soft", "young": 1e6}, str(tmp_path / "runs" / "s1"))
    assert 0 < np.loadtxt(soft, delimiter=",", skiprows=1)[-1, 5] < rec[-1, 5]


@pytest.mark.slow
@needs_yade
def test_acquire_dem_paths_on_the_command_line_is_resumable(tmp_path):
    import sys

    out = tmp_path / "validation"
    cmd = [sys.executable, "-m", "granular", "acquire", "dem-paths", "--out", str(out), "--paths", "rotate",
           "--seeds", "1", "--particles", "600", "--box", "0.3", "0.14", "0.3", "--young", "1e7",
           "--workers", "1", "--threads", "1"]
    proc = run_group(cmd, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(p.name for p in out.iterdir()) == ["rotate_s1.csv", "rotate_s1.json"]
    side = json.loads((out / "rotate_s1.json").read_text())
    assert side["path"] == "rotate" and side["seed"] == 1 and side["bed"]["young"] == 1e7
    rec = np.loadtxt(out / "rotate_s1.csv", delimiter=",", skiprows=1)
    assert rec[-1, 0] == pytest.approx(0.6) and rec[-1, 3] == pytest.approx(0.6)
    assert rec[rec[:, 2] < -0.02, 5].mean() > 0, "3 cm deep, the beads hold the foot up"
    raw = tmp_path / "validation_runs" / "s1" / "rotate_s1.csv"
    mtime = raw.stat().st_mtime_ns
    again = run_group(cmd, timeout=600)
    assert again.returncode == 0 and raw.stat().st_mtime_ns == mtime, "resumed: nothing redone"


def test_the_plunge_study_reads_a_profile_and_compares_boxes(tmp_path):
    from granular.data import dem_plunge

    t = np.arange(0, 1.0001, 0.005)
    z = -0.2 * t
    rec = np.column_stack([t, 0 * t, z, 0 * t, 3e3 * z, -4e3 * z, 0 * t])   # |F| = 5 kN per m of depth
    np.savetxt(tmp_path / "run.csv", rec, delimiter=",", header="t,x,z,phi,fx,fz,tau", comments="")
    assert dem_plunge.profile(tmp_path / "run.csv") == pytest.approx(5e3 * dem_plunge.DEPTHS, rel=1e-6)
    meta = {"what": "", "box": "1x1x1", "seed": 1, "spheres": 10, "packing": 0.5, "bed_s": 1, "run_s": 2}
    rows = [{**meta, "bed": b, "path": "upright", "depth": d, "F": k * 5e3 * d}
            for b, k in (("N1", 1.0), ("W1", 0.5)) for d in dem_plunge.DEPTHS]
    text = dem_plunge.report(rows)
    assert "| upright: W1 (1x1x1) / N1 (1x1x1) | 0.50 ± 0% |" in text and "| 1.50 |" in text   # 18 cm over 12 cm
    dem_plunge.plot(rows, tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 0
    for bad in (["--beds", "X9"], ["--beds", "N21", "--paths", "up"]):
        assert dem_plunge.main(["run", "--workdir", str(tmp_path), "--out", str(tmp_path / "o.csv"), *bad]) == 2


def test_the_artefact_study_compares_any_two_variants_cell_by_cell(tmp_path, capsys):
    from granular.data import dem_study

    cells = [(c, d) for c in dem_study.CONFIGS for d in dem_study.DIRECTIONS]
    meta = {"what": "", "spheres": 10, "packing": 0.5, "unbalanced": 0.04, "bed_s": 1, "dt": 1e-5, "run_s": 2,
            "overlap_max": 0.01}
    rows = [{**meta, "variant": v, "reference": ref, "config": c, "direction": d, "fx": 0.0, "fz": k * 100,
             "fx_win": 0.0, "fz_win": k * 100} for v, ref, k in (("A", "", 1.0), ("B", "A", 0.5), ("C", "A", 0.8))
            for c, d in cells]
    dem_study.write_rows(rows, tmp_path / "r.csv")
    assert dem_study.main(["report", str(tmp_path / "r.csv"), "--against", "C:B"]) == 0
    text = capsys.readouterr().out
    assert "| B vs A | " + " | ".join(["50"] * 6) + " | 50 | 50 | -50 ± 0 |" in text
    assert "| C vs B | " + " | ".join(["60"] * 6) + " | 60 | 60 | +60 ± 0 |" in text
    for bad, word in (("C", "not VARIANT:REFERENCE"), ("C:Z", "unknown variant(s) Z")):
        assert dem_study.main(["report", str(tmp_path / "r.csv"), "--against", bad]) == 2
        assert word in capsys.readouterr().err
    assert dem_study.main(["report", str(tmp_path / "r.csv"), "--variants", "A,B"]) == 0
    text = capsys.readouterr().out
    assert "| B vs A |" in text and "| C " not in text
    assert dem_study.main(["report", str(tmp_path / "r.csv"), "--variants", "A,Q"]) == 2


def test_the_preparation_study_drags_each_speed_along_the_same_path():
    """P-v0.05 and P-v0.5 run P-ref's paths (start and θ_des the same, v and t_total scaled inversely);
    only the damping variants carry a damping, and each variant changes one thing of P-ref."""
    from dataclasses import replace

    from granular.data import dem_study

    known = dem_study.variants()
    ref = dem_study.plan("P-ref", known["P-ref"], "bed")
    for name, rate in (("P-v0.05", 0.25), ("P-v0.5", 2.5)):
        for cell, runs in dem_study.plan(name, known[name], "bed").items():
            for (p, _), (q, _) in zip(runs, ref[cell]):
                assert np.allclose(p["v_des"], rate * np.array(q["v_des"])) and np.isclose(p["t_total"] * rate, q["t_total"])
                assert p["theta_des"] == q["theta_des"] and "damping" not in p
    assert all(p["damping"] == 0.0 for runs in dem_study.plan("P-d0", known["P-d0"], "bed").values() for p, _ in runs)
    base = known["P-ref"]
    for name in ("P-psd", "P-pack", "P-s2"):
        assert known[name].bed != base.bed and replace(known[name], bed=base.bed, reference="", what=base.what) == base
