"""granular validate: known answers on synthetic runs, clear errors on broken ones, and the shipped set."""
import json

import numpy as np
import pytest

from granular.apps.cli import main
from granular.foot import Foot
from granular.frames import cross2, foot_axis
from granular.io.resources import shipped
from granular.learning.catalog import load_model
from granular.scenarios import validation as val

HELD_OUT = shipped("data") / "validation"


def write_run(folder, name, t, pose, twist, wrench_r, foot=Foot()):
    """A validation run whose F_r wrench is ``wrench_r``, stored as a rig would: in the foot frame about
    p_center (the inverse of the transform the reader applies, written out independently here)."""
    phi = pose[:, 2]
    arm = -foot.r_offset * foot_axis(phi)                      # p_center − p_r in F_c
    tau_c = wrench_r[:, 2] - cross2(arm, wrench_r[:, :2])
    c, s = np.cos(phi), np.sin(phi)
    fx, fz = c * wrench_r[:, 0] + s * wrench_r[:, 1], -s * wrench_r[:, 0] + c * wrench_r[:, 1]
    cols = np.column_stack([t, pose, fx, fz, tau_c, twist])
    path = folder / f"{name}.csv"
    np.savetxt(path, cols, delimiter=",", header="t,x,z,phi,fx,fz,tau,vx,vz,omega", comments="")
    path.with_suffix(".json").write_text(json.dumps({"path": name, "medium": "test", "seed": 1}))
    return path


def plunge_and_drag(n=1000):
    t = np.linspace(0, 0.5, n)
    z = np.where(t < 0.25, -0.16 * t, -0.04)
    x = np.where(t < 0.25, 0.0, 0.2 * (t - 0.25))
    phi = 0.3 * t
    twist = np.column_stack([np.where(t < 0.25, 0.0, 0.2), np.where(t < 0.25, -0.16, 0.0), np.full(n, 0.3)])
    return t, np.column_stack([x, z, phi]), twist


@pytest.mark.parametrize("law,representation", [("max-dissipation", "exact"), ("max-dissipation", "fixed"),
                                                 ("data-flow", "exact")])
def test_a_run_that_is_the_models_own_prediction_scores_zero(tmp_path, law, representation):
    model = load_model("sand")
    t, pose, twist = plunge_and_drag()
    traj = val.Trajectory("x", "x", 1, t, pose, twist, np.zeros((len(t), 3)))
    path = write_run(tmp_path, "own", t, pose, twist, val.replay(model, traj, law, representation))
    run = val.read(path, cutoff=900.0)  # the wrench jumps where the path turns: barely filter
    result, _ = val.validate(model, [run], law=law, representation=representation)
    assert result["mean"]["model"] < 0.02
    if law == "max-dissipation":  # and the other representation tells the difference
        other, _ = val.validate(model, [run], law=law, representation={"exact": "fixed"}.get(representation, "exact"))
        assert other["mean"]["model"] > 0.02


def test_depth_gain_says_where_the_model_is_too_weak(tmp_path):
    """Runs whose wrench is the model's own, doubled below 3 cm: the gain is 1 above, ½ below."""
    model = load_model("sand")
    t, pose, twist = plunge_and_drag()
    traj = val.Trajectory("x", "x", 1, t, pose, twist, np.zeros((len(t), 3)))
    own = val.replay(model, traj, "data-flow")
    run = val.Trajectory("x", "x", 1, t, pose, twist, np.where(traj.theta[:, :1] < -0.03, 2.0, 1.0) * own)
    result = val.validate(model, [run], law="data-flow")[0]
    gain = result["depth_gain"]
    assert list(gain) == ["5-15 mm", "15-30 mm", "30-45 mm", "45-70 mm"]  # the lowest point ends at 4.7 cm
    np.testing.assert_allclose(list(gain.values()), [1.0, 1.0, 0.5, 0.5], rtol=1e-9)
    assert 0.5 < result["runs"]["x"]["force_gain"] < 1.0  # the run as a whole: between


