"""``granular/Quadruped3D-v0``: the 3D RoboSimian (MuJoCo, granular feet) as a Gymnasium environment.

The robot, medium, gait's standing pose and contact law come from a 3D scenario (default
``quad3d-trot``, :mod:`granular.scenarios.scenario3d`); every simulator step is the coupled step of
:mod:`granular.simulation.mujoco3d`.

- **Action** (12,) in [−1, 1]: the position actuators' targets as offsets from the standing pose
  × ``action_scale`` rad (FL, FR, RL, RR × hip, knee, ankle), held for ``control_period``.
- **Observation** (38,) float32: torso height above the terrain (m), its orientation as roll,
  pitch, yaw (rad), its linear velocity in the world and angular velocity in its own frame (MuJoCo's free
  joint: m/s, rad/s), the 12 joint angles
  and rates, each foot's depth d (m, negative in the medium); bounded by :data:`OBSERVATION_LIMITS`.
- **Reward**: the task's terms (:mod:`granular.apps.rewards`, default ``walk``): forward velocity
  (capped), an alive bonus, effort (mean (actuator force / its limit)²), pitch² and a fall penalty.
- **Termination** on a fall (torso below ``fall_height`` or tilted past ``fall_tilt`` from
  upright); truncation after ``episode_seconds`` (registered ``max_episode_steps`` 1000).
"""
from __future__ import annotations

import numpy as np

from granular.apps import rewards
from granular.apps.gym import OBSERVATION_LIMITS as PLANAR_LIMITS, gymnasium, periods, spaces
from granular.errors import GranularError
from granular.frames3d import pitch as pitch_of

ENV_ID = "granular/Quadruped3D-v0"
RESET_WIDTHS = {"joints": 0.05, "height": 0.02, "velocity": 0.05}
#: The observation's bounds (the planar environment's, with the torso's three angles in [−π, π]).
OBSERVATION_LIMITS = {**PLANAR_LIMITS, "angle": (-np.pi, np.pi)}


