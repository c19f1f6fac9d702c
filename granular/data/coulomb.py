"""Rigid ground as a wrench dataset: a point contact with Coulomb friction.

The passive walker of Zheng & Wang (§2, eqs. 5–6) walks on a rigid floor: a unilateral contact
with Coulomb's dry friction. Recorded like a medium (a foot pushed in each direction at each θ),
that floor resists a foot pressed into it (v_z < 0) with a normal force N and a friction force
−μ N sign(v_x), at p_center; nothing otherwise.

N grows in proportion to depth, ``STIFFNESS`` N per metre: at 10 µm, the data's one depth, it
bears 10 kN, far above a walker's weight. So the floor is rigid for the robot and plastic for the
contact QP (no rebound), and an impact completes in one step (at 10 N per µm it took several, and
the load swapped between feet). Past the data the model scales W(θ) in proportion to depth
(learning/model.py), which is this law exactly, so an impact may press a foot a millimetre in.
Deeper samples, of MN forces, would put the hull's torque thickness below the tolerances of the
training report's polytope checks.

A rolling resistance ε N, of a tiny lever ``ROLLING``, gives the hull a torque thickness; without
it the hull is flat and its half-spaces are not defined. The QP's maximum dissipation makes this
Coulomb friction with one coefficient, the static one (Zheng & Wang's μ₀); a scenario's
``kinetic_friction`` (μ < μ₀) scales it for feet that slide (:func:`granular.simulation.step.kinetic`).
"""
from __future__ import annotations

import numpy as np

from granular.foot import Foot
from granular.frames import cross2

#: Coulomb's coefficient (our choice, rubber-like feet on a hard floor; the paper's text gives none).
FRICTION = 0.8
STIFFNESS = 1e9    # N/m: the normal force the floor bears per metre of penetration
ROLLING = 1e-4     # m: the rolling-resistance lever ε
DEPTHS = (0.0, -1e-5)
TILTS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5)
VELOCITY_SCALE = (0.1, 0.1, 0.5)


def point_wrench(foot: Foot, theta, twists, friction: float = FRICTION) -> np.ndarray:
    """The floor's wrench (k, 3) in F_r on a foot at θ = (d, φ), d < 0, moving with twists (k, 3)
    of p_center in F_c: Coulomb friction at p_center while the foot presses in, else zero."""
    twists = np.asarray(twists, dtype=float)
    pressing = twists[:, 1] < 0
    f = np.zeros((len(twists), 2))
    normal = -STIFFNESS * theta[0]
    f[pressing, 0] = -friction * normal * np.sign(twists[pressing, 0])
    f[pressing, 1] = normal
    torque = cross2(-foot.p_r(theta[1]), f) - ROLLING * f[:, 1] * np.sign(twists[:, 2])
    return np.column_stack([f, torque])
