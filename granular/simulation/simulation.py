"""The one simulation loop: a :class:`Simulation` steps an immutable SimModel.

``Simulation`` is the mutable half (as MuJoCo pairs MjData with MjModel): the state, the
controller's memory, the solver's warm-start workspace and the step count. ``advance(n)`` steps
it; ``rollout(steps, callbacks)`` steps it and calls each callback after every step, which is how
recording (:class:`Recorder`), timing (:class:`StepTimer`), drawing and validation attach to it.
Every command that simulates (sim, view, bench, validate) steps through this loop.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from granular.simulation import fused
from granular.simulation.step import SimModel, State, StepInfo, step


@dataclass
class Simulation:
    """A running simulation of ``model``: ``controller(t, q, v, memory) -> (u, memory)``."""

    model: SimModel
    state: State
    controller: object
    solver: object
    memory: object = None
    steps: int = 0
    info: StepInfo | None = None

    #: ((model, solver), (their fused arrays, the QP's warm start)), or (…, None) where they do not fuse
    _fused: tuple = field(default=(None, None), init=False, repr=False)

    def __post_init__(self):
        if self.memory is None:
            self.memory = self.controller.initial_memory()

    def advance(self, n: int = 1) -> StepInfo | None:
        """Step ``n`` times; the last step's contact information. Where the model, the solver and
        the controller allow, the steps run fused, as one compiled call (:mod:`.fused`)."""
        control = self.fused_control() if n > 0 else None
        if control is None:
            for _ in range(n):
                self._stage_step()
        else:
            advance_together([self], [control], n)
        return self.info

    def _stage_step(self):
        u, self.memory = self.controller(self.state.t, self.state.q, self.state.v, self.memory)
        self.state, self.info = step(self.model, self.state, u, self.solver, self.steps)
        self.steps += 1

    def fused_control(self):
        """The controller's fused form (:class:`.fused_control.JointControl`) where the model, the solver and
        the controller can step fused, else None (the steps then run stage by stage)."""
        key = self._fused[0]
        if key is None or key[0] is not self.model or key[1] is not self.solver:
            arrays = fused.plan(self.model, self.solver)
            self._fused = ((self.model, self.solver), None if arrays is None else (arrays, fused.workspace(self.model)))
        if self._fused[1] is None:
            return None
        offer = getattr(self.controller, "joint_control", None)
        return offer() if offer is not None else None

    def rollout(self, steps: int, callbacks=(), progress: str | None = None):
        """Step ``steps`` times, calling ``callback(self)`` after each step; with ``progress``
        (a label), a progress bar on a terminal."""
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=steps, desc=progress, disable=None, mininterval=0.5)
        for i in range(steps):
            self.advance(1)
            for callback in callbacks:
                callback(self)
            if bar is not None and i % 100 == 99:
                bar.update(100)
        if bar is not None:
            bar.update(steps - bar.n)
            bar.close()
        return self


def advance_together(sims, controls, n: int):
    """Step simulations of one model ``n`` times each in one compiled call (:func:`.fused.advance`),
    sims[i] under its controller's fused form ``controls[i]`` (:meth:`Simulation.fused_control`,
    not None; :func:`.fused.batchable`). Each ends where ``sims[i].advance(n)`` would: a robot
    whose QP the native solver could not take at some step takes that step by stages and goes on
    alone."""
    if n < 1:
        return
    first = sims[0]
    arrays, _ = first._fused[1]
    warms = np.concatenate([s._fused[1][1] for s in sims]) if len(sims) > 1 else first._fused[1][1]
    memories = _memories(sims, controls)
    t, q, v, info, done = fused.advance(first.model, arrays, controls, [s.state for s in sims], warms, n, memories)
    for k, sim in enumerate(sims):
        if len(sims) > 1:
            sim._fused[1][1][0] = warms[k]
        done_k = _adopt(sim, k, t, q, v, info, done, n, memories)
        if done_k < n:
            _finish_alone(sim, controls[k], n - done_k)


def _memories(sims, controls):
    """The controllers' memories as the fused step carries them (R, S): None where they have none."""
    if not controls[0].remembers:
        return None
    return np.array([c.memory_array(s.memory) for s, c in zip(sims, controls)])


