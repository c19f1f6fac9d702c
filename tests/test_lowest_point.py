"""θ's d is the foot's lowest point (issue 49): a tilted foot meets the medium from the moment its
edge is buried, in the data, the models, detection, validation and the simulation."""
from pathlib import Path

import h5py
import numpy as np
import pytest

from granular.contact.detection import Feet, FootContact, detect
from granular.data import ingest
from granular.data import dataset as wd
from granular.data import rft
from granular.data.media import medium
from granular.dynamics import terrain
from granular.dynamics.multibody import Body, MultiBody
from granular.foot import Foot
from granular.frames import center_height, lowest_height
from granular.learning import model as wm
from granular.learning.catalog import load_model
from granular.scenarios import scenario as scenarios

ROOT = Path(__file__).resolve().parents[1]
R = Foot().radius
#: The Beads model's error on the held-out edge cell (mean over f_x, f_z, τ): measured 0.67 (0.54, 0.54,
#: 0.93); 0.85 before the three cells of the same bed at p_center's depth 0 joined the data.
NRMSE_EDGE = 0.75


def test_lowest_height_inverts_center_height():
    d, phi = np.array([-0.03, 0.0, 0.01]), np.array([0.5, -1.2, 0.0])
    h = center_height(d, phi, R)
    np.testing.assert_allclose(h, d + R * np.abs(np.sin(phi)))
    np.testing.assert_allclose(lowest_height(h, phi, R), d)


def test_detection_measures_d_at_the_lowest_point():
    """p_center 1.4 cm above the surface at φ = ±0.5: the rim is R sin 0.5 = 2.4 cm below it, so
    the foot is 1 cm deep and in contact; upright at the same height it is not."""
    mb, feet = MultiBody((Body("foot", 7.357, 0.061, com=(0.0, 0.15)),)), Feet((FootContact("foot", 0),))
    ground = terrain.flat(0.0)
    for angle in (0.5, -0.5):
        f = detect(mb, feet, ground, mb.frames(np.array([0.0, 0.014, angle])))
        assert f.theta[0, 0] == pytest.approx(0.014 - R * np.sin(0.5))
        assert f.active[0]
    assert not detect(mb, feet, ground, mb.frames(np.array([0.0, 0.014, 0.0]))).active[0]
    # a round foot touches at its arc's lowest point, whatever its body's angle
    round_ = Feet((FootContact("arc", 0, roll_radius=0.2),))
    f = detect(mb, round_, ground, mb.frames(np.array([0.0, 0.25, 0.3])))
    assert f.theta[0, 0] == pytest.approx(0.05) and f.theta[0, 1] == 0.0


def test_rft_resists_a_tilted_foot_whose_edge_alone_is_buried():
    sand = medium("sand")
    down = np.array([[0.0, -sand.velocity_scale[1], 0.0]])
    for phi in (0.0, 0.5, 1.2):
        assert np.all(rft.foot_wrench(Foot(), (0.0, phi), down, sand.zeta, sand.coeffs) == 0.0)
    edge = rft.foot_wrench(Foot(), (-0.01, 0.5), down, sand.zeta, sand.coeffs)[0]
    assert edge[1] > 1.0, "the buried edge bears the plunge"
    assert center_height(-0.01, 0.5, R) > 0, "with p_center above the surface"


def test_a_dataset_written_with_d_at_p_center_is_read_at_the_lowest_point(tmp_path):
    ds = wd.read(ROOT / "data" / "sand.h5")
    old = tmp_path / "old.h5"
    wd.write(ds, old)
    with h5py.File(old, "a") as f:  # as every planar file was written before issue 49
        del f.attrs["depth_at"]
    got = wd.read(old)
    below = ds.configs[:, 0] < 0
    np.testing.assert_allclose(got.configs[below, 0], ds.configs[below, 0] - R * np.abs(np.sin(ds.configs[below, 1])))
    np.testing.assert_array_equal(got.configs[~below], ds.configs[~below])  # the zero surface rows stay at d = 0
    with h5py.File(old, "a") as f:
        f.attrs["depth_at"] = "middle"
    with pytest.raises(wd.GranularError, match="depth_at is 'middle'"):
        wd.read(old)