class Quadruped3DEnv(gymnasium.Env):
    metadata = {"render_modes": []}

    def __init__(self, scenario: str = "quad3d-trot", control_period: float = 0.01, episode_seconds: float = 10.0,
                 action_scale: float = 0.5, task="walk", contact: str | None = None, fall_height: float = 0.6,
                 fall_tilt: float = 0.7, reset_noise: float = 1.0, **weights):
        from granular.scenarios import scenario as scenarios, scenario3d

        for name, value in (("control_period", control_period), ("episode_seconds", episode_seconds),
                            ("action_scale", action_scale), ("fall_height", fall_height), ("fall_tilt", fall_tilt)):
            if not (np.isfinite(value) and value > 0):
                raise GranularError(f"{name} must be a positive number, got {value!r}")
        if not (np.isfinite(reset_noise) and reset_noise >= 0):
            raise GranularError(f"reset_noise must be a non-negative number, got {reset_noise!r}")
        path = scenarios.find(scenario)
        if not scenario3d.is_3d(path):
            raise GranularError(f"{scenario!r} is a planar scenario; Quadruped3D-v0 needs a 3D one (quad3d-trot)")
        self._path, self._law, self.reset_noise = path, contact, reset_noise
        world = scenario3d.build(path, law=contact)
        if world.spec.control.kind not in ("trot", "hold") or len(world.feet.names) != 4:
            raise GranularError(f"{path}: the environment needs a quadruped scenario (4 granular feet, control kind "
                                f"trot or hold), e.g. quad3d-trot")
        self.task = rewards.task(task).with_(**weights)
        self.action_scale, self.fall_height, self.fall_tilt = action_scale, fall_height, fall_tilt
        self.substeps, self.control_period, self.max_steps = periods(control_period, episode_seconds,
                                                                     world.mj_model.opt.timestep)
        self.nominal = world.gait.at(0.0)
        trn = world.mj_model.actuator_trnid[:, 0]  # the actuated joints' coordinates, found once
        self._joints, self._rates = world.mj_model.jnt_qposadr[trn], world.mj_model.jnt_dofadr[trn]
        self._world, self._start = world, (world.mj_data.qpos.copy(), world.mj_data.qvel.copy())
        self._begun = False
        self.action_space = spaces.Box(-1.0, 1.0, shape=(12,), dtype=np.float32)
        L = OBSERVATION_LIMITS
        limits = ([L["height"]] + [L["angle"]] * 3 + [L["velocity"]] * 3 + [L["omega"]] * 3 + [L["joints"]] * 12
                  + [L["rates"]] * 12 + [L["depth"]] * 4)
        low, high = np.array(limits, dtype=np.float32).T
        self.observation_space = spaces.Box(low, high, dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        import mujoco

        super().reset(seed=seed)
        w = self._world
        m, d, rng = w.mj_model, w.mj_data, self.np_random
        mujoco.mj_resetData(m, d)
        w.workspace.reset()  # an episode starts cold, as a fresh one would: reproducible
        d.qpos[:], d.qvel[:] = self._start
        widths = {k: v * self.reset_noise for k, v in RESET_WIDTHS.items()}
        d.qpos[self._joints] += rng.uniform(-widths["joints"], widths["joints"], 12)
        d.qpos[2] += rng.uniform(0.0, widths["height"])
        d.qvel[:3] += rng.uniform(-widths["velocity"], widths["velocity"], 3)
        d.ctrl[:] = self.nominal
        mujoco.mj_forward(m, d)
        self.elapsed, self._x0, self._begun = 0, float(d.qpos[0]), True
        obs, info = self._observe()
        return obs, info

    def step(self, action):
        from granular.simulation import mujoco3d

        if not self._begun:
            raise GranularError("call reset() before step()")
        try:
            a = np.asarray(action, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            a = np.full(1, np.nan)
        if a.shape != (12,) or not np.isfinite(a).all():
            raise GranularError(f"action must be 12 finite numbers, got {action!r}")
        w = self._world
        m, d = w.mj_model, w.mj_data
        d.ctrl[:] = self.nominal + self.action_scale * np.clip(a, -1.0, 1.0)
        x0, effort = float(d.qpos[0]), 0.0
        limit = np.where(m.actuator_forcelimited.astype(bool), np.abs(m.actuator_forcerange).max(axis=1), np.inf)
        for _ in range(self.substeps):
            mujoco3d.step(m, d, w.feet, w.terrain, workspace=w.workspace)
            effort += float(np.mean((d.actuator_force / limit) ** 2))
        self.elapsed += 1
        obs, info = self._observe()
        forward = (float(d.qpos[0]) - x0) / self.control_period
        fell = info["fell"]
        terms = self.task.terms(np.array([forward]), np.array([effort / self.substeps]), np.array([info["pitch"]]),
                                np.array([fell]), np.array([True]))
        info.update(forward_velocity=forward, effort=effort / self.substeps,
                    **{f"reward_{k}": float(v[0]) for k, v in terms.items()})
        truncated = not fell and self.elapsed >= self.max_steps
        return obs, float(sum(v[0] for v in terms.values())), bool(fell), bool(truncated), info

    def _observe(self):
        import mujoco

        from granular.simulation import mujoco3d

        w = self._world
        m, d = w.mj_model, w.mj_data
        mujoco.mj_kinematics(m, d)
        R = d.xmat[1].reshape(3, 3)
        roll, pitch, yaw = np.arctan2(R[2, 1], R[2, 2]), pitch_of(R), np.arctan2(R[1, 0], R[0, 0])
        height = float(d.qpos[2] - w.terrain(d.qpos[:2])[0])
        depths = np.array([min(s[0][0], 0.0) for s in mujoco3d.foot_states(m, d, w.feet, w.terrain)])
        obs = np.concatenate([[height, roll, pitch, yaw], d.qvel[:6], d.qpos[self._joints], d.qvel[self._rates], depths])
        upright = float(np.arccos(np.clip(R[2, 2], -1.0, 1.0)))
        fell = height < self.fall_height or upright > self.fall_tilt
        info = {"x": float(d.qpos[0]), "distance": float(d.qpos[0]) - self._x0, "height": height, "pitch": float(pitch),
                "fell": bool(fell), "foot_depth": depths, "sim_time": float(d.time)}
        space = self.observation_space
        return np.minimum(np.maximum(obs.astype(np.float32), space.low), space.high), info


if ENV_ID not in gymnasium.registry:
    gymnasium.register(ENV_ID, entry_point=f"{__name__}:Quadruped3DEnv", max_episode_steps=1000)
