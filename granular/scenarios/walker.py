"""The passive compass-gait walker of Zheng & Wang (§2, Fig. 1; Corral et al. 2020, §2.1).

Two straight legs of mass m, inertia J about their centres of mass, length l, joined at a free hip
H; each leg's centre of mass lies d below the hip, and each foot is an arc of radius r whose centre
O lies l − r below it. Leg angles θ are Zheng & Wang's: from the downward vertical, counter-clockwise
(a leg with θ > 0 has its foot ahead of the hip, +x). The walker goes down a slope towards +x with no
actuation. Its first leg is the multibody's base: q = (H_x, H_z, θ₁, θ₂ − θ₁).

A gait is read from a run: a *heel strike* is a foot taking over the load from the other one
(the swing rule, :func:`~granular.contact.detection.leading`, lets one foot at a time bear it). At
each strike the walker's state in stance/swing roles, (θ_st, θ_sw, ω_st, ω_sw), is a point of its
Poincaré section; a period-1 limit cycle returns to the same point every step.
"""
from __future__ import annotations

import math

import numpy as np

from granular.contact.detection import FootContact
from granular.dynamics.multibody import Body, MultiBody
from granular.simulation.step import State


def multibody(mass, inertia, length, com, foot_radius, foot, hip_mass=0.0):
    """The walker's two legs and round feet (the first leg is the base and carries the hip's point
    mass, if any)."""
    total = mass + hip_mass
    hip_com = mass * com / total
    hip_inertia = inertia + mass * (com - hip_com) ** 2 + hip_mass * hip_com**2
    mb = MultiBody((Body("leg_1", total, hip_inertia, com=(0.0, -hip_com)),
                    Body("leg_2", mass, inertia, com=(0.0, -com), parent="leg_1")))
    centre = (0.0, -(length - foot_radius))
    contacts = tuple(FootContact(f"foot_{i + 1}", i, p_center=centre, axis=(0.0, 1.0), foot=foot,
                                 grain_mass=(0.0, 0.0, 0.0), roll_radius=foot_radius) for i in range(2))
    return mb, contacts


def initial_state(ground, x, stance, swing, length, foot_radius) -> State:
    """The first leg standing on the ground at ``x``, rolling without slip: ``stance`` and ``swing``
    are (angle, rate) of the first and second legs (rad, rad/s)."""
    (a1, w1), (a2, w2) = stance, swing
    contact = np.array([x, float(ground.height(x))])
    n = np.asarray(ground.normal(x), dtype=float)
    hip = contact + foot_radius * n - (length - foot_radius) * np.array([math.sin(a1), -math.cos(a1)])
    arm = hip - contact  # the leg rolls about its contact point
    q = np.array([hip[0], hip[1], a1, a2 - a1])
    v = np.array([-w1 * arm[1], w1 * arm[0], w1, w2 - w1])
    return State(0.0, q, v)


#: Steps after a strike at which its Poincaré point is read.
AFTER = 2
#: cos 60°: a walker none of whose legs is within 60° of the vertical has fallen.
FALLEN_COS = 0.5


def gait(t, q, v, active, p_center) -> dict:
    """Heel strikes and what repeats between them, from a recorded run (arrays over its steps).

    ``steps``: the strikes after the first, each with its time, the foot that landed, the step length
    (contact to contact, m), the period (s) and the Poincaré point (θ_st, θ_sw, ω_st, ω_sw) after it:
    the new stance leg's angle and rate, then the new swing leg's, ``AFTER`` steps on (an impact on a
    stiff plastic floor may take a step or two). ``return_error``: the largest change of that point
    over the last three steps (rad, rad/s); a limit cycle keeps it to the jitter of impacts falling
    on a grid of time steps.
    ``length``/``period``/``speed``: the last step's (m, s, m/s). ``fell_at_s``: when it fell (no leg
    within 60° of the vertical), else None. A run records one state more than
    contact rows (the initial one); the states after each step are used."""
    n = len(active)
    t, q, v = t[-n:], q[-n:], v[-n:]
    angles = np.column_stack([q[:, 2], q[:, 2] + q[:, 3]])
    rates = np.column_stack([v[:, 2], v[:, 2] + v[:, 3]])
    load = np.where(active[:, 0], 0, np.where(active[:, 1], 1, -1))
    strikes = []  # (step, the foot that landed, the foot it took over from)
    held = -1
    for k in range(1, n):
        if load[k] < 0 or load[k] == held:
            continue
        if held < 0 or p_center[k, load[k], 0] > p_center[k, held, 0]:  # not the load handed back
            if held >= 0:
                strikes.append((k, load[k], held))
            held = load[k]
    steps = []
    for (a, _, _), (b, new, old) in zip(strikes, strikes[1:]):
        k = min(b + AFTER, n - 1)
        point = [angles[k, new], angles[k, old], rates[k, new], rates[k, old]]
        steps.append({"t": float(t[b]), "foot": int(new) + 1,
                      "length": float(np.hypot(*(p_center[b, new] - p_center[b, old]))),
                      "period": float(t[b] - t[a]), "poincare": [float(p) for p in point]})
    # fallen: no leg within 60° of the downward vertical, so the hip is below half a leg's height
    down = np.cos(angles).max(axis=1) < FALLEN_COS
    out = {"strikes": len(strikes), "steps": steps,
           "fell_at_s": float(t[int(np.argmax(down))]) if down.any() else None}
    if len(steps) >= 3:
        last = np.array([s["poincare"] for s in steps[-3:]])
        out.update(return_error=float(np.abs(np.diff(last, axis=0)).max()), length=steps[-1]["length"],
                   period=steps[-1]["period"], speed=steps[-1]["length"] / steps[-1]["period"])
    return out
