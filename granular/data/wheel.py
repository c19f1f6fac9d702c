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
    """σ(θ), τ(θ) (Pa) at rim angles θ (rad from the bottom, positive towards the front)."""
    r, b = wheel.radius, wheel.width
    t1 = np.arccos(1.0 - sinkage / r)
    tm = (C1 + C2 * slip) * t1
    front = theta >= tm
    # behind θ_m the front's profile is mapped onto [0, θ_m] (θ₂ = 0)
    mapped = np.where(front, theta, t1 - theta / max(tm, 1e-12) * (t1 - tm))
    sigma = (soil.k_c / b + soil.k_phi) * r**soil.n * np.maximum(np.cos(mapped) - np.cos(t1), 0.0) ** soil.n
    j = r * ((t1 - theta) - (1.0 - slip) * (np.sin(t1) - np.sin(theta)))
    tau = (soil.cohesion + sigma * np.tan(soil.friction_angle)) * (1.0 - np.exp(-np.abs(j) / shear_modulus)) * np.sign(j)
    return sigma, tau


def forces(wheel: Wheel, soil: Soil, sinkage: float, slip: float, shear_modulus: float = SHEAR_MODULUS):
    """(F_N, drawbar pull, driving torque) in N, N, N·m at a sinkage (m) and slip (eq. 24)."""
    if not 0.0 < sinkage < wheel.radius:
        raise GranularError(f"sinkage must lie in (0, r = {wheel.radius} m), got {sinkage!r}")
    t1 = np.arccos(1.0 - sinkage / wheel.radius)
    theta = np.linspace(0.0, t1, ARC_POINTS)
    sigma, tau = stresses(wheel, soil, sinkage, slip, theta, shear_modulus)
    rb = wheel.radius * wheel.width
    normal = rb * np.trapezoid(sigma * np.cos(theta) + tau * np.sin(theta), theta)
    pull = rb * np.trapezoid(tau * np.cos(theta) - sigma * np.sin(theta), theta)
    torque = wheel.radius * rb * np.trapezoid(tau, theta)
    return float(normal), float(pull), float(torque)


def sinkage(wheel: Wheel, soil: Soil, slip: float, shear_modulus: float = SHEAR_MODULUS) -> float:
    """The sinkage (m) at which the soil carries the wheel's load at this slip."""
    def excess(z):
        return forces(wheel, soil, z, slip, shear_modulus)[0] - wheel.load

    low, high = 1e-6 * wheel.radius, 0.999 * wheel.radius
    if excess(high) < 0:
        raise GranularError(f"the soil cannot carry {wheel.load} N under a wheel of radius {wheel.radius} m: "
                            "it would sink past the axle")
    return float(brentq(excess, low, high, xtol=1e-9))


def slip_sweep(wheel: Wheel, soil: Soil, slips, shear_modulus: float = SHEAR_MODULUS) -> dict:
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
