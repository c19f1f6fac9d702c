"""Gaits for the shipped 3D robots: joint targets from MuJoCo's data, set before each step.

A gait is called with the robot's ``mjData`` and gives its actuators' targets; ``at(t)`` gives them
for the robot standing level at time t (the pose a scenario starts in).

The quadruped's trot and held pose are the planar robot's (:class:`granular.scenarios.control.Trot`,
``Hold``; the legs' inverse kinematics of :mod:`granular.scenarios.robots`), levelled in pitch as
in the plane and, in 3D, in roll too (a side's legs lengthened by the height its hips are below
level). Its legs have no abduction, so it cannot step sideways: the trot steers instead, like a
skid-steered vehicle, lengthening one side's strides and shortening the other's, to hold its
heading on the line y = 0 it started on (:data:`STEER`). Without it an open-loop trot turns and
drifts off its line within seconds on a yielding medium.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from granular.compiled import unchecked
from granular.errors import GranularError
from granular.frames3d import pitch as pitch_of
from granular.scenarios.control import Hold, Trot, pose_arrays
from granular.scenarios.robots import LIMBS
from granular.simulation.fused_control import trot_targets

#: The trot's steering: the heading it aims for is −HEADING_PER_M × its offset y from its line
#: (capped at MAX_HEADING rad); each side's strides are scaled by 1 ± STEER × the heading error
#: (capped at MAX_STEER), the left side's longer to turn right.
HEADING_PER_M, MAX_HEADING, STEER, MAX_STEER = 1.0, 0.3, 2.0, 0.5
#: Half the distance between the left and right hips (m) of the shipped RoboSimian-style quadruped
#: (sim/robots/robosimian3d.xml), for the roll levelling; its limbs, left side first.
HALF_WIDTH = 0.25
LEFT = ("front_1", "rear_1")   # FL, RL at +y


def frame(mj_data, body: int = 1):
    """(pitch, roll, yaw) of a body, rad: pitch counter-clockwise about −y as in the plane
    (:func:`granular.frames3d.pitch`), roll about its x axis (left side up positive), yaw of its x
    axis about +z."""
    R = mj_data.xmat[body].reshape(3, 3)
    return pitch_of(R), math.atan2(R[2, 1], R[2, 2]), math.atan2(R[1, 0], R[0, 0])


@dataclass(frozen=True)
class Quadruped:
    """The trot or held pose for the MJCF's 12 actuators, in their order (FL, FR, RL, RR =
    front_1, front_2, rear_1, rear_2; hip, knee, ankle each)."""

    robot: object
    gait: object         # control.Trot (levelled and steered) or control.Hold (joints locked)
    columns: tuple
    free: bool = True    # the base is a free joint (qpos[:7]), whose heading and offset y steer

    def __post_init__(self):
        if self.trotting:  # the compiled trot's arguments (fused_control.trot_targets), made once
            g = self.gait
            shape = pose_arrays(self.robot)
            left = np.array([1.0 if limb in LEFT else -1.0 for limb, _ in LIMBS])
            object.__setattr__(self, "_trot", (np.array([g.period, g.step, g.lift, g.z, g.start]), shape["geometry"],
                                               shape["sides"], shape["columns"], left,
                                               np.array(self.columns, dtype=np.int64)))

    def at(self, t: float, pitch: float = 0.0, roll: float = 0.0, steer: float = 0.0) -> np.ndarray:
        """Targets at time t with the torso at ``pitch`` and ``roll``, the strides scaled by ``steer``:
        a side's strides by 1 ± steer (left +), its legs lengthened by the height its hips are off
        level (HALF_WIDTH sin roll)."""
        if not self.trotting:
            return self.gait(t)[list(self.columns)]
        out = np.empty(len(self.columns))
        unchecked(trot_targets)(float(t), float(pitch), float(steer), HALF_WIDTH * math.sin(roll), *self._trot, out)
        return out

    @property
    def trotting(self) -> bool:
        return isinstance(self.gait, Trot)

    def __call__(self, mj_data) -> np.ndarray:
        pitch, roll, yaw = frame(mj_data)
        steer = 0.0
        if self.trotting and self.free:
            aim = -min(max(HEADING_PER_M * mj_data.qpos[1], -MAX_HEADING), MAX_HEADING)
            steer = min(max(STEER * (yaw - aim), -MAX_STEER), MAX_STEER)
        return self.at(mj_data.time, pitch, roll, steer)


def quadruped(path, control, mj_model) -> Quadruped:
    from granular.foot import Foot
    from granular.scenarios.robots import JOINTS, load_quadruped

    if not (path.parent / control.spec).is_file():
        raise GranularError(f"{path}: control kind {control.kind} is the shipped RoboSimian's gait: its legs' inverse "
                            f"kinematics need its planar spec (control.spec = {control.spec!r}, not found beside "
                            f"the scenario); for another robot use kind = \"pd\" (targets held) or your own "
                            f"controller (docs/3d.md)")
    if mj_model.nu != 12:
        raise GranularError(f"{path}: control kind {control.kind} needs 12 actuators (4 limbs × hip, knee, "
                            f"ankle); the model has {mj_model.nu}")
    robot = load_quadruped(path.parent / control.spec, Foot())
    if control.kind == "trot":
        gait = Trot(robot, control.period, control.step, control.lift, control.z, control.start)
    else:
        unknown = set(control.legs) - {limb for limb, _ in LIMBS}
        if unknown or not control.legs:
            raise GranularError(f"{path}: control.legs names the limbs {', '.join(l for l, _ in LIMBS)}; "
                                f"got {', '.join(sorted(control.legs)) or 'none'}")
        gait = Hold(robot, dict(control.legs))
    columns = tuple(robot.joint(limb, joint) - 3 for limb, _ in LIMBS for joint in JOINTS)
    free = mj_model.njnt > 0 and mj_model.jnt_type[0] == 0  # mjJNT_FREE: a fixed base has no heading to hold
    return Quadruped(robot, gait, columns, bool(free))


@dataclass(frozen=True)
class Tripod:
    """Alternating tripods (left-front, right-middle, left-rear against the others): each leg swings
    its yaw forward by 2 × swing with the lift joint raised (a half sine up to ``lift_angle``) for half a
    period, then pushes back on the ground for the other half; ``start`` s of standing first."""

    control: object
    SHIFT = np.array([0.0, 0.5, 0.5, 0.0, 0.0, 0.5])     # tripods: lf, rm, lr | rf, lm, rr
    FORWARD = np.array([-1.0, 1.0, -1.0, 1.0, -1.0, 1.0])  # a left leg's yaw is backwards about +z

    def at(self, t: float) -> np.ndarray:
        c = self.control
        out = np.zeros(12)
        if t < c.start:
            return out
        phase = ((t - c.start) / c.period + self.SHIFT) % 1.0
        swinging = phase < 0.5
        s = np.where(swinging, phase / 0.5, (phase - 0.5) / 0.5)
        stroke = np.where(swinging, s - 0.5, 0.5 - s) * 2 * c.swing
        out[0::2] = self.FORWARD * stroke
        out[1::2] = np.where(swinging, c.lift_angle * np.sin(np.pi * s), 0.0)
        return out

    def __call__(self, mj_data) -> np.ndarray:
        return self.at(mj_data.time)


def tripod(path, control, mj_model) -> Tripod:
    if mj_model.nu != 12:
        raise GranularError(f"{path}: control kind tripod needs 12 actuators (6 legs × yaw, lift); "
                            f"the model has {mj_model.nu}")
    return Tripod(control)
