"""DEM acquisition: the geometry checks, and end to end a real YADE bed and two runs on a real Dask cluster."""
import dataclasses
import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
from conftest import run_group

needs_yade = pytest.mark.skipif(shutil.which("yade") is None,
                                reason="YADE is not installed (tests/setup.sh installs it: apt-get install yade)")


def test_a_grid_deeper_than_the_bed_is_refused_before_any_work():
    from granular.data import dem
    from granular.errors import GranularError
    from granular.foot import Foot

    bed = dem.Bed(2850, (0.55, 0.15, 0.4))
    scale = [0.2, 0.2, 0.6]
    dem.check_fits(bed, [[-0.12, 1.0], [-0.06, 0.5]], scale, 0.2, Foot())
    with pytest.raises(GranularError, match="deep"):
        dem.check_fits(bed, [[-0.24, 0.0]], scale, 0.2, Foot())
    with pytest.raises(GranularError, match="long"):
        dem.check_fits(dem.Bed(2850, (0.35, 0.24, 0.4)), [[-0.11, 1.4]], scale, 0.2, Foot())


def test_a_workdir_of_another_bed_is_not_reused(tmp_path):
    from granular.data import dem
    from granular.errors import GranularError

    first = dem.Bed(600, (0.3, 0.14, 0.3))
    for name in ("bed.yade.gz", "bed.yade.gz.json"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "bed.params.json").write_text(json.dumps({**dem.asdict(first), "depth": first.depth}))
    assert dem.prepare_bed(first, tmp_path) == tmp_path / "bed.yade.gz"
    with pytest.raises(GranularError, match="another bed"):
        dem.prepare_bed(dem.Bed(900, (0.3, 0.14, 0.3)), tmp_path)


@needs_yade
def test_yade_past_its_time_limit_is_stopped_with_a_clear_error(tmp_path):
    from granular.data import dem
    from granular.errors import GranularError

    with pytest.raises(GranularError, match="ran past its 1 s on slow"):
        dem._run_yade("import time\ntime.sleep(120)\n", {}, tmp_path, "slow", tmp_path / "never", timeout=1)
    assert (tmp_path / "slow.log").exists(), "YADE's output is kept for the user to read"


def test_a_run_is_done_only_with_the_same_parameters(tmp_path):
    from granular.data import dem

    params = {"name": "run_c001_d00", "theta_des": [-0.03, 0.0]}
    for suffix in (".csv", ".json"):
        (tmp_path / f"run_c001_d00{suffix}").write_text("recorded")
    (tmp_path / "run_c001_d00.params.json").write_text(json.dumps(params))
    assert dem.is_done(params, tmp_path)
    assert not dem.is_done({**params, "theta_des": [-0.06, 0.0]}, tmp_path), "another grid reuses the name"


