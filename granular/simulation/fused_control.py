"""The fused step's controllers (:mod:`granular.simulation.fused`): the plain data of a controller
that compiled code can compute (:class:`JointControl`), and its kernels."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from granular.compiled import kernel

#: JointControl kinds: targets held constant, a trot, keyframes of ankle positions; PI servos; a
#: PID on a body's (x, z, angle) along a path.
CONSTANT, TROT, KEYFRAMES, SERVOS, TRACK = 0, 1, 2, 3, 4
#: TRACK's ``track`` vector: kp, ki, kd (3 each), the weight fed forward, dt, the reference's kind
#: (LINE, ARC, RECORDED), its duration, then a line's start (2), velocity (2), angle or an arc's
#: centre (2), radius, from_angle, to_angle, angle.
KP, KI, KD, WEIGHT, STEP, PATH, DURATION, PARAMS = 0, 3, 6, 9, 10, 11, 12, 13
LINE, ARC, RECORDED = 0, 1, 2
#: A servo's columns in ``JointControl.servos``: the dof it drives, its target (a rate, or a
#: force where TORQUE is set), the time over which the target ramps up from zero (0: none), the
#: inertia its gains are per unit of, its force limit, TORQUE (1.0: the target is the force itself),
#: and its time step.
DOF, TARGET, RAMP, INERTIA, LIMIT, TORQUE, DT = range(7)
#: Integral gain of a servo, × its proportional gain 0.5 / dt (the slow pole at INTEGRAL rad/s, so
#: that a steady load leaves no steady error).
INTEGRAL = 10.0


@dataclass(frozen=True)
class JointControl:
    """A controller that compiled code can compute: the plain-data form of
    :class:`~granular.scenarios.control.JointPD`, :class:`~granular.scenarios.control.Carriage` or
    :class:`~granular.scenarios.control.PIDTracker` (a controller offers it as ``joint_control()``).

    ``limits`` (5, nj): joint lower and upper limits, kp, kd and torque limits. ``kind``:
    CONSTANT holds ``goal`` (nj,); TROT is :class:`~granular.scenarios.control.Trot` with
    ``trot`` = (period, step, lift, z, start); KEYFRAMES interpolates ankle positions ``xz``
    (T, 8: x, z per limb) over ``times`` (T,) for the limbs in ``limbs`` (4,: 1 given, 0 not).
    Both gaits turn ankle positions into joints as ``Quadruped.pose`` does, with ``geometry`` =
    (thigh, shank, hip_x), ``sides`` (4,) and ``columns`` (4, 3), each limb's joints in q[3:].
    SERVOS drives single dofs by PI servos, one row of ``servos`` (S, 7) each (columns :data:`DOF`
    … :data:`DT`; :func:`servo_forces`), whose integrals are the controller's memory. TRACK is
    :class:`~granular.scenarios.control.PIDTracker`: gains and reference in ``track``
    (:data:`KP` …), a recorded reference's ``times`` and ``xz`` (T, 6: pose, twist); its memory the
    error's integral (3,).
    ``effort``: called with Σ over the steps of mean (torque / limit)², or None."""

    kind: int
    limits: np.ndarray
    goal: np.ndarray
    trot: np.ndarray = field(default_factory=lambda: np.zeros(5))
    times: np.ndarray = field(default_factory=lambda: np.zeros(1))
    xz: np.ndarray = field(default_factory=lambda: np.zeros((1, 8)))
    limbs: np.ndarray = field(default_factory=lambda: np.zeros(4, dtype=np.int64))
    geometry: np.ndarray = field(default_factory=lambda: np.zeros(3))
    sides: np.ndarray = field(default_factory=lambda: np.zeros(4))
    columns: np.ndarray = field(default_factory=lambda: np.zeros((4, 3), dtype=np.int64))
    servos: np.ndarray = field(default_factory=lambda: np.zeros((0, 7)))
    track: np.ndarray = field(default_factory=lambda: np.zeros(0))
    effort: object = None

    def __post_init__(self):
        f8 = lambda a: np.ascontiguousarray(a, dtype=np.float64)  # noqa: E731
        i8 = lambda a: np.ascontiguousarray(a, dtype=np.int64)  # noqa: E731
        # as fused_steps declares them, converted once
        object.__setattr__(self, "arrays", (int(self.kind), f8(self.limits), f8(self.goal), f8(self.trot),
                                            f8(self.times), f8(self.xz), i8(self.limbs), f8(self.geometry),
                                            f8(self.sides), i8(self.columns), f8(self.servos), f8(self.track)))

    @property
    def remembers(self) -> bool:
        """Whether the controller carries a memory through the fused step (its integrals)."""
        return self.kind in (SERVOS, TRACK)

    def memory_array(self, memory) -> np.ndarray:
        """The controller's memory as the fused step carries it: the integrals (S,) or (3,)."""
        return np.array(memory if self.remembers else (), dtype=np.float64)


