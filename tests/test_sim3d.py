"""MuJoCo robots with granular feet (granular.simulation.mujoco3d, granular.scenarios.scenario3d)."""
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("mujoco")

from granular.errors import GranularError  # noqa: E402
from granular.scenarios import scenario3d  # noqa: E402

#: A four-legged robot the project has never seen: a box torso, hinge hips, capsule legs, sphere
#: feet, position actuators holding the legs straight.
QUAD = """
<mujoco model="stranger">
  <compiler angle="radian"/>
  <option timestep="0.002"/>
  <worldbody>
    <geom name="ground" type="plane" size="3 3 0.1"/>
    <body name="torso" pos="0 0 0.45">
      <freejoint/>
      <geom type="box" size="0.25 0.12 0.04" mass="6"/>
      {legs}
    </body>
  </worldbody>
  <actuator>{actuators}</actuator>
</mujoco>
"""
LEG = """
      <body name="leg{i}" pos="{x} {y} 0">
        <joint name="hip{i}" type="hinge" axis="0 1 0" range="-1 1" damping="1"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.02" mass="0.5"/>
        <geom name="foot{i}" type="sphere" pos="0 0 -0.33" size="{radius}" mass="0.3"/>
      </body>"""


def stranger(tmp_path, feet=("foot0", "foot1", "foot2", "foot3"), medium="sand3d", duration=1.5, xml=None,
             radius=0.05, targets=(0.0, 0.0, 0.0, 0.0), control="pd"):
    corners = [(0.2, 0.1), (0.2, -0.1), (-0.2, 0.1), (-0.2, -0.1)]
    legs = "".join(LEG.format(i=i, x=x, y=y, radius=radius) for i, (x, y) in enumerate(corners))
    actuators = "".join(f'<position joint="hip{i}" kp="200"/>' for i in range(4))
    (tmp_path / "robot.xml").write_text(xml if xml is not None else QUAD.format(legs=legs, actuators=actuators))
    scenario = tmp_path / "stranger.toml"
    scenario.write_text(textwrap.dedent(f"""
        duration = {duration}
        [robot]
        mjcf = "robot.xml"
        [granular]
        medium = "{medium}"
        feet = {json.dumps(list(feet))}
        [control]
        kind = "{control}"
        targets = {json.dumps(list(targets))}
        """))
    return scenario


@pytest.mark.parametrize("law", ["data-flow", "max-dissipation"])
def test_the_dropped_foot_settles_without_gaining_energy(law):
    world = scenario3d.build("sim/drop3d-tilted.toml", law=law)
    rec = scenario3d.run(world)
    summary = scenario3d.summary(world, rec)
    assert summary["final_speed"] < 1e-6, "it comes to rest"
    assert summary["energy"]["largest_gain_per_step_J"] <= 1e-9, "the medium never does work"
    assert summary["energy"]["final_J"] < summary["energy"]["initial_J"]
    depth = summary["feet"]["foot"]["max_depth_m"]
    assert 0.005 < depth < 0.13, "in the medium, within the data's depths"
    assert world.mj_data.qpos[2] < 0.12, "it lies in the sand (standing, its centre would be ~0.13 m up)"
    # struck on its lower edge it tips further: under data-flow onto its side (φ 1.47), under
    # max-dissipation it comes to rest leaning (φ 0.54)
    assert summary["feet"]["foot"]["final_theta"][1] > 0.5


