"""Controllers: generalized forces from the state, with their own small state.

A controller is ``u, memory = control(t, q, v, memory)``; ``memory`` is
whatever it carries between steps (an integral, a gait phase), starting from
``initial_memory()``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from granular.errors import GranularError
from granular.scenarios.robots import LIMB_INDEX, LIMBS
from granular.simulation.fused_control import (ARC, CONSTANT, DOF, DT, INERTIA, INTEGRAL, KEYFRAMES, LIMIT, LINE,
                                                RAMP, RECORDED, SERVOS, TARGET, TORQUE, TRACK, TROT, JointControl)


@dataclass(frozen=True)
class Path:
    """A reference for (x, z, angle) of a body frame: a straight line or a circular arc.

    'line': from ``start`` (x, z) at ``velocity`` (v_x, v_z) for ``duration``.
    'arc': around ``center`` with ``radius`` from angle ``from_angle`` to ``to_angle``
    (rad, counter-clockwise) in ``duration``. Afterwards the reference holds its
    end point; the body angle reference is ``angle`` throughout.
    """

    kind: str
    duration: float
    start: tuple = (0.0, 0.0)
    velocity: tuple = (0.0, 0.0)
    center: tuple = (0.0, 0.0)
    radius: float = 0.0
    from_angle: float = 0.0
    to_angle: float = 0.0
    angle: float = 0.0

    def __post_init__(self):
        if self.kind not in ("line", "arc"):
            raise GranularError(f"path kind must be 'line' or 'arc', got {self.kind!r}")
        if not self.duration > 0:
            raise GranularError(f"path duration must be positive, got {self.duration!r}")

    def __call__(self, t):
        """Reference position (3,) and velocity (3,) at time t."""
        tau = min(max(t, 0.0), self.duration)
        moving = float(0.0 <= t <= self.duration)
        if self.kind == "line":
            vel = np.array([*self.velocity, 0.0])
            return np.array([*self.start, self.angle]) + tau * vel, vel * moving
        rate = (self.to_angle - self.from_angle) / self.duration
        a = self.from_angle + rate * tau
        c, s = np.cos(a), np.sin(a)
        pos = np.array([self.center[0] + self.radius * c, self.center[1] + self.radius * s, self.angle])
        return pos, np.array([-self.radius * s * rate, self.radius * c * rate, 0.0]) * moving


@dataclass(frozen=True)
class Recorded:
    """A reference that replays a recorded trajectory: poses (k, 3) and twists (k, 3) at times t
    (k,), linearly interpolated, held at the ends."""

    t: np.ndarray
    pose: np.ndarray
    twist: np.ndarray

    def __call__(self, t):
        pos = np.array([np.interp(t, self.t, self.pose[:, i]) for i in range(3)])
        moving = float(self.t[0] <= t <= self.t[-1])
        return pos, np.array([np.interp(t, self.t, self.twist[:, i]) for i in range(3)]) * moving


@dataclass(frozen=True)
class PIDTracker:
    """PID on a free body's (x, z, angle) towards a path (Zhu et al. 2019, §IV-C1), plus an
    optional feed-forward of the body's weight; its memory is the error integral."""

    path: Path
    dt: float
    kp: tuple = (8000.0, 20000.0, 300.0)
    ki: tuple = (4000.0, 6000.0, 1000.0)
    kd: tuple = (200.0, 400.0, 10.0)
    weight: float = 0.0  # N, added upwards on z
    ndof: int = 3

    def initial_memory(self):
        return np.zeros(3)

    def joint_control(self) -> JointControl:
        """This controller as plain data for the fused step (TRACK: gains, then the reference)."""
        return self._joint_control

    @cached_property
    def _joint_control(self):
        ref = self.path
        if isinstance(ref, Recorded):
            reference, times, table = [RECORDED, 0.0], ref.t, np.column_stack([ref.pose, ref.twist])
        elif ref.kind == "line":
            reference, times, table = [LINE, ref.duration, *ref.start, *ref.velocity, ref.angle], None, None
        else:
            reference, times, table = [ARC, ref.duration, *ref.center, ref.radius, ref.from_angle, ref.to_angle,
                                       ref.angle], None, None
        track = np.array([*self.kp, *self.ki, *self.kd, self.weight, self.dt, *reference], dtype=float)
        shape = {} if times is None else {"times": np.asarray(times, dtype=float), "xz": table}
        return JointControl(TRACK, np.zeros((5, 0)), np.zeros(0), track=track, **shape)

    def __call__(self, t, q, v, integral):
        ref, ref_v = self.path(t)
        err = ref - q[:3]
        u = np.zeros(self.ndof)
        u[:3] = np.multiply(self.kp, err) + np.multiply(self.ki, integral) + np.multiply(self.kd, ref_v - v[:3])
        u[1] += self.weight
        return u, integral + self.dt * err