def test_cell_gain_tells_errors_in_the_data_from_errors_in_the_learning():
    """A plunge at φ = 0 crosses sand's recorded cells (θ at 1, 3, 5, 7 cm, moving straight down). A run
    that measures twice the model's wrench: both the data and the model are half as strong on those
    cells. A run that measures the data's own wrench on them but twice the model's elsewhere: the
    data are right (gain 1) and only the samples off the cells say the model is too weak."""
    model = load_model("sand")
    n = 400
    t = np.linspace(0, 0.5, n)
    pose = np.column_stack([np.zeros(n), -0.16 * t, np.zeros(n)])
    twist = np.tile([0.0, -0.16, 0.0], (n, 1))
    traj = val.Trajectory("x", "plunge", 1, t, pose, twist, np.zeros((n, 3)))
    own = val.replay(model, traj, "data-flow")
    doubled = val.Trajectory("x", "plunge", 1, t, pose, twist, 2.0 * own)
    gain = val.validate(model, [doubled], law="data-flow")[0]["cell_gain"]["plunge"]
    assert gain["samples"] >= 10
    assert gain["data"] == pytest.approx(0.5, rel=0.02) and gain["model"] == pytest.approx(0.5, rel=1e-9)

    on, data = val._on_cells(model.dataset, traj)
    cells = np.array([-0.01, -0.03, -0.05, -0.07])
    assert np.abs(pose[on, 1][:, None] - cells).min(axis=1).max() < 0.004
    off_cells = val.Trajectory("y", "plunge", 1, t, pose, twist, np.where(on[:, None], 1.0, 2.0) * own)
    result = val.validate(model, [off_cells], law="data-flow")[0]
    assert result["cell_gain"]["plunge"]["data"] == pytest.approx(1.0, rel=0.02)
    assert result["runs"]["y"]["force_gain"] < 0.8
    # a path that never moves along a recorded direction crosses no cell
    sideways = val.Trajectory("z", "oblique", 1, t, pose, np.tile([0.1, -0.16, 0.0], (n, 1)), own)
    assert val.validate(model, [sideways], law="data-flow")[0]["cell_gain"] == {}


def test_rft_runs_recover_their_zeta_and_score_zero_against_rft(tmp_path):
    t, pose, twist = plunge_and_drag()
    traj = val.Trajectory("x", "x", 1, t, pose, twist, np.zeros((len(t), 3)))
    path = write_run(tmp_path, "rft", t, pose, twist, val.rft_wrench(traj, 1.2))
    run = val.read(path, cutoff=900.0)
    result, _ = val.validate(load_model("sand"), [run], calibrate=[run], source_zeta=1.2)
    assert result["rft_zeta"] == pytest.approx(1.2, rel=0.02)
    assert result["mean"]["rft"] < 0.03
    assert result["runs"]["rft"]["source"]["mean"] < 0.5  # the learned sand against RFT sand, same path