def test_a_model_trained_with_d_at_p_center_is_refitted_on_load(tmp_path, caplog):
    model = load_model("sand")
    path = tmp_path / "old_model.h5"
    wm.save(model, path)
    with h5py.File(path, "a") as f:
        del f["dataset"].attrs["depth_at"]
    old = wm.load(path)
    assert "refitted" in caplog.text
    theta = np.array([[-0.03, 0.3]])
    shifted = np.array([[-0.03 - R * np.sin(0.3), 0.3]])  # the same rows, now R sin φ deeper
    np.testing.assert_allclose(old.points(shifted), model.points(theta), rtol=1e-6, atol=1e-6)


def edge_cell():
    """The held-out DEM cell of data/validation/edge: the Beads foot tilted 0.5 rad, p_center 1.4 cm
    above the surface, dragged in 26 directions; per run its direction and measured wrench."""
    runs = [ingest.read_run(p) for p in sorted((ROOT / "data" / "validation" / "edge").glob("*.csv"))]
    theta = {tuple(r.theta_des) for r in runs}
    assert len(runs) == 26 and theta == {(0.014, 0.5)}
    wrenches = np.array([ingest.extract(r, Foot(), cutoff=50.0)[0] for r in runs])
    return np.array([r.v_des for r in runs]), wrenches


def test_the_beads_model_meets_a_buried_edge_as_the_dem_does():
    """A foot tilted 0.5 rad whose lower edge is 1 cm deep, p_center above the surface: before issue
    49 every model gave exactly zero there. The Beads model, which never saw this cell, meets the
    DEM's plunge with a force of the DEM's size (measured 111 N against 68 N: between the zero
    surface and its shallowest cell at this tilt, 2.4 cm, it learned w / |d|, linear in depth, where
    the DEM's edge, a wedge of plate, grows faster), and its 26 wrenches are within NRMSE_EDGE of
    the DEM's."""
    twists, dem = edge_cell()
    theta = np.array([[lowest_height(0.014, 0.5, R), 0.5]])
    assert theta[0, 0] == pytest.approx(-0.00997, abs=1e-5)
    model = load_model("beads")
    pred = model.flow(np.repeat(theta, len(twists), axis=0), twists)
    down = int(np.argmin(twists[:, 1]))
    assert dem[down, 1] > 30.0, "the DEM meets the buried edge"
    assert 0.5 < pred[down, 1] / dem[down, 1] < 2.0, (pred[down], dem[down])
    nrmse = np.sqrt(((pred - dem) ** 2).mean(axis=0)) / np.sqrt((dem ** 2).mean(axis=0))
    assert nrmse.mean() < NRMSE_EDGE, nrmse


def test_a_tilted_drop_is_supported_from_the_first_touch_of_its_edge():
    """drop-tilted lands on its edge (p_center still above the surface) and the medium pushes back
    from that step on: no step with the edge buried and no support while the foot sinks."""
    rec = scenarios.run(scenarios.load("drop-tilted").with_(duration=0.3))
    first = int(np.argmax(rec.active[:, 0]))
    assert rec.active[first, 0] and first > 0
    height = rec.p_center[first, 0, 1]  # the surface is at z = 0
    assert height > 0, "the edge lands first, p_center above the surface"
    assert rec.wrench[first, 0, 1] > 0, "and is pushed back at once"
    sinking = rec.active[:, 0] & (rec.p_center[:, 0, 1] > 0)
    assert np.all(rec.wrench[sinking, 0, 1] >= 0) and rec.wrench[sinking, 0, 1].max() > 10.0