class Passive:
    """No actuation."""

    def __init__(self, ndof: int):
        self.ndof = ndof
        # no actuation as the fused step's plain data (a dropped foot then steps fused): no targets,
        # gains or torques; none where the body has joints (their zero torque limits: effort 0/0)
        self._joint_control = JointControl(CONSTANT, np.zeros((5, 0)), np.zeros(0)) if ndof == 3 else None

    def initial_memory(self):
        return None

    def __call__(self, t, q, v, memory):
        return np.zeros(self.ndof), memory

    def joint_control(self) -> JointControl | None:
        """This controller as the fused step's plain data, or None (a body with joints)."""
        return self._joint_control


@dataclass(frozen=True)
class JointPD:
    """Joint position control: PD towards ``targets(t)`` (joint angles), torques clipped to the
    robot's limits and targets to its joint ranges. Output: generalized forces on the joints."""

    robot: object                 # a robots.Quadruped
    targets: object               # (t, torso pitch) -> joint angles (n − 3,)

    def initial_memory(self):
        return None

    def __call__(self, t, q, v, memory):
        lower, upper, kp, kd, limit = self._joints
        goal = np.minimum(np.maximum(self.targets(t, q[2]), lower), upper)
        u = np.zeros(len(q))
        u[3:] = np.minimum(np.maximum(kp * (goal - q[3:]) - kd * v[3:], -limit), limit)
        return u, memory

    @cached_property
    def _joints(self):
        """The robot's joint limits, gains and torque limits on the joint dofs, sliced once."""
        r = self.robot
        return r.lower[3:], r.upper[3:], r.kp[3:], r.kd[3:], r.max_torque[3:]

    @cached_property
    def limits(self) -> np.ndarray:
        """:attr:`_joints` as one (5, n − 3) array, as :class:`JointControl` holds them."""
        return np.vstack(self._joints)

    def joint_control(self) -> JointControl | None:
        """This controller as plain data for the fused step (:mod:`granular.simulation.fused`), or
        None for targets it does not know (a function of its own)."""
        return self._joint_control

    @cached_property
    def _joint_control(self):
        gait, limits = self.targets, self.limits
        if isinstance(gait, Hold):
            return JointControl(CONSTANT, limits, gait(0.0))
        if not isinstance(gait, (Trot, Keyframes)):
            return None
        shape = pose_arrays(gait.robot)
        if isinstance(gait, Trot):
            return JointControl(TROT, limits, np.zeros(len(limits[0])),
                                trot=np.array([gait.period, gait.step, gait.lift, gait.z, gait.start]), **shape)
        given = np.array([limb in gait._limbs for limb, _ in LIMBS], dtype=np.int64)
        xz = np.zeros((len(gait.times), 4, 2))
        for j, limb in enumerate(gait._limbs):
            xz[:, LIMB_INDEX[limb]] = gait._xz[:, j]
        return JointControl(KEYFRAMES, limits, np.zeros(len(limits[0])), times=np.array(gait.times, dtype=float),
                            xz=xz.reshape(len(gait.times), 8), limbs=given, **shape)


def pose_arrays(robot) -> dict:
    """Quadruped.pose's data as the compiled gaits take it (JointControl's ``geometry``, ``sides``
    and ``columns``)."""
    return dict(geometry=np.array([robot.thigh, robot.shank, robot.hip_x]),
                sides=np.array([side for _, side in LIMBS]), columns=np.array(robot._joint_columns, dtype=np.int64))


@dataclass(frozen=True)
class Keyframes:
    """Ankle targets relative to the hips, {limb: (x, z)} at given times, linearly interpolated."""

    robot: object
    times: tuple
    legs: tuple                   # one {limb: (x, z)} per time

    def __post_init__(self):
        if len(self.times) != len(self.legs) or not len(self.times) or np.any(np.diff(self.times) <= 0):
            raise GranularError("keyframes need increasing times and one pose per time")
        if any(set(frame) != set(self.legs[0]) for frame in self.legs):
            raise GranularError("every keyframe must give the same limbs")
        limbs = list(self.legs[0])
        object.__setattr__(self, "_limbs", limbs)
        object.__setattr__(self, "_xz", np.array([[frame[limb] for limb in limbs] for frame in self.legs]))

    def __call__(self, t, pitch=0.0):
        xz = self._xz  # (frames, limbs, 2)
        at = [(np.interp(t, self.times, xz[:, j, 0]), np.interp(t, self.times, xz[:, j, 1]))
              for j in range(len(self._limbs))]
        return self.robot.pose(dict(zip(self._limbs, at)), pitch)


@dataclass(frozen=True)
class Hold:
    """Constant joint targets: the legs' pose for ankle targets {limb: (x, z)} in the torso frame
    (no levelling), i.e. joints locked by position control."""

    robot: object
    legs: dict

    def __call__(self, t, pitch=0.0):
        return self.robot.pose(self.legs, 0.0)


