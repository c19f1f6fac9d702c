"""Validation runs read alike from CSV, HDF5 and ROS 2 bags (granular.data.trajectory), through ingest's
mapping files: one trajectory in three formats reads to one Trajectory and scores the same."""
import json
import shutil
from types import SimpleNamespace

import h5py
import numpy as np
import pytest

from granular.apps.cli import main
from granular.data import trajectory
from granular.learning.catalog import load_model
from granular.scenarios import validation as val

from test_bad_input import refused
from test_ingest import ANGLE, FOOT, OFFSET, sensor_reading, write_bag

SIDECAR = {"path": "arc", "medium": "sand", "seed": 1, "sensor_offset": OFFSET.tolist(), "sensor_angle": ANGLE}
#: The HDF5 copy is a lab's: its own column names, mm, degrees, kgf, N·mm, and a sensor that reports the
#: foot's force on the medium (sign −1); the twist columns keep their names, in mm/s and deg/s.
MAPPING = ('sign = -1\n[columns]\nt = "time"\nx = "px"\nz = "pz"\nphi = "tilt"\nfx = "Fx"\nfz = "Fz"\ntau = "Ty"\n'
           '[units]\nx = "mm"\nz = "mm"\nphi = "deg"\nfx = "kgf"\nfz = "kgf"\ntau = "N*mm"\n')
LAB = {"t": ("time", 1.0), "x": ("px", 1e3), "z": ("pz", 1e3), "phi": ("tilt", 180 / np.pi),
       "fx": ("Fx", -1 / 9.80665), "fz": ("Fz", -1 / 9.80665), "tau": ("Ty", -1e3),
       "vx": ("vx", 1e3), "vz": ("vz", 1e3), "omega": ("omega", 180 / np.pi)}


def arc(n=400, duration=2.0):
    """A smooth dive and climb with a rocking tilt at 200 Hz: pose and twist of p_center."""
    t = np.linspace(0, duration, n)
    s, rate = np.pi * t / duration, np.pi / duration
    pose = np.column_stack([0.05 * t, -0.02 * (1 - np.cos(s)), 0.2 * np.sin(s)])
    twist = np.column_stack([np.full(n, 0.05), -0.02 * rate * np.sin(s), 0.2 * rate * np.cos(s)])
    return t, pose, twist


@pytest.fixture(scope="module")
def formats(tmp_path_factory):
    """The sand model's own wrench along the arc, as a sensor mounted at OFFSET, ANGLE reads it, written
    as CSV + sidecar (SI, twist columns), HDF5 (lab units via MAPPING) and a ROS 2 bag (no twist)."""
    pytest.importorskip("rosbags")
    root = tmp_path_factory.mktemp("formats")
    t, pose, twist = arc()
    own = val.replay(load_model("sand"), val.Trajectory("arc", "arc", 1, t, pose, twist, np.zeros((len(t), 3))))
    sensor = np.array([sensor_reading(w, p[2]) for w, p in zip(own, pose)])
    cols = {"t": t, "x": pose[:, 0], "z": pose[:, 1], "phi": pose[:, 2], "fx": sensor[:, 0], "fz": sensor[:, 1],
            "tau": sensor[:, 2], "vx": twist[:, 0], "vz": twist[:, 1], "omega": twist[:, 2]}
    paths = {}
    for fmt in ("csv", "h5", "bag"):
        (root / fmt).mkdir()
    paths["csv"] = root / "csv" / "arc.csv"
    np.savetxt(paths["csv"], np.column_stack(list(cols.values())), delimiter=",", header=",".join(cols), comments="")
    (root / "csv" / "arc.json").write_text(json.dumps(SIDECAR))
    paths["h5"] = root / "h5" / "arc.h5"
    with h5py.File(paths["h5"], "w") as f:
        for c, v in cols.items():
            f[LAB[c][0]] = v * LAB[c][1]
        f.attrs.update(SIDECAR)
    (root / "map.toml").write_text(MAPPING)
    paths["bag"] = write_bag(root / "bag", "arc", SimpleNamespace(
        t=t, pose=pose, wrench=sensor, theta_des=np.zeros(2), v_des=np.zeros(3), t_total=2.0,
        sensor_offset=OFFSET, sensor_angle=ANGLE))
    (root / "bag" / "arc.json").write_text(json.dumps(SIDECAR))  # a validation sidecar, not ingest's
    return root, paths, own, twist


def read(root, paths, fmt):
    return trajectory.read(paths[fmt], FOOT, 20.0, root / "map.toml" if fmt == "h5" else None)


