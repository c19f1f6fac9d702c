"""6-axis ingestion: synthetic runs of a known 3D-RFT wrench, seen by a sensor mounted off p_center and
turned, must come back as that wrench in F_c3 about p_r; bad runs are skipped, bad setups refused."""
import csv
import json
import logging

import h5py
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from granular.apps.cli import main
from granular.data import dataset as wd
from granular.data import ingest, ingest3d, rft3d
from granular.data.runs import BadRun
from granular.data.media import medium
from granular.data.sampling import sphere_directions_3d
from granular.data.synth import velocity_scale_3d
from granular.errors import GranularError
from granular.foot import Foot
from granular.frames3d import wrench_about

FOOT = Foot()
SAND = medium("sand")
SCALE = velocity_scale_3d(SAND.velocity_scale)  # m/s ×3, rad/s ×3
DIRS = sphere_directions_3d(72)
POSITION, RPY = np.array([0.02, -0.015, 0.18]), np.array([0.3, -0.2, 0.9])  # the sensor on the foot (m, rad)
WRENCH = ingest3d.WRENCH
MAPPING = ('wrench_space = "3d"\n[sensor]\nposition = [0.02, -0.015, 0.18]\norigin = "p_center"\n'
           'rpy = [0.3, -0.2, 0.9]\n')


def truth(theta, twist):
    """The medium's wrench on the foot in F_c3 about p_r (3D-RFT in sand)."""
    if theta[0] >= 0:
        return np.zeros(6)
    return rft3d.foot_wrench(FOOT, theta, np.asarray(twist)[None], SAND.zeta, SAND.coeffs)[0]


def sensor_reading(w_r, phi, position=POSITION, rotation=None, origin="p_center"):
    """What the sensor reads for the wrench w_r, worked out apart from the code under test: the rotations by
    scipy (the tilt φ is a turn about −y, the mount's rpy fixed-axis x, y, z) and the torque moved from p_r to
    the sensor origin by frames3d.wrench_about."""
    tilt = Rotation.from_rotvec([0.0, -phi, 0.0])
    to_c3 = tilt * (Rotation.from_euler("xyz", RPY) if rotation is None else rotation)  # sensor axes → F_c3
    p_r = FOOT.r_offset * tilt.apply([0.0, 0.0, 1.0])  # from p_center
    p_sensor = tilt.apply(position) + (p_r if origin == "p_r" else 0.0)
    torque = w_r[3:] + wrench_about(w_r[:3], p_r, p_sensor)[3:]
    return np.concatenate([to_c3.inv().apply(w_r[:3]), to_c3.inv().apply(torque)])


def write_run(path, cols, meta, fmt):
    if fmt == "csv":
        with path.open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(cols)
            writer.writerows(zip(*cols.values()))
        path.with_suffix(".json").write_text(json.dumps(meta))
    else:
        with h5py.File(path, "w") as f:
            for k, v in cols.items():
                f[k] = v
            f.attrs.update({k: np.asarray(v) if isinstance(v, list) else v for k, v in meta.items()})
    return path


def make_run(tmp_path, name, theta_des, direction, fmt="csv", noise=0.01, rate=200.0, t_total=2.0, seed=0,
             mount=None, twist_channels=False, **bad):
    """A 6-axis run at θ_des along ``direction`` (unit, scaled by SCALE): the true wrench varies linearly in
    time through its value at the pass (0.8·t_total), the pose moves at the twist; returns (path, truth)."""
    rng = np.random.default_rng(seed)
    v = np.asarray(direction) * SCALE
    t = np.arange(0, t_total, 1 / rate)
    s = t - 0.8 * t_total
    # p_center's height: θ_des's d is the foot's lowest point's (frames3d); φ̇ = −ω_y (about −y)
    z, phi = rft3d.center_height(Foot(), theta_des) + v[2] * s, theta_des[1] - v[4] * s
    w_true = truth(np.asarray(theta_des), v)
    h = 0.05
    rate_w = (truth((theta_des[0] + v[2] * h, theta_des[1] - v[4] * h), v)
              - truth((theta_des[0] - v[2] * h, theta_des[1] + v[4] * h), v)) / (2 * h)
    kw = {} if mount is None else mount
    w = np.array([sensor_reading(w_true + si * rate_w, p, **kw) for si, p in zip(s, phi)])
    w += noise * np.abs(w).max(axis=0) * rng.normal(size=w.shape)
    cols = {"t": t, "x": v[0] * s, "y": v[1] * s, "z": z, "phi": phi, **dict(zip(WRENCH, w.T))}
    if twist_channels:
        cols.update({c: v[k] + 0.02 * np.abs(v).max() * rng.normal(size=len(t)) for k, c in enumerate(ingest3d.TWIST)})
    cols.update(bad.get("cols", {}))
    for key in bad.get("drop", ()):
        cols.pop(key)
    meta = {"theta_des": list(theta_des), "v_des": v.tolist(), "t_total": t_total, "medium": "sand",
            "velocity_scale": SCALE.tolist(), **bad.get("meta", {})}
    for key in bad.get("drop_meta", ()):
        meta.pop(key)
    return write_run(tmp_path / f"{name}.{fmt}", cols, meta, fmt), w_true


