"""Terramechanics: Bekker sinkage and Janosi–Hanamoto shear under the bottom plate.

Ding et al., "Foot–terrain interaction mechanics for legged robots", IJRR 32
(2013), eqs. (13)–(19) and Table 6 (soil values from Wong 2008).

What it models: the flat circular bottom plate (radius r, area S = πr²) at
sinkage δ = −d. The medium can push the plate up by at most the Bekker load
F_N = (k_c π r + k_φ π r²) δ^n (eq. 17), never pull it (sand does not rebound
or stick: plastic unloading); it can resist sliding by at most the
Janosi–Hanamoto shear F_T = (S c + f_z tan ϕ)(1 − e^(−j/K)) (eqs. 15, 18) with
the plate fully slipping (j ≫ K, so the last factor is 1); and the pressure
centre stays on the plate, |τ_center| ≤ r f_z. These bounds make a convex
wrench set; the resistance to a twist is its maximally dissipating point.

What it leaves out: tilt (the plate is treated as level at the depth of
p_center, R |sin φ| above θ's lowest point; tilt only moves the torque's reference point to p_r), the side walls
of the cylinder, bulldozing in front of the foot, rate effects and memory.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from granular.errors import GranularError
from granular.foot import Foot
from granular.frames import center_height, cross2


@dataclass(frozen=True)
class Soil:
    """Bekker–Janosi soil: n, k_c (N/m^(n+1)), k_φ (N/m^(n+2)), cohesion c (Pa), ϕ (rad)."""

    n: float
    k_c: float
    k_phi: float
    cohesion: float
    friction_angle: float


def _table6(n, k_c_kN, k_phi_kN, c_kPa, phi_deg):
    return Soil(n, k_c_kN * 1e3, k_phi_kN * 1e3, c_kPa * 1e3, np.radians(phi_deg))


#: Ding et al. 2013, Table 6 (after Wong 2008).
SOILS = {
    "dry-sand": _table6(1.10, 0.99, 1528.43, 1.04, 28.0),
    "sandy-loam": _table6(0.70, 5.27, 1515.04, 1.72, 29.0),
    "sandy-loam-michigan": _table6(0.40, 11.42, 808.96, 9.65, 35.0),
    "clayey-soil": _table6(0.50, 13.19, 692.15, 4.14, 13.0),
    "heavy-clay": _table6(0.11, 1.84, 103.27, 20.69, 6.0),
    "upland-sandy-loam": _table6(1.10, 74.60, 2080.00, 3.30, 33.7),
    "lete-sand": _table6(0.79, 102.00, 5301.00, 1.30, 31.1),
    "snow-us": _table6(1.60, 4.37, 196.72, 1.03, 19.7),
    "snow-sweden": _table6(1.44, 10.55, 66.08, 6.00, 20.7),
}


def soil(name: str) -> Soil:
    try:
        return SOILS[name]
    except KeyError:
        raise GranularError(f"unknown soil {name!r}; choose one of {', '.join(SOILS)}") from None


def bekker_load(soil: Soil, radius: float, sinkage: float) -> float:
    """Largest normal force of a flat circular plate, Ding et al. 2013 eq. (17)."""
    return (soil.k_c * np.pi * radius + soil.k_phi * np.pi * radius**2) * max(sinkage, 0.0) ** soil.n


def janosi_shear(soil: Soil, area: float, normal_force: float) -> float:
    """Largest shear force of a fully slipping plate, eq. (18) with j ≫ K."""
    return area * soil.cohesion + normal_force * np.tan(soil.friction_angle)


def foot_wrench(foot: Foot, theta, twists, soil: Soil) -> np.ndarray:
    """Resistance wrenches (k, 3) in F_r to the twists (k, 3) of the foot in F_c."""
    d, phi = float(theta[0]), float(theta[1])
    twists = np.atleast_2d(np.asarray(twists, dtype=float))
    f_max = bekker_load(soil, foot.radius, -float(center_height(d, phi, foot.radius)))
    area = np.pi * foot.radius**2
    vertices = np.array([
        [sx * janosi_shear(soil, area, fz), fz, st * foot.radius * fz]
        for fz in (0.0, f_max) for sx in (-1.0, 1.0) for st in (-1.0, 1.0)
    ])
    # Maximum dissipation: the most negative power w·v. Ties (a whole face)
    # take the face's centre, which keeps the mirror symmetry exact.
    power = twists @ vertices.T
    tied = power <= power.min(axis=1, keepdims=True) + 1e-12 * np.abs(power).max(axis=1, keepdims=True)
    best = (tied @ vertices) / tied.sum(axis=1, keepdims=True)
    arm = -foot.p_r(phi)  # from p_r to p_center
    return np.column_stack([best[:, :2], best[:, 2] + cross2(arm, best[:, :2])])
