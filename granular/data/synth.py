"""Synthetic wrench datasets from analytic models, sampled as the paper samples (§IV-A).

For each configuration θ on the grid and each of the m velocity directions,
the resistance wrench of the chosen model is recorded. At zero depth the
wrench is zero (the paper runs no experiment there). Configurations with
φ < 0 are computed from their mirror image (d, −φ) with f_x and τ negated.
"""
from __future__ import annotations

import numpy as np
from tqdm import tqdm

from granular.data import coulomb, rft, wheel

from granular.data import terramechanics
from granular.data.dataset import WrenchDataset
from granular.errors import GranularError
from granular.foot import Foot
from granular.frames import MIRROR
from granular.data.media import SOIL_GRID, Medium, medium
from granular.data.sampling import config_grid, sphere_directions, sphere_directions_3d


def synthesize(source: str, name: str, depths=None, tilts=None, m: int | None = None,
               foot: Foot = Foot(), progress: bool = False, friction: float | None = None) -> WrenchDataset:
    """A dataset for ``source`` ('rft' with a medium name, 'rft3d' with a medium name: a 3D (6-axis)
    dataset from 3D-RFT over the cylinder, 'terramechanics' with a soil name,
    'coulomb' with a name for the rigid floor it describes, 'wheel' with a soil name (Wong–Reece) or
    an RFT medium's (RFT over the rim): a rigid wheel whose radius and width are ``foot``'s radius
    and length). ``friction``: the rigid floor's Coulomb μ (default :data:`coulomb.FRICTION`). ``m``:
    the number of directions (default 26 in the plane, 72 in 3D)."""
    if source == "rft3d":
        return _synthesize_3d(name, depths, tilts, 72 if m is None else m, foot, progress)
    directions = sphere_directions(26 if m is None else m)
    if source == "rft":
        preset = medium(name)

        coeffs = preset.coeffs

        def model(theta, twists):
            return rft.foot_wrench(foot, theta, twists, preset.zeta, coeffs)

        provenance = {"model": "resistive force theory, Li et al. 2013 generic coefficients", "zeta": preset.zeta}
        if preset.drag != 1.0:  # a shape of its own: α_x scaled by κ (media.py says why and how much)
            provenance.update(model="resistive force theory, Li et al. 2013 generic coefficients, alpha_x scaled by drag",
                              drag=preset.drag)
    elif source == "terramechanics":
        ground = terramechanics.soil(name)
        preset = SOIL_GRID

        def model(theta, twists):
            return terramechanics.foot_wrench(foot, theta, twists, ground)

        provenance = {"model": "Bekker sinkage + Janosi-Hanamoto shear, Ding et al. 2013 eqs. 13-19",
                      **{f"soil_{k}": float(v) for k, v in vars(ground).items()}}
    elif source == "coulomb":
        preset = Medium(name, 0.0, coulomb.DEPTHS, coulomb.TILTS, coulomb.VELOCITY_SCALE)

        mu = coulomb.FRICTION if friction is None else friction

        def model(theta, twists):
            return coulomb.point_wrench(foot, theta, twists, mu)

        provenance = {"model": "rigid floor: point contact with Coulomb friction (granular/data/coulomb.py)",
                      "friction": mu, "stiffness_N_per_m": coulomb.STIFFNESS, "rolling_m": coulomb.ROLLING}
    elif source == "wheel":
        rim, ground = wheel.Wheel(foot.radius, foot.length), wheel.ground(name)
        foot = Foot(rim.radius, rim.width, rim.radius)  # F_r at the axle
        directions = wheel.directions(26 if m is None else m)

        def model(theta, twists):
            return wheel.contact_wrench(rim, ground, theta, twists)

        if isinstance(ground, wheel.RFTGround):  # an RFT medium: Li et al.'s stresses over the rim
            provenance = {"model": "rigid wheel: resistive force theory over the rim, Li et al. 2013 "
                                   "(granular/data/rft.py)", "zeta": ground.zeta, "drag": medium(name).drag}
        else:  # a Table 6 soil: Wong-Reece and Janosi-Hanamoto under the rim
            provenance = {"model": "rigid wheel: Wong-Reece normal stress, Janosi-Hanamoto shear, Ding et al. "
                                   "2013 eqs. 15, 20, 21, 24 (granular/data/wheel.py)",
                          "shear_modulus_m": wheel.SHEAR_MODULUS,
                          **{f"soil_{k}": float(v) for k, v in vars(ground).items()}}
        provenance.update(body="wheel", wheel_radius_m=rim.radius, wheel_width_m=rim.width)
        preset = Medium(name, 0.0, wheel.DEPTHS, (0.0,), tuple(wheel.velocity_scale(rim)))
    else:
        raise GranularError(f"unknown synthetic source {source!r}; choose 'rft', 'rft3d', 'terramechanics', "
                            "'coulomb' or 'wheel'")

    configs = config_grid(preset.depths if depths is None else depths, preset.tilts if tilts is None else tilts)
    scale = np.asarray(preset.velocity_scale, dtype=float)
    wrenches = np.zeros((len(configs), len(directions), 3))
    for j, (d, phi) in enumerate(tqdm(configs, desc=f"synth {source}:{name}", disable=None if progress else True)):
        if d >= 0:
            continue
        sign = MIRROR if phi < 0 else np.ones(3)
        wrenches[j] = model((d, abs(phi)), directions * sign * scale) * sign
    return WrenchDataset(configs=configs, directions=directions, velocity_scale=scale, wrenches=wrenches,
                         medium=name, source=source, foot=foot, provenance=provenance)


