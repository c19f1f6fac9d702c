import numpy as np
import pytest

from granular.data import rft

from granular.data import terramechanics
from granular.data.media import medium
from granular.errors import GranularError
from granular.foot import Foot
from granular.frames import MIRROR
from granular.data.sampling import mirror_permutation, sphere_directions

# REFERENCE.md §2: generic α at ζ = 1.
CHECK = [
    (0, np.pi / 2, 1.0000, 0.0000),
    (np.pi / 2, np.pi / 2, 0.1280, 0.0000),
    (0, 0, 0.3750, 0.1360),
    (np.pi / 4, np.pi / 2, 0.5640, 0.2190),
    (-np.pi / 4, np.pi / 2, 0.5640, -0.2190),
    (0, -np.pi / 2, -0.2500, 0.0000),
    (np.pi / 6, np.pi / 4, 0.7342, 0.2940),
]


@pytest.mark.parametrize("beta,gamma,az,ax", CHECK)
def test_alpha_check_values(beta, gamma, az, ax):
    a_z, a_x = rft.alpha(beta, gamma)
    assert a_z == pytest.approx(az, abs=5e-5)
    assert a_x == pytest.approx(ax, abs=5e-5)


def twists():
    return sphere_directions(26) * [0.02, 0.02, 0.3]


def test_rft_mirror_symmetry():
    foot, tw = Foot(), twists()
    for d, phi in [(-0.03, 0.0), (-0.05, 0.4), (-0.02, 0.9)]:
        w = rft.foot_wrench(foot, (d, phi), tw, 1.0)
        wm = rft.foot_wrench(foot, (d, -phi), tw * MIRROR, 1.0)
        np.testing.assert_allclose(wm, w * MIRROR, atol=1e-9)


def test_rft_zero_above_surface_and_grows_with_depth():
    foot, tw = Foot(), twists()
    assert np.abs(rft.foot_wrench(foot, (0.01, 0.0), tw, 1.0)).max() == 0.0
    down = np.array([[0.0, -0.02, 0.0]])
    forces = [rft.foot_wrench(foot, (d, 0.0), down, 1.0)[0, 1] for d in (-0.01, -0.03, -0.05, -0.07)]
    assert np.all(np.diff(forces) > 0)
    # the bottom plate alone: ζ α_z |d| π r² (α in N/cm³ → N/m³)
    assert forces[2] == pytest.approx(1e6 * 0.05 * np.pi * 0.05**2, rel=0.05)


@pytest.mark.parametrize("model", ["rft", "terramechanics"])
def test_resistance_dissipates(model):
    """The medium's resistance never does positive work on the moving foot."""
    foot, tw = Foot(), twists()
    for d, phi in [(-0.01, 0.0), (-0.05, 0.3), (-0.07, -0.9)]:
        if model == "rft":
            w = rft.foot_wrench(foot, (d, phi), tw, 1.0)
        else:
            w = terramechanics.foot_wrench(foot, (d, phi), tw, terramechanics.soil("dry-sand"))
        # power at p_r: twist of p_center moved to p_r
        r = foot.p_r(phi)
        v_r = tw[:, :2] + tw[:, 2:3] * np.array([-r[1], r[0]])
        power = (w[:, :2] * v_r).sum(axis=1) + w[:, 2] * tw[:, 2]
        assert power.max() <= 1e-9


def test_pebbles_resist_more_than_sand(sand, pebbles):
    for d in (-0.015, -0.03, -0.045):
        s = rft.foot_wrench(Foot(), (d, 0.0), twists(), 1.2)
        p = rft.foot_wrench(Foot(), (d, 0.0), twists(), 2.0)
        assert np.linalg.norm(p, axis=1).sum() > np.linalg.norm(s, axis=1).sum()
    common = [-0.03]
    js = [np.flatnonzero((sand.configs[:, 0] == d) & (sand.configs[:, 1] == 0))[0] for d in common]
    jp = [np.flatnonzero((pebbles.configs[:, 0] == d) & (pebbles.configs[:, 1] == 0))[0] for d in common]
    assert np.abs(pebbles.wrenches[jp, :, 1]).max() > np.abs(sand.wrenches[js, :, 1]).max()


def test_pebbles_differ_from_sand_in_shape(pebbles):
    """Pebbles' α_x is κ times the generic one at the same α_z (media.py): f_x grows by κ, f_z not."""
    preset = medium("pebbles")
    assert preset.drag == pytest.approx(np.tan(np.radians(40)) / np.tan(np.radians(33)))
    assert medium("sand").drag == 1.0 and medium("sand").coeffs is rft.GENERIC
    tw = twists()
    for theta in ((-0.03, 0.0), (-0.045, 0.6)):
        generic = rft.foot_wrench(Foot(), theta, tw, preset.zeta)
        own = rft.foot_wrench(Foot(), theta, tw, preset.zeta, preset.coeffs)
        np.testing.assert_allclose(own[:, 0], preset.drag * generic[:, 0], atol=1e-9)
        np.testing.assert_allclose(own[:, 1], generic[:, 1], atol=1e-9)
    # the synthetic dataset is made with it and says so
    assert pebbles.provenance["drag"] == pytest.approx(preset.drag)
    j = np.flatnonzero((pebbles.configs[:, 0] == -0.03) & (pebbles.configs[:, 1] == 0))[0]
    own = rft.foot_wrench(Foot(), (-0.03, 0.0), pebbles.directions * pebbles.velocity_scale, 2.0, preset.coeffs)
    np.testing.assert_allclose(pebbles.wrenches[j], own, atol=1e-9)


def test_bekker_load_matches_eq17():
    s = terramechanics.soil("dry-sand")
    r, delta = 0.05, 0.04
    expected = (0.99e3 * np.pi * r + 1528.43e3 * np.pi * r**2) * delta**1.10
    assert terramechanics.bekker_load(s, r, delta) == pytest.approx(expected)
    assert terramechanics.bekker_load(s, r, 0.0) == 0.0


def test_terramechanics_pushes_down_motion_with_bekker_load_and_never_pulls():
    s, foot = terramechanics.soil("lete-sand"), Foot()
    w = terramechanics.foot_wrench(foot, (-0.03, 0.0), [[0, -1, 0], [0, 1, 0]], s)
    assert w[0, 1] == pytest.approx(terramechanics.bekker_load(s, foot.radius, 0.03))
    assert w[1, 1] == 0.0


def test_unknown_soil_is_a_clear_error():
    with pytest.raises(GranularError, match="unknown soil 'mud'.*dry-sand"):
        terramechanics.soil("mud")


def test_direction_grid():
    for m in (26, 58):
        d = sphere_directions(m)
        assert d.shape == (m, 3)
        np.testing.assert_allclose(np.linalg.norm(d, axis=1), 1.0)
        assert len(np.unique(d.round(9), axis=0)) == m
        p = mirror_permutation(d)
        np.testing.assert_allclose(d[p], d * MIRROR, atol=1e-12)
    with pytest.raises(GranularError, match="2 \\+ 8k"):
        sphere_directions(27)
