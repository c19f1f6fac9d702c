"""What the quadruped environment rewards: named tasks, each a set of weighted terms.

A task's reward for one env step (control period Δt) is the sum of its terms, each a weight times a
measure of that step (units in brackets; each term's value is in ``info["reward_<term>"]``)::

    forward  = forward_weight × min(v_x, max_speed)      v_x: the torso's progress over the step / Δt [m/s]
    healthy  = healthy_reward                            while the robot has not fallen [1]
    effort   = −effort_weight × mean over joints and simulator steps of (torque / torque limit)²  [1, in 0…1]
    tilt     = −tilt_weight × pitch²                     the torso's pitch at the step's end [rad²]
    fall     = −fall_penalty                             once, on the step that ends the episode by a fall [1]

``walk`` (the default) is in the style of MuJoCo's locomotion tasks (Hopper, Ant): forward
velocity, an alive bonus, effort and orientation costs, termination on a fall. Its forward term is
capped at ``max_speed`` because a planar quadruped that dives forward moves its torso at 2–3 m/s
for a few steps: uncapped, a dive at the end of any episode paid more than the healthy steps it cost
(the old task, below, taught PPO to dive within 20k steps). With the cap, a fall never pays: it
forfeits ``healthy_reward`` per remaining step and costs ``fall_penalty``, while walking at
``max_speed`` earns ``forward_weight × max_speed`` per step on top of standing.

``forward`` is the environment's first task, kept for comparison: forward velocity less effort,
no alive bonus, no cap, no fall penalty.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from granular.errors import GranularError


@dataclass(frozen=True)
class Task:
    """The weights of the reward's terms (see the module's docstring for each term)."""

    forward_weight: float = 2.0     # per (m/s) of forward velocity
    max_speed: float = 0.3          # m/s: forward velocity beyond this earns nothing more (inf: no cap)
    healthy_reward: float = 0.5     # per step while not fallen
    effort_weight: float = 0.05     # per unit of mean (torque / limit)²
    tilt_weight: float = 1.0        # per rad² of torso pitch
    fall_penalty: float = 10.0      # once, on a fall

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if not (isinstance(value, (int, float, np.floating)) and value >= 0 and not np.isnan(value)):
                raise GranularError(f"reward weight {f.name} must be a non-negative number, got {value!r}")
            if f.name != "max_speed" and not np.isfinite(value):
                raise GranularError(f"reward weight {f.name} must be finite, got {value!r}")
        if self.max_speed == 0:
            raise GranularError("reward weight max_speed must be positive (inf for no cap)")

    def with_(self, **weights) -> "Task":
        """This task with some weights changed (None keeps a weight)."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(weights) - known)
        if unknown:
            raise GranularError(f"unknown reward weight(s) {', '.join(unknown)}; the weights are {', '.join(sorted(known))}")
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update({k: v for k, v in weights.items() if v is not None})
        return Task(**values)

    def terms(self, forward: np.ndarray, effort: np.ndarray, pitch: np.ndarray, fell: np.ndarray,
              alive: np.ndarray) -> dict:
        """Each term's value (R,) for steps of R episodes: forward velocity (m/s), effort (in [0, 1]),
        pitch at the step's end (rad), whether the step ended in a fall, and whether the step counts at
        all (False for an episode's first report, which earns nothing)."""
        live = alive.astype(float)
        return {"forward": self.forward_weight * np.minimum(forward, self.max_speed) * live,
                "healthy": self.healthy_reward * (alive & ~fell),
                "effort": -self.effort_weight * effort * live,
                "tilt": -self.tilt_weight * pitch * pitch * live,
                "fall": -self.fall_penalty * (alive & fell)}


#: The tasks by name; ``QuadrupedEnv(task=...)`` takes a name or a :class:`Task`.
TASKS = {"walk": Task(),
         "forward": Task(forward_weight=1.0, max_speed=np.inf, healthy_reward=0.0, effort_weight=0.05,
                         tilt_weight=0.0, fall_penalty=0.0)}


def task(spec) -> Task:
    """A task from its name or a :class:`Task` (its own error for anything else)."""
    if isinstance(spec, Task):
        return spec
    if isinstance(spec, str) and spec in TASKS:
        return TASKS[spec]
    raise GranularError(f"task must be one of {', '.join(TASKS)} or a granular.apps.rewards.Task, got {spec!r}")
