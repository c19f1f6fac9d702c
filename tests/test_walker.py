"""The passive compass-gait walker on a rigid floor (issue 13): round feet, the swing rule, the
Coulomb floor, and the limit cycle against the classical compass-gait results."""
import numpy as np
import pytest

from granular.contact.detection import ContactFrames, FootContact, Feet, detect, leading
from granular.data import coulomb
from granular.data.synth import synthesize
from granular.dynamics import terrain
from granular.dynamics.multibody import Body, MultiBody
from granular.errors import GranularError
from granular.scenarios import scenario as scenarios, walker

# Goswami et al.'s compass gait on a 3° slope (legs 5 kg, 1 m, mid-leg centre of mass, 10 kg hip):
# its stable period-1 cycle just after a heel strike, (θ_st, ω_st, ω_sw).
FIXED_POINT = (0.2186, -1.0918, -0.3772)
M, MH, A, B = 5.0, 10.0, 0.5, 0.5


@pytest.fixture(scope="module")
def walk():
    rec = scenarios.run(scenarios.load("walker"))
    return rec, scenarios.summary(rec)


def test_the_walker_settles_into_the_classical_limit_cycle(walk):
    """Started off the cycle, it walks eight seconds down the slope and its Poincaré point returns
    to Goswami's fixed point, up to the jitter of impacts on a 1 ms grid."""
    rec, summary = walk
    g = summary["gait"]
    assert g["strikes"] >= 9
    late = np.array([s["poincare"] for s in g["steps"][-4:]])
    assert np.abs(late[:, 0] - FIXED_POINT[0]).max() < 0.01
    assert np.abs(late[:, 2] - FIXED_POINT[1]).max() < 0.03
    assert np.abs(late[:, 3] - FIXED_POINT[2]).max() < 0.06  # the swing leg speeds up in the 2 ms after
    lengths = [s["length"] for s in g["steps"][-4:]]
    periods = [s["period"] for s in g["steps"][-4:]]
    assert max(lengths) - min(lengths) < 0.03 and max(periods) - min(periods) < 0.04
    assert g["return_error"] < 0.05
    assert summary["bodies"]["leg_1"]["final"]["x"] > 4.0  # it walked down the slope, upright
    assert summary["bodies"]["leg_1"]["final"]["z"] > summary["bodies"]["leg_1"]["final"]["x"] * -0.06 + 0.3


def test_the_floor_only_takes_energy(walk):
    rec, summary = walk
    assert summary["energy"]["max_step_increase"] < 1e-3  # J, against 150 J of mechanical energy
    assert summary["energy"]["final"] < summary["energy"]["initial"]
    assert summary["max_penetration_m"] < 2e-3


def test_the_walker_walks_on_flores_compliant_contact_as_corral_found(walk):
    """Corral et al. (2020) found Flores's law the one their walker walks on; here too (at its
    default restitution 0.5; Hunt–Crossley's and Kelvin–Voigt's lighter damping bounce it off its
    feet), with the QP's gait."""
    rec = scenarios.run(scenarios.load("walker").with_(contact="flores"))
    g, rigid = scenarios.summary(rec)["gait"], walk[1]["gait"]
    assert g["strikes"] >= 9
    assert abs(g["steps"][-1]["length"] - rigid["steps"][-1]["length"]) < 0.03
    assert abs(g["steps"][-1]["period"] - rigid["steps"][-1]["period"]) < 0.03


def test_static_friction_above_kinetic_keeps_a_slipping_walker_walking():
    """Zheng & Wang's point: kinetic friction μ_k < static μ_s. With μ_k = 0.25 the walker falls
    if its feet grip no better (μ_s = 0.25, return error 0.68); with μ_s = 0.35 they stick after a
    short slip, and it walks (0.015; at μ_s = 0.3, 0.085: it has not settled within 10 strikes since
    its landing is detected at its 1 mm foot's lowest point, issue 49)."""
    def walks(mu_s):
        spec = scenarios.load("walker").with_(contact="flores", compliant={"friction": 0.25, "static_friction": mu_s})
        g = scenarios.summary(scenarios.run(spec))["gait"]
        return g["strikes"] >= 9 and g["return_error"] < 0.05

    assert walks(0.35) and not walks(0.25)