def test_csv_hdf5_and_bag_read_to_the_same_trajectory(formats):
    root, paths, own, twist = formats
    csv, h5, bag = (read(root, paths, fmt) for fmt in ("csv", "h5", "bag"))
    assert csv.name == h5.name == bag.name == "arc" and csv.path == h5.path == bag.path == "arc" and bag.seed == 1
    for other, atol in ((h5, 1e-9), (bag, 1e-6)):  # the bag's stamps are float seconds since 2023
        np.testing.assert_allclose(other.t, csv.t, rtol=0, atol=atol)
    np.testing.assert_allclose(h5.pose, csv.pose, atol=1e-12)
    np.testing.assert_allclose(h5.twist, twist, atol=1e-12)  # mm/s and deg/s through the pose's units
    np.testing.assert_allclose(h5.wrench, csv.wrench, atol=1e-9 * np.abs(csv.wrench).max())  # sign −1, kgf, N·mm
    # the bag's pose comes at half the rate, interpolated; its twist is the filtered derivative of the pose
    np.testing.assert_allclose(bag.pose, csv.pose, atol=1e-5)  # (2 dt)²/8 · |φ''| ≈ 6e-6 rad
    inner = slice(20, -20)  # the derivative's ends see the filter's edge
    assert np.abs(bag.twist[inner] - twist[inner]).max() < 0.02 * np.abs(twist).max()
    np.testing.assert_allclose(bag.wrench, csv.wrench, atol=1e-3 * np.abs(csv.wrench).max())
    # the sensor mount and the filter were undone: the measured wrench is the model's own, in F_r
    deep = csv.theta[:, 0] < -trajectory.DEPTH
    assert np.sqrt(np.mean((csv.wrench - own)[deep] ** 2)) < 0.2 * np.sqrt(np.mean(own[deep] ** 2))


def test_the_three_formats_score_the_same(formats, capsys):
    root, paths, _, _ = formats
    scores = {}
    for fmt, path in paths.items():
        mapping = ["--mapping", str(root / "map.toml")] if fmt == "h5" else []
        assert main(["validate", "sand", str(path), "--cutoff", "20", "--json", *mapping]) == 0
        scores[fmt] = json.loads(capsys.readouterr().out)["runs"]["arc"]["model"]
    assert scores["csv"]["mean"] < 0.2  # the model's own wrench, filtered
    for fmt in ("h5", "bag"):
        for c in ("fx", "fz", "tau", "mean"):
            assert scores[fmt][c] == pytest.approx(scores["csv"][c], abs=0.01), (fmt, c, scores)


def _h5(edit):
    def write(root, paths):
        path = root / "bad.h5"
        path.write_bytes(paths["h5"].read_bytes())
        with h5py.File(path, "a") as f:
            edit(f)
        return path, ["--mapping", root / "map.toml"]
    return write


def _bag(edit, mapping=None):
    def write(root, paths):
        path = root / "badbag"
        shutil.copytree(paths["bag"], path)
        (root / "badbag.json").write_text(json.dumps(SIDECAR))
        edit(path, root)
        if mapping:
            (root / "bad.toml").write_text(mapping)
        return path, ["--mapping", root / "bad.toml"] if mapping else []
    return write


def _replace(f, name, value):
    del f[name]
    f[name] = value


def _not_hdf5(root, paths):
    (root / "bad.h5").write_bytes(b"\x89HDF junk" * 10)
    return root / "bad.h5", []


BAD = {
    "not hdf5": (_not_hdf5, "not a readable HDF5 file"),
    "h5 missing column": (_h5(lambda f: f.__delitem__("Fz")), "missing column(s) Fz"),
    "h5 short column": (_h5(lambda f: _replace(f, "Ty", f["Ty"][:-5])), "1-D and of one length"),
    "h5 text column": (_h5(lambda f: _replace(f, "tilt", np.array([b"a"] * 400))), "tilt should be a dataset of numbers"),
    "h5 group": (_h5(lambda f: (f.__delitem__("px"), f.create_group("px"))), "px should be a dataset of numbers"),
    "h5 no path attribute": (_h5(lambda f: f.attrs.__delitem__("path")), "missing required field `path`"),
    "h5 nan": (_h5(lambda f: f["Fx"].__setitem__(100, np.nan)), "NaN or inf"),
    "h5 pose jumps": (_h5(lambda f: f["pz"].__setitem__(200, 500.0)), "the pose jumps"),
    "bag not a bag": (_bag(lambda p, root: [q.unlink() for q in p.iterdir()]), "not a readable ROS 2 bag"),
    "bag no sidecar": (_bag(lambda p, root: (root / "badbag.json").unlink()), "missing metadata sidecar badbag.json"),
    "bag wrong topic": (_bag(lambda p, root: None, '[topics]\nwrench = "/nope"\n'),
                        "no geometry_msgs/msg/WrenchStamped topic named '/nope'"),
    "bag bad sidecar": (_bag(lambda p, root: (root / "badbag.json").write_text('{"path": "arc", "seed": "one"}')),
                        "seed: expected a whole number"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_hdf5_and_bag_runs_get_one_clear_error_and_nothing_is_written(formats, tmp_path, capsys, case):
    root, paths, _, _ = formats
    (tmp_path / "map.toml").write_text(MAPPING)
    make, message = BAD[case]
    path, extra = make(tmp_path, paths)
    line = refused(capsys, tmp_path, "validate", "sand", path, "--plot", tmp_path / "figs", *extra, message=message)
    assert path.name in line
    assert not (tmp_path / "figs").exists()
