"""Compliant (penalty) contact laws as alternatives to the learned wrench space (issue 13)."""
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from granular.apps import bench
from granular.contact import compliant
from granular.frames import MIRROR
from granular.learning.catalog import load_model
from granular.scenarios import scenario as scenarios
from granular.scenarios import validation
from granular.simulation.simulation import Simulation

VALIDATION = Path(__file__).resolve().parent.parent / "data" / "validation"


def law(name="hertz", **kw):
    return compliant.Compliant(name, stiffness=1e4, radius=0.05, exponent=1.1, friction=0.3, **kw)


def drop(name, dt, duration, **changes):
    """An upright foot dropped under ``name``; its energy (bodies + elastic) per step."""
    spec = scenarios.load("drop-upright").with_(contact=name, dt=dt, duration=duration)
    sim = scenarios.build(spec)
    model = replace(sim.model, compliant=replace(sim.model.compliant, **changes))
    sim = Simulation(model, sim.state, sim.controller, sim.solver)
    energy = [bench.contact_energy(sim)[0]]
    sim.rollout(scenarios.check_size(spec), [lambda s: energy.append(bench.contact_energy(s)[0])])
    return np.array(energy), sim


def test_bengisu_friction_is_zero_at_rest_peaks_at_v0_and_decays_to_kinetic():
    m = law(static_friction=0.5)
    v0 = m.stribeck_speed
    assert m.friction_coefficient(0.0) == 0.0
    assert m.friction_coefficient(v0) == pytest.approx(0.5)
    assert m.friction_coefficient(1.0) == pytest.approx(0.3, abs=1e-6)
    assert m.friction_coefficient(-0.5 * v0) == pytest.approx(-m.friction_coefficient(0.5 * v0))


def test_normal_laws_never_pull_and_damp_only_while_penetrating():
    for name in compliant.LAWS:
        m = law(name, damping=50.0)
        if name != "hertz":  # a fast enough withdrawal unloads a damped contact completely
            assert m.normal(np.array(0.02), np.array(-100.0)) == 0.0, name
        assert m.normal(np.array(0.0), np.array(0.0)) == 0.0, name
        if name != "hertz":
            assert m.normal(np.array(0.02), np.array(0.5)) > m.normal(np.array(0.02), np.array(0.0)), name


def test_level_plate_bears_k_delta_n_and_mirrored_feet_get_mirrored_wrenches():
    m = law()
    w = compliant.wrench(m, [[-0.03, 0.0]], [[0.0, 0.0, 0.0]], [0.25])
    np.testing.assert_allclose(w, [[0.0, 1e4 * 0.03**1.1, 0.0]], rtol=1e-9, atol=1e-9)
    rng = np.random.default_rng(0)
    theta = np.column_stack([rng.uniform(-0.08, -0.001, 30), rng.uniform(-1.2, 1.2, 30)])
    twist = rng.normal(scale=0.1, size=(30, 3))
    r = np.full(30, 0.25)
    np.testing.assert_allclose(compliant.wrench(m, theta * [1, -1], twist * MIRROR, r),
                               compliant.wrench(m, theta, twist, r) * MIRROR, atol=1e-9)


def test_a_tilted_foot_at_rest_is_pushed_back_towards_upright():
    m = law()
    for phi in (0.2, -0.2):
        w = compliant.wrench(m, [[-0.03, phi]], [[0.0, 0.0, 0.0]], [0.25])[0]
        # the torque about p_center (F_r's torque moved down the axis) opposes the tilt
        arm = 0.25 * np.array([-np.sin(phi), np.cos(phi)])  # p_r − p_center
        tau_center = w[2] + arm[0] * w[1] - arm[1] * w[0]
        assert np.sign(tau_center) == -np.sign(phi)


