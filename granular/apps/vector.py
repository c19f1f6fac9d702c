"""Batches of quadrupeds on the machine's cores: a Gymnasium vector environment.

:class:`QuadrupedVectorEnv` steps ``num_envs`` independent episodes of
:class:`~granular.apps.gym.QuadrupedEnv` in one call. The episodes are dealt to ``workers``
processes (default: one per core). Each worker steps its share with
:func:`~granular.apps.gym.step_episodes`: the control period in one compiled call per medium (the
fused step, looping over the robots), the actions, observations, rewards and infos as arrays over
the share. A single environment is a batch of one through the same code: the batch equals that many
single environments, bit for bit (``tests/test_gym.py``). Each worker builds the scenario's media once and
shares them, immutable, among its episodes. BLAS runs on one thread per worker, so the workers do
not contend for the cores.

Autoreset follows Gymnasium 1.x's default (``AutoresetMode.NEXT_STEP``): the step after an episode
ends resets that episode (without a seed: its own RNG continues) and returns its first observation
with reward 0. With ``autoreset_mode=AutoresetMode.SAME_STEP`` (what Stable-Baselines3 expects:
:mod:`granular.apps.sb3`) the step that ends an episode begins the next one: it returns the new
episode's first observation, the ended one's last in ``infos["final_obs"]`` (rows masked by
``infos["_final_obs"]``), and the rest of ``infos`` describes the step just taken. ``reset(seed=s)`` seeds episode i with s + i. ``infos`` hold an array per key of
``QuadrupedEnv.step``'s info (:func:`~granular.apps.gym.report`) with Gymnasium's ``_key`` masks.

``workers=0`` steps every episode in this process (no subprocesses): the baseline that
``granular bench --batch`` compares with.
"""
from __future__ import annotations

import copy
import multiprocessing
import os

import numpy as np

from granular.apps.gym import QuadrupedEnv, report, step_episodes
from granular.errors import GranularError

from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space


def _episodes(count: int, kwargs: dict, first: QuadrupedEnv | None = None) -> list:
    """``count`` environments sharing one set of built media (only their episodes are their own):
    ``first`` and copies of it (``first`` is built from ``kwargs`` if not given)."""
    first = QuadrupedEnv(**kwargs) if first is None else first
    envs = [first]
    for _ in range(count - 1):
        env = copy.copy(first)
        env._np_random = None  # its own RNG, from its own seed
        env._np_random_seed = None
        envs.append(env)
    return envs


class _Shard:
    """Some of the batch's episodes (in a worker or in this process)."""

    def __init__(self, count: int, kwargs: dict, first: QuadrupedEnv | None = None, same_step: bool = False):
        self.envs = _episodes(count, kwargs, first)
        self.done = np.zeros(count, dtype=bool)
        self.same_step = same_step

    def reset(self, seeds):
        self.done[:] = False
        results = [env.reset(seed=seed) for env, seed in zip(self.envs, seeds)]
        return np.stack([o for o, _ in results]), _columns([i for _, i in results])

    def step(self, actions):
        obs, rewards, terminated, truncated, infos = step_episodes(self.envs, actions, restart=self.done)
        self.done = terminated | truncated
        if self.same_step:
            infos["final_obs"], infos["_final_obs"] = obs.copy(), self.done
            ended = np.flatnonzero(self.done)
            for k in ended:
                self.envs[k]._begin()
            if len(ended):
                fresh = [self.envs[k] for k in ended]
                obs[ended] = report(fresh, np.zeros(len(ended)), np.zeros(len(ended)), np.ones(len(ended), bool))[0]
            self.done = np.zeros_like(self.done)
        return obs, rewards, terminated, truncated, infos


def _columns(infos: list):
    """The episodes' info dicts as one array per key, in Gymnasium's dtypes (a worker sends these, not
    a dict per episode), where every episode reports the same scalar keys (always, here); else the
    list itself, for Gymnasium's ``_add_info``."""
    keys = infos[0].keys() if infos else ()
    if any(info.keys() != keys for info in infos) or any(isinstance(v, dict) for v in infos[0].values()):
        return infos
    out = {}
    for key in keys:
        values = [info[key] for info in infos]
        if isinstance(values[0], np.ndarray):
            if any(not isinstance(v, np.ndarray) or v.shape != values[0].shape for v in values):
                return infos
            out[key] = np.stack(values)
            continue
        kind = type(values[0])
        out[key] = np.array(values, dtype=kind if kind in (int, float, bool) or issubclass(kind, np.number) else object)
    return out


def _serve(conn, count, kwargs, same_step):
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        try:
            shard = _Shard(count, kwargs, same_step=same_step)
            conn.send(("ready", None))
        except Exception as exc:  # reported to the parent, which raises it with the worker's message
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
            return
        while True:
            command, data = conn.recv()
            if command == "close":
                return
            try:
                conn.send(("ok", getattr(shard, command)(data)))
            except Exception as exc:
                conn.send(("error", f"{type(exc).__name__}: {exc}"))


#: The cause of most workers that end before answering, and its mend.
GUARD = ("A script that makes a QuadrupedVectorEnv with workers must do so under `if __name__ == \"__main__\":` "
         "(the workers are spawned processes, which import the script again), or pass workers=0")


