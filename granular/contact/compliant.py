"""Compliant (penalty) contact: a foot's wrench in closed form from its penetration and velocity.

The alternatives to the learned wrench space that Corral et al. (2020, §2.2) compare for a walking
biped. A normal law F_N(δ, δ̇) and Bengisu & Akay's friction with a Stribeck peak:

==================== ============================================ =================================
law                  F_N                                          source
==================== ============================================ =================================
hertz                K δⁿ                                         Hertz; Ding et al. 2013, Table 5
kelvin-voigt         K δ + D δ̇                                    linear spring–damper
hunt-crossley        K δⁿ (1 + 3(1 − e)/2 · δ̇/δ̇⁻)                Hunt & Crossley 1975
lankarani-nikravesh  K δⁿ (1 + 3(1 − e²)/4 · δ̇/δ̇⁻)               Lankarani & Nikravesh 1990
flores               K δⁿ (1 + 8(1 − e)/(5e) · δ̇/δ̇⁻)             Flores et al. 2011; Corral eq. 7
==================== ============================================ =================================

F_N ≥ 0 (the ground never pulls). e is the coefficient of restitution at the approach speed δ̇⁻
(``impact_speed``; the laws are written for one impact, a simulator of lasting contact fixes it).

On granular ground the elastic term is Bekker's pressure–sinkage law of the flat plate, which has
Hertz's form: F = (k_c π r + k_φ π r²) δⁿ (Ding et al. 2013, eq. 17). Rather than take K, n and
Coulomb's μ from a soil table, :func:`fit` takes them from the medium's own wrench dataset (its
plunges and drags of the upright foot), so every compliant law is calibrated on the same data as
the learned model. The laws act on the bottom plate point by point: the disk of radius r seen
edge-on is a strip across the foot, each point at depth δ(s) = −(h + s sin φ) (s along the plate
from p_center, h p_center's height, R |sin φ| above θ's d) bearing the pressure law K δ(s)ⁿ / (π r²) with its own δ̇ and its own friction, so a
tilted foot feels the restoring torque of its deeper edge, and a level plate F_N = K δⁿ.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from granular.errors import GranularError
from granular.frames import center_height, center_slip, cross2, foot_axis, point_velocity

#: A foot's rubber pad (Ding et al. 2013, §5.1: 50 N over 0.5 mm) and a wooden floor (their Table 4,
#: from Silva et al.), N/m: the compliance of a foot on rigid ground (:func:`rigid_floor`).
PAD_STIFFNESS, FLOOR_STIFFNESS = 1e5, 1.5e9
LAWS = ("hertz", "kelvin-voigt", "hunt-crossley", "lankarani-nikravesh", "flores")
#: Bengisu & Akay's Stribeck parameters as Corral et al. use them for their biped: v₀ (m/s), ξ (s/m).
STRIBECK_SPEED, STRIBECK_DECAY = 1e-4, 1000.0
#: The plate's points: Gauss–Chebyshev (2nd kind) nodes x and weights ω, ∫ √(1 − x²) f(x) dx ≈ Σ ω f(x),
#: so that the strip of the disk at s = r x, of width 2√(r² − s²), has the area 2 r² ω.
_NODES = 16
_X = np.cos(np.arange(1, _NODES + 1) * np.pi / (_NODES + 1))
_SHARE = 2.0 / np.pi * np.pi / (_NODES + 1) * np.sin(np.arange(1, _NODES + 1) * np.pi / (_NODES + 1)) ** 2


def hysteresis(law: str, e: float) -> float:
    """χ(e) of F_N = K δⁿ (1 + χ δ̇/δ̇⁻) for the hysteresis-damping laws; 0 for Hertz."""
    if law == "hunt-crossley":
        return 1.5 * (1.0 - e)
    if law == "lankarani-nikravesh":
        return 0.75 * (1.0 - e * e)
    if law == "flores":
        return 8.0 * (1.0 - e) / (5.0 * e)
    return 0.0


@dataclass(frozen=True)
class Compliant:
    """One compliant contact law and its parameters (SI)."""

    law: str
    stiffness: float                      # K, N/mⁿ, of the whole plate
    radius: float                         # the plate's radius r, m
    exponent: float                       # n (1 for kelvin-voigt)
    friction: float                       # μ_k, Coulomb's coefficient while sliding
    static_friction: float | None = None  # μ_s, the Stribeck peak (default μ_k)
    restitution: float = 0.5              # e at the approach speed impact_speed
    impact_speed: float = 1.0             # δ̇⁻, m/s
    damping: float = 0.0                  # kelvin-voigt's D, N·s/m
    stribeck_speed: float = STRIBECK_SPEED
    stribeck_decay: float = STRIBECK_DECAY

    def __post_init__(self):
        if self.law not in LAWS:
            raise GranularError(f"unknown compliant contact law {self.law!r}; choose one of {', '.join(LAWS)}")
        if not 0.0 < self.restitution <= 1.0:
            raise GranularError(f"restitution must be in (0, 1], got {self.restitution!r}")
        for name in ("stiffness", "radius", "exponent", "impact_speed", "stribeck_speed"):
            if not getattr(self, name) > 0:
                raise GranularError(f"compliant contact {name} must be positive, got {getattr(self, name)!r}")
        if self.friction < 0 or self.damping < 0:
            raise GranularError("friction and damping must not be negative")
        if self.peak_friction < self.friction:
            raise GranularError(f"static_friction (μ_s, Bengisu's peak) must be at least friction (μ_k): "
                                f"got {self.peak_friction!r} < {self.friction!r}")

    def normal(self, delta, rate):
        """F_N (N) at penetrations δ ≥ 0 (m) and penetration rates δ̇ (m/s)."""
        elastic = self.stiffness * delta**self.exponent
        if self.law == "kelvin-voigt":
            force = elastic + self.damping * rate * (delta > 0)
        else:
            force = elastic * (1.0 + hysteresis(self.law, self.restitution) * rate / self.impact_speed)
        return np.maximum(force, 0.0)

    @property
    def peak_friction(self) -> float:
        """μ_s: Bengisu's peak, and the most a held foot's friction bears."""
        return self.friction if self.static_friction is None else self.static_friction

    def friction_coefficient(self, slip):
        """Bengisu & Akay's μ(v), signed as v: zero at rest, the peak μ_s at v₀, decaying to μ_k."""
        mu_s = self.peak_friction
        s = np.abs(slip) / self.stribeck_speed
        rising = mu_s * (2.0 * s - s * s)
        falling = self.friction + (mu_s - self.friction) * np.exp(-self.stribeck_decay * self.stribeck_speed * (s - 1.0))
        return np.sign(slip) * np.where(s < 1.0, rising, falling)