def test_fit_reproduces_the_datas_plunge_resistance():
    ds = load_model("sand").dataset
    m = compliant.fit("hertz", ds)
    upright = (ds.configs[:, 1] == 0) & (ds.configs[:, 0] < 0)
    down = int(np.argmax(ds.directions @ [0.0, -1.0, 0.0]))
    fz = ds.wrenches[upright, down, 1]
    model = m.stiffness * (-ds.configs[upright, 0]) ** m.exponent
    assert np.sqrt(np.mean((model - fz) ** 2)) / np.sqrt(np.mean(fz**2)) < 0.2
    assert 0 < m.friction < 2


def test_hertz_without_friction_conserves_energy_and_the_damped_laws_lose_it():
    E, _ = drop("hertz", 1e-4, 0.4, friction=0.0)
    assert np.abs(E - E[0]).max() < 0.01 * E[0], "an elastic contact neither gains nor loses energy"
    for name in ("kelvin-voigt", "hunt-crossley", "lankarani-nikravesh", "flores"):
        E, _ = drop(name, 1e-4, 0.4, friction=0.0)
        assert E.max() <= E[0] + 1e-6 * E[0], name
        assert E[-1] < 0.95 * E[0], f"{name} dissipates on impact"


@pytest.mark.parametrize("dt", [pytest.param(2e-5, marks=pytest.mark.slow), 1e-3])   # 50,000 steps: slow tier
def test_a_damped_drop_comes_to_rest_upright(dt):
    """At the learned model's 1 ms too: the stick band keeps Bengisu's friction from chattering."""
    E, sim = drop("hunt-crossley", dt, 1.0)
    assert abs(sim.state.q[2]) < 0.05 and np.abs(sim.state.v).max() < 0.05
    assert E.max() <= E[0] * (1 + 1e-6)


def test_the_damped_laws_are_stable_at_five_milliseconds():
    """`granular bench --compliant`'s criterion: the dropped foot never gains energy (README table)."""
    for name in ("kelvin-voigt", "flores"):
        ok, gain, _ = bench.stable("drop-upright", name, 5e-3)
        assert ok and gain <= 0.01, (name, gain)


class Push:
    """A constant generalized force on the dropped foot."""

    def __init__(self, u):
        self.u = np.asarray(u, dtype=float)

    def initial_memory(self):
        return None

    def __call__(self, t, q, v, memory):
        return self.u, memory


def test_a_foot_resting_in_the_medium_stays_put_under_a_push_it_grips_and_slides_under_one_it_cannot():
    """At rest, a tangential load below μ_s N is held exactly (no Stribeck creep); above it, the
    foot slides."""
    _, rest = drop("hunt-crossley", 1e-3, 1.0)
    weight = 9.81 * rest.model.multibody.dynamics(rest.state.q, rest.state.v, rest.model.multibody.frames(rest.state.q))[0][0, 0]
    mu_s = rest.model.compliant.peak_friction
    for share, moves in ((0.5, False), (1.5, True)):
        sim = Simulation(rest.model, replace(rest.state, v=np.zeros_like(rest.state.v)),
                         Push([share * mu_s * weight, 0.0, 0.0]), rest.solver)
        x0 = sim.state.q[0]
        sim.rollout(300)
        assert (abs(sim.state.q[0] - x0) > 1e-3) == moves, share
        if not moves:
            assert abs(sim.state.q[0] - x0) < 1e-6 and abs(sim.state.v[0]) < 1e-9


def test_on_rigid_ground_the_compliance_is_the_foot_pad_in_series_with_the_floor():
    rigid = load_model("rigid").dataset
    for name in compliant.LAWS:
        m = compliant.fit(name, rigid)
        assert m.exponent == 1.0 and m.friction == pytest.approx(0.8)
        assert m.stiffness == pytest.approx(1.0 / (1.0 / compliant.PAD_STIFFNESS + 1.0 / compliant.FLOOR_STIFFNESS))


def test_validate_scores_a_compliant_law_on_the_held_out_dem_runs():
    runs = [validation.read(p) for p in sorted(VALIDATION.glob("plunge-drag_s1.csv"))]
    result, _ = validation.validate(load_model("beads"), runs, law="hunt-crossley")
    assert result["contact"] == "hunt-crossley"
    assert np.isfinite(result["mean"]["model"]) and result["mean"]["model"] > 0
