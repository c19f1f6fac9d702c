"""Both contact laws for 3D feet (granular.contact.law3d): invariants on a free cylindrical foot."""
import numpy as np
import pytest

from granular.contact import law3d
from granular.frames3d import MIRROR_Y
from granular.learning.catalog import load_model

H = 1e-3
MASS, LENGTH, RADIUS = 2.0, 0.3, 0.05


@pytest.fixture(scope="module")
def sand3d():
    return load_model("sand3d", "3d")


def skew(r):
    x, y, z = r
    return np.array([[0, -z, y], [z, 0, -x], [-y, x, 0]])


def free_foot():
    """A solid cylinder's generalized mass at p_center (coordinates: the twist of p_center, upright,
    so world axes are F_c3's) and the gravity impulse over a step."""
    c = np.array([0.0, 0.0, LENGTH / 2])  # its centre of mass, up the axis from p_center
    Ic = np.diag([MASS * (3 * RADIUS**2 + LENGTH**2) / 12] * 2 + [MASS * RADIUS**2 / 2])
    G = np.block([[np.eye(3), -skew(c)], [np.zeros((3, 3)), np.eye(3)]])  # twist at p_center → CoM twist
    M = G.T @ np.block([[MASS * np.eye(3), np.zeros((3, 3))], [np.zeros((3, 3)), Ic]]) @ G
    gravity = H * G.T @ np.r_[0.0, 0.0, -9.81 * MASS, 0.0, 0.0, 0.0]
    return M, gravity


def feet(d=-0.05, phi=0.0, grains=True):
    arm = 0.25 * np.array([-np.sin(phi), 0.0, np.cos(phi)])
    Mg = np.array([14.714] * 3 + [0.122] * 3) if grains else np.zeros(6)
    return law3d.Feet(np.array([[d, phi]]), np.eye(6)[None], arm[None], Mg[None])


@pytest.mark.parametrize("law", law3d.LAWS)
def test_a_foot_at_rest_stays_at_rest(sand3d, law):
    M, gravity = free_foot()
    out = law3d.step(sand3d, M, np.linalg.solve(M, gravity), feet(), H, law)
    assert out.sticking.all()
    assert np.abs(out.v).max() < 1e-9, out.v
    # the medium carries the weight: its impulse is the gravity impulse, reversed
    assert out.impulses[0, 2] == pytest.approx(9.81 * MASS * H, rel=1e-6)


@pytest.mark.parametrize("law", law3d.LAWS)
@pytest.mark.parametrize("grains", [False, True])
def test_the_medium_never_does_work_and_energy_never_grows(sand3d, law, grains):
    M, gravity = free_foot()
    rng = np.random.default_rng(3)
    f = feet(-0.06, 0.3, grains)
    for _ in range(20):
        v_free = rng.normal(size=6) * [0.3, 0.3, 0.3, 2.0, 2.0, 2.0] + np.linalg.solve(M, gravity)
        out = law3d.step(sand3d, M, v_free, f, H, law)
        at_r = f.Jr[0] @ out.v
        assert out.impulses[0] @ at_r <= 1e-9 * np.abs(out.impulses).max() * np.abs(at_r).max() + 1e-15
        assert out.v @ M @ out.v <= v_free @ M @ v_free * (1 + 1e-9)


@pytest.mark.parametrize("law", law3d.LAWS)
def test_mirrored_motion_gets_the_mirrored_impulse(sand3d, law):
    M, gravity = free_foot()
    v_free = np.array([0.2, 0.15, -0.1, 0.5, -1.0, 0.7])
    a = law3d.step(sand3d, M, v_free, feet(-0.05, 0.2), H, law)
    b = law3d.step(sand3d, M, v_free * MIRROR_Y, feet(-0.05, 0.2), H, law)
    np.testing.assert_allclose(b.impulses, a.impulses * MIRROR_Y, atol=1e-7 * np.abs(a.impulses).max())
    np.testing.assert_allclose(b.v, a.v * MIRROR_Y, atol=1e-9)


def test_the_qp_agrees_with_cvxpys_paper_form(sand3d):
    import cvxpy as cp

    M, gravity = free_foot()
    f = feet(-0.05, 0.4)
    v_free = np.array([0.3, -0.2, -0.2, 0.1, 0.8, -0.5])
    out = law3d.step(sand3d, M, v_free, f, H, "max-dissipation")
    A = sand3d.fixed_normals(72)
    ub = H * sand3d.offsets(A, f.thetas)[0]
    c = cp.Variable(6)
    v = v_free + np.linalg.solve(M, f.Jr[0].T) @ c
    Mg = np.diag(f.grain_mass[0])
    cp.Problem(cp.Minimize(cp.quad_form(v, cp.psd_wrap(M)) + cp.quad_form(f.J[0] @ v, Mg)), [A @ c <= ub]).solve()
    np.testing.assert_allclose(out.impulses[0], c.value, atol=1e-5 * np.abs(c.value).max())


def test_a_sliding_foot_gets_the_datas_wrench(sand3d):
    """Dragged sideways hard, the foot slides, and its impulse is h times the data's wrench at its
    new twist (the data-flow law), not the hull's max-dissipation point."""
    M, gravity = free_foot()
    f = feet(-0.05, 0.0, grains=False)
    v_free = np.array([0.0, 2.0, 0.0, 0.0, 0.0, 0.0]) + np.linalg.solve(M, gravity)
    flow = law3d.step(sand3d, M, v_free, f, H, "data-flow")
    assert not flow.sticking.any() and flow.v[1] > 0.1
    np.testing.assert_allclose(flow.impulses[0], H * sand3d.flow(f.thetas, (f.J[0] @ flow.v)[None])[0],
                               rtol=1e-6, atol=1e-9)
    md = law3d.step(sand3d, M, v_free, f, H, "max-dissipation")
    assert not np.allclose(md.impulses, flow.impulses, rtol=1e-2), "the laws differ for a sliding foot"