class QuadrupedVectorEnv(VectorEnv):
    """``num_envs`` quadruped episodes stepped together on ``workers`` processes (default: the
    machine's cores; 0: in this process). ``max_episode_steps`` (as ``gymnasium.make_vec`` passes
    it) sets ``episode_seconds`` unless that is given. Other keyword arguments are :class:`QuadrupedEnv`'s."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}
    _workers = ()

    def __init__(self, num_envs: int = 16, workers: int | None = None,
                 autoreset_mode: AutoresetMode = AutoresetMode.NEXT_STEP, max_episode_steps: int | None = None,
                 **env_kwargs):
        if getattr(multiprocessing.current_process(), "_inheriting", False):
            # a spawned worker is importing the user's script, which makes environments at its top level
            raise GranularError(f"QuadrupedVectorEnv made while a batch worker imports its parent's script. {GUARD}")
        if not (isinstance(num_envs, (int, np.integer)) and num_envs >= 1):
            raise GranularError(f"num_envs must be a whole number ≥ 1, got {num_envs!r}")
        workers = (os.cpu_count() or 1) if workers is None else workers
        if not (isinstance(workers, (int, np.integer)) and workers >= 0):
            raise GranularError(f"workers must be a whole number ≥ 0, got {workers!r}")
        if autoreset_mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
            raise GranularError(f"autoreset_mode must be AutoresetMode.NEXT_STEP or SAME_STEP, got {autoreset_mode!r}")
        same_step = autoreset_mode == AutoresetMode.SAME_STEP
        self.metadata = {**self.metadata, "autoreset_mode": autoreset_mode}
        if env_kwargs.get("render_mode") is not None:
            raise GranularError("the vector environment does not render; render a single QuadrupedEnv")
        if max_episode_steps is not None and "episode_seconds" not in env_kwargs:
            # make_vec passes the registration's limit; the episodes truncate themselves at that length
            env_kwargs["episode_seconds"] = max_episode_steps * env_kwargs.get("control_period", 0.01)
        probe = QuadrupedEnv(**env_kwargs)  # checks the arguments here, with the user's traceback-free errors
        self.num_envs = int(num_envs)
        self.single_observation_space = probe.observation_space
        self.single_action_space = probe.action_space
        self.observation_space = batch_space(probe.observation_space, self.num_envs)
        self.action_space = batch_space(probe.action_space, self.num_envs)
        self.substeps, self.control_period = probe.substeps, probe.control_period
        self.workers = min(workers, self.num_envs)
        counts = [len(part) for part in np.array_split(np.arange(self.num_envs), max(1, self.workers))]
        self._bounds = np.cumsum([0] + counts)
        self._local, self._workers = None, []
        if workers == 0:
            self._local = _Shard(self.num_envs, env_kwargs, first=probe, same_step=same_step)
        else:
            ctx = multiprocessing.get_context("spawn")
            for count in counts:
                parent, child = ctx.Pipe()
                process = ctx.Process(target=_serve, args=(child, count, env_kwargs, same_step), daemon=True)
                process.start()
                child.close()
                self._workers.append((process, parent))
            self._receive()  # each worker's "ready", or its error

    def _call_each(self, command, parts):
        for part, (process, conn) in zip(parts, self._workers):
            try:
                conn.send((command, part))
            except OSError:  # a broken pipe: the worker is gone
                self._gone(process)
        return self._receive()

    def _receive(self):
        results = []
        for process, conn in self._workers:
            try:
                status, value = conn.recv()
            except (EOFError, OSError):
                self._gone(process)
            if status == "error":
                raise GranularError(f"a batch worker failed: {value}")
            results.append(value)
        return results

    @staticmethod
    def _gone(process):
        process.join(timeout=1)
        raise GranularError(f"a batch worker (process {process.pid}) ended without answering, exit code "
                            f"{process.exitcode}: see its output above. {GUARD}")

    def _split(self, values):
        return [values[a:b] for a, b in zip(self._bounds[:-1], self._bounds[1:])]

    def reset(self, *, seed=None, options=None):
        if seed is None:
            seeds = [None] * self.num_envs
        elif isinstance(seed, (int, np.integer)):
            seeds = [int(seed) + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise GranularError(f"reset: {len(seeds)} seeds for {self.num_envs} environments")
        parts = [self._local.reset(seeds)] if self._local else self._call_each("reset", self._split(seeds))
        obs = np.concatenate([o for o, _ in parts])
        return obs, self._infos([infos for _, infos in parts])

    def step(self, actions):
        actions = np.asarray(actions, dtype=np.float64)
        if actions.shape != self.action_space.shape:
            raise GranularError(f"actions must have shape {self.action_space.shape}, got {actions.shape}")
        parts = [self._local.step(actions)] if self._local else self._call_each("step", self._split(actions))
        obs, rewards, terminated, truncated = (np.concatenate([p[k] for p in parts]) for k in range(4))
        return obs, rewards, terminated, truncated, self._infos([p[4] for p in parts])

    def _infos(self, parts):
        """Gymnasium's batched infos (an array per key and a ``_key`` mask) from the shards' columns
        (:func:`_columns`); Gymnasium's ``_add_info`` per episode and key cost more than the
        simulation at 256 robots, so it only takes shards whose episodes report different keys."""
        if all(isinstance(part, dict) for part in parts) and all(part.keys() == parts[0].keys() for part in parts):
            infos = {}
            for key in parts[0]:
                infos[key] = np.concatenate([part[key] for part in parts])
                if not key.startswith("_") and f"_{key}" not in parts[0]:
                    infos[f"_{key}"] = np.ones(self.num_envs, dtype=np.bool_)
            return infos
        infos, k = {}, 0
        for part in parts:
            episodes = part if isinstance(part, list) else [dict(zip(part, row)) for row in zip(*part.values())]
            for info in episodes:
                infos = self._add_info(infos, info, k)
                k += 1
        return infos

    def close_extras(self, **kwargs):
        for process, conn in self._workers:
            try:
                conn.send(("close", None))
            except (BrokenPipeError, OSError):
                pass
        for process, conn in self._workers:
            process.join(timeout=5)
            if process.is_alive():
                process.terminate()
        self._workers = []
