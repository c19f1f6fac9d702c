"""Stable-Baselines3 on the project's batch: the quadruped episodes as an SB3 ``VecEnv``.

SB3 takes its own ``VecEnv``, not Gymnasium's ``VectorEnv``, and resets an ended episode in the
step that ends it (its ``terminal_observation``). :class:`SB3VecEnv` adapts any Gymnasium vector
environment whose autoreset mode is ``SAME_STEP`` and whose infos carry ``final_obs`` (as
:class:`~granular.apps.vector.QuadrupedVectorEnv` does); :func:`make_vec_env` builds the
quadruped's batch that way::

    from granular.apps.sb3 import make_vec_env
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecMonitor, VecNormalize

    if __name__ == "__main__":           # the batch's workers are spawned processes
        env = VecNormalize(VecMonitor(make_vec_env(64, contact="max-dissipation")))
        PPO("MlpPolicy", env).learn(1_000_000)

``VecNormalize`` (SB3's running mean and variance of observations and returns) helps PPO here: the
observation mixes metres, radians and joint rates of a few hundred rad/s in its bounds. Each
``infos[i]`` carries the environment's info of that step (``x``, ``fell``, ``height``, the reward's
terms …), so SB3 callbacks can log them.
"""
from __future__ import annotations

import numpy as np

from granular.errors import GranularError

try:
    from stable_baselines3.common.vec_env.base_vec_env import VecEnv
except ModuleNotFoundError as exc:
    if not (exc.name or "").startswith(("stable_baselines3", "torch")):
        raise
    raise GranularError("granular.apps.sb3 needs stable-baselines3: pip install stable-baselines3 torch") from None

from gymnasium.vector import AutoresetMode


class SB3VecEnv(VecEnv):
    """A Gymnasium ``VectorEnv`` (``SAME_STEP`` autoreset, ``final_obs`` in its infos) as SB3's
    ``VecEnv``. Seeds set with ``seed(s)`` reach the next ``reset()`` as s, s + 1, …"""

    def __init__(self, vector_env):
        mode = vector_env.metadata.get("autoreset_mode")
        if mode != AutoresetMode.SAME_STEP:
            raise GranularError(f"SB3VecEnv needs a vector environment with autoreset_mode=AutoresetMode.SAME_STEP, "
                                f"got {mode!r} (QuadrupedVectorEnv(..., autoreset_mode=AutoresetMode.SAME_STEP))")
        self.venv = vector_env
        super().__init__(vector_env.num_envs, vector_env.single_observation_space, vector_env.single_action_space)
        self._actions = None

    def reset(self):
        seeds = self._seeds if any(s is not None for s in self._seeds) else None
        obs, infos = self.venv.reset(seed=seeds)
        self.reset_infos = self._rows(infos)
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions):
        self._actions = np.asarray(actions)

    def step_wait(self):
        obs, rewards, terminated, truncated, infos = self.venv.step(self._actions)
        dones = terminated | truncated
        rows = self._rows(infos)
        for i in np.flatnonzero(dones):
            rows[i]["terminal_observation"] = infos["final_obs"][i]
            rows[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
        return obs, rewards.astype(np.float32), dones, rows

    def _rows(self, infos):
        """The batched infos as one dict per episode, without Gymnasium's masks and final_obs."""
        keys = [k for k in infos if not k.startswith("_") and k != "final_obs"]
        return [{k: infos[k][i] for k in keys} for i in range(self.num_envs)]

    def close(self):
        self.venv.close()

    def get_attr(self, attr_name, indices=None):
        value = getattr(self.venv, attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name, value, indices=None):
        raise GranularError(f"SB3VecEnv: the batch's episodes cannot be changed one by one (set_attr {attr_name!r})")

    def env_method(self, method_name, *method_args, indices=None, **method_kwargs):
        raise GranularError(f"SB3VecEnv: the batch's episodes have no per-episode methods ({method_name!r})")

    def env_is_wrapped(self, wrapper_class, indices=None):
        return [False for _ in self._get_indices(indices)]


def make_vec_env(num_envs: int = 64, workers: int | None = None, **env_kwargs) -> SB3VecEnv:
    """The quadruped's batch (:class:`~granular.apps.vector.QuadrupedVectorEnv`: ``num_envs``
    episodes on ``workers`` processes, the other arguments :class:`~granular.apps.gym.QuadrupedEnv`'s)
    for Stable-Baselines3."""
    from granular.apps.vector import QuadrupedVectorEnv

    return SB3VecEnv(QuadrupedVectorEnv(num_envs, workers=workers, autoreset_mode=AutoresetMode.SAME_STEP,
                                        **env_kwargs))