def _plate(model: Compliant, theta, r_offset):
    """The plate's points relative to p_r (k, P, 2) and their depths δ (k, P)."""
    theta = np.asarray(theta, dtype=float).reshape(-1, 2)
    phi = theta[:, 1]
    arm = -np.asarray(r_offset, dtype=float).reshape(-1)[:, None] * foot_axis(phi)  # p_center − p_r
    s = model.radius * _X
    across = np.stack([np.cos(phi), np.sin(phi)], axis=-1)
    points = arm[:, None, :] + s[None, :, None] * across[:, None, :]
    height = center_height(theta[:, :1], phi[:, None], model.radius)  # p_center's (θ's d is the lowest point's)
    return points, np.maximum(-(height + s[None, :] * np.sin(phi)[:, None]), 0.0)


def wrench(model: Compliant, theta, twist_r, r_offset) -> np.ndarray:
    """The medium's wrench (k, 3) on k feet in F_r (N, N, N·m about p_r), for configurations θ
    (k, 2), twists of p_r (k, 3) in F_c and the feet's p_r offsets (k,)."""
    normal, friction = _parts(model, theta, twist_r, r_offset)
    return normal + friction


def _parts(model: Compliant, theta, twist_r, r_offset):
    """The wrench's normal-law part and friction part, (k, 3) each."""
    points, depth = _plate(model, theta, r_offset)
    v = point_velocity(np.asarray(twist_r, dtype=float).reshape(-1, 1, 3), points)
    fn = model.normal(depth, -v[..., 1]) * _SHARE
    zero = np.zeros_like(fn)
    parts = []
    for f in (np.stack([zero, fn], axis=-1), np.stack([-model.friction_coefficient(v[..., 0]) * fn, zero], axis=-1)):
        parts.append(np.column_stack([f.sum(axis=1), cross2(points, f).sum(axis=1)]))
    return parts


def impulses(model: Compliant, qp, theta, r_offset, h: float) -> np.ndarray:
    """One step's contact impulses (3k,) of k feet under a compliant law, given the step's
    :class:`~granular.contact.qp.ContactQP` (for its velocities; no QP is solved).

    The normal law and Bengisu's friction are explicit, from the state at the start of the step,
    except where that friction would make a foot stick: a foot whose friction would reverse its
    slip within the step, or that slips slower than the Stribeck speed v₀, gets instead the
    impulse at p_center that holds it, if that lies within μ_s N h (Karnopp 1985, the stick band
    of explicit friction), else it slides at Bengisu's friction (at least v₀'s, the peak μ_s).
    Explicit Stribeck friction alone is as stiff as μ_s N / v₀ near rest: it chatters and pumps
    energy in unless the step is tiny (docs/accuracy.md, "Compliant contact models"). The held foot's
    impulse does no work (the slip it leaves is zero), so sticking never adds energy."""
    twist = (qp.Jt @ qp.v).reshape(-1, 3)
    grip, friction = _parts(model, theta, twist, r_offset)
    grip = h * grip
    c = grip + h * friction
    load = grip[:, 1]
    k = len(load)
    # a unit force along x at p_center: its wrench about p_r, and the slip it works against
    arm, before = center_slip(twist, r_offset, np.asarray(theta)[:, 1])
    unit = np.column_stack([np.ones(k), np.zeros(k), -arm[:, 1]])
    G = np.zeros((3 * k, k))
    G.reshape(k, 3, k)[np.arange(k), :, np.arange(k)] = unit
    slip = lambda impulse: G.T @ (qp.Jt @ qp.velocity(impulse))
    after = slip(c.ravel())
    held = (load > 0) & ((np.sign(after) != np.sign(before)) | (np.abs(before) <= model.stribeck_speed))
    mu_s = model.peak_friction
    mu_slide = np.abs(model.friction_coefficient(np.maximum(np.abs(before), model.stribeck_speed)))
    out = c.copy()
    while held.any():
        S = np.flatnonzero(held)
        out[S] = grip[S]
        GS = G[:, S]
        try:
            hold = np.linalg.solve(GS.T @ qp.Jt @ qp.B @ GS, -slip(out.ravel())[S])
        except np.linalg.LinAlgError:  # a foot the bodies cannot move along x: explicit friction
            return c.ravel()
        over = np.abs(hold) > mu_s * load[S]
        if not over.any():
            return out.ravel() + GS @ hold
        # these break free: they slide against the push that holding them needed
        slide = S[over]
        out[slide] = grip[slide] + (np.sign(hold[over]) * mu_slide[slide] * load[slide])[:, None] * unit[slide]
        held[slide] = False
    return out.ravel()


