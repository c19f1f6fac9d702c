"""Controllers: generalized forces from the state, with their own small state.

A controller is ``u, memory = control(t, q, v, memory)``; ``memory`` is
whatever it carries between steps (an integral, a gait phase), starting from
``initial_memory()``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import GranularError


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

    def initial_memory(self):
        return None

    def __call__(self, t, q, v, memory):
        return np.zeros(self.ndof), memory
