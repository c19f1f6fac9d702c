"""Robot specifications (TOML under sim/robots/) turned into multibody models.

A quadruped spec gives the torso, the thigh, shank and foot of a limb, and
per-joint PD gains, torque and angle limits (see sim/robots/robosimian.toml).
Each link frame has its origin at its proximal joint and the link hanging
along its −z axis at zero angle; the foot's p_center is ``foot.length`` below
its ankle, its axis pointing up to the ankle.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated

import numpy as np
from msgspec import Meta

from granular.contact.detection import FootContact
from granular.errors import GranularError
from granular.io.schema import Finite, Positive, Schema, load
from granular.foot import Foot
from granular.dynamics.multibody import Body, MultiBody

LIMBS = (("front_1", 1.0), ("front_2", 1.0), ("rear_1", -1.0), ("rear_2", -1.0))
LIMB_INDEX = {limb: i for i, (limb, _) in enumerate(LIMBS)}
JOINTS = ("hip", "knee", "ankle")


@dataclass(frozen=True)
class Quadruped:
    """A planar quadruped: its multibody, its feet, and per-joint control limits."""

    multibody: MultiBody
    contacts: tuple
    thigh: float                 # link lengths (m)
    shank: float
    hip_x: float
    hip_z: float
    kp: np.ndarray               # per generalized dof (0 on the base)
    kd: np.ndarray
    max_torque: np.ndarray
    lower: np.ndarray            # joint angle limits per dof (−inf/inf on the base)
    upper: np.ndarray
    dofs: np.ndarray             # (4, 3): the hip, knee and ankle coordinates of each limb

    def joint(self, limb: str, joint: str) -> int:
        """The generalized coordinate of a joint, e.g. ('front_1', 'knee')."""
        body = {"hip": "thigh", "knee": "shank", "ankle": "foot"}[joint]
        return 2 + self.multibody.index(f"{limb}_{body}")

    def leg_angles(self, side: float, x: float, z: float, pitch: float = 0.0):
        """Hip, knee and ankle angles putting a limb's ankle at (x, z) from its hip in the torso frame,
        its foot vertical in the world for torso ``pitch``. Knees point outwards (``side`` +1 for
        front limbs: forward; −1 for rear limbs: backward), which keeps the centre of mass between
        the hips. Scalar math: numpy's per-call overhead on four limbs cost 30 µs a step."""
        L1, L2 = self.thigh, self.shank
        cos_knee = min(max((x * x + z * z - L1 * L1 - L2 * L2) / (2 * L1 * L2), -1.0), 1.0)
        knee = -side * math.acos(cos_knee)
        hip = math.atan2(x, -z) - math.atan2(L2 * math.sin(knee), L1 + L2 * math.cos(knee))
        return hip, knee, -(hip + knee) - pitch

    def pose(self, legs: dict, pitch: float = 0.0) -> np.ndarray:
        """Joint part of q for ankle targets {limb: (x, z)} relative to the hips in world-aligned axes,
        with the torso at ``pitch``: each leg is lengthened or shortened by the height its hip is
        off level (front legs shorter when the nose is up), which levels the torso."""
        c, s = math.cos(pitch), math.sin(pitch)
        q = [0.0] * (self.multibody.ndof - 3)
        for limb, (x, z) in legs.items():
            i = LIMB_INDEX[limb]
            side = LIMBS[i][1]
            z = z + side * self.hip_x * s
            for j, angle in zip(self._joint_columns[i], self.leg_angles(side, c * x + s * z, -s * x + c * z, pitch)):
                q[j] = angle
        return np.array(q)

    @cached_property
    def _joint_columns(self):
        """Per limb, the columns of its hip, knee and ankle in the joint part of q (plain ints: the
        gait controller runs every step, and numpy's fancy indexing cost 1.5 µs a limb)."""
        return tuple(tuple(int(j) - 3 for j in row) for row in self.dofs)


class Torso(Schema):
    mass: Positive              # kg
    inertia: Positive           # kg·m² about the pitch axis
    hip_x: Positive             # m: limb mounts at x = ±hip_x
    hip_z: Finite = 0.0


class Link(Schema):
    mass: Positive
    length: Positive


class FootLink(Schema):
    mass: Positive
    inertia: Positive


class Joint(Schema):
    kp: Positive
    kd: Positive
    max_torque: Positive
    limits: tuple[Finite, Finite] = (-np.pi, np.pi)


class Joints(Schema):
    hip: Joint
    knee: Joint
    ankle: Joint


class Grains(Schema):
    factor: Annotated[float, Meta(ge=0.0, le=100.0)] = 2.0   # M_g = factor × the foot's mass and inertia


class QuadrupedSpec(Schema):
    """A quadruped spec file (sim/robots/*.toml)."""

    torso: Torso
    thigh: Link
    shank: Link
    foot: FootLink
    joints: Joints
    grains: Grains = Grains()


def load_quadruped(path, foot: Foot) -> Quadruped:
    """Build the quadruped of a spec file; ``foot`` is the geometry the medium model was learned for."""
    spec = load(path, QuadrupedSpec, "robot spec")
    for name in JOINTS:
        lo, hi = getattr(spec.joints, name).limits
        if not lo < hi:
            raise GranularError(f"{path}: joints.{name}.limits must be [lower, upper] with lower < upper")
    t, th, sh, ft = spec.torso, spec.thigh, spec.shank, spec.foot
    L1, L2, m1, m2 = th.length, sh.length, th.mass, sh.mass
    bodies = [Body("torso", t.mass, t.inertia)]
    for limb, side in LIMBS:
        bodies += [Body(f"{limb}_thigh", m1, m1 * L1**2 / 12, com=(0.0, -L1 / 2), parent="torso",
                        joint=(side * t.hip_x, t.hip_z)),
                   Body(f"{limb}_shank", m2, m2 * L2**2 / 12, com=(0.0, -L2 / 2), parent=f"{limb}_thigh",
                        joint=(0.0, -L1)),
                   Body(f"{limb}_foot", ft.mass, ft.inertia, com=(0.0, -foot.length / 2), parent=f"{limb}_shank",
                        joint=(0.0, -L2))]
    mb = MultiBody(tuple(bodies))
    k = spec.grains.factor
    contacts = tuple(FootContact(limb, mb.index(f"{limb}_foot"), p_center=(0.0, -foot.length), axis=(0.0, 1.0),
                                 foot=foot, grain_mass=(k * ft.mass, k * ft.mass, k * ft.inertia))
                     for limb, _ in LIMBS)
    n = mb.ndof
    gains = {k: np.zeros(n) for k in ("kp", "kd", "max_torque")}
    lower, upper = np.full(n, -np.inf), np.full(n, np.inf)
    dofs = np.array([[2 + mb.index(f"{limb}_{body}") for body in ("thigh", "shank", "foot")] for limb, _ in LIMBS])
    robot = Quadruped(mb, contacts, L1, L2, t.hip_x, t.hip_z, gains["kp"], gains["kd"], gains["max_torque"], lower,
                      upper, dofs)
    for name in JOINTS:
        j = getattr(spec.joints, name)
        for limb, _ in LIMBS:
            i = robot.joint(limb, name)
            gains["kp"][i], gains["kd"][i], gains["max_torque"][i] = j.kp, j.kd, j.max_torque
            lower[i], upper[i] = j.limits
    return robot
