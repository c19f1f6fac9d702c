"""3D-RFT (granular.data.rft3d): the stress law, the foot's wrench, its symmetries and its planar slice."""
import numpy as np
import pytest

from granular.data import rft, rft3d
from granular.frames3d import MIRROR_Y, to_3d, to_planar
from granular.data.media import medium
from granular.errors import GranularError
from granular.foot import Foot

SCALE = np.array([0.02, 0.02, 0.02, 0.3, 0.3, 0.3])  # the media's velocity scale, for 3D twists
REFLECT = np.array([1.0, -1.0, 1.0])  # y → −y on vectors


def random_twists(k=40, seed=0):
    return np.random.default_rng(seed).normal(size=(k, 6)) * SCALE


def rot_z(psi):
    c, s = np.cos(psi), np.sin(psi)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def power(foot, theta, twists, wrenches):
    """Power of the medium's wrench (about p_r) on the foot moving with twists of p_center."""
    p_r = foot.r_offset * np.array([-np.sin(theta[1]), 0.0, np.cos(theta[1])])
    v_r = twists[:, :3] + np.cross(twists[:, 3:], p_r)
    return (wrenches[:, :3] * v_r).sum(axis=1) + (wrenches[:, 3:] * twists[:, 3:]).sum(axis=1)


def test_planar_helpers():
    w3 = np.array([[1.0, 2.0, 3.0], [-4.0, 5.0, -6.0]])
    w6 = to_3d(w3)
    np.testing.assert_array_equal(w6[0], [1.0, 0.0, 2.0, 0.0, -3.0, 0.0])  # ccw in the drawing is about −y
    np.testing.assert_array_equal(to_planar(w6), w3)
    np.testing.assert_array_equal(to_planar(to_3d(w3[0])), w3[0])


# Per unit depth at ζ = 1, in N/cm³: Li et al.'s values (REFERENCE.md §2) on elements whose normal and
# velocity lie in the x–z plane, the half of those moving in their own plane, and one oblique case.
R2 = np.sqrt(0.5)
ELEMENTS = [
    ((0, 0, -1), (0, 0, -1), (0.0, 0.0, 1.0)),  # bottom plate pushed down
    ((R2, 0, -R2), (0, 0, -1), (-0.219, 0.0, 0.564)),  # plate at β = π/4, down
    ((-R2, 0, -R2), (0, 0, -1), (0.219, 0.0, 0.564)),  # its mirror image x → −x
    ((1, 0, 0), (1, 0, 0), (-0.370, 0.0, 0.037)),  # wall pushed into the medium
    ((0, 0, 1), (0, 0, 1), (0.0, 0.0, -0.25)),  # top plate pulled up
    ((0, 0, -1), (1, 0, 0), (-0.068, 0.0, 0.1875)),  # bottom plate sliding: half of (−0.136, 0.375)
    ((1, 0, 0), (0, 0, -1), (0.0, 0.0, 0.064)),  # wall sliding down: half of 0.128
    ((1, 0, 0), (0, 1, 0), (0.0, -0.068, 0.0)),  # wall sliding sideways: half of α_y = α_x(0, 0)
    ((1, 0, 0), (-1, 0, 0), (0.0, 0.0, 0.0)),  # trailing: no stress
    # wall met at 45° in the horizontal: in its normal's plane Li's (−0.370, 0.037) scaled by Treers'
    # f23(√½) = 0.7986, out of it α_y = 0.136 scaled by f1(√½) = 0.8814 (their fitted sigmoids)
    ((1, 0, 0), (R2, R2, 0), (-0.2955, -0.1199, 0.0295)),
]


@pytest.mark.parametrize("normal,velocity,expected", ELEMENTS)
def test_stress_per_depth_values(normal, velocity, expected):
    got = rft3d.stress_per_depth(np.array(normal, float), np.array(velocity, float), 1.0)
    np.testing.assert_allclose(got / rft.N_PER_CM3, expected, atol=6e-4)
    # ζ scales, speed does not (rate-independent)
    np.testing.assert_allclose(rft3d.stress_per_depth(normal, 7.0 * np.array(velocity, float), 2.5), 2.5 * got)


