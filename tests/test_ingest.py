"""Ingestion of acquisition runs: synthetic runs with known ground truth, noise and a sensor offset."""
import csv
import json
import logging

import h5py
import numpy as np
import pytest

from granular.data import ingest
from granular.data.runs import BadRun

from granular.data import rft
from granular.foot import Foot
from granular.frames import cross2, foot_axis
from granular.data.sampling import sphere_directions

FOOT = Foot()
SCALE = np.array([0.02, 0.02, 0.3])
OFFSET, ANGLE = np.array([0.01, 0.18]), 0.3  # sensor origin in the foot frame, and its mounting angle


def truth(theta, twist):
    return rft.foot_wrench(FOOT, theta, twist[None], zeta=1.2)[0]


def sensor_reading(w_r, phi):
    """The inverse of the extraction: a wrench in F_r seen by the sensor."""
    c, s = np.cos(phi + ANGLE), np.sin(phi + ANGLE)
    f = w_r[:2]
    f_s = np.array([c * f[0] + s * f[1], -s * f[0] + c * f[1]])
    cp, sp = np.cos(phi), np.sin(phi)
    arm = np.array([cp * OFFSET[0] - sp * OFFSET[1], sp * OFFSET[0] + cp * OFFSET[1]]) - FOOT.r_offset * foot_axis(phi)
    return np.array([f_s[0], f_s[1], w_r[2] - float(cross2(arm, f))])


def make_run(tmp_path, name, theta_des, direction, fmt="csv", noise=0.01, rate=200.0, t_total=2.0, seed=0, **bad):
    rng = np.random.default_rng(seed)
    v = direction * SCALE
    t = np.arange(0, t_total, 1 / rate)
    pose_des = np.array([0.0, *theta_des])
    pose = pose_des + np.outer(t - 0.8 * t_total, v)
    w = np.array([sensor_reading(truth(p[1:], v), p[2]) for p in pose])
    w += noise * np.abs(w).max(axis=0) * rng.normal(size=w.shape)
    cols = {"t": t, "x": pose[:, 0], "z": pose[:, 1], "phi": pose[:, 2], "fx": w[:, 0], "fz": w[:, 1], "tau": w[:, 2]}
    cols.update(bad.get("cols", {}))
    for key in bad.get("drop", ()):
        cols.pop(key)
    meta = {"theta_des": list(theta_des), "v_des": v.tolist(), "t_total": t_total, "medium": "sand",
            "sensor_offset": OFFSET.tolist(), "sensor_angle": ANGLE, "velocity_scale": SCALE.tolist()}
    if fmt == "csv":
        path = tmp_path / f"{name}.csv"
        with path.open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(cols)
            writer.writerows(zip(*cols.values()))
        path.with_suffix(".json").write_text(json.dumps(meta))
    else:
        path = tmp_path / f"{name}.h5"
        with h5py.File(path, "w") as f:
            for k, val in cols.items():
                f[k] = val
            f.attrs.update(meta)
    return path, truth(np.asarray(theta_des), v)


DIRS = sphere_directions(26)


@pytest.mark.parametrize("fmt", ["csv", "h5"])
@pytest.mark.parametrize("theta,k", [((-0.03, 0.0), 25), ((-0.05, 0.3), 5), ((-0.04, 0.6), 13), ((-0.02, 0.3), 9)])
def test_extracted_wrench_matches_truth_within_2_percent(tmp_path, fmt, theta, k):
    path, w_true = make_run(tmp_path, "run", theta, DIRS[k], fmt=fmt)
    w, quality = ingest.extract(ingest.read_run(path), FOOT)
    scale = np.abs(w_true).max()
    assert np.abs(w - w_true).max() <= 0.02 * scale, (w, w_true)
    assert not quality["flagged"] and quality["pose_error_s"] < 0.02


def test_mapping_converts_lab_columns_and_units(tmp_path):
    path, w_true = make_run(tmp_path, "lab", (-0.03, 0.3), DIRS[25], noise=0.0)
    rows = list(csv.DictReader(path.open()))
    lab = tmp_path / "lab2.csv"
    with lab.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["time_ms", "px_mm", "pz_mm", "tilt_deg", "Fx_kgf", "Fz_kgf", "Ty_Nmm"])
        for r in rows:
            writer.writerow([float(r["t"]) * 1e3, float(r["x"]) * 1e3, float(r["z"]) * 1e3,
                             np.degrees(float(r["phi"])), float(r["fx"]) / 9.80665, float(r["fz"]) / 9.80665,
                             float(r["tau"]) * 1e3])
    lab.with_suffix(".json").write_text(path.with_suffix(".json").read_text())
    mapping = tmp_path / "map.toml"
    mapping.write_text('[columns]\nt = "time_ms"\nx = "px_mm"\nz = "pz_mm"\nphi = "tilt_deg"\nfx = "Fx_kgf"\n'
                       'fz = "Fz_kgf"\ntau = "Ty_Nmm"\n[units]\nt = "ms"\nx = "mm"\nz = "mm"\nphi = "deg"\n'
                       'fx = "kgf"\nfz = "kgf"\ntau = "N*mm"\n')
    w, _ = ingest.extract(ingest.read_run(lab, ingest.Mapping.load(mapping)), FOOT)
    assert np.abs(w - w_true).max() <= 0.01 * np.abs(w_true).max()