@kernel()
def control_forces(t, q, v, u, memory, kind, limits, goal, trot, times, xz, limbs, geometry, sides, columns, servos,
                   track):
    """u ← the controller's generalized forces (JointPD.__call__, the servos', the tracker's);
    returns mean (torque / limit)² of a joint PD. ``memory`` ← the next integrals."""
    if kind == SERVOS:
        return servo_forces(t, v, u, memory, servos)
    if kind == TRACK:
        return track_forces(t, q, v, u, memory, track, times, xz)
    nj = len(q) - 3
    target = goal if kind == CONSTANT else _gait_targets(t, q[2], kind, nj, trot, times, xz, limbs,
                                                                geometry, sides, columns)
    effort = 0.0
    for j in range(nj):
        aim = min(max(target[j], limits[0, j]), limits[1, j])
        torque = limits[2, j] * (aim - q[3 + j]) - limits[3, j] * v[3 + j]
        u[3 + j] = min(max(torque, -limits[4, j]), limits[4, j])
        effort += (u[3 + j] / limits[4, j]) ** 2
    return effort / nj if nj else 0.0


@kernel()
def _gait_targets(t, pitch, kind, nj, trot, times, xz, limbs, geometry, sides, columns):
    """Joint targets of a trot (Trot.legs) or of keyframes (Keyframes.__call__), posed as
    Quadruped.pose poses them."""
    legs = np.zeros((4, 2))
    given = limbs.copy()
    if kind == TROT:
        _trot_legs(t, trot, legs)
        given[:] = 1
    else:
        for i in range(4):
            legs[i, 0] = np.interp(t, times, xz[:, 2 * i])
            legs[i, 1] = np.interp(t, times, xz[:, 2 * i + 1])
    return _pose(legs, given, pitch, nj, geometry, sides, columns)


@kernel()
def _trot_legs(t, trot, legs):
    """legs (4, 2) ← each limb's ankle target (x, z) from its hip: Trot.legs, ``trot`` = (period,
    step, lift, z, start), the limbs in LIMBS' order."""
    period, stride, lift, z, start = trot[0], trot[1], trot[2], trot[3], trot[4]
    for i in range(4):
        if t < start:
            legs[i, 0], legs[i, 1] = 0.0, z
            continue
        shift = 0.0 if i == 0 or i == 3 else 0.5   # Trot.PAIRS over LIMBS' order
        phase = ((t - start) / period + shift) % 1.0
        if phase < 0.5:
            s = phase / 0.5
            legs[i, 0], legs[i, 1] = stride * (s - 0.5), z + lift * np.sin(np.pi * s)
        else:
            s = (phase - 0.5) / 0.5
            legs[i, 0], legs[i, 1] = stride * (0.5 - s), z


@kernel("f8, f8, f8, f8, f8[::1], f8[::1], f8[::1], i8[:, ::1], f8[::1], i8[::1], f8[::1]")
def trot_targets(t, pitch, steer, lift, trot, geometry, sides, columns, left, order, out):
    """out ← the 3D quadruped's trot (``gait3d.Quadruped.at``): Trot.legs with each limb's stride
    scaled by 1 + left[i] × steer and its ankle's target moved up by left[i] × lift (``left`` +1
    for a limb on the left side, −1 on the right), posed as Quadruped.pose poses them at ``pitch``
    (``geometry``, ``sides`` and ``columns`` as JointControl's), the joint angles in the order
    ``order`` of q's joint part. The gait runs before every MuJoCo step: in Python it took longer
    than the step's law."""
    legs = np.zeros((4, 2))
    _trot_legs(t, trot, legs)
    for i in range(4):
        legs[i, 0] *= 1.0 + left[i] * steer
        legs[i, 1] += left[i] * lift
    q = _pose(legs, np.ones(4, np.int64), pitch, columns.max() + 1, geometry, sides, columns)
    for k in range(len(order)):
        out[k] = q[order[k]]