@pytest.fixture(scope="module")
def slippery(tmp_path_factory):
    """A rigid floor of static friction 0.3 (the walker needs about that much), learned."""
    from granular.foot import Foot
    from granular.learning import model

    path = tmp_path_factory.mktemp("floor") / "rigid-0.3.h5"
    model.save(model.fit(synthesize("coulomb", "rigid", foot=Foot(0.001, 0.3, 0.25), friction=0.3)), path)
    return str(path)


def test_the_qps_kinetic_friction_bounds_only_a_sliding_foot(slippery):
    """A Coulomb floor's W for a foot sliding at the step's start holds friction up to μ_k N, not μ_s N;
    a foot at rest keeps μ_s."""

    from granular.contact.qp import ContactQP
    from granular.learning.catalog import load_model
    from granular.simulation.step import kinetic

    wm = load_model(slippery)
    theta = np.array([[-1e-5, 0.3]])
    (A, b), = wm.hulls(wm.points(theta))
    r_offset = np.array([0.25])
    arm = -0.25 * np.array([-np.sin(0.3), np.cos(0.3)])
    n = 10000.0  # the floor's normal force at 10 µm

    def wrench(mu):  # friction mu·N along −x at p_center, as a wrench about p_r
        f = np.array([-mu * n, n])
        return np.array([*f, arm[0] * f[1] - arm[1] * f[0]])

    for v, mu_max in ((np.array([0.0, 0.0, 0.0]), 0.3), (np.array([0.1, 0.0, 0.0]), 0.15)):
        qp = ContactQP(M=np.eye(3), v=v, impulse=np.zeros(3), Jt=np.eye(3), Jp=np.eye(3), Mg=np.zeros(3),
                       A=A, ub=b, rows=np.array([0, len(A)]), branches=None)
        A2 = kinetic(qp, r_offset, theta, qp.rows, 0.15 / 0.3)
        assert (A2 @ wrench(0.98 * mu_max) <= b + 1e-6 * np.abs(b).max()).all(), mu_max
        assert not (A2 @ wrench(1.02 * mu_max) <= b + 1e-6 * np.abs(b).max()).all(), mu_max


def test_kinetic_friction_below_static_trips_the_walker_the_qp_keeps_up(slippery):
    """On a floor of μ = 0.3 the walker walks (μ = 0.25 is too little: it slips and falls); give a
    sliding foot only μ_k = 0.25 and it falls as well, once a heel strike sets a foot sliding."""
    def gait(**kw):
        return scenarios.summary(scenarios.run(scenarios.load("walker").with_(medium=slippery, **kw)))["gait"]

    def walks(g):  # a limit cycle, as the walker's other tests judge one
        return g["strikes"] >= 9 and g.get("return_error", np.inf) < 0.05

    def strides(g):  # heel strikes a real step apart (a fallen walker's legs chatter on the floor)
        return sum(s["length"] > 0.1 for s in g["steps"])

    walked, tripped = gait(), gait(kinetic_friction=0.25)
    assert walks(walked) and not walks(tripped)
    assert strides(tripped) < strides(walked)


def test_heel_strikes_follow_the_classical_impact_law(walk):
    """A plastic impact at the landing foot alone, the trailing leg free: angular momentum about the
    new contact (whole walker) and about the hip (trailing leg) are conserved (Goswami et al.'s
    Q⁺ ω⁺ = Q⁻ ω⁻). The QP's impulses give the same stance rate within 4 %, and the swing rate
    within 0.045 rad/s: the swing leg's angular acceleration, ~10 rad/s², over the 3–4 ms between
    the state before the strike and the one read after it (the strike falls anywhere within its 1 ms
    step: every solver shows 0.033–0.034 at most strikes and up to 0.042 at one)."""
    rec, summary = walk
    n = len(rec.active)
    t, q, v = rec.t[-n:], rec.q[-n:], rec.v[-n:]
    checked = 0
    for s in summary["gait"]["steps"][2:]:
        b = int(np.argmin(np.abs(t - s["t"])))
        new = s["foot"] - 1
        old = 1 - new
        angles = [q[b - 1, 2], q[b - 1, 2] + q[b - 1, 3]]
        rates = [v[b - 1, 2], v[b - 1, 2] + v[b - 1, 3]]
        c = np.cos(angles[new] - angles[old])
        l = A + B
        q_minus = np.array([[-M * A * B, -M * A * B + (MH * l * l + 2 * M * A * l) * c], [0, -M * A * B]])
        q_plus = np.array([[M * B * (B - l * c), M * l * (l - B * c) + M * A * A + MH * l * l], [M * B * B, -M * B * l * c]])
        swing, stance = np.linalg.solve(q_plus, q_minus @ np.array([rates[new], rates[old]]))
        k = b + walker.AFTER
        after = [v[k, 2], v[k, 2] + v[k, 3]]
        assert after[new] == pytest.approx(stance, rel=0.04)
        assert after[old] == pytest.approx(swing, abs=0.045)
        checked += 1
    assert checked >= 5