@dataclass(frozen=True)
class Trot:
    """A trot: diagonal pairs (front_1 + rear_2, front_2 + rear_1) swing in turn.

    Each ankle follows, relative to its hip, a stance stroke from +step/2 to
    −step/2 at height ``z`` (pushing the body forward) and a swing back to
    +step/2 lifted by ``lift``; ``start`` seconds of standing come first.
    """

    robot: object
    period: float = 0.8
    step: float = 0.12
    lift: float = 0.08
    z: float = -0.62
    start: float = 0.5
    PAIRS = {"front_1": 0.0, "rear_2": 0.0, "front_2": 0.5, "rear_1": 0.5}

    def legs(self, t):
        if t < self.start:
            return {limb: (0.0, self.z) for limb in self.PAIRS}
        out = {}
        for limb, shift in self.PAIRS.items():
            phase = ((t - self.start) / self.period + shift) % 1.0
            if phase < 0.5:  # swing: lifted, moving forward
                s = phase / 0.5
                out[limb] = (self.step * (s - 0.5), self.z + self.lift * math.sin(math.pi * s))
            else:            # stance: on the ground, moving back
                s = (phase - 0.5) / 0.5
                out[limb] = (self.step * (0.5 - s), self.z)
        return out

    def __call__(self, t, pitch=0.0):
        return self.robot.pose(self.legs(t), pitch)


def _pi(error, integral, dt, inertia, limit=np.inf):
    """A servo's generalized force and its next integral (held where the force saturates): gains
    per unit of mass or inertia, proportional 0.5 / dt (half the explicit step's stability limit,
    settling in a few steps) and integral INTEGRAL times that. The fused step's
    :func:`~granular.simulation.fused_control.servo_forces` computes the same."""
    gain = 0.5 / dt
    force = inertia * gain * (error + INTEGRAL * (integral + error * dt))
    if abs(force) <= limit:
        return force, integral + error * dt
    return math.copysign(limit, force), integral


@dataclass(frozen=True)
class Carriage:
    """The single-wheel test bed (Ding et al. 2013, §4): a carriage holds the wheel's centre at
    ``speed`` (m/s) along x by a PI servo, and the motor either turns the wheel at
    ω = −speed / ((1 − slip) r) (a PI servo: slip set, torque measured) or, with ``torque``
    (N·m, > 0 drives forward), applies that torque (torque set, slip measured; ramped over the
    first 0.5 s); the wheel is free to sink. Memory: the two error integrals."""

    speed: float
    slip: float
    radius: float
    dt: float
    mass: float
    inertia: float
    torque: float | None = None

    def initial_memory(self):
        return (0.0, 0.0)

    def joint_control(self) -> JointControl:
        """This controller as plain data for the fused step: two servos, the carriage's on x and
        the motor's on the wheel's angle (its rate, or its torque ramped over TORQUE_RAMP)."""
        return self._joint_control

    @cached_property
    def _joint_control(self):
        servos = np.zeros((2, 7))
        servos[:, DT] = self.dt
        servos[:, LIMIT] = np.inf
        servos[0, [TARGET, INERTIA]] = self.speed, self.mass
        servos[1, DOF] = 2  # the wheel's angle
        if self.torque is not None:
            servos[1, [TARGET, RAMP, TORQUE]] = -self.torque, TORQUE_RAMP, 1.0
        else:
            servos[1, [TARGET, INERTIA]] = -self.speed / ((1.0 - self.slip) * self.radius), self.inertia
        return JointControl(SERVOS, np.zeros((5, 0)), np.zeros(0), servos=servos)

    def __call__(self, t, q, v, memory):
        fx, ix = _pi(self.speed - v[0], memory[0], self.dt, self.mass)
        if self.torque is not None:
            return np.array([fx, 0.0, -self.torque * min(t / TORQUE_RAMP, 1.0)]), (ix, 0.0)
        rate = -self.speed / ((1.0 - self.slip) * self.radius)
        tau, iw = _pi(rate - v[2], memory[1], self.dt, self.inertia)
        return np.array([fx, 0.0, tau]), (ix, iw)


#: s over which a set wheel torque rises from zero, so the wheel does not spin up at the start.
TORQUE_RAMP = 0.5


@dataclass(frozen=True)
class Drive:
    """Wheel motors: each wheel's rate relative to the chassis driven by a PI servo towards rolling
    forward at ``speed`` (m/s; reached over ``ramp`` s from rest), its torque clipped to
    ``max_torque`` (N·m); or, with ``torque`` (N·m, > 0 drives forward), that torque on every
    wheel (reached over ``ramp``). Memory: the error integral per wheel."""

    speed: float
    radius: float
    dt: float
    inertia: float                # a wheel's, kg·m²
    max_torque: float
    ndof: int
    ramp: float = 0.5
    torque: float | None = None

    def initial_memory(self):
        return (0.0,) * (self.ndof - 3)

    def __call__(self, t, q, v, memory):
        share = min(t / self.ramp, 1.0) if self.ramp > 0 else 1.0
        u = np.zeros(self.ndof)
        if self.torque is not None:
            u[3:] = -self.torque * share
            return u, memory
        rate = -self.speed / self.radius * share
        out = []
        for j, integral in enumerate(memory):
            u[3 + j], integral = _pi(rate - v[3 + j], integral, self.dt, self.inertia, self.max_torque)
            out.append(integral)
        return u, tuple(out)