@kernel()
def _pose(legs, given, pitch, nj, geometry, sides, columns):
    """Quadruped.pose and leg_angles: joint angles that put each given limb's ankle at legs[i]."""
    L1, L2, hip_x = geometry[0], geometry[1], geometry[2]
    c, s = np.cos(pitch), np.sin(pitch)
    out = np.zeros(nj)
    for i in range(4):
        if not given[i]:
            continue
        side = sides[i]
        x, z = legs[i, 0], legs[i, 1] + side * hip_x * s
        x, z = c * x + s * z, -s * x + c * z
        cos_knee = min(max((x * x + z * z - L1 * L1 - L2 * L2) / (2 * L1 * L2), -1.0), 1.0)
        knee = -side * np.arccos(cos_knee)
        hip = np.arctan2(x, -z) - np.arctan2(L2 * np.sin(knee), L1 + L2 * np.cos(knee))
        out[columns[i, 0]], out[columns[i, 1]], out[columns[i, 2]] = hip, knee, -(hip + knee) - pitch
    return out


@kernel()
def servo_forces(t, v, u, memory, servos):
    """u ← each servo's force on its dof, ``memory`` (S,) ← its next integral (Carriage.__call__
    and its ``_pi``, operation for operation): towards the rate ``target`` × min(t / ramp, 1), the
    force inertia (0.5 / dt) (e + INTEGRAL (∫ + e dt)), clipped to the limit (the integral then
    held); where TORQUE is set, the force is the ramped target itself. Returns 0 (no joint effort)."""
    for k in range(servos.shape[0]):
        dof, ramp, dt = int(servos[k, DOF]), servos[k, RAMP], servos[k, DT]
        share = min(t / ramp, 1.0) if ramp > 0.0 else 1.0
        if servos[k, TORQUE] != 0.0:
            u[dof] = servos[k, TARGET] * share
            continue
        error = servos[k, TARGET] * share - v[dof]
        force = servos[k, INERTIA] * (0.5 / dt) * (error + INTEGRAL * (memory[k] + error * dt))
        if abs(force) <= servos[k, LIMIT]:
            memory[k] += error * dt
            u[dof] = force
        else:
            u[dof] = servos[k, LIMIT] if force > 0.0 else -servos[k, LIMIT]
    return 0.0


@kernel()
def track_forces(t, q, v, u, memory, track, times, table):
    """u[:3] ← PIDTracker.__call__'s PID on (x, z, angle) towards its reference (the integral before
    this step's error), the weight fed forward on z; memory (3,) ← the next integral. Returns 0."""
    ref, ref_v = np.empty(3), np.empty(3)
    _reference(t, track, times, table, ref, ref_v)
    for i in range(3):
        err = ref[i] - q[i]
        u[i] = track[KP + i] * err + track[KI + i] * memory[i] + track[KD + i] * (ref_v[i] - v[i])
        memory[i] = memory[i] + track[STEP] * err
    u[1] += track[WEIGHT]
    return 0.0


@kernel()
def _reference(t, track, times, table, ref, ref_v):
    """ref, ref_v ← control.Path.__call__ (a line or an arc) or control.Recorded.__call__ (``times``
    (T,), ``table`` (T, 6)), operation for operation."""
    kind, duration, p = track[PATH], track[DURATION], PARAMS
    if kind == RECORDED:
        moving = 1.0 if times[0] <= t <= times[-1] else 0.0
        for i in range(3):
            ref[i] = np.interp(t, times, table[:, i])
            ref_v[i] = np.interp(t, times, table[:, 3 + i]) * moving
        return
    tau = min(max(t, 0.0), duration)
    moving = 1.0 if 0.0 <= t <= duration else 0.0
    if kind == LINE:  # start (2), velocity (2), angle
        ref[0], ref[1], ref[2] = track[p] + tau * track[p + 2], track[p + 1] + tau * track[p + 3], track[p + 4] + tau * 0.0
        ref_v[0], ref_v[1], ref_v[2] = track[p + 2] * moving, track[p + 3] * moving, 0.0 * moving
        return
    radius = track[p + 2]  # centre (2), radius, from_angle, to_angle, angle
    rate = (track[p + 4] - track[p + 3]) / duration
    a = track[p + 3] + rate * tau
    c, s = np.cos(a), np.sin(a)
    ref[0], ref[1], ref[2] = track[p] + radius * c, track[p + 1] + radius * s, track[p + 5]
    ref_v[0], ref_v[1], ref_v[2] = -radius * s * rate * moving, radius * c * rate * moving, 0.0 * moving