def mapping(tmp_path, text=MAPPING, name="map3d.toml"):
    path = tmp_path / name
    path.write_text(text)
    return ingest.Mapping.load(path), path


def close(w, w_true, rel):
    return np.abs(w - w_true).max() <= rel * np.abs(w_true).max()


CASES = [((-0.03, 0.0), 0), ((-0.05, 0.3), 20), ((-0.04, 0.6), 45), ((-0.02, 0.3), 70)]


def cell(n):
    """(θ_des, unit direction) of CASES[n]."""
    theta, k = CASES[n]
    return theta, DIRS[k]


@pytest.mark.parametrize("fmt", ["csv", "h5"])
@pytest.mark.parametrize("theta,k", CASES)
def test_extracted_3d_wrench_is_the_true_one_in_F_c3_about_p_r(tmp_path, fmt, theta, k):
    m, _ = mapping(tmp_path)
    assert isinstance(m, ingest3d.Mapping3D)
    path, w_true = make_run(tmp_path, "run", theta, DIRS[k], fmt=fmt)
    w, quality = ingest.extract(ingest.read_run(path, m), FOOT)  # the planar entry points dispatch
    assert close(w, w_true, 0.02), (w, w_true)
    assert not quality["flagged"] and quality["pose_error_s"] < 0.02
    exact, _ = make_run(tmp_path, "exact", theta, DIRS[k], fmt=fmt, noise=0.0)
    assert close(ingest3d.extract(ingest3d.read_run(exact, m), FOOT)[0], w_true, 2e-3)


def test_a_wrong_mount_gives_a_wrong_wrench(tmp_path):
    """The test's truth is sensitive to the mount: the right one recovers it, a mount without the
    rotation or without the offset does not."""
    path, w_true = make_run(tmp_path, "run", (-0.04, 0.6), DIRS[45], noise=0.0)
    right, _ = mapping(tmp_path)
    unturned, _ = mapping(tmp_path, MAPPING.replace("rpy = [0.3, -0.2, 0.9]", "rpy = [0, 0, 0]"), "a.toml")
    at_center, _ = mapping(tmp_path, MAPPING.replace("[0.02, -0.015, 0.18]", "[0, 0, 0]"), "b.toml")
    assert close(ingest3d.extract(ingest3d.read_run(path, right))[0], w_true, 2e-3)
    for wrong in (unturned, at_center):
        assert not close(ingest3d.extract(ingest3d.read_run(path, wrong))[0], w_true, 0.05)


