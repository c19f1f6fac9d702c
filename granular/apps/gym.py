"""A Gymnasium environment: the planar quadruped learning to walk on granular media.

``granular/Quadruped-v0`` is registered when this module is imported (Gymnasium 1.x no longer
loads environments from package entry points), so either::

    import granular.apps.gym, gymnasium
    env = gymnasium.make("granular/Quadruped-v0")

or, in one call, ``gymnasium.make("granular.apps.gym:granular/Quadruped-v0")``.

The robot, terrain, time step, solver, contact law and medium models come from a scenario
(default ``quad-trot``); every simulator step goes through the one loop,
:class:`~granular.simulation.simulation.Simulation`, as ``granular sim`` does.

- **Action** (12,) in [-1, 1]: joint position targets as offsets from the nominal stance (the
  scenario's standing pose), times ``action_scale`` rad, in the order of
  :attr:`QuadrupedEnv.joint_names` (limbs front_1, front_2, rear_1, rear_2 × hip, knee, ankle).
  The robot's own joint PD (:class:`~granular.scenarios.control.JointPD`: its gains, torque and
  angle limits) tracks them for ``control_period`` s of simulator steps.
- **Observation** (33,) float32, or (33 + media,) with ``observe_medium``: torso height above the
  terrain under it (m), pitch (rad), v_x, v_z (m/s), ω (rad/s); the 12 joint angles (rad) and
  rates (rad/s); each foot's depth, θ's d (m, negative in the medium, 0 out of it); optionally a
  one-hot of the episode's medium; bounded by :data:`OBSERVATION_LIMITS`. The torso's x is left
  out so that a policy does not depend on where it is (it is in ``info``).
- **Reward**: the task's (``task``, default ``walk``; :mod:`granular.apps.rewards`): forward
  velocity (capped), an alive bonus, effort and pitch costs, a fall penalty, each weight named and
  overridable here (``forward_weight=…``); ``info["reward_forward"]`` etc. give each term.
- **Termination** on a fall: the torso lower than ``fall_height`` above the terrain or pitched
  more than ``fall_tilt`` (``info["fell"]``). **Truncation** after ``episode_seconds`` of
  simulated time (10 s: 1000 env steps, the registered ``max_episode_steps``; give both to
  ``gymnasium.make`` to change it).
- **Info**: ``x`` (m, the torso's), ``distance`` (m, ``x`` less its value at the episode's start), ``height`` (m, the torso above the terrain), ``pitch``,
  ``fell``, ``foot_depth`` (one d per foot, m), ``forward_velocity``, ``effort``, ``medium``,
  ``sim_time``, ``sim_steps`` and the reward's terms.
- **Resets**: the medium is drawn from ``media`` with the env's RNG, and the scenario's initial
  state is perturbed by it (scaled by ``reset_noise``), so ``reset(seed=s)`` is reproducible;
  the medium is reported in ``info["medium"]``.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np

from granular.errors import GranularError

try:
    import gymnasium
    from gymnasium import spaces
except ModuleNotFoundError as exc:  # only a missing gymnasium; a broken install shows its own error
    if not (exc.name or "").startswith("gymnasium"):
        raise
    raise GranularError("granular.apps.gym needs gymnasium: pip install 'granular[rl]' "
                        "(or pip install 'gymnasium>=1.0')") from None

from granular.apps import rewards
from granular.compiled import unchecked
from granular.contact.flow import LAWS
from granular.contact.solvers import make_solver
from granular.scenarios import scenario as scenarios
from granular.scenarios.control import JointPD
from granular.scenarios.robots import JOINTS, LIMBS
from granular.simulation import fused
from granular.simulation.fused import depth_arrays, foot_depths
from granular.simulation.fused_control import CONSTANT, JointControl
from granular.simulation.simulation import Simulation, advance_together
from granular.simulation.step import State

ENV_ID = "granular/Quadruped-v0"
#: Half-widths of the uniform reset perturbation at reset_noise = 1: joint angles (rad), torso pitch
#: (rad), extra drop height (m, upwards only, so no foot starts deeper in the medium than the
#: scenario puts it), torso v_x, v_z (m/s), ω (rad/s), joint rates (rad/s).
RESET_WIDTHS = {"joints": 0.05, "pitch": 0.02, "height": 0.02, "velocity": 0.05, "omega": 0.05, "rates": 0.1}
#: Bounds of the observation (Gymnasium's checker and RL libraries expect finite ones): height (m),
#: pitch (rad), v_x, v_z (m/s), ω (rad/s), joint angles (rad), joint rates (rad/s), foot depth (m).
#: A standing or walking robot stays far inside them; observations are clipped to them, which only
#: ever engages long after a fall has ended the episode.
OBSERVATION_LIMITS = {"height": (-2.0, 5.0), "pitch": (-2 * np.pi, 2 * np.pi), "velocity": (-20.0, 20.0),
                      "omega": (-50.0, 50.0), "joints": (-2 * np.pi, 2 * np.pi), "rates": (-200.0, 200.0),
                      "depth": (-2.0, 0.0)}


def periods(control_period: float, episode_seconds: float, dt: float) -> tuple:
    """(simulator steps per env step, the control period, env steps per episode) for a scenario's time
    step ``dt``; one clear error where the period is not a whole number of time steps."""
    substeps = int(round(control_period / dt))
    if substeps < 1 or abs(substeps * dt - control_period) > 1e-9 * max(1.0, control_period):
        raise GranularError(f"control_period {control_period!r} s must be a whole number of the scenario's "
                            f"time steps ({dt:g} s)")
    return substeps, substeps * dt, max(1, int(round(episode_seconds / (substeps * dt))))


class _TargetTracker:
    """The robot's joint PD towards a goal the environment sets each control period; it also sums
    (torque / limit)² over the steps, the effort the reward charges for."""

    def __init__(self, robot, goal, limits):
        self.goal = goal
        self.pd = JointPD(robot, self._targets)
        self.limits = limits  # one array for a medium's episodes: the batch checks them by identity
        self.inv_limit = 1.0 / robot.max_torque[3:]
        self.effort = 0.0

    def _targets(self, t, pitch):
        return self.goal

    def initial_memory(self):
        return None

    def joint_control(self) -> JointControl:
        """The fused step's form of this controller: the PD towards the goal (the same array, which
        the environment updates in place), the effort summed here."""
        return self._control

    @cached_property
    def _control(self):
        return JointControl(CONSTANT, self.limits, self.goal, effort=self._spend)

    def _spend(self, effort):
        self.effort += effort

    def __call__(self, t, q, v, memory):
        u, memory = self.pd(t, q, v, memory)
        scaled = u[3:] * self.inv_limit
        self.effort += float(scaled @ scaled) / len(scaled)
        return u, memory


class _Medium:
    """What one medium's episodes start from: the scenario built on it (immutable model, robot,
    initial state, nominal joint targets)."""

    def __init__(self, scenario):
        sim = scenarios.build(scenario)
        if not isinstance(sim.controller, JointPD):
            raise GranularError(f"{scenario.where}: the environment needs a legged robot under joint "
                                f"position control (a quadruped with [control] kind trot, hold or keyframes)")
        self.model, self.state, self.robot = sim.model, sim.state, sim.controller.robot
        self.solver = sim.solver.name
        # Nominal stance: the scenario's joint targets at t = 0 for a level torso (for quad-trot, the
        # standing pose before the gait starts), held as Hold holds a pose.
        self.nominal = np.clip(sim.controller.targets(0.0, 0.0), self.robot.lower[3:], self.robot.upper[3:])
        self.depth_arrays = depth_arrays(self.model)
        self.limits = sim.controller.limits


class QuadrupedEnv(gymnasium.Env):
    """The quadruped on granular media (see the module's docstring for spaces, reward, termination).

    Parameters: ``media`` (names or model files; one is drawn per episode), ``scenario`` (a shipped
    name or a scenario file with a quadruped under joint control), ``control_period`` (s per env
    step, a whole number of the scenario's time steps), ``episode_seconds`` (truncation),
    ``action_scale`` (rad of target offset per unit action), ``task`` (a name in
    :data:`~granular.apps.rewards.TASKS` or a :class:`~granular.apps.rewards.Task`) and any of its
    weights (``forward_weight``, ``max_speed``, ``healthy_reward``, ``effort_weight``, ``tilt_weight``,
    ``fall_penalty``; None keeps the task's), ``fall_height`` (m), ``fall_tilt`` (rad), ``reset_noise`` (scale of
    :data:`RESET_WIDTHS`), ``observe_medium`` (append a one-hot of the medium), ``render_mode``
    (None or "rgb_array": a matplotlib drawing of the scene), ``solver`` (the contact QP's; default
    the scenario's, ``native``, with which each env step is one compiled call), ``contact`` (the
    contact law, data-flow or max-dissipation; default the scenario's, data-flow for quad-trot;
    max-dissipation, the paper's law, steps the batch about 3× faster: README, "Reinforcement learning").
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 100}

    def __init__(self, media=("sand", "pebbles"), scenario: str = "quad-trot", control_period: float = 0.01,
                 episode_seconds: float = 10.0, action_scale: float = 0.5, task="walk",
                 forward_weight: float | None = None, max_speed: float | None = None,
                 healthy_reward: float | None = None, effort_weight: float | None = None,
                 tilt_weight: float | None = None, fall_penalty: float | None = None,
                 fall_height: float = 0.6, fall_tilt: float = 0.7,
                 reset_noise: float = 1.0, observe_medium: bool = False, render_mode: str | None = None,
                 solver: str | None = None, contact: str | None = None):
        if isinstance(media, str):
            media = (media,)
        media = tuple(media)
        if not media:
            raise GranularError("media: give at least one medium")
        for name, value in (("control_period", control_period), ("episode_seconds", episode_seconds),
                            ("action_scale", action_scale), ("fall_height", fall_height),
                            ("fall_tilt", fall_tilt)):
            if not (np.isfinite(value) and value > 0):
                raise GranularError(f"{name} must be a positive number, got {value!r}")
        if not (np.isfinite(reset_noise) and reset_noise >= 0):
            raise GranularError(f"reset_noise must be a non-negative number, got {reset_noise!r}")
        self.task = rewards.task(task).with_(
            forward_weight=forward_weight, max_speed=max_speed, healthy_reward=healthy_reward,
            effort_weight=effort_weight, tilt_weight=tilt_weight, fall_penalty=fall_penalty)
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise GranularError(f"render_mode must be None or one of {self.metadata['render_modes']}, "
                                f"got {render_mode!r}")
        if contact not in (None, *LAWS):
            raise GranularError(f"contact must be one of {', '.join(LAWS)}, got {contact!r}")
        base = scenarios.load(scenario).with_(solver=solver, contact=contact)
        self._media = {name: _Medium(base.with_(medium=name)) for name in dict.fromkeys(media)}
        self.media = tuple(self._media)
        first = self._media[self.media[0]]
        self.substeps, self.control_period, self.max_steps = periods(control_period, episode_seconds, first.model.dt)
        self.action_scale = action_scale
        self.fall_height, self.fall_tilt, self.reset_noise = fall_height, fall_tilt, reset_noise
        self.observe_medium, self.render_mode = observe_medium, render_mode
        self.metadata = {**self.metadata, "render_fps": 1.0 / self.control_period}
        self.joint_names = tuple(f"{limb}_{joint}" for limb, _ in LIMBS for joint in JOINTS)
        nj = len(self.joint_names)
        if first.model.multibody.ndof - 3 != nj:
            raise GranularError(f"{base.where}: the environment needs a quadruped with {nj} joints")
        self.n_feet = len(first.model.contacts)
        L = OBSERVATION_LIMITS
        limits = ([L["height"], L["pitch"], L["velocity"], L["velocity"], L["omega"]] + [L["joints"]] * nj
                  + [L["rates"]] * nj + [L["depth"]] * self.n_feet + [(0.0, 1.0)] * (len(self.media) * observe_medium))
        low, high = np.array(limits, dtype=np.float32).T
        self.action_space = spaces.Box(-1.0, 1.0, shape=(nj,), dtype=np.float32)
        self.observation_space = spaces.Box(low, high, dtype=np.float32)
        self.medium = None
        self.sim = None
        self._figure = None

    # -- the episode ---------------------------------------------------------------------------
    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._begin()
        obs, _, _, _, info = report([self], np.zeros(1), np.zeros(1), np.ones(1, dtype=bool))
        return obs[0], row(info, 0)

    def _begin(self):
        """A new episode from the env's RNG: the medium first, then the perturbation, so the seed
        fixes both."""
        rng = self.np_random
        self.medium = self.media[int(rng.integers(len(self.media)))]
        m = self._media[self.medium]
        w = {k: v * self.reset_noise for k, v in RESET_WIDTHS.items()}
        q, v = m.state.q.copy(), m.state.v.copy()
        nj = len(q) - 3
        q[1] += rng.uniform(0.0, w["height"])
        q[2] += rng.uniform(-w["pitch"], w["pitch"])
        q[3:] = np.clip(q[3:] + rng.uniform(-w["joints"], w["joints"], nj), m.robot.lower[3:], m.robot.upper[3:])
        v[:2] += rng.uniform(-w["velocity"], w["velocity"], 2)
        v[2] += rng.uniform(-w["omega"], w["omega"])
        v[3:] += rng.uniform(-w["rates"], w["rates"], nj)
        self._controller = _TargetTracker(m.robot, m.nominal.copy(), m.limits)
        self.sim = Simulation(m.model, State(m.state.t, q, v), self._controller, make_solver(m.solver))
        self.elapsed = 0
        self.x0 = q[0]

    def step(self, action):
        if self.sim is None:
            raise GranularError("call reset() before step()")
        try:
            a = np.asarray(action, dtype=float).reshape(1, -1)
        except (TypeError, ValueError):
            a = None
        if a is None or a.shape[1:] != self.action_space.shape:
            raise GranularError(f"action must be {self.action_space.shape[0]} finite numbers, got {action!r}")
        obs, reward, terminated, truncated, info = step_episodes([self], a)
        return obs[0], float(reward[0]), bool(terminated[0]), bool(truncated[0]), row(info, 0)

    # -- what the policy and the user see --------------------------------------------------------
    def foot_depths(self) -> np.ndarray:
        """θ's d of each foot at the current state (m): negative in the medium, 0 out of it."""
        if self.sim is None:
            raise GranularError("call reset() before foot_depths()")
        return _foot_depths([self], self.sim.state.q[None])[0]

    def render(self):
        """An RGB image (H, W, 3) of the scene around the torso, drawn as ``granular sim --plot`` draws."""
        if self.render_mode is None:
            gymnasium.logger.warn("render() called with render_mode=None; make the env with render_mode='rgb_array'")
            return None
        from granular.apps import plots
        from granular.simulation.runfile import geometry

        if self.sim is None:
            raise GranularError("call reset() before render()")
        if self._figure is None:
            self._figure = plots.plt.figure(figsize=(4, 3), dpi=80)
        fig = self._figure
        fig.clf()
        ax = fig.add_subplot()
        info, q = self.sim.info, self.sim.state.q
        n = self.n_feet
        run = {"geometry": geometry(self.sim.model), "q": q[None],
               "wrench": (info.wrench if info is not None else np.zeros((n, 3)))[None],
               "active": (info.active if info is not None else np.zeros(n, bool))[None]}
        width = 2.0
        plots._terrain(ax, run, (q[0] - width / 2, q[0] + width / 2))
        plots.draw_scene(ax, run, 0, wrench_scale=5e-4)
        ax.set_xlim(q[0] - width / 2, q[0] + width / 2)
        ax.set_ylim(-0.3, 1.2)
        ax.set_aspect("equal")
        ax.set_title(f"{self.medium}, t = {self.sim.state.t:.2f} s", fontsize=9)
        fig.canvas.draw()
        return np.asarray(fig.canvas.buffer_rgba())[..., :3].copy()

    def close(self):
        if self._figure is not None:
            from granular.apps import plots

            plots.plt.close(self._figure)
            self._figure = None


def step_episodes(envs, actions, restart=None):
    """One env step of each of ``envs`` (QuadrupedEnvs built alike, their episodes begun) under
    ``actions`` (R, joints), the simulator's steps of all of them in as few compiled calls as their
    media allow: :func:`report`'s (observations, rewards, terminated, truncated, infos). Episodes
    marked in ``restart`` (R,) begin anew instead, their RNG going on, and report reward 0
    (Gymnasium's next-step autoreset). A single environment's step is a batch of one, so a batch
    equals that many single environments, bit for bit."""
    R = len(envs)
    restart = np.zeros(R, dtype=bool) if restart is None else np.asarray(restart, dtype=bool)
    running = np.flatnonzero(~restart)
    a = actions[running]
    if not np.isfinite(a).all():  # before any episode changes
        bad = int(running[np.flatnonzero(~np.isfinite(a).all(axis=1))[0]])
        raise GranularError(f"action must be {envs[0].action_space.shape[0]} finite numbers, got {actions[bad]!r}"
                            + (f" (environment {bad})" if R > 1 else ""))
    forward, effort = np.zeros(R), np.zeros(R)
    for k in np.flatnonzero(restart):
        envs[k]._begin()
    if len(running):
        stepping = [envs[k] for k in running]
        first = stepping[0]
        # Out-of-range actions are clipped, as the Box promises; the PD then clips to the joints' ranges.
        goals = (np.array([env._media[env.medium].nominal for env in stepping])
                 + first.action_scale * np.minimum(np.maximum(a, -1.0), 1.0))
        x0 = np.empty(len(stepping))
        for k, env in enumerate(stepping):
            env._controller.goal[:] = goals[k]  # in place: the fused step's JointControl holds this array
            env._controller.effort = 0.0
            env.elapsed += 1
            x0[k] = env.sim.state.q[0]
        _advance(stepping)
        forward[running] = (np.array([env.sim.state.q[0] for env in stepping]) - x0) / first.control_period
        effort[running] = np.array([env._controller.effort for env in stepping]) / first.substeps
    return report(envs, forward, effort, restart)


def _advance(envs):
    """One control period of each episode: those on one medium whose steps fuse in one compiled
    call (:func:`~granular.simulation.simulation.advance_together`), any other alone."""
    groups = {}
    for env in envs:
        control = env.sim.fused_control()
        if control is None:
            env.sim.advance(env.substeps)
        else:
            groups.setdefault(id(env.sim.model), []).append((env.sim, control))
    for members in groups.values():
        sims, controls = zip(*members)
        if fused.batchable(controls):
            advance_together(sims, controls, envs[0].substeps)
        else:
            for sim in sims:
                sim.advance(envs[0].substeps)


def report(envs, forward, effort, fresh):
    """What each of ``envs`` reports at its current state, given the forward velocity (m/s) and
    effort of its last control period, (R,) each: (observations (R, D) float32, rewards (R,),
    terminated (R,), truncated (R,), infos: an array per key, in Gymnasium's dtypes). Episodes
    marked ``fresh`` just began: they neither end nor earn."""
    first = envs[0]
    q = np.array([env.sim.state.q for env in envs])
    v = np.array([env.sim.state.v for env in envs])
    height = q[:, 1] - _per_medium(envs, q, lambda m, q: m.model.terrain.height(q[:, 0]))
    fell = (height < first.fall_height) | (np.abs(q[:, 2]) > first.fall_tilt)
    terms = first.task.terms(forward, effort, q[:, 2], fell, ~fresh)
    reward = sum(terms.values())
    terminated = ~fresh & fell
    elapsed = np.array([env.elapsed for env in envs])
    truncated = ~fresh & ~terminated & (elapsed >= first.max_steps)
    depths = _foot_depths(envs, q)
    parts = [height[:, None], q[:, 2:3], v[:, :3], q[:, 3:], v[:, 3:], depths]
    if first.observe_medium:
        parts.append(np.array([np.asarray(first.media) == env.medium for env in envs]))
    space = first.observation_space
    obs = np.minimum(np.maximum(np.concatenate(parts, axis=1).astype(np.float32), space.low), space.high)
    info = {"medium": np.array([env.medium for env in envs], dtype=object), "x": q[:, 0],
            "distance": q[:, 0] - np.array([env.x0 for env in envs]), "height": height,
            "pitch": q[:, 2], "fell": fell, "foot_depth": depths, "forward_velocity": forward, "effort": effort,
            "sim_time": np.array([env.sim.state.t for env in envs]),
            "sim_steps": np.array([env.sim.steps for env in envs], dtype=np.int64),
            **{f"reward_{name}": value for name, value in terms.items()}}
    return obs, reward, terminated, truncated, info


def _foot_depths(envs, q):
    """θ's d (R, N) of each foot at the episodes' states q (R, n), one compiled call per medium."""
    return _per_medium(envs, q, lambda m, q: unchecked(foot_depths)(q, *m.depth_arrays))


def _per_medium(envs, q, fn):
    """``fn(medium, states)`` for the states q (R, n) of ``envs``, one call per medium (its
    :class:`_Medium` and its episodes' rows of q), the results in the episodes' order."""
    media = [env.medium for env in envs]
    q = np.ascontiguousarray(q, np.float64)
    if all(medium == media[0] for medium in media):
        return fn(envs[0]._media[media[0]], q)
    parts = {medium: np.array([k for k, m in enumerate(media) if m == medium]) for medium in dict.fromkeys(media)}
    results = {medium: fn(envs[0]._media[medium], np.ascontiguousarray(q[rows])) for medium, rows in parts.items()}
    out = np.empty((len(envs),) + results[media[0]].shape[1:])
    for medium, rows in parts.items():
        out[rows] = results[medium]
    return out


def row(info: dict, k: int) -> dict:
    """Episode k's info, as a dict of Python scalars, from :func:`report`'s columns."""
    return {key: column[k].item() if isinstance(column[k], np.generic) else column[k] for key, column in info.items()}


if ENV_ID not in gymnasium.registry:
    # make_vec(ENV_ID, num_envs=N, vectorization_mode="vector_entry_point") gives the batch on the cores
    gymnasium.register(ENV_ID, entry_point=f"{__name__}:QuadrupedEnv", max_episode_steps=1000,
                       vector_entry_point="granular.apps.vector:QuadrupedVectorEnv")