def velocity_scale_3d(planar) -> np.ndarray:
    """A medium's 3D velocity scale from its planar one (v_x, v_z, ω): v_x for both horizontal
    velocities, ω for all three rates, so that the planar slice keeps the planar scale."""
    vx, vz, w = (float(x) for x in planar)
    return np.array([vx, vx, vz, w, w, w])


#: The 3D grids' tilts: the planar media's, with rows near upright where 3D-RFT's level-plate
#: convention fades out (over the first ~0.1 rad, :data:`granular.data.rft3d.HORIZONTAL`).
TILTS_3D = (0.0, 0.03, 0.06, 0.1, 0.2, 0.3, 0.6, 0.9, 1.2, 1.5)


def _synthesize_3d(name, depths, tilts, m, foot, progress) -> WrenchDataset:
    """3D-RFT (:mod:`granular.data.rft3d`, Treers et al. 2021) sampled on a medium's grid along the 3D direction set;
    φ < 0 from the mirror image x → −x, as in the plane."""
    from granular.data import rft3d
    from granular.frames3d import MIRROR_X

    preset = medium(name)
    directions = sphere_directions_3d(m)
    scale = velocity_scale_3d(preset.velocity_scale)
    configs = config_grid(preset.depths if depths is None else depths, TILTS_3D if tilts is None else tilts)
    wrenches = np.zeros((len(configs), m, 6))
    for j, (d, phi) in enumerate(tqdm(configs, desc=f"synth rft3d:{name}", disable=None if progress else True)):
        if d >= 0:
            continue
        sign = MIRROR_X if phi < 0 else np.ones(6)
        wrenches[j] = rft3d.foot_wrench(foot, (d, abs(phi)), directions * sign * scale, preset.zeta,
                                        preset.coeffs) * sign
    provenance = {"model": "3D resistive force theory, Treers et al. 2021 over Li et al. 2013 generic coefficients "
                           "(granular/data/rft3d.py)", "zeta": preset.zeta, "drag": preset.drag}
    return WrenchDataset(configs=configs, directions=directions, velocity_scale=scale, wrenches=wrenches,
                         medium=name, source="rft3d", foot=foot, provenance=provenance)