def test_lab_columns_units_and_a_per_run_matrix_mount_about_p_r(tmp_path):
    """A sidecar's own mount (a matrix, measured from p_r) overrides the mapping's; kN, N·mm, mm, deg, ms."""
    R = Rotation.from_euler("zyx", [0.4, 0.1, -0.25])
    position = np.array([0.01, 0.03, -0.05])
    path, w_true = make_run(tmp_path, "lab", (-0.04, 0.3), DIRS[30], noise=0.0,
                            mount=dict(position=position, rotation=R, origin="p_r"),
                            meta={"sensor_offset": position.tolist(), "sensor_origin": "p_r",
                                  "sensor_matrix": R.as_matrix().tolist()})
    rows = list(csv.DictReader(path.open()))
    lab = tmp_path / "lab2.csv"
    scale = {"t": 1e3, "z": 1e3, "phi": 180 / np.pi, "fx": 1e-3, "fy": 1e-3, "fz": 1e-3, "tx": 1e3, "ty": 1e3,
             "tz": 1e3}
    with lab.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow([f" {c.upper()}_lab " for c in scale])  # spaces around names are fine
        writer.writerows([[float(r[c]) * f for c, f in scale.items()] for r in rows])
    lab.with_suffix(".json").write_text(path.with_suffix(".json").read_text())
    units = {"t": "ms", "z": "mm", "phi": "deg", "fx": "kN", "fy": "kN", "fz": "kN", "tx": "N*mm", "ty": "N*mm",
             "tz": "N*mm"}
    m, _ = mapping(tmp_path, MAPPING + "[columns]\n" + "".join(f'{c} = "{c.upper()}_lab"\n' for c in scale)
                   + "[units]\n" + "".join(f'{c} = "{u}"\n' for c, u in units.items()))
    assert close(ingest3d.extract(ingest3d.read_run(lab, m))[0], w_true, 2e-3)


def test_direction_measured_by_twist_channels_when_the_run_gives_no_v_des(tmp_path):
    m, _ = mapping(tmp_path)
    path, w_true = make_run(tmp_path, "measured", (-0.03, 0.3), DIRS[50], twist_channels=True, drop_meta=("v_des",))
    run = ingest3d.read_run(path, m)
    assert run.measured and np.allclose(run.v_des, DIRS[50] * SCALE, atol=0.01 * SCALE.max())
    ds = ingest.assemble([path], mapping=m, m=72)
    j = int(np.flatnonzero(ds.configs[:, 0] < 0)[0])
    assert ds.valid[j].sum() == 1 and ds.valid[j, 50] and close(ds.wrenches[j, 50], w_true, 0.02)
    bare, _ = make_run(tmp_path, "bare", (-0.03, 0.3), DIRS[50], drop_meta=("v_des",))
    with pytest.raises(BadRun, match="no v_des in the metadata, and the record lacks the twist column"):
        ingest3d.read_run(bare, m)


BAD = {
    "missing tz": (dict(drop=("tz",)), "missing column(s) tz"),
    "nan": (dict(cols={"fy": np.r_[np.zeros(100), np.nan, np.zeros(299)]}), "NaN or inf"),
    "time backwards": (dict(cols={"t": np.r_[np.arange(0, 1, 0.005), np.arange(0, 1, 0.005)]}),
                       "not strictly increasing"),
    "never reaches": (dict(cols={"z": np.full(400, 0.02)}), "never reaches"),
    "off the set": (dict(meta={"v_des": (SCALE * np.r_[0.6, 0.8, 0, 0, 0, 0]).tolist()}), "is not one of the 72"),
    "bad matrix": (dict(meta={"sensor_offset": [0, 0, 0], "sensor_matrix": [[1, 0, 0], [0, 1, 0], [0, 0, 2]]}),
                   "not a rotation"),
}