def test_drag_factor_scales_horizontal_stresses_only():
    kappa = 1.3
    coeffs = rft.with_drag(rft.GENERIC, kappa)
    for normal, velocity in [((1, 0, 0), (1, 0, 0)), ((1, 0, 0), (0, 1, 0)), ((0, 0, -1), (1, 0, 0))]:
        base = rft3d.stress_per_depth(normal, velocity, 1.0)
        scaled = rft3d.stress_per_depth(normal, velocity, 1.0, coeffs)
        np.testing.assert_allclose(scaled[:2], kappa * base[:2])
        np.testing.assert_allclose(scaled[2], base[2])


def test_stress_law_is_mirror_and_rotation_equivariant_and_dissipative():
    rng = np.random.default_rng(1)
    n = rng.normal(size=(500, 3))
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    v = rng.normal(size=(500, 3))
    s = rft3d.stress_per_depth(n, v, 1.0)
    np.testing.assert_allclose(rft3d.stress_per_depth(n * REFLECT, v * REFLECT, 1.0), s * REFLECT, atol=1e-6)
    rz = rot_z(0.7)
    np.testing.assert_allclose(rft3d.stress_per_depth(n @ rz.T, v @ rz.T, 1.0), s @ rz.T, atol=1e-6)
    assert ((s * v).sum(axis=1) <= 0).all()
    assert (s != 0).any(axis=1).mean() > 0.4  # about half lead


@pytest.mark.parametrize("theta", [(-0.03, 0.0), (-0.06, 0.3), (-0.05, -0.6), (-0.1, 1.2)])
def test_mirror_y(theta):
    """y → −y maps the foot onto itself; a mirrored twist gets the mirrored wrench (MIRROR_Y for both)."""
    foot, tw = Foot(), random_twists()
    w = rft3d.foot_wrench(foot, theta, tw, 1.2)
    np.testing.assert_allclose(rft3d.foot_wrench(foot, theta, tw * MIRROR_Y, 1.2), w * MIRROR_Y,
                               atol=1e-9 * np.abs(w).max())
    assert np.abs(w[:, [1, 3, 5]]).max() > 0.1 * np.abs(w).max()  # not trivially symmetric


def test_mirror_x_with_the_tilt():
    """x → −x maps the foot at φ onto the foot at −φ: diag(−1, 1, 1, 1, −1, −1) on twists and wrenches."""
    foot, tw, mirror_x = Foot(), random_twists(), np.array([-1.0, 1.0, 1.0, 1.0, -1.0, -1.0])
    for d, phi in [(-0.06, 0.3), (-0.1, 1.2)]:
        w = rft3d.foot_wrench(foot, (d, -phi), tw, 1.2)
        np.testing.assert_allclose(rft3d.foot_wrench(foot, (d, phi), tw * mirror_x, 1.2) * mirror_x, w,
                                   atol=1e-9 * np.abs(w).max())


@pytest.mark.parametrize("theta", [(-0.03, 0.0), (-0.06, 0.3), (-0.1, -0.9), (-0.05, 1.5)])
def test_xz_slice_has_no_out_of_plane_wrench(theta):
    tw = to_3d(random_twists()[:, [0, 2, 4]])
    w = rft3d.foot_wrench(Foot(), theta, tw, 1.2)
    assert np.abs(w[:, [1, 3, 5]]).max() <= 1e-9 * np.abs(w).max()


def test_down_push_of_an_upright_foot_is_exact():
    """Bottom disc: ζ α_z(0, π/2) |d| πR²; wall sliding down in its own plane: half of α_z(π/2, π/2) = 0.128,
    over 2πR and depths 0…|d|. The element count does not matter: this integrand is polynomial."""
    foot, zeta, d = Foot(), 1.2, 0.04
    expected = zeta * rft.N_PER_CM3 * (d * np.pi * foot.radius**2 + 0.5 * 0.128 * 2 * np.pi * foot.radius * d**2 / 2)
    for sectors in (8, 48):
        w = rft3d.foot_wrench(foot, (-d, 0.0), [[0, 0, -0.02, 0, 0, 0]], zeta, sectors=sectors)[0]
        assert w[2] == pytest.approx(expected, rel=2e-3)
        np.testing.assert_allclose(w[[0, 1, 3, 4, 5]], 0.0, atol=1e-9 * w[2])