def test_a_round_foot_touches_below_its_centre_and_rolls_without_slipping():
    """A disc of radius r on a slope: d is its centre's height less r, the contact point lies r below
    the centre along the normal, and rolling (v_centre = ω × (centre − contact)) leaves that point at rest."""
    r, alpha = 0.08, 0.2
    mb = MultiBody((Body("disc", 1.0, 0.01),))
    feet = Feet((FootContact("f", 0, p_center=(0.0, 0.0), roll_radius=r),))
    ground = terrain.slope(alpha)
    n = np.array([-np.sin(alpha), np.cos(alpha)])
    centre = np.array([0.3, 0.3 * np.tan(alpha)]) + (r - 0.002) * n
    q = np.array([*centre, 0.7])
    f = detect(mb, feet, ground, mb.frames(q))
    assert f.theta[0, 0] == pytest.approx(-0.002)
    assert f.theta[0, 1] == 0.0
    np.testing.assert_allclose(f.p_center[0], centre - r * n, atol=1e-12)
    omega = -3.0
    arm = centre - f.p_center[0]
    v = np.array([-omega * arm[1], omega * arm[0], omega])
    np.testing.assert_allclose(f.Jp[0] @ v, [0.0, 0.0, omega], atol=1e-12)


def frames(x, d, velocity):
    """Two feet at x (m) and depths d (m), moving with the given (vx, vz) through generalized v = (1,)."""
    N = len(x)
    Jp = np.zeros((N, 3, 1))
    Jp[:, :2, 0] = velocity
    return ContactFrames(theta=np.column_stack([d, np.zeros(N)]), active=np.asarray(d) < 0,
                         p_center=np.column_stack([x, np.zeros(N)]), normal=np.tile([0.0, 1.0], (N, 1)),
                         Jt=Jp, Jp=Jp)


def test_the_swing_rule_lets_the_swing_foot_through_and_hands_over_on_landing():
    v, dt, margin = np.ones(1), 1e-3, 0.03
    # the swing foot dipped in beside the stance foot and is now ahead, deep for its speed: no landing
    assert leading(frames([0.0, 0.05], [-1e-5, -2e-3], [[0.0, 0.0], [1.0, -0.1]]), v, 0, margin, dt) == 0
    # a foot coming down through the surface ahead has struck
    assert leading(frames([0.0, 0.4], [-1e-5, -5e-4], [[0.0, 0.0], [0.3, -0.6]]), v, 0, margin, dt) == 1
    # landing beside the stance foot is not a strike
    assert leading(frames([0.0, 0.02], [-1e-5, -5e-4], [[0.0, 0.0], [0.3, -0.6]]), v, 0, margin, dt) == 0
    # with the stance foot off the floor, only a landing foot takes the load
    assert leading(frames([0.0, 0.05], [1e-4, -2e-3], [[0.0, 0.0], [1.0, -0.1]]), v, 0, margin, dt) == 0
    # no holder yet: the foremost foot in contact
    assert leading(frames([0.0, 0.3], [-1e-5, -1e-5], [[0.0, 0.0], [0.0, 0.0]]), v, -1, margin, dt) == 1


def test_the_rigid_floor_data_are_coulomb_friction():
    ds = synthesize("coulomb", "rigid")
    deep = ds.configs[:, 0] < 0
    w = ds.wrenches[deep]
    pressing = (ds.directions[:, 1] < 0) & (ds.directions[:, 0] != 0)
    np.testing.assert_allclose(np.abs(w[:, pressing, 0]), coulomb.FRICTION * w[:, pressing, 1])
    assert np.all(w[:, ds.directions[:, 1] > 0] == 0)  # it never pulls


def test_walker_initial_state_is_checked():
    spec = scenarios.load("walker")
    with pytest.raises(GranularError, match="stance = \\[angle, rate\\]"):
        scenarios.build(spec.with_(initial={"x": 0.0, "stance": [0.2, -1.0]}))
    with pytest.raises(GranularError, match="for a walker robot"):
        scenarios.build(scenarios.load("drop-upright").with_(initial={"height": 0.02, "stance": [0.2, -1.0]}))