def test_a_3d_batch_writes_a_3d_dataset_and_skips_bad_runs(tmp_path, caplog):
    good, truths = [], {}
    for n, (theta, k) in enumerate(CASES):
        path, w = make_run(tmp_path, f"good{n}", theta, DIRS[k], fmt="h5" if n % 2 else "csv", seed=n)
        good.append(path)
        truths[(theta, k)] = w
    repeat, _ = make_run(tmp_path, "again", *cell(0), seed=9)  # a second trial of one cell: averaged
    bad = [make_run(tmp_path, f"bad_{name.replace(' ', '_')}", (-0.03, 0.3), DIRS[9], **kw)[0]
           for name, (kw, _) in BAD.items()]
    (tmp_path / "orphan.csv").write_text("t,z\n0,0\n")
    out, map_path = tmp_path / "ds3d.h5", mapping(tmp_path)[1]
    with caplog.at_level(logging.INFO, logger="granular"):
        assert main(["ingest", *map(str, good + [repeat] + bad + [tmp_path / "orphan.csv"]), "--mapping",
                     str(map_path), "--out", str(out)]) == 0
    text = "\n".join(r.getMessage() for r in caplog.records)
    for name, (_, reason) in BAD.items():
        assert f"bad_{name.replace(' ', '_')}" in text and reason in text, (name, text)
    assert "orphan.csv: missing metadata sidecar" in text and f"skipped {len(BAD) + 1}" in text
    with pytest.raises(GranularError, match="a 3D .6-axis. dataset, where a planar"):
        wd.read(out)
    ds = wd.read(out, kind="3d")
    assert ds.kind == "3d" and ds.source == "ft-rig" and ds.medium == "sand"
    np.testing.assert_array_equal(ds.directions, DIRS)
    np.testing.assert_allclose(ds.velocity_scale, SCALE)
    assert ds.valid[ds.configs[:, 0] < 0].sum() == len(CASES) and ds.valid[np.all(ds.configs == 0, axis=1)].all()
    for (theta, k), w in truths.items():
        j = int(np.flatnonzero(np.all(np.isclose(ds.configs, theta), axis=1))[0])
        assert ds.valid[j, k] and close(ds.wrenches[j, k], w, 0.02)
    j0 = int(np.flatnonzero(np.all(np.isclose(ds.configs, CASES[0][0]), axis=1))[0])
    assert ds.provenance["trials"][j0, CASES[0][1]] == 2 and ds.provenance["trial_spread"].shape == ds.wrenches.shape
    assert np.isfinite(ds.provenance["pose_error_s"][j0, CASES[0][1]])
    assert len(json.loads(ds.provenance["skipped"])) == len(BAD) + 1