def test_signs_and_trends_agree_with_planar_rft():
    foot, sand = Foot(), medium("sand")
    down, ahead = np.array([[0.0, -0.02, 0.0]]), np.array([[0.02, 0.0, 0.0]])
    lifts = []
    for d in (-0.02, -0.04, -0.06, -0.08):
        for twist in (down, ahead):
            p = rft.foot_wrench(foot, (d, 0.0), twist, sand.zeta, sand.coeffs)[0]
            s = to_planar(rft3d.foot_wrench(foot, (d, 0.0), to_3d(twist), sand.zeta, sand.coeffs))[0]
            assert p[1] > 0 and s[1] > 0  # pushed down or dragged, the medium lifts
            if twist is ahead:
                assert p[0] < 0 and s[0] < 0  # drag opposes the motion
        lifts.append(rft3d.foot_wrench(foot, (d, 0.0), to_3d(down), sand.zeta)[0, 2])
    assert np.all(np.diff(lifts) > 0)  # lift grows with depth


@pytest.mark.parametrize("theta", [(-0.03, 0.3), (-0.06, -0.3), (-0.06, 0.6), (-0.1, 0.9), (-0.13, 1.2)])
def test_large_components_have_the_planar_sign_for_tilts(theta):
    """Magnitudes differ (a cylinder is not a slab πR/2 wide), signs do not: every component that is
    large (over a quarter of its largest) for planar RFT has the same sign in 3D."""
    foot = Foot()
    tw = random_twists(60, seed=2)[:, [0, 2, 4]]
    p = rft.foot_wrench(foot, theta, tw, 1.2)  # both θ's d: the lowest point's
    s = to_planar(rft3d.foot_wrench(foot, theta, to_3d(tw), 1.2))
    large = np.abs(p) > 0.25 * np.abs(p).max(axis=0)
    assert large[:, 2].sum() >= 10
    np.testing.assert_array_equal(np.sign(s[large]), np.sign(p[large]))


@pytest.mark.parametrize("theta", [(0.1, 0.3), (0.06, 1.2), (0.001, 0.0), (0.001, 0.5)])
def test_zero_out_of_the_medium(theta):
    w = rft3d.foot_wrench(Foot(), theta, random_twists(), 1.2)
    assert w.shape == (40, 6) and not w.any()


def test_a_tilted_foot_is_in_contact_as_soon_as_its_edge_is_buried():
    """θ's d is the lowest point's: a foot tilted 0.5 rad with its rim 1 mm deep resists a push down
    (its p_center is still 23 mm above the sand, where the planar θ would call it out of contact)."""
    foot = Foot()
    down = np.array([[0.0, 0.0, -0.02, 0.0, 0.0, 0.0]])
    assert rft3d.center_height(foot, (-0.001, 0.5)) == pytest.approx(-0.001 + 0.05 * np.sin(0.5))
    assert rft3d.foot_wrench(foot, (-0.001, 0.5), down, 1.2)[0, 2] > 0
    deeper = [rft3d.foot_wrench(foot, (d, 0.5), down, 1.2)[0, 2] for d in (-0.001, -0.005, -0.02)]
    assert np.all(np.diff(deeper) > 0)


@pytest.mark.parametrize("theta", [(-0.01, 0.0), (-0.06, 0.3), (-0.13, -0.6), (-0.1, 1.5)])
def test_resistance_dissipates(theta):
    foot, tw = Foot(), random_twists(100, seed=3)
    w = rft3d.foot_wrench(foot, theta, tw, 1.2)
    p = power(foot, theta, tw, w)
    assert p.max() <= 1e-9 * np.abs(p).max() and p.min() < 0


def test_upright_foot_is_symmetric_about_the_vertical():
    foot, theta = Foot(), (-0.05, 0.0)
    x_motion = rft3d.foot_wrench(foot, theta, [[0.02, 0, 0, 0, 0, 0]], 1.2)[0]
    tw = random_twists(20, seed=4)
    w = rft3d.foot_wrench(foot, theta, tw, 1.2)
    for psi in (0.3, 2.0, -1.1):
        rz = rot_z(psi)
        along = rft3d.foot_wrench(foot, theta, [[0.02 * np.cos(psi), 0.02 * np.sin(psi), 0, 0, 0, 0]], 1.2)[0]
        np.testing.assert_allclose(along, np.concatenate([rz @ x_motion[:3], rz @ x_motion[3:]]),
                                   atol=1e-9 * np.abs(x_motion).max())
        turned = rft3d.foot_wrench(foot, theta, np.hstack([tw[:, :3] @ rz.T, tw[:, 3:] @ rz.T]), 1.2)
        np.testing.assert_allclose(turned, np.hstack([w[:, :3] @ rz.T, w[:, 3:] @ rz.T]), atol=1e-9 * np.abs(w).max())