@pytest.mark.slow
@needs_yade
def test_tiny_dem_acquisition_on_a_dask_cluster(tmp_path):
    out = tmp_path / "beads.h5"
    cmd = [sys.executable, "-m", "granular", "acquire", "dem", "--medium", "beads", "--out", out,
           "--depths", "0,-0.03", "--tilts", "0", "--directions", "26", "--particles", "600",
           "--box", "0.3", "0.14", "0.3", "--t-total", "0.1", "--workers", "2", "--threads", "1"]
    # one YADE thread for the bed: its threads wait by spinning, which starves a test on the other core
    # two runs only: restrict the grid to two directions by pre-seeding the others as done
    runs = tmp_path / "beads_runs"
    from granular.data import dem
    from granular.foot import Foot
    from granular.data.sampling import sphere_directions

    runs.mkdir()
    plan = dem.plan(runs.resolve() / "bed.yade.gz", dem.Bed(600, (0.3, 0.14, 0.3)), [[0.0, 0.0], [-0.03, 0.0]],
                    sphere_directions(26), np.array([0.2, 0.2, 0.6]), 0.1, Foot(), "beads")
    for p in plan[1:-1]:  # all but straight up (first) and down (last): stubs, i.e. failed runs
        (runs / f"{p['name']}.csv").write_text("t,x\n")
        (runs / f"{p['name']}.json").write_text("{}")
        (runs / f"{p['name']}.params.json").write_text(json.dumps(p))
    proc = run_group(cmd, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    from granular.data import dataset

    ds = dataset.read(out)
    j = int(np.flatnonzero(ds.configs[:, 0] < 0)[0])
    assert ds.source == "dem" and ds.valid[j].sum() == 2, "the two real runs are ingested, the stubs skipped"
    up, down = ds.wrenches[j, 0], ds.wrenches[j, 25]  # the grid starts at +z (up) and ends at −z
    assert down[1] > 0, "pushing down, the beads push back up"
    assert np.all(np.isfinite(up))
    assert "skipped" in proc.stderr
    assert json.loads((runs / "bed.yade.gz.json").read_text())["spheres"] > 0
    # resumable: a second call redoes nothing
    again = run_group(cmd, timeout=600)
    assert again.returncode == 0 and "26 runs, 26 already done" in again.stderr


def test_periodic_or_smooth_walled_beds_are_other_beds_and_old_folders_and_runs_still_match(tmp_path):
    from granular.data import dem
    from granular.errors import GranularError

    walled = dem.Bed(600, (0.3, 0.14, 0.3), seed=1)
    for name in ("bed.yade.gz", "bed.yade.gz.json"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "bed.yade.gz.json").write_text(json.dumps({"spheres": 500, "surface_z": 0.1}))
    # written before the periodic and wall options
    old = {k: v for k, v in dem.asdict(walled).items() if k not in ("periodic", "wall_friction")}
    (tmp_path / "bed.params.json").write_text(json.dumps({**old, "depth": walled.depth}))
    assert dem.prepare_bed(walled, tmp_path) == tmp_path / "bed.yade.gz"
    for other in (dict(periodic=True), dict(young=1e7), dict(wall_friction=0.0)):
        with pytest.raises(GranularError, match="another bed"):
            dem.prepare_bed(dataclasses.replace(walled, **other), tmp_path)
    # a path run's parameters describe its bed as runs recorded before the wall option did, unless smooth
    assert "wall_friction" not in dem._bed_summary(walled, tmp_path)
    assert dem._bed_summary(dataclasses.replace(walled, wall_friction=0.0), tmp_path)["wall_friction"] == 0.0


def test_settle_young_and_wall_friction_reach_the_bed(tmp_path, monkeypatch):
    from granular.apps import cli
    from granular.data import dem
    from granular.errors import GranularError

    seen = []

    def record(*args, run_young=None, **kw):   # stands in for YADE: what the command asked for
        seen.append((next(a for a in args + tuple(kw.values()) if isinstance(a, (dem.Bed, list))), run_young))
        raise GranularError("recorded")
    monkeypatch.setattr(dem, "acquire_dataset", record)
    monkeypatch.setattr(dem, "acquire_paths", record)
    monkeypatch.setattr(dem, "yade_command", lambda: "yade")
    for engine, out in (("dem", "a.h5"), ("dem-paths", "v")):
        for extra in ([], ["--settle-young", "1e7"]):
            assert cli.main(["acquire", engine, "--out", str(tmp_path / out), "--young", "2e8", *extra]) == 2
    beds = [b if isinstance(b, dem.Bed) else b[0] for b, _ in seen]
    assert [(b.young, run) for b, (_, run) in zip(beds, seen)] == [(2e8, None), (1e7, 2e8)] * 2
    assert all(b.wall_friction is None for b in beds), "rough walls unless asked"
    assert cli.main(["acquire", "dem", "--out", str(tmp_path / "a.h5"), "--wall-friction", "0"]) == 2
    assert seen[-1][0].wall_friction == 0.0


def test_acquire_refuses_bad_dem_options_in_one_line(tmp_path):
    base = [sys.executable, "-m", "granular", "acquire"]
    cases = [(["dem-paths", "--out", tmp_path / "v", "--paths", "diagonal,zigzag"], "zigzag"),
             (["dem", "--out", tmp_path / "b.h5", "--paths", "arc"], "dem-paths"),
             (["dem-paths", "--out", tmp_path / "v", "--seeds", "1,1"], "distinct"),
             (["dem", "--out", tmp_path / "b.h5", "--young", "-3"], "young"),
             (["dem", "--out", tmp_path / "b.h5", "--periodic", "--wall-friction", "0"], "no walls"),
             (["dem", "--out", tmp_path / "b.h5", "--wall-friction", "-1"], "wall-friction")]
    for args, word in cases:
        proc = subprocess.run(base + [str(a) for a in args], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, (args, proc.stderr)
        assert word in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) <= 3, proc.stderr   # usage line(s) and the one error


@pytest.mark.slow
@needs_yade
def test_smooth_walls_give_the_bed_no_friction_and_rough_walls_do(tmp_path):
    from granular.data import dem

    shear = {}
    for mu in (None, 0.0):
        bed = dem.Bed(400, (0.25, 0.12, 0.3), young=1e7, seed=1, wall_friction=mu)
        dem.prepare_bed(bed, tmp_path / str(mu), threads=1)
        shear[mu] = json.loads((tmp_path / str(mu) / "bed.yade.gz.json").read_text())["wall_shear"]
    assert shear[0.0] < 1e-9, "a smooth wall pushes only along its normal"
    assert 0.05 < shear[None] <= dem.BEADS["friction"] + 1e-6, "a rough wall holds the bed up by friction, to μ"


@pytest.mark.slow
@needs_yade
def test_a_soft_periodic_bed_settles_on_its_floor_and_takes_a_run(tmp_path, monkeypatch):
    from granular.data import dem, ingest
    from granular.foot import Foot

    bed = dem.Bed(600, (0.3, 0.14, 0.3), young=1e7, seed=1, periodic=True)
    reports = []
    monkeypatch.setattr(dem._BedBar, "show", lambda bar, report: reports.append(report))
    dem.prepare_bed(bed, tmp_path, threads=1, progress=True)
    info = json.loads((tmp_path / "bed.yade.gz.json").read_text())
    assert reports, "the bed's progress reached the caller"
    times = [r["t"] for r in reports]
    assert times == sorted(times) and reports[-1]["phase"] == "level", reports[-1]
    last = reports[-1]
    assert last["unbalanced"] <= last["settled"] or last["t"] >= last["until"], "it stopped settled or at its limit"
    assert info["below_floor"] == 0, "no bead falls through the floor of the periodic cell"
    assert info["unbalanced"] < 0.2 and 0.0 < info["overlap_max"] < 0.2
    assert info["spheres"] <= 600 and abs(info["surface_z"] - bed.depth) < 3 * bed.radius
    assert info["dt"] > 4 * 0.7 * bed.radius * np.sqrt(bed.density / 3e8), "the soft bed steps ≥ 4× longer"
    run = dem.plan(dem.bed_file(tmp_path), bed, [[-0.03, 0.0]], np.array([[0.0, -1.0, 0.0]]),
                   np.array([0.2, 0.2, 0.6]), 0.1, Foot(), "beads")[0]
    path = dem.run_one(run, str(tmp_path))
    w, _ = ingest.extract(ingest.read_run(path), Foot(), 50.0)
    assert w[1] > 0, "pushing down, the beads push back up"
    contacts = json.loads((tmp_path / f"{run['name']}.contacts.json").read_text())
    assert len(contacts["overlap_at_pass"]) == 2 and contacts["overlap_at_pass"][0] > 0
    # a batch in one YADE process: the run done is skipped, the two others run on the bed kept in memory
    more = dem.plan(dem.bed_file(tmp_path), bed, [[-0.03, 0.0]], np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0],
                                                                          [0.0, 1.0, 0.0]]),
                    np.array([0.2, 0.2, 0.6]), 0.1, Foot(), "beads")
    mtime = (tmp_path / f"{run['name']}.csv").stat().st_mtime_ns
    results = dem.run_batch(more, str(tmp_path))
    assert [r[0] for r in results] == [p["name"] for p in more] and all(r[1] and not r[2] for r in results)
    assert (tmp_path / f"{run['name']}.csv").stat().st_mtime_ns == mtime, "a run done is not redone"
    drag, up = (ingest.extract(ingest.read_run(r[1]), Foot(), 50.0)[0] for r in results[1:])
    assert drag[0] < 0, "dragged forward, the beads resist backwards"
    assert abs(up[1]) < w[1], "pulled up, the beads hold the foot less than they resist it pushed down"