def test_the_cli_ingests_3d_runs(tmp_path):
    """The invocation data/README.md gives, in a process of its own."""
    import subprocess
    import sys

    paths = [make_run(tmp_path, f"r{n}", theta, DIRS[k], seed=n)[0] for n, (theta, k) in enumerate(CASES)]
    map_path = mapping(tmp_path)[1]
    out = subprocess.run([sys.executable, "-m", "granular", "ingest", *paths, "--mapping", map_path, "--directions",
                          "72", "--out", tmp_path / "ds.h5"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert wd.read(tmp_path / "ds.h5", kind=None).valid.sum() == len(CASES) + 72


def refused(tmp_path, args, match):
    """``granular ARGS``: exit status 2, one line naming the problem, no dataset written."""
    import io
    from contextlib import redirect_stderr

    err = io.StringIO()
    with redirect_stderr(err):
        assert main([str(a) for a in args]) == 2
    lines = [line for line in err.getvalue().splitlines() if line.strip()]
    assert len(lines) == 1 and match in lines[0] and "Traceback" not in err.getvalue(), err.getvalue()
    assert not (tmp_path / "out.h5").exists()
    return lines[0]


MAPPING_ERRORS = {
    "five of six": ('[columns]\nfx = "Fx"\nfy = "Fy"\nfz = "Fz"\ntx = "Tx"\nty = "Ty"\n',
                    "names fx, fy, fz, tx, ty but not tz"),
    "non-unit directions": ('wrench_space = "3d"\ndirections = [[1, 0, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0]]\n',
                            "direction 1 has norm 1.41421; 3D directions must be unit vectors on the sphere of ℝ⁶"),
    "planar with 6-axis keys": ('wrench_space = "planar"\n[columns]\ntz = "Tz"\n', 'wrench_space = "planar", but'),
    "a force unit for a torque": ('wrench_space = "3d"\n[units]\ntx = "kN"\n', "units.tx = 'kN' is a unit of force"),
    "planar channel": ('wrench_space = "3d"\n[columns]\ntau = "T"\n', "choose t, z, phi, fx"),
    "no orientation": ('wrench_space = "3d"\n[sensor]\nposition = [0, 0, 0.1]\n', "rpy [roll, pitch, yaw]"),
    "3d grid size": ('wrench_space = "3d"\ndirections = 26\n', "one of 12, 72, 232"),
}


@pytest.mark.parametrize("case", MAPPING_ERRORS)
def test_bad_3d_mappings_are_one_line_and_nothing_is_written(tmp_path, case):
    text, match = MAPPING_ERRORS[case]
    path, _ = make_run(tmp_path, "run", *cell(1))
    (tmp_path / "bad.toml").write_text(text)
    line = refused(tmp_path, ["ingest", path, "--mapping", tmp_path / "bad.toml", "--out", tmp_path / "out.h5"], match)
    assert "bad.toml" in line


def test_a_planar_mapping_on_3d_runs_is_refused(tmp_path):
    paths = [make_run(tmp_path, f"r{n}", theta, DIRS[k])[0] for n, (theta, k) in enumerate(CASES[:2])]
    with pytest.raises(ingest3d.WrongSpace, match="r0.csv: a 3D .6-axis. run, read with a planar mapping"):
        ingest.assemble(paths)  # no mapping: planar
    refused(tmp_path, ["ingest", *paths, "--out", tmp_path / "out.h5"], "a 3D (6-axis) run, read with a planar mapping")
    (tmp_path / "planar.toml").write_text('[columns]\nfx = "fx"\n')
    refused(tmp_path, ["ingest", *paths, "--mapping", tmp_path / "planar.toml", "--out", tmp_path / "out.h5"],
            "read with a planar mapping")


def test_a_3d_mapping_on_planar_runs_is_refused(tmp_path):
    t = np.arange(0, 2, 0.005)
    cols = {"t": t, "x": 0 * t, "z": -0.03 + 0 * t, "phi": 0 * t, "fx": 0 * t, "fz": 1 + 0 * t, "tau": 0 * t}
    planar = write_run(tmp_path / "planar.csv", cols, {"theta_des": [-0.03, 0.0], "v_des": [0.02, 0, 0],
                                                       "t_total": 2.0, "sensor_offset": [0, 0], "sensor_angle": 0.0},
                       "csv")
    good, _ = make_run(tmp_path, "good", *cell(1))
    map_path = mapping(tmp_path)[1]
    refused(tmp_path, ["ingest", good, planar, "--mapping", map_path, "--out", tmp_path / "out.h5"],
            "planar.csv: a planar run (fx, fz, tau), read with the 3D mapping")


def test_a_run_without_a_mount_is_skipped_unless_assumed_at_p_center(tmp_path, caplog):
    m, _ = mapping(tmp_path, 'wrench_space = "3d"\n')
    mount = dict(position=np.zeros(3), rotation=Rotation.identity())
    path, w_true = make_run(tmp_path, "run", *cell(2), noise=0.0, mount=mount)
    with pytest.raises(BadRun, match="no sensor mount"):
        ingest3d.read_run(path, m)
    assumed = ingest3d.Mapping3D.load("m.toml", {"wrench_space": "3d"}, assume_sensor_at_p_center=True)
    assert close(ingest3d.extract(ingest3d.read_run(path, assumed))[0], w_true, 2e-3)


def test_mapping_directions_from_a_list_or_a_3d_dataset(tmp_path):
    axes = sphere_directions_3d(12)
    m, _ = mapping(tmp_path, MAPPING.replace('"3d"\n', '"3d"\ndirections = ' + json.dumps(axes.tolist()) + "\n", 1))
    path, w_true = make_run(tmp_path, "run", (-0.03, 0.3), axes[4])
    ds = ingest.assemble([path], mapping=m)  # the CLI's default --directions (26, planar) defers to the mapping
    np.testing.assert_array_equal(ds.directions, axes)
    assert close(ds.wrenches[1, 4], w_true, 0.02)
    wd.write(ds, tmp_path / "axes.h5")
    m2, _ = mapping(tmp_path, MAPPING.replace('"3d"\n', '"3d"\ndirections = "axes.h5"\n', 1), "m2.toml")
    np.testing.assert_array_equal(m2.directions, axes)
    with pytest.raises(GranularError, match="--directions: 34 directions; a 3D acquisition samples one of"):
        ingest.assemble([path], mapping=m, m=34)


def test_inspect_shows_a_3d_runs_extraction_and_refuses_its_figure(tmp_path, capsys):
    path, w_true = make_run(tmp_path, "run", *cell(1))
    map_path = mapping(tmp_path)[1]
    assert main(["inspect", str(path), "--mapping", str(map_path), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["kind"] == "acquisition run" and close(np.array(summary["wrench_F_r"]), w_true, 0.02)
    refused(tmp_path, ["inspect", path, "--mapping", map_path, "--plot", tmp_path / "run.png"], "a 3D (6-axis) run")


def write_bag(tmp_path, name, run):
    """A 3D run as a ROS 2 bag: WrenchStamped (six components) at the run's rate, PoseStamped at half."""
    from rosbags.rosbag2 import Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS2_HUMBLE)
    T = ts.types
    bag = tmp_path / name

    def header(t):
        t = 1_700_000_000.0 + t
        return T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=int(t), nanosec=int(t % 1 * 1e9)),
                                        frame_id="foot")

    vec = T["geometry_msgs/msg/Vector3"]
    with Writer(bag, version=8) as writer:
        wc = writer.add_connection("/ft/wrench", "geometry_msgs/msg/WrenchStamped", typestore=ts)
        pc = writer.add_connection("/foot/pose", "geometry_msgs/msg/PoseStamped", typestore=ts)
        for k, t in enumerate(run.t):
            w = run.wrench[k]
            msg = T["geometry_msgs/msg/WrenchStamped"](header=header(t), wrench=T["geometry_msgs/msg/Wrench"](
                force=vec(x=w[0], y=w[1], z=w[2]), torque=vec(x=w[3], y=w[4], z=w[5])))
            writer.write(wc, int(t * 1e9), ts.serialize_cdr(msg, msg.__msgtype__))
            if k % 2 == 0 or k == len(run.t) - 1:
                z, phi = run.pose[k]
                pose = T["geometry_msgs/msg/Pose"](position=T["geometry_msgs/msg/Point"](x=0.0, y=0.0, z=z),
                                                   orientation=T["geometry_msgs/msg/Quaternion"](
                                                       x=0.0, y=-np.sin(phi / 2), z=0.0, w=np.cos(phi / 2)))
                msg = T["geometry_msgs/msg/PoseStamped"](header=header(t), pose=pose)
                writer.write(pc, int(t * 1e9), ts.serialize_cdr(msg, msg.__msgtype__))
    (tmp_path / f"{name}.json").write_text(json.dumps({
        "theta_des": run.theta_des.tolist(), "v_des": run.v_des.tolist(), "t_total": run.t_total, "medium": "sand"}))
    return bag


def test_ros2_bag_3d_run_matches_truth(tmp_path):
    pytest.importorskip("rosbags")
    m, _ = mapping(tmp_path)
    path, w_true = make_run(tmp_path, "csvrun", *cell(2))
    bag = write_bag(tmp_path, "bagrun", ingest3d.read_run(path, m))
    w, quality = ingest.extract(ingest.read_run(bag, m), FOOT)
    assert close(w, w_true, 0.02) and not quality["flagged"], (w, w_true)
    with pytest.raises(ingest3d.WrongSpace, match="bagrun: a 3D .6-axis. run, read with a planar mapping"):
        ingest.read_run(bag)


def test_a_planar_mount_is_the_3d_mount_the_readme_says():
    """sensor_offset (x, z) and sensor_angle α are position (x, 0, z) and rpy (0, −α, 0): on the x–z slice the
    3D transform gives the planar one (frames3d.to_3d: planar (f_x, f_z, τ) is (f_x, 0, f_z, 0, −τ, 0))."""
    from granular.frames3d import to_3d, to_planar

    offset, alpha, phi = np.array([0.01, 0.18]), 0.3, 0.4
    w_s = np.array([12.0, -30.0, 1.5])
    planar = ingest.to_reference(w_s, phi, offset, alpha, FOOT)[0]
    mount = ingest3d.Mount(np.array([offset[0], 0.0, offset[1]]), ingest3d.rpy_matrix(0.0, -alpha, 0.0))
    spatial = ingest3d.to_reference(to_3d(w_s), phi, mount, FOOT)[0]
    np.testing.assert_allclose(spatial, to_3d(planar), atol=1e-12)
    np.testing.assert_allclose(to_planar(spatial), planar, atol=1e-12)


def test_the_readme_example_mapping_loads(tmp_path):
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "data" / "README.md").read_text()
    section = text.split("## 6-axis (3D) acquisition runs", 1)[1]
    example = section.split("```toml\n", 1)[1].split("```", 1)[0]
    m, _ = mapping(tmp_path, example)
    assert isinstance(m, ingest3d.Mapping3D) and m.factor("fx") == 1e3 and m.columns["tz"] == "Tz"
    np.testing.assert_allclose(m.mount.rotation @ [1.0, 0, 0], [0, 1.0, 0], atol=1e-7)  # turned 90° about the axis
    np.testing.assert_allclose(m.mount.position, [0, 0, 0.18])
