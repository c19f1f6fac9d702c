"""A rigid wheel on deformable soil, the terramechanics reference (Bekker–Wong–Reece, Janosi–Hanamoto).

The stresses under the rim, for a wheel of radius r and width b at sinkage z (Ding et al. 2013):

- entry angle θ₁ = arccos((r − z)/r) (eq. 20); exit angle θ₂ = 0 (sand does not rebound);
- normal stress (Wong & Reece 1967, eq. 21), with the soil's Bekker moduli, peaking at θ_m:
  σ(θ) = (k_c/b + k_φ) rⁿ (cos θ − cos θ₁)ⁿ for θ_m ≤ θ ≤ θ₁, and the front's profile mapped onto
  [θ₂, θ_m] behind it;
- shear stress (Janosi & Hanamoto, eq. 15) τ(θ) = (c + σ tan ϕ)(1 − e^(−j/K)), with the shear
  displacement of a driven wheel at slip s = 1 − v/(rω): j(θ) = r[(θ₁ − θ) − (1 − s)(sin θ₁ − sin θ)];
- forces (eq. 24) per unit of the rim: F_N = r b ∫ (σ cos θ + τ sin θ) dθ (the load it carries),
  drawbar pull DP = r b ∫ (τ cos θ − σ sin θ) dθ, driving torque T = r² b ∫ τ dθ, over [θ₂, θ₁].

Two assumptions beyond the seed, written down once: θ_m = (c₁ + c₂ s) θ₁ with c₁ = 0.4, c₂ = 0.15
(the usual Wong–Reece form; Ding et al. fit such coefficients per soil), and the shear deformation
modulus K = 0.01 m (Table 6 gives none; Wong lists about 1–2.5 cm for dry sands). Sinkage at a given
load is the z at which F_N equals the load. Angles in rad, SI units throughout.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from granular.data.terramechanics import Soil
from granular.errors import GranularError
from granular.frames import MIRROR

C1, C2 = 0.4, 0.15
SHEAR_MODULUS = 0.01
#: Points of the trapezoidal rule over the contact arc.
ARC_POINTS = 400


@dataclass(frozen=True)
class Wheel:
    """A rigid wheel: radius and width (m), the vertical load it carries (N)."""

    radius: float = 0.15
    width: float = 0.10
    load: float = 100.0

    def __post_init__(self):
        for name in ("radius", "width", "load"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value > 0):
                raise GranularError(f"wheel {name} must be a positive number, got {value!r}")


def stresses(wheel: Wheel, soil: Soil, sinkage: float, slip: float, theta, shear_modulus: float = SHEAR_MODULUS):
    """σ(θ), τ(θ) (Pa) at rim angles θ (rad from the bottom, positive towards the front) of a wheel
    rolling forward at slip s (its centre at speed (1 − s) times the rim's)."""
    return rim_stresses(wheel, soil, sinkage, theta, 1.0 - slip, 0.0, 1.0, shear_modulus)


def rim_stresses(wheel: Wheel, soil: Soil, sinkage: float, theta, vx: float, vz: float, ur: float,
                 shear_modulus: float = SHEAR_MODULUS):
    """σ(θ), τ(θ) (Pa) for any motion going forward: the centre at (vx ≥ 0, vz), the rim's surface at
    ur = −ωr (m/s; > 0 rolls forward). Wong–Reece and Janosi–Hanamoto, generalised twice:

    - the soil is loaded only where the rim advances into it, v·(sin θ, −cos θ) ≥ 0 (RFT's leading
      surface: a rising wheel unloads its rear first, and loses its support when it lifts straight up);
    - the shear stress opposes the rim's slip velocity over the soil, ur − vx cos θ − vz sin θ (so it
      always dissipates), with Wong's magnitude; a rim that does not roll forward (ur ≤ 0) slides with
      its shear fully mobilised (Wong's j → ±∞ as ur → 0).
    """
    r, b = wheel.radius, wheel.width
    t1 = np.arccos(1.0 - sinkage / r)
    slip = min(max(1.0 - vx / ur, 0.0), 1.0) if ur > 0 else 1.0  # sets only the peak's angle
    tm = (C1 + C2 * slip) * t1
    # behind θ_m the front's profile is mapped onto [0, θ_m] (θ₂ = 0); behind the bottom (θ < 0,
    # loaded only by a wheel moving down) the front's static profile, mirrored
    mapped = np.where(theta >= tm, theta, t1 - theta / max(tm, 1e-12) * (t1 - tm))
    mapped = np.where(theta < 0, -theta, mapped)
    advance = vx * np.sin(theta) - vz * np.cos(theta)
    # the rear arc only where it advances (a sinking wheel); the front also where it merely presses
    # (a wheel spinning in place keeps the support it rolls on)
    loaded = np.where(theta < 0, advance > 0.0, advance >= 0.0)
    sigma = (soil.k_c / b + soil.k_phi) * r**soil.n * np.maximum(np.cos(mapped) - np.cos(t1), 0.0) ** soil.n * loaded
    # the shear opposes the rim's slip over the soil, ur − v·(cos θ, sin θ) (Wong writes it for vz = 0),
    # mobilised by the shear displacement j so far (full if the rim does not roll forward)
    against = np.sign(ur - vx * np.cos(theta) - vz * np.sin(theta))
    if ur > 0:
        j = r * ((t1 - theta) - (vx / ur) * (np.sin(t1) - np.sin(theta)))
        mobilised = (1.0 - np.exp(-np.abs(j) / shear_modulus)) * against
    else:
        mobilised = against
    tau = (soil.cohesion + sigma * np.tan(soil.friction_angle)) * mobilised * loaded
    return sigma, tau


def _integrals(wheel: Wheel, soil: Soil, sinkage, vx, vz, ur, shear_modulus):
    """(f_x, f_z, τ) of the soil on a wheel going forward (vx ≥ 0): N, N, N·m about its centre (eq. 24),
    over the front arc [0, θ₁] and, where a sinking wheel loads it, the rear [−θ₁, 0]."""
    t1 = np.arccos(1.0 - sinkage / wheel.radius)
    total = np.zeros(3)
    for theta in (np.linspace(0.0, t1, ARC_POINTS), np.linspace(-t1, 0.0, ARC_POINTS)):
        sigma, tau = rim_stresses(wheel, soil, sinkage, theta, vx, vz, ur, shear_modulus)
        total += [np.trapezoid(tau * np.cos(theta) - sigma * np.sin(theta), theta),
                  np.trapezoid(sigma * np.cos(theta) + tau * np.sin(theta), theta),
                  wheel.radius * np.trapezoid(tau, theta)]
    return wheel.radius * wheel.width * total


def rim_wrench(wheel: Wheel, soil: Soil, sinkage: float, vx: float, vz: float, ur: float,
               shear_modulus: float = SHEAR_MODULUS) -> np.ndarray:
    """(f_x, f_z, τ) of the soil on the wheel for any planar motion, in the frame of the surface at the
    wheel's centre: a wheel going backwards (its centre, or if that is still, its rim) is the mirror
    image of one going forwards, and one moving only up or down the mean of the two."""
    if not 0.0 < sinkage < wheel.radius:
        raise GranularError(f"sinkage must lie in (0, r = {wheel.radius} m), got {sinkage!r}")
    size = abs(vx) + abs(vz) + abs(ur)
    vx, vz = (0.0 if abs(a) <= 1e-12 * size else a for a in (vx, vz))  # rounding decides no side
    way = np.sign(vx) or np.sign(ur)
    forward = _integrals(wheel, soil, sinkage, vx, vz, ur, shear_modulus) if way >= 0 else None
    backward = _integrals(wheel, soil, sinkage, -vx, vz, -ur, shear_modulus) * MIRROR if way <= 0 else None
    if forward is None:
        return backward
    return forward if backward is None else 0.5 * (forward + backward)


@dataclass(frozen=True)
class RFTGround:
    """A granular medium under the wheel by resistive force theory instead of Bekker–Wong: Li et
    al.'s stresses summed over the rim (:func:`granular.data.rft.wheel_wrench`), scale ζ and
    coefficients ``coeffs``. Takes a :class:`Soil`'s place in :func:`forces` and what calls it."""

    zeta: float
    coeffs: dict


def ground(name: str):
    """A Table 6 soil (Wong–Reece) or an RFT medium preset (``sand``, ``pebbles``) by name."""
    from granular.data.media import MEDIA, medium
    from granular.data.terramechanics import soil

    if name in MEDIA:
        return RFTGround(medium(name).zeta, medium(name).coeffs)
    return soil(name)


def forces(wheel: Wheel, soil, sinkage: float, slip: float, shear_modulus: float = SHEAR_MODULUS):
    """(F_N, drawbar pull, driving torque) in N, N, N·m at a sinkage (m) and slip (eq. 24; or RFT
    for an :class:`RFTGround`)."""
    if not 0.0 < sinkage < wheel.radius:
        raise GranularError(f"sinkage must lie in (0, r = {wheel.radius} m), got {sinkage!r}")
    rolling = [-slip, 0.0, -1.0 / wheel.radius]  # the lowest rim point's twist, rolling at this slip
    pull, normal, torque = contact_wrench(wheel, soil, (-sinkage, 0.0), rolling, shear_modulus)[0]
    return float(normal), float(pull), float(torque)


def sinkage(wheel: Wheel, soil, slip: float, shear_modulus: float = SHEAR_MODULUS) -> float:
    """The sinkage (m) at which the soil carries the wheel's load at this slip."""
    def excess(z):
        return forces(wheel, soil, z, slip, shear_modulus)[0] - wheel.load

    low, high = 1e-6 * wheel.radius, 0.999 * wheel.radius
    if excess(high) < 0:
        raise GranularError(f"the soil cannot carry {wheel.load} N under a wheel of radius {wheel.radius} m: "
                            "it would sink past the axle")
    return float(brentq(excess, low, high, xtol=1e-9))


def slip_sweep(wheel: Wheel, soil, slips, shear_modulus: float = SHEAR_MODULUS) -> dict:
    """The single-wheel test bed: per slip, the sinkage, drawbar pull and driving torque at the
    wheel's load, and the tractive efficiency DP·(1 − s)·r / T."""
    slips = np.asarray(slips, dtype=float)
    if slips.ndim != 1 or not len(slips) or (slips < 0).any() or (slips >= 1).any():
        raise GranularError("slips must be numbers in [0, 1)")
    z = np.array([sinkage(wheel, soil, s, shear_modulus) for s in slips])
    out = np.array([forces(wheel, soil, zi, s, shear_modulus) for zi, s in zip(z, slips)])
    torque = out[:, 2]
    efficiency = np.where(torque > 0, out[:, 1] * (1 - slips) * wheel.radius / np.where(torque > 0, torque, 1.0), 0.0)
    return {"slip": slips, "sinkage_m": z, "drawbar_pull_n": out[:, 1], "torque_nm": torque,
            "efficiency": np.maximum(efficiency, 0.0)}


#: The wheel's datasets (`granular synth --source wheel`): sinkages (m, as depths d = −z of the rim's
#: lowest point) and the slips whose rolling directions join the sphere's.
DEPTHS = (0.0, -0.005, -0.01, -0.02, -0.03, -0.045, -0.06)
SLIPS = (-0.3, -0.1, 0.1, 0.2, 0.35, 0.6, 0.8)
#: Speed of the directions' scale (m/s); the rotation rate's is SPEED / r, so that a direction's slip
#: is e_x / e_φ and the sphere spreads over slips, not over a speed ratio.
SPEED = 0.1


def velocity_scale(wheel: Wheel) -> np.ndarray:
    return np.array([SPEED, SPEED, SPEED / wheel.radius])


def directions(m: int = 26, slips=SLIPS) -> np.ndarray:
    """The sphere's m directions and, for each slip s, the direction of rolling at that slip and its
    mirror image: ±(−s, 0, −1) normalised (the lowest rim point slips at −s times the rim's speed).
    The sphere's 45° azimuths alone hold only s = 0 and s = 1, where drawbar pull changes most."""
    from granular.data.sampling import sphere_directions

    rolling = np.array([[-s, 0.0, -1.0] for s in slips])
    rolling /= np.linalg.norm(rolling, axis=1, keepdims=True)
    return np.vstack([sphere_directions(m), rolling, rolling * -1.0])


def contact_wrench(wheel: Wheel, soil, theta, twists, shear_modulus: float = SHEAR_MODULUS) -> np.ndarray:
    """Resistance wrenches (k, 3) in F_r, at the wheel's centre, to twists (k, 3) of the rim's lowest
    point p_center in F_c (the frames of a round foot, :mod:`granular.contact.detection`): its
    velocity is the slip velocity, and the centre moves at it plus ω × r n. ``soil``: a Table 6
    :class:`Soil` (Wong–Reece, :func:`rim_wrench`) or an :class:`RFTGround`."""
    twists = np.atleast_2d(np.asarray(twists, dtype=float))
    if isinstance(soil, RFTGround):
        from granular.data.rft import wheel_wrench

        return wheel_wrench(wheel.radius, wheel.width, theta, twists, soil.zeta, soil.coeffs)
    sinkage = min(-float(theta[0]), 0.999 * wheel.radius)
    r = wheel.radius
    return np.array([rim_wrench(wheel, soil, sinkage, ux - w * r, uz, -w * r, shear_modulus) for ux, uz, w in twists])
