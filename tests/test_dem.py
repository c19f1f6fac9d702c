"""DEM acquisition: the geometry checks, and end to end a real YADE bed and two runs on a real Dask cluster."""
import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

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
        dem.check_fits(dem.Bed(2850, (0.35, 0.24, 0.4)), [[-0.06, 1.4]], scale, 0.2, Foot())


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
           "--box", "0.3", "0.14", "0.3", "--t-total", "0.1", "--workers", "2"]
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
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
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
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "26 runs, 26 already done" in again.stderr