def test_rate_independent():
    foot, tw = Foot(), random_twists()
    w = rft3d.foot_wrench(foot, (-0.06, 0.3), tw, 1.2)
    for c in (1e-3, 7.5):
        np.testing.assert_allclose(rft3d.foot_wrench(foot, (-0.06, 0.3), c * tw, 1.2), w, rtol=1e-9,
                                   atol=1e-9 * np.abs(w).max())


@pytest.mark.parametrize("theta", [(-0.03, 0.0), (-0.06, 0.3), (-0.13, 0.6), (-0.02, -0.9), (-0.1, 1.2)])
def test_doubling_the_elements_changes_the_wrench_little(theta):
    foot = Foot()
    tw = np.vstack([random_twists(60, seed=5), np.eye(6) * SCALE, -np.eye(6) * SCALE])
    w = rft3d.foot_wrench(foot, theta, tw, 1.2)
    fine = rft3d.foot_wrench(foot, theta, tw, 1.2, sectors=2 * rft3d.SECTORS, nodes=2 * rft3d.NODES)
    for part in (slice(0, 3), slice(3, 6)):  # forces against the largest force, torques against the largest torque
        assert np.abs(fine[:, part] - w[:, part]).max() < 0.02 * np.abs(w[:, part]).max()


def brute_force(foot, theta, twists, zeta, n=160, sectors=360, rows=1200):
    """The same stress law summed over a fine grid of midpoints that knows nothing of segments: discs cut
    into n × n squares, the wall into sectors × rows patches, each counted if its midpoint leads."""
    d, phi = rft3d.center_height(foot, theta), theta[1]  # θ's d is the lowest point's
    axis, side, y = np.array([-np.sin(phi), 0, np.cos(phi)]), np.array([np.cos(phi), 0, np.sin(phi)]), np.eye(3)[1]
    r, length = foot.radius, foot.length
    g = ((np.arange(n) + 0.5) / n) * 2 - 1
    u, v = (a.ravel() for a in np.meshgrid(g, g))
    inside = u**2 + v**2 < 1
    disc = r * (np.outer(u[inside], side) + np.outer(v[inside], y))
    t = 2 * np.pi * (np.arange(sectors) + 0.5) / sectors
    radial = np.outer(np.cos(t), side) + np.outer(np.sin(t), y)
    s = length * (np.arange(rows) + 0.5) / rows
    wall = (r * radial[:, None, :] + s[None, :, None] * axis).reshape(-1, 3)
    pos = np.vstack([disc, disc + length * axis, wall])
    normal = np.vstack([np.tile(-axis, (len(disc), 1)), np.tile(axis, (len(disc), 1)),
                        np.repeat(radial, rows, axis=0)])
    area = np.concatenate([np.full(2 * len(disc), (2 * r / n) ** 2),
                           np.full(len(wall), 2 * np.pi * r / sectors * length / rows)])
    weight = np.maximum(0.0, -(d + pos[:, 2])) * area
    keep = weight > 0
    pos, normal, weight = pos[keep], normal[keep], weight[keep]
    out = []
    for tw in twists:
        f = rft3d.stress_per_depth(normal, tw[:3] + np.cross(tw[3:], pos), zeta) * weight[:, None]
        out.append(np.concatenate([f.sum(axis=0), np.cross(pos - foot.r_offset * axis, f).sum(axis=0)]))
    return np.array(out)


@pytest.mark.parametrize("theta", [(-0.04, 0.0), (-0.06, 0.4), (-0.03, -1.2)])
def test_agrees_with_a_brute_force_sum(theta):
    """Areas, positions, lever arms and the buried and leading parts, checked against plain midpoints."""
    foot = Foot()
    tw = np.vstack([np.eye(6)[[0, 1, 2, 4]] * SCALE, random_twists(3, seed=6)])
    w = rft3d.foot_wrench(foot, theta, tw, 1.2)
    ref = brute_force(foot, theta, tw, 1.2)
    for part in (slice(0, 3), slice(3, 6)):
        assert np.abs(w[:, part] - ref[:, part]).max() < 0.01 * np.abs(ref[:, part]).max()


def test_bad_twists():
    with pytest.raises(GranularError, match="3D twists"):
        rft3d.foot_wrench(Foot(), (-0.03, 0.0), np.zeros((4, 3)), 1.2)