def test_a_robot_never_seen_settles_on_sand(tmp_path):
    """A user's MJCF, named in a scenario as the issue shows: dropped on sand it settles, its feet in
    the medium and within the data's depths, and (its motors holding fixed targets) energy never grows."""
    run = subprocess.run([sys.executable, "-m", "granular", "sim", str(stranger(tmp_path)), "--json"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    assert summary["final_speed"] < 1e-3
    assert summary["energy"]["largest_gain_per_step_J"] <= 1e-9
    for foot in summary["feet"].values():
        assert 0.0 < foot["max_depth_m"] < 0.13 and foot["outside_data_s"] == 0.0
    torso = summary["bodies"]["torso"]
    assert torso["final_pos"][2] < torso["initial_pos"][2] and torso["final_pos"][2] > 0.3, "it stands on its legs"


def test_a_urdf_robot_gets_a_free_base_and_actuators_and_settles_on_sand():
    """examples/my_urdf_robot: a URDF (no actuators, a root MuJoCo would weld to the world) made ready
    to walk (robot3d): it falls freely onto the sand and settles on its four cylinder feet, named by
    their <collision> names, its hips held by the position actuators granular adds."""
    world = scenario3d.build("examples/my_urdf_robot/my_urdf_robot.toml")
    assert world.mj_model.nu == 4 and world.mj_model.jnt_type[0] == 0, "a free base, an actuator per hip"
    rec = scenario3d.run(world)
    summary = scenario3d.summary(world, rec)
    assert summary["final_speed"] < 1e-3
    assert summary["energy"]["largest_gain_per_step_J"] <= 1e-9
    assert all(0.0 < f["max_depth_m"] < 0.13 for f in summary["feet"].values())
    torso = summary["bodies"]["torso"]
    assert 0.2 < torso["final_pos"][2] < torso["initial_pos"][2], "it fell and stands on its legs"


def test_feet_may_be_named_by_their_links():
    from granular.scenarios import robot3d

    world = scenario3d.build("examples/my_urdf_robot/my_urdf_robot.toml")
    assert robot3d.foot_geoms(world.mj_model, ["paw_fl", "foot_fr"]) == ["foot_fl", "foot_fr"]
    with pytest.raises(GranularError, match="'world' is a body with 0 collision geoms; name the geom itself"):
        robot3d.foot_geoms(world.mj_model, ["world"])


@pytest.mark.parametrize("robot, message", [
    ('urdf = "bad.urdf"', "MuJoCo cannot load it"),
    ('urdf = "bad.urdf"\nmjcf = "robot.xml"', "one of mjcf"),
    ("floating = true", "one of mjcf"),
])
def test_bad_urdf_robots_are_one_clear_line(tmp_path, robot, message):
    scenario = stranger(tmp_path)
    (tmp_path / "bad.urdf").write_text("<robot name='x'><link name='a'><collision><geometry><sphere/>"
                                       "</geometry></collision></link><joint name='j' type='spin'/></robot>")
    scenario.write_text(scenario.read_text().replace('mjcf = "robot.xml"', robot.replace("\\n", "\n")))
    run = subprocess.run([sys.executable, "-m", "granular", "sim", str(scenario)], capture_output=True, text=True)
    assert run.returncode != 0 and message in run.stderr, run.stderr
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("change, message", [
    ({"xml": "<mujoco><worldbody><geom type='nonsense'/></worldbody></mujoco>"}, "MuJoCo cannot load it"),
    ({"feet": ("foot0", "paw")}, "foot geom 'paw' is not in the model"),
    ({"feet": ("ground",)}, "foot geom 'ground' is a plane"),
    ({"medium": "sand"}, "'sand' is a planar medium"),
    ({"feet": ()}, "no feet"),
    ({"feet": ("foot0", "foot1", "foot0", "foot3")}, "foot geom 'foot0' named more than once"),
    ({"control": "trot"}, "control kind trot is the shipped RoboSimian's gait"),
    ({"control": "walk"}, "control.kind: invalid enum value 'walk'; choose none, pd, trot, hold, tripod"),
])
def test_bad_robots_and_media_are_one_clear_line(tmp_path, change, message):
    run = subprocess.run([sys.executable, "-m", "granular", "sim", str(stranger(tmp_path, **change))],
                         capture_output=True, text=True)
    assert run.returncode != 0 and message in run.stderr, run.stderr
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1


def test_time_beyond_the_datas_tilts_is_reported_per_foot():
    """A foot tipped past the data's largest tilt is outside the data: the summary says for how long."""
    from granular.scenarios import scenario as scenarios

    world = scenario3d.build(scenarios.find("drop3d-tilted"))
    rec = scenario3d.run(world)
    summary = scenario3d.summary(world, rec)
    tilted = np.abs(rec["theta"][1:, 0, 1]) > world.feet.model.phi_max
    in_medium = rec["theta"][1:, 0, 0] < 0
    expected = (tilted & in_medium).sum() * world.mj_model.opt.timestep
    assert expected > 0 and summary["feet"]["foot"]["outside_data_s"] == pytest.approx(expected, abs=1e-9)


def test_a_misspelt_model_key_is_named(tmp_path):
    scenario = stranger(tmp_path)
    scenario.write_text(scenario.read_text().replace("mjcf =", "mcjf ="))
    run = subprocess.run([sys.executable, "-m", "granular", "sim", str(scenario)], capture_output=True, text=True)
    assert run.returncode == 2 and "robot: object contains unknown field `mcjf`" in run.stderr, run.stderr


def test_feet_unlike_the_datas_and_targets_at_a_joint_limit_are_warned_about(tmp_path):
    """A 4 cm foot on a medium learned for a 5 cm one gets that foot's wrenches: said, naming the
    feet; a hip held at its limit (MuJoCo's limit acts after the medium): said, naming the joint.
    Both still run (exit 0, one warning line each)."""
    run = subprocess.run([sys.executable, "-m", "granular", "sim", "-v",
                          str(stranger(tmp_path, radius=0.04, targets=(0.0, 1.0, 0.0, 0.0), duration=0.02))],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    warnings = [line for line in run.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 2, run.stderr
    assert "data are for a foot of radius 5 cm" in warnings[0] and "foot0 4 cm" in warnings[0]
    assert "control.targets[1] = 1 (hip1: -1 to 1): at or past the joint's limit" in warnings[1]
    quiet = subprocess.run([sys.executable, "-m", "granular", "sim", str(stranger(tmp_path, duration=0.02))],
                           capture_output=True, text=True)
    assert quiet.returncode == 0 and "warning" not in quiet.stderr, quiet.stderr


def test_a_3d_scenario_refuses_the_planar_only_options(tmp_path):
    run = subprocess.run([sys.executable, "-m", "granular", "sim", "drop3d-tilted", "--video", str(tmp_path / "x.gif")],
                         capture_output=True, text=True)
    assert run.returncode != 0 and "--video: not for a 3D (MuJoCo) scenario yet" in run.stderr


def test_a_3d_run_file_holds_the_run_and_the_medium_gives_nothing(tmp_path):
    """--out writes the record; --dt sets MuJoCo's step; the summary says what the medium took and gave."""
    from granular.simulation import runfile3d

    run = subprocess.run([sys.executable, "-m", "granular", "sim", "drop3d-tilted", "--duration", "0.4", "--dt", "0.002",
                          "--out", str(tmp_path / "r.h5"), "--json"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    rec = runfile3d.read(tmp_path / "r.h5")
    assert rec["dt"] == 0.002 and len(rec["t"]) == summary["steps"] + 1 == 201 and rec["summary"] == {
        k: v for k, v in summary.items() if k != "run_file"}
    took, gave = summary["energy"]["medium_took_J"], summary["energy"]["medium_gave_J"]
    assert rec["active"].any() and took > 1.0 and gave <= 1e-9 * took   # round-off
    assert np.isclose(summary["energy"]["medium_took_J"], -rec["work"].sum())
    # no actuator in the drop: the medium took most of the energy lost (3.51 of 3.87 J; the rest MuJoCo's
    # own dissipation) and, nothing else giving any, no more than was lost
    energy = summary["energy"]
    lost = energy["initial_J"] - energy["final_J"]
    assert energy["actuators_did_J"] == 0.0 == rec["actuators"].sum()
    assert 0.8 * lost <= took <= lost + gave + 1e-9
    import h5py

    with h5py.File(tmp_path / "r.h5", "a") as f:  # a run written before the actuators' work was recorded
        del f["actuators"]
    assert runfile3d.read(tmp_path / "r.h5")["actuators"] is None
    (tmp_path / "bad.h5").write_bytes(b"not hdf5")
    with pytest.raises(GranularError, match="not a readable HDF5 file"):
        runfile3d.read(tmp_path / "bad.h5")


def test_the_coupling_sees_the_foot_as_the_planar_frame_does():
    """θ of a cylinder tilted about y in MuJoCo: d of its lowest point (the bottom disc's rim), φ the tilt."""
    import mujoco

    from granular.simulation import mujoco3d

    world = scenario3d.build("sim/drop3d-tilted.toml")
    m, d = world.mj_model, world.mj_data
    d.qpos[:3] = [0.0, 0.0, 0.0]
    d.qpos[3:7] = [np.cos(0.15), 0.0, np.sin(0.15), 0.0]  # 0.3 rad about +y
    mujoco.mj_forward(m, d)
    (theta, R, p_center, axis), = mujoco3d.foot_states(m, d, world.feet, world.terrain)
    assert theta[1] == pytest.approx(0.3)
    assert theta[0] == pytest.approx(-0.15 * np.cos(0.3) - 0.05 * np.sin(0.3))
    # the axis leans towards +x, so F_c3's x (the tilt's direction, opposite the lean) is −x
    assert R[:3, 0] == pytest.approx([-1.0, 0.0, 0.0], abs=1e-12)
    with pytest.raises(GranularError, match="no such file"):
        scenario3d.build(str(stranger_path_missing()))


def stranger_path_missing():
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.mkdtemp())
    (folder / "s.toml").write_text('[robot]\nmjcf = "absent.xml"\n[granular]\nfeet = ["f"]\n')
    return folder / "s.toml"


def test_the_compiled_trot_poses_the_legs_as_the_planar_robot_does():
    """gait3d.Quadruped.at (fused_control.trot_targets) against its definition in Python: Trot.legs,
    each side's strides scaled by 1 ± steer (left +) and its ankles moved up by ± HALF_WIDTH sin roll,
    posed by the planar robot's Quadruped.pose, in the MJCF's actuator order."""
    import math

    from granular.scenarios import gait3d

    gait = scenario3d.build("sim/quad3d-trot.toml").gait
    rng = np.random.default_rng(3)
    for t, pitch, roll, steer in zip(rng.uniform(0.0, 3.0, 40), rng.uniform(-0.3, 0.3, 40),
                                     rng.uniform(-0.3, 0.3, 40), rng.uniform(-0.5, 0.5, 40)):
        legs = {}
        for limb, (x, z) in gait.gait.legs(t).items():
            side = 1.0 if limb in gait3d.LEFT else -1.0
            legs[limb] = (x * (1.0 + side * steer), z + side * gait3d.HALF_WIDTH * math.sin(roll))
        expected = gait.robot.pose(legs, pitch)[list(gait.columns)]
        np.testing.assert_allclose(gait.at(t, pitch, roll, steer), expected, rtol=0, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("law, dt", [("data-flow", None), ("data-flow", 0.02), ("max-dissipation", None)])
def test_the_3d_quadruped_trots_forward_on_sand(law, dt):
    """quad3d-trot (the planar quad-trot's gait on the 3D RoboSimian, MuJoCo, steered on its line):
    ≥ 0.5 m forward in 6 s, the torso up, little sideways drift, the feet within the data's depths,
    under both laws and at the scenario's step and at 20 ms (the implicit contact's stable step;
    without steering it fell sideways at every step above 1 ms, and under max-dissipation at all),
    data-flow's Newton converging on most steps."""
    world = scenario3d.build("sim/quad3d-trot.toml", law=law, dt=dt)
    rec = scenario3d.run(world)
    summary = scenario3d.summary(world, rec)
    torso = rec["pos"][:, 1]
    assert torso[-1, 0] - torso[0, 0] > 0.5
    assert torso[:, 2].min() > 0.7, "the torso stays up"
    assert abs(torso[-1, 1]) < 0.1, "it trots straight"
    assert all(f["max_depth_m"] < 0.13 for f in summary["feet"].values())
    # measured: 10 of 6,000 steps at 1 ms, 5 of 300 at 20 ms
    assert summary["law_fallback_steps"] <= (0.02 if dt is None else 0.15) * (len(rec["t"]) - 1)
    assert summary["energy"]["medium_gave_J"] < 1e-6
    # what the robot has, the actuators gave it: no gain beyond their work and the medium's
    energy = summary["energy"]
    assert energy["actuators_did_J"] > 0.0
    assert energy["final_J"] - energy["initial_J"] <= energy["actuators_did_J"] + energy["medium_gave_J"]


@pytest.mark.slow
def test_the_3d_quadruped_slides_down_the_slope_and_stops():
    world = scenario3d.build("sim/quad3d-slide.toml")
    rec = scenario3d.run(world)
    torso = rec["pos"][:, 1]
    assert torso[-1, 0] - torso[0, 0] > 0.03, "it slides down the slope"
    assert np.abs(world.mj_data.qvel).max() < 1e-3, "and stops"
    assert torso[-1, 2] > 1.0 and abs(torso[-1, 1]) < 0.01, "upright, straight"


@pytest.mark.slow
def test_the_hexapod_walks_on_alternating_tripods():
    world = scenario3d.build("sim/hexapod-walk.toml")
    rec = scenario3d.run(world)
    body = rec["pos"][:, 1]
    assert body[-1, 0] - body[0, 0] > 1.0, "it walks forward"
    assert body[:, 2].min() > 0.35 and abs(body[-1, 1]) < 0.2, "body up, heading kept"
    assert np.all(-rec["theta"][:, :, 0] < 0.13), "feet within the data's depths"