BAD = {
    "missing column": (dict(drop=("fz",)), "missing column(s) fz"),
    "time backwards": (dict(cols={"t": np.r_[np.arange(0, 1, 0.005), np.arange(0, 1, 0.005)]}), "not strictly increasing"),
    "duplicated time": (dict(cols={"t": np.repeat(np.arange(0, 2, 0.01), 2)}), "not strictly increasing"),
    "nan": (dict(cols={"fx": np.r_[np.zeros(100), np.nan, np.zeros(299)]}), "NaN or inf"),
    "too short": (dict(t_total=0.05), "too short"),
    "never reaches": (dict(cols={"z": np.full(400, 0.02)}), "never reaches"),
}


def test_bad_runs_are_reported_and_skipped_and_good_ones_ingested(tmp_path, caplog):
    good, truths = [], {}
    for n, k in enumerate([25, 5, 13]):
        path, w = make_run(tmp_path, f"good{n}", (-0.03, 0.3), DIRS[k], seed=n)
        good.append(path)
        truths[k] = w
    bad = [make_run(tmp_path, f"bad_{name.replace(' ', '_')}", (-0.03, 0.3), DIRS[9], **kw)[0]
           for name, (kw, _) in BAD.items()]
    (tmp_path / "orphan.csv").write_text("t,x\n0,0\n")
    with caplog.at_level(logging.INFO, logger="granular"):
        ds = ingest.assemble(good + bad + [tmp_path / "orphan.csv"])
    messages = [r.getMessage() for r in caplog.records]
    text = "\n".join(messages)
    for name, (_, reason) in BAD.items():
        assert f"bad_{name.replace(' ', '_')}" in text and reason in text, (name, text)
    assert "orphan.csv: missing metadata sidecar" in text
    assert f"skipped {len(BAD) + 1}" in messages[-1]
    j = int(np.flatnonzero(ds.configs[:, 1] == 0.3)[0])  # θ_des (−0.03, 0.3) is p_center's
    assert ds.configs[j, 0] == pytest.approx(-0.03 - ingest.Foot().radius * np.sin(0.3))
    assert ds.valid[j].sum() == 3 and not ds.valid[j, 9]
    for k, w in truths.items():
        assert np.abs(ds.wrenches[j, k] - w).max() <= 0.02 * np.abs(w).max()
    assert np.isfinite(ds.provenance["pose_error_s"][j, 25])


