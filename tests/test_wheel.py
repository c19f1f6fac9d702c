"""The single-wheel terramechanics reference (issue 13.1)."""
import numpy as np
import pytest

from granular.data import wheel
from granular.data.terramechanics import soil
from granular.errors import GranularError

SAND = soil("dry-sand")


def test_drawbar_pull_is_compaction_resistance_at_zero_slip_and_grows_with_slip():
    sweep = wheel.slip_sweep(wheel.Wheel(), SAND, np.linspace(0, 0.8, 17))
    assert sweep["drawbar_pull_n"][0] <= 0
    assert (np.diff(sweep["drawbar_pull_n"]) > 0).all()
    assert (np.diff(sweep["torque_nm"]) > 0).all()


def test_the_soil_carries_the_load_and_a_heavier_wheel_sinks_deeper():
    w = wheel.Wheel(load=150.0)
    z = wheel.sinkage(w, SAND, 0.2)
    assert wheel.forces(w, SAND, z, 0.2)[0] == pytest.approx(150.0, rel=1e-6)
    assert wheel.sinkage(wheel.Wheel(load=300.0), SAND, 0.2) > z


def test_normal_force_agrees_with_the_papers_closed_form():
    # Ding et al. 2013 eq. 25 with linearised stresses, θ₂ = 0: F_N = r b (A σ_m + B τ_m); their Fig. 11
    # puts the linearisation within 17.5 % of the integral
    w, z, s = wheel.Wheel(0.05, 0.08, 1.0), 0.01, 0.0
    t1 = np.arccos(1 - z / w.radius)
    tm = (wheel.C1 + wheel.C2 * s) * t1
    sm, taum = wheel.stresses(w, SAND, z, s, np.array([tm]))
    A = (np.cos(tm) - 1) / tm + (np.cos(tm) - np.cos(t1)) / (t1 - tm)
    B = np.sin(tm) / tm + (np.sin(tm) - np.sin(t1)) / (t1 - tm)
    closed = w.radius * w.width * (A * sm[0] + B * taum[0])
    assert wheel.forces(w, SAND, z, s)[0] == pytest.approx(closed, rel=0.2)


def test_bad_wheels_and_loads_are_clear_errors():
    with pytest.raises(GranularError, match="radius"):
        wheel.Wheel(radius=-1)
    with pytest.raises(GranularError, match="past the axle"):
        wheel.sinkage(wheel.Wheel(load=1e6), SAND, 0.1)
    with pytest.raises(GranularError, match="slips"):
        wheel.slip_sweep(wheel.Wheel(), SAND, [1.5])


# --- the wheel as a learned contact body (sim/wheel-bed.toml, sim/rover-climb.toml) ---


from granular.data import dataset as wd  # noqa: E402
from granular.data.sampling import mirror_permutation  # noqa: E402
from granular.frames import MIRROR  # noqa: E402
from granular.io.resources import shipped  # noqa: E402
from granular.scenarios import scenario as scenarios, testbed  # noqa: E402

DATA = shipped("data") / "wheel-dry-sand.h5"


@pytest.mark.parametrize("name", ["wheel-dry-sand", "wheel-sand"])
def test_the_wheels_data_dissipate_and_mirror(name):
    """Every recorded wrench (Wong–Reece on dry sand, RFT on sand) takes energy out of the wheel
    (power at its centre ≤ 0), and a wheel rolling backwards meets the mirror image of one rolling
    forwards."""
    ds = wd.read(shipped("data") / f"{name}.h5")
    r = ds.foot.radius
    twists = ds.directions * ds.velocity_scale
    centre = np.column_stack([twists[:, 0] - twists[:, 2] * r, twists[:, 1], twists[:, 2]])  # v + ω × r n
    power = np.einsum("jk,ijk->ij", centre, ds.wrenches)
    assert (power <= 1e-9).all()
    assert (power[1:] < 0).any(axis=1).all()  # below the surface, it resists
    perm = mirror_permutation(ds.directions)
    assert np.allclose(ds.wrenches[:, perm] * MIRROR, ds.wrenches, atol=1e-9)