@pytest.mark.parametrize("edit,message", [
    (lambda c: c.__setitem__((5, 5), np.nan), "NaN or inf"),
    (lambda c: c.__setitem__((7, 0), c[3, 0]), "time is not strictly increasing"),
    (lambda c: c.__setitem__((slice(None), 2), 0.01), "no sample whose lowest point is deeper"),
    (lambda c: c.__setitem__((500, 1), 0.5), "the pose jumps"),
])
def test_broken_runs_get_one_clear_error_and_nothing_is_written(tmp_path, capsys, edit, message):
    t, pose, twist = plunge_and_drag()
    path = write_run(tmp_path, "bad", t, pose, twist, np.ones((len(t), 3)))
    cols = np.loadtxt(path, delimiter=",", skiprows=1)
    edit(cols)
    np.savetxt(path, cols, delimiter=",", header="t,x,z,phi,fx,fz,tau,vx,vz,omega", comments="")
    before = sorted(tmp_path.iterdir())
    code = main(["validate", "sand", str(path), "--plot", str(tmp_path / "figs")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0] and "bad.csv" in err[0]
    assert sorted(tmp_path.iterdir()) == before


@pytest.mark.slow
def test_shipped_held_out_set_scores_the_beads_model(tmp_path, capsys):
    runs = sorted(str(p) for p in HELD_OUT.glob("*_s[23].csv"))
    calibrate = [str(HELD_OUT / "tilted-plunge_s1.csv")]
    assert main(["validate", "beads", *runs, "--calibrate", *calibrate, "--json", "--plot", str(tmp_path)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["mean"]) == {"model", "rft"} and 0.1 < result["spread"]["mean"] < 1.0
    assert len(result["runs"]) == 10 and len(list(tmp_path.glob("validate_*.png"))) == 5


def test_beads_model_under_data_flow_beats_direct_rft_within_the_dem_spread(capsys):
    """Issue 16's bar, replayed: the shipped Beads model under data-flow is closer to the held-out DEM
    beds than direct RFT with its one fitted constant, and than a DEM bed is to the others' mean."""
    runs = sorted(str(p) for p in HELD_OUT.glob("*.csv"))
    assert main(["validate", "beads", *runs, "--calibrate", str(HELD_OUT / "tilted-plunge_s1.csv"),
                 "--contact", "data-flow", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["mean"]["model"] < result["mean"]["rft"]
    assert result["mean"]["model"] < result["spread"]["mean"]


def test_sim_tracks_the_recorded_path_and_is_scored(tmp_path):
    """--sim: the scenario's foot PID-tracks the run's path in the simulator (paper Figs. 7-8)."""
    model = load_model("sand")
    t, pose, twist = plunge_and_drag()
    traj = val.Trajectory("x", "x", 1, t, pose, twist, np.zeros((len(t), 3)))
    path = write_run(tmp_path, "own", t, pose, twist, val.replay(model, traj))
    result, _ = val.validate(model, [val.read(path, cutoff=900.0)], sim="foot-track-straight", medium="sand")
    row = result["runs"]["own"]
    assert row["sim"]["tracking_rms_m"] < 0.01
    assert np.isfinite(row["sim"]["mean"]) and row["sim"]["fz"] < 1.0


def test_the_rig_tracks_the_dem_paths_the_papers_gains_trail():
    """The DEM's paths run at 0.2 m/s, 14× the paper's: its PID gains trail them by 13–19 mm; the
    rig's (25×) follow within ~1 mm, and the Beads model's simulated wrench then scores as replayed."""
    model = load_model("beads")
    run = [val.read(HELD_OUT / "diagonal_s1.csv")]
    paper, _ = val.validate(model, run, sim="foot-track-straight", medium="beads", law="data-flow")
    rig, _ = val.validate(model, run, sim="foot-track-rig", medium="beads", law="data-flow")
    paper, rig = paper["runs"]["diagonal_s1"], rig["runs"]["diagonal_s1"]
    assert paper["sim"]["tracking_rms_m"] > 0.01 > 0.002 > rig["sim"]["tracking_rms_m"]
    assert abs(rig["sim"]["mean"] - rig["model"]["mean"]) < 0.02 < paper["sim"]["mean"] - paper["model"]["mean"]


def test_a_tracker_that_diverges_is_a_clear_error_not_a_score(tmp_path, capsys):
    """The rig's gains doubled are too stiff for 1 ms on the tilted plunge: the foot flies off
    and validate says so, naming the run, instead of scoring it."""
    rig = (shipped("sim") / "foot-track-rig.toml").read_text()
    for key in ("kp", "ki", "kd"):
        line = next(l for l in rig.splitlines() if l.startswith(f"{key} ="))
        values = [2 * float(x) for x in line.split("[")[1].split("]")[0].split(",")]
        rig = rig.replace(line, f"{key} = {values}")
    (tmp_path / "stiff.toml").write_text(rig)
    code = main(["validate", "beads", str(HELD_OUT / "tilted-plunge_s1.csv"), "--sim", str(tmp_path / "stiff.toml")])
    err = capsys.readouterr().err
    assert code == 2 and "run tilted-plunge_s1" in err and "the tracker diverged (gains too stiff" in err, err
    assert "off the recorded path" in err or "left the recorded path" in err, err


def test_sim_separates_the_step_from_the_tracker(tmp_path):
    """Under data-flow the step gives the law's own wrench wherever the simulated foot is: against the
    law replayed at the simulated foot's pose and twist it is off by 0.008 (the pose's differences
    for a twist), so nearly all of its error against the run (0.29 here) is the PID's lag (8 mm)."""
    model = load_model("sand")
    t, pose, twist = plunge_and_drag()
    traj = val.Trajectory("x", "x", 1, t, pose, twist, np.zeros((len(t), 3)))
    path = write_run(tmp_path, "own", t, pose, twist, val.replay(model, traj, "data-flow"))
    result, _ = val.validate(model, [val.read(path, cutoff=900.0)], sim="foot-track-straight", medium="sand",
                             law="data-flow")
    sim = result["runs"]["own"]["sim"]
    assert sim["step_vs_replay"] < 0.03 < 0.2 < sim["mean"]
    assert sim["fallback_steps"] == 0


@pytest.mark.parametrize("source,message", [("rft:gravel", "name a medium (sand, pebbles)"),
                                            ("dem:1", "give rft:ZETA")])
def test_source_is_a_number_or_a_medium(tmp_path, capsys, source, message):
    t, pose, twist = plunge_and_drag()
    path = write_run(tmp_path, "run", t, pose, twist, np.ones((len(t), 3)))
    code = main(["validate", "sand", str(path), "--source", source])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0]


def test_source_by_medium_scores_a_model_against_its_own_source(capsys):
    """rft:pebbles is pebbles' own RFT (ζ and drag factor): its model under data-flow follows it."""
    runs = sorted(str(p) for p in HELD_OUT.glob("*_s1.csv"))
    assert main(["validate", "pebbles", *runs, "--source", "rft:pebbles", "--contact", "data-flow", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["mean"]["source"] < 0.1