def test_ingest_cli_writes_a_dataset_that_trains(tmp_path):
    import subprocess
    import sys

    paths = []
    for n, (theta, k) in enumerate([((-0.03, 0.0), 25), ((-0.05, 0.0), 25), ((-0.03, 0.3), 5), ((-0.05, 0.3), 13)]):
        paths.append(make_run(tmp_path, f"r{n}", theta, DIRS[k], seed=n)[0])
    out = subprocess.run([sys.executable, "-m", "granular", "ingest", *paths, "--out", tmp_path / "ds.h5"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    from granular.data import dataset

    ds = dataset.read(tmp_path / "ds.h5")
    assert ds.source == "ft-rig" and ds.valid.sum() == 4 + 26  # four runs and the zero-depth row


def test_runs_on_an_existing_datasets_directions_ingest_onto_them(tmp_path):
    """Runs along the shipped Beads set's directions (poles and rings at 0 and ±30°, not a grid of
    sphere_directions): with --directions DATASET they land on its columns, so that a new bed can be
    averaged into it; on the default grid the 30° ones are skipped, saying why."""
    import subprocess
    import sys

    from granular.apps.cli import main
    from granular.data import dataset
    from granular.io.resources import shipped

    beads = shipped("data") / "beads.h5"
    U = dataset.read(beads).directions
    picks = [k for k, u in enumerate(U) if np.isclose(u[1], -0.5)][:2] + [int(np.argmin(U[:, 1]))]  # two 30° down, down
    paths = [make_run(tmp_path, f"r{n}", (-0.03, 0.0), U[k], seed=n)[0] for n, k in enumerate(picks)]
    assert main(["ingest", *map(str, paths), "--directions", str(beads), "--out", str(tmp_path / "on.h5")]) == 0
    ds = dataset.read(tmp_path / "on.h5")
    np.testing.assert_array_equal(ds.directions, U)
    assert ds.valid[ds.configs[:, 0] < 0].sum() == 3 and ds.valid[ds.configs[:, 0] < 0][0, picks].all()
    out = subprocess.run([sys.executable, "-m", "granular", "ingest", *paths, "--out", tmp_path / "grid.h5"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "is not one of the 26 grid directions" in out.stderr
    assert dataset.read(tmp_path / "grid.h5").valid[1:].sum() == 1


@pytest.mark.parametrize("fmt", ["csv", "h5"])
def test_inspect_a_raw_run_shows_its_extraction(tmp_path, fmt):
    import subprocess
    import sys

    path, w_true = make_run(tmp_path, "run", (-0.04, 0.3), DIRS[5], fmt=fmt)
    out = subprocess.run([sys.executable, "-m", "granular", "inspect", path, "--json", "--plot", tmp_path / "run.png"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["kind"] == "acquisition run" and not summary["flagged"]
    assert np.abs(np.array(summary["wrench_F_r"]) - w_true).max() <= 0.02 * np.abs(w_true).max()
    assert (tmp_path / "run.png").stat().st_size > 10_000


def write_bag(tmp_path, name, run, pose_every=2):
    """The run as a ROS 2 bag: WrenchStamped at the run's rate, PoseStamped at a lower one."""
    from rosbags.rosbag2 import Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS2_HUMBLE)
    T = ts.types
    bag = tmp_path / name

    def header(t):
        t = 1_700_000_000.0 + t
        return T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=int(t), nanosec=int(t % 1 * 1e9)),
                                        frame_id="foot")

    with Writer(bag, version=8) as writer:
        wc = writer.add_connection("/ft/wrench", "geometry_msgs/msg/WrenchStamped", typestore=ts)
        pc = writer.add_connection("/foot/pose", "geometry_msgs/msg/PoseStamped", typestore=ts)
        for k, t in enumerate(run.t):
            fx, fz, tau = run.wrench[k]
            msg = T["geometry_msgs/msg/WrenchStamped"](header=header(t), wrench=T["geometry_msgs/msg/Wrench"](
                force=T["geometry_msgs/msg/Vector3"](x=fx, y=0.0, z=fz),
                torque=T["geometry_msgs/msg/Vector3"](x=0.0, y=-tau, z=0.0)))
            writer.write(wc, int(t * 1e9), ts.serialize_cdr(msg, msg.__msgtype__))
            if k % pose_every == 0 or k == len(run.t) - 1:
                x, z, phi = run.pose[k]
                pose = T["geometry_msgs/msg/Pose"](position=T["geometry_msgs/msg/Point"](x=x, y=0.0, z=z),
                                                   orientation=T["geometry_msgs/msg/Quaternion"](
                                                       x=0.0, y=-np.sin(phi / 2), z=0.0, w=np.cos(phi / 2)))
                msg = T["geometry_msgs/msg/PoseStamped"](header=header(t), pose=pose)
                writer.write(pc, int(t * 1e9), ts.serialize_cdr(msg, msg.__msgtype__))
    (tmp_path / f"{name}.json").write_text(json.dumps({
        "theta_des": run.theta_des.tolist(), "v_des": run.v_des.tolist(), "t_total": run.t_total,
        "medium": "sand", "sensor_offset": run.sensor_offset.tolist(), "sensor_angle": run.sensor_angle}))
    return bag


def test_ros2_bag_run_matches_truth_within_2_percent(tmp_path):
    pytest.importorskip("rosbags")
    path, w_true = make_run(tmp_path, "csvrun", (-0.04, 0.6), DIRS[13])
    bag = write_bag(tmp_path, "bagrun", ingest.read_run(path))
    w, quality = ingest.extract(ingest.read_run(bag), FOOT)
    assert np.abs(w - w_true).max() <= 0.02 * np.abs(w_true).max(), (w, w_true)
    assert not quality["flagged"]
    topics = tmp_path / "topics.toml"
    topics.write_text('[topics]\nwrench = "/nope"\n')
    with pytest.raises(BadRun, match="no geometry_msgs/msg/WrenchStamped topic named '/nope'"):
        ingest.read_run(bag, ingest.Mapping.load(topics))
    (tmp_path / "bagrun.json").unlink()
    with pytest.raises(BadRun, match="missing metadata sidecar"):
        ingest.read_run(bag)