def elastic_energy(model: Compliant, theta, r_offset) -> np.ndarray:
    """The energy (J) the elastic term stores per foot, Σ K δⁿ⁺¹/(n + 1) over the plate's shares."""
    _, depth = _plate(model, theta, r_offset)
    return (model.stiffness * depth ** (model.exponent + 1) / (model.exponent + 1) * _SHARE).sum(axis=1)


def fit(law: str, dataset, **options) -> Compliant:
    """``law`` calibrated on a wrench dataset: K and n by least squares on log f_z of the upright
    foot's straight plunge over depth (n = 1 for kelvin-voigt, whose D then gives ``restitution``
    to a ``mass`` (kg, default 10) bouncing on the linear spring), μ by least squares of the upright
    foot's horizontal drag |f_x| against K δⁿ. ``options`` override any :class:`Compliant` field."""
    mass = options.pop("mass", 10.0)
    if dataset.source == "coulomb":
        return _damped(rigid_floor(law, dataset, **options), options, mass)
    upright = (dataset.configs[:, 1] == 0.0) & (dataset.configs[:, 0] < 0)
    if upright.sum() < 2:
        raise GranularError(f"{dataset.medium}: a compliant law needs upright data (φ = 0) at two depths or more")
    down = int(np.argmax(dataset.directions @ np.array([0.0, -1.0, 0.0])))
    drag = int(np.argmax(np.abs(dataset.directions @ np.array([1.0, 0.0, 0.0]))))
    delta = -dataset.configs[upright, 0]
    ok = dataset.valid[upright, down] & (dataset.wrenches[upright, down, 1] > 0)
    fz = dataset.wrenches[upright, down, 1]
    if ok.sum() < 2:
        raise GranularError(f"{dataset.medium}: no upward resistance to a plunge at two depths to fit a stiffness to")
    if law == "kelvin-voigt":
        n = 1.0
        K = float(delta[ok] @ fz[ok] / (delta[ok] @ delta[ok]))
    else:
        n, logK = np.polyfit(np.log(delta[ok]), np.log(fz[ok]), 1)
        n, K = float(n), float(np.exp(logK))
    load = K * delta**n
    keep = dataset.valid[upright, drag]
    mu = float(np.abs(dataset.wrenches[upright, drag, 0])[keep] @ load[keep] / (load[keep] @ load[keep]))
    return _damped(replace(Compliant(law, K, dataset.foot.radius, n, mu), **options), options, mass)


def _damped(model: Compliant, options: dict, mass: float) -> Compliant:
    """Kelvin–Voigt's D for its ``restitution`` on a ``mass`` bouncing on its linear spring."""
    if model.law != "kelvin-voigt" or "damping" in options:
        return model
    ln_e = np.log(model.restitution)
    zeta = -ln_e / np.sqrt(np.pi**2 + ln_e**2)
    return replace(model, damping=float(2.0 * zeta * np.sqrt(model.stiffness * mass)))


def rigid_floor(law: str, dataset, **options) -> Compliant:
    """``law`` for a foot on rigid ground (a Coulomb dataset, :mod:`granular.data.coulomb`): the
    compliance is the foot's own pad in series with the floor, k_N = k_F k_T / (k_F + k_T) (Ding et
    al. 2013, eq. 7, which prints the reciprocal), linear (n = 1), with the data's Coulomb μ.
    The floor's data hold one depth (at 10⁹ N/m, a plastic floor for the QP), so no stiffness can
    be fitted to them; and a 10⁹ N/m spring under a leg of a few kilograms needs microsecond steps."""
    pressed = dataset.valid & (dataset.wrenches[..., 1] > 0)
    mu = float(np.max(np.abs(dataset.wrenches[..., 0])[pressed] / dataset.wrenches[..., 1][pressed]))
    k = PAD_STIFFNESS * FLOOR_STIFFNESS / (PAD_STIFFNESS + FLOOR_STIFFNESS)
    return replace(Compliant(law, k, dataset.foot.radius, 1.0, mu), **options)