def test_runs_keep_their_parameters_unless_a_new_option_is_used():
    """Runs planned as before the new options have the same parameters, so old work folders resume."""
    from granular.data import dem
    from granular.data.sampling import sphere_directions
    from granular.foot import Foot

    args = ("/w/bed.yade.gz", dem.Bed(), [[-0.03, 0.5]], sphere_directions(18), np.array([0.2, 0.2, 0.6]), 0.2,
            Foot(), "beads")
    runs = dem.plan(*args)
    assert len(runs) == 18 and set(runs[0]) == {
        "name", "bed", "box", "theta_des", "v_des", "t_total", "foot_radius", "foot_length", "medium", "clearance",
        "insert_speed", "record_period", "velocity_scale"}
    soft = dem.plan(*args, young=1e7)
    assert all(r["young"] == 1e7 for r in soft) and [r["name"] for r in soft] == [r["name"] for r in runs]
    undamped = dem.plan(*args, damping=0.0)
    assert all(r["damping"] == 0.0 and "young" not in r for r in undamped)
    assert all('P.get("damping", newton.damping)' in script for script in (dem.RUN_SCRIPT, dem.PATH_SCRIPT))
    groups = dem._batches(dem.plan(*args[:2], [[-0.03, 0.5], [-0.06, 0.0]], *args[3:]), 5)
    assert [len(g) for g in groups] == [5, 5, 5, 3, 5, 5, 5, 3]
    assert all(len({tuple(r["theta_des"]) for r in g}) == 1 for g in groups), "a batch shares one configuration"