def test_the_data_hold_the_reference_at_the_sampled_slips():
    ds = wd.read(DATA)
    w, z = wheel.Wheel(ds.foot.radius, ds.foot.length), 0.03
    row = np.flatnonzero(np.isclose(ds.configs[:, 0], -z))[0]
    for s in wheel.SLIPS:
        if s < 0:
            continue
        u = np.array([-s, 0.0, -1.0]) / np.hypot(s, 1.0)
        j = np.argmin(np.linalg.norm(ds.directions - u, axis=1))
        normal, pull, torque = wheel.forces(w, SAND, z, s)
        assert ds.wrenches[row, j] == pytest.approx([pull, normal, torque], rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("medium, pull, torque, sinkage", [("wheel-dry-sand", 0.5, 0.1, 1e-4),
                                                          ("wheel-sand", 1.2, 0.25, 4e-4)])
def test_the_simulated_test_bed_pulls_as_the_wheel_model_does(medium, pull, torque, sinkage):
    """The learned W(θ) under the data-flow law, in the simulator: at zero slip the drawbar pull is
    the compaction resistance (≤ 0), it grows with slip, and it stays close to the wheel model the
    data came from (Wong–Reece: drawbar pull up to 23 N; RFT: 18 N)."""
    slips = np.array([0.0, 0.1, 0.2, 0.3, 0.45, 0.6, 0.7, 0.8])
    spec = scenarios.load("wheel-bed").with_(medium=medium)
    rim, soil = testbed.bed_reference(spec)
    sim, ref = testbed.simulate_bed(spec, slips), wheel.slip_sweep(rim, soil, slips)
    assert sim["drawbar_pull_n"][0] <= 0
    assert (np.diff(sim["drawbar_pull_n"]) > 0).all()
    assert np.abs(sim["slip"] - ref["slip"]).max() < 0.01  # the servos hold the slip
    assert np.abs(sim["drawbar_pull_n"] - ref["drawbar_pull_n"]).max() < pull
    assert np.abs(sim["torque_nm"] - ref["torque_nm"]).max() < torque
    assert np.abs(sim["sinkage_m"] - ref["sinkage_m"]).max() < sinkage
    assert sim["load_n"] == pytest.approx(np.full(len(slips), 10.19 * 9.81), rel=1e-3)


def test_a_wheel_driven_at_a_torque_settles_at_the_slip_the_model_gives_that_torque():
    """The test bed's other mode: torque set, slip measured (as on a real bed with a torque-controlled
    motor); it must find the slip at which Wong–Reece's wheel needs that torque."""
    spec = scenarios.load("wheel-bed")
    w, ground = testbed.bed_reference(spec)
    ref = wheel.slip_sweep(w, ground, [0.15, 0.4])
    for slip, torque in zip(ref["slip"], ref["torque_nm"]):
        control = {**{k: v for k, v in spec.control.items() if k != "slip"}, "torque": float(torque)}
        run = scenarios.run(spec.with_(control=control, duration=4.0))
        assert scenarios.summary(run)["feet"]["wheel"]["wheel_slip_end"] == pytest.approx(slip, abs=0.01)


def test_a_rolling_wheel_left_alone_never_gains_energy_and_stops():
    spec = scenarios.load("wheel-bed").with_(control={"kind": "none"}, duration=2.0,
                                             initial={"height": 0.126, "vx": 0.5, "omega": -0.5 / 0.15})
    rec = scenarios.run(spec)
    assert np.diff(rec.energy).max() <= 1e-9
    assert abs(rec.v[-1, 0]) < 1e-6 and abs(rec.v[-1, 2]) < 1e-6


def _climb(angle):
    spec = scenarios.load("rover-climb")
    spec = spec.with_(terrain={"kind": "profile", "points": [[-3.0, 0.0], [0.0, 0.0], [3.0, 3 * float(np.tan(angle))]]})
    rec = scenarios.run(spec)
    return rec, scenarios.summary(rec)


@pytest.mark.slow
def test_the_rover_climbs_a_slope_its_wheels_can_pull_up_and_stalls_on_one_they_cannot():
    """A slope is climbable while the wheels' drawbar pull per load exceeds its grade: about
    0.23 here (Wong–Reece, the data's source), so 0.2 rad (grade 0.20) is climbed, with the slip
    rising from the flat's, and 0.3 rad (0.31) is not: the wheels spin in place."""
    ref = wheel.slip_sweep(wheel.Wheel(0.15, 0.10, 85.0), SAND, [0.6])
    grade = ref["drawbar_pull_n"][0] / 85.0
    assert np.tan(0.2) < grade < np.tan(0.3)
    rec, summary = _climb(0.2)
    chassis = summary["bodies"]["chassis"]["final"]
    assert chassis["x"] > 0.6 and chassis["z"] > 0.35 and chassis["vx"] > 0.1
    slips = [f["wheel_slip"] for f in summary["feet"].values()]
    assert all(0.05 < s < 0.6 for s in slips)
    assert summary["max_penetration_m"] < 0.06  # within the data
    rec, summary = _climb(0.3)
    chassis = summary["bodies"]["chassis"]["final"]
    assert chassis["x"] < 0.5 and abs(chassis["vx"]) < 0.01
    assert (-rec.v[-1, 3:] * 0.15 > 0.15).all()  # still turning at speed, going nowhere


def test_wheel_scenarios_refuse_the_wrong_medium_or_control():
    with pytest.raises(GranularError, match="wheel medium"):
        scenarios.build(scenarios.load("wheel-bed").with_(medium="sand"))
    with pytest.raises(GranularError, match="foot medium"):
        scenarios.build(scenarios.load("quad-trot").with_(medium="wheel-dry-sand"))
    with pytest.raises(GranularError, match="testbed"):
        scenarios.build(scenarios.load("rover-climb").with_(control={"kind": "testbed"}))
    with pytest.raises(GranularError, match="drive"):
        scenarios.build(scenarios.load("wheel-bed").with_(control={"kind": "drive"}))
    with pytest.raises(GranularError, match="not a synthesised wheel"):
        testbed.bed_reference(scenarios.load("drop-upright"))