def _adopt(sim, k, t, q, v, info, done, n: int, memories=None) -> int:
    """Take robot k's state (and its controller's memory) from :func:`.fused.advance`'s arrays, and
    its StepInfo where it did all ``n`` steps (else its fields are not the last step's); returns the
    steps it did."""
    done_k = int(done[k])
    if done_k:
        sim.state = State(float(t[k]), q[k], v[k], sim.state.holder)
        sim.steps += done_k
        if memories is not None:  # the integrals, as the controller's own __call__ returns them
            sim.memory = memories[k].copy() if isinstance(sim.memory, np.ndarray) else tuple(map(float, memories[k]))
    if done_k == n:
        theta, active, wrench, slipping, p_center, fell_back = info
        sim.info = StepInfo(theta[k], active[k], wrench[k], slipping[k], p_center[k], bool(fell_back[k]))
    return done_k


def _finish_alone(sim, control, left: int):
    """``left`` steps of one simulation whose native QP failed at the first of them: that step by
    stages (DAQP then solves its QP), the rest fused again, and so on (a loop: a pose the native
    solver never takes, say a leg held straight, steps by stages throughout)."""
    while left > 0:
        sim._stage_step()
        left -= 1
        if left:
            memories = _memories([sim], [control])
            t, q, v, info, done = fused.advance(sim.model, sim._fused[1][0], [control], [sim.state],
                                                sim._fused[1][1], left, memories)
            left -= _adopt(sim, 0, t, q, v, info, done, left, memories)


@dataclass
class Run:
    """A recorded run: time (S+1,), q and v (S+1, n), energy (S+1,); per step and foot:
    theta (S, N, 2), active, wrench (S, N, 3) in F_r, slipping, p_center (S, N, 2)."""

    name: str
    medium: str
    model: SimModel
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    energy: np.ndarray
    theta: np.ndarray
    active: np.ndarray
    wrench: np.ndarray
    slipping: np.ndarray
    p_center: np.ndarray
    wall_time_s: float = 0.0
    meta: dict = field(default_factory=dict)


class Recorder:
    """A rollout callback that fills a :class:`Run` of ``steps`` steps (arrays allocated once)."""

    def __init__(self, sim: Simulation, steps: int, name: str, medium: str):
        mb, N = sim.model.multibody, len(sim.model.contacts)
        self.run = Run(name, medium, sim.model,
                       t=np.zeros(steps + 1), q=np.zeros((steps + 1, mb.ndof)), v=np.zeros((steps + 1, mb.ndof)),
                       energy=np.zeros(steps + 1), theta=np.zeros((steps, N, 2)), active=np.zeros((steps, N), bool),
                       wrench=np.zeros((steps, N, 3)), slipping=np.zeros((steps, N), bool),
                       p_center=np.zeros((steps, N, 2)),
                       meta={"solver": sim.solver.name, "representation": sim.model.representation,
                             "contact": sim.model.contact_law, "law_fallback_steps": 0,
                             "dt": sim.model.dt})
        self._row(0, sim.state)
        self.first = sim.steps
        self._start = time.perf_counter()

    def _row(self, i, state):
        r = self.run
        r.t[i], r.q[i], r.v[i] = state.t, state.q, state.v
        r.energy[i] = r.model.multibody.energy(state.q, state.v)

    def __call__(self, sim: Simulation):
        i = sim.steps - self.first
        self._row(i, sim.state)
        r, info = self.run, sim.info
        r.theta[i - 1], r.active[i - 1], r.wrench[i - 1] = info.theta, info.active, info.wrench
        r.slipping[i - 1], r.p_center[i - 1] = info.slipping, info.p_center
        r.meta["law_fallback_steps"] += info.fallback
        r.wall_time_s = time.perf_counter() - self._start


class StepTimer:
    """A rollout callback that records the wall time of each step (controller + step), in s."""

    def __init__(self, steps: int, warmup: int = 0):
        self.times = np.empty(steps)
        self.warmup, self.count = warmup, 0
        self._last = time.perf_counter()

    def __call__(self, sim: Simulation):
        now = time.perf_counter()
        i = self.count - self.warmup
        if 0 <= i < len(self.times):
            self.times[i] = now - self._last
        self.count += 1
        self._last = time.perf_counter()
