"""Benchmarks of the 3D paths (``granular bench``): W(θ) ⊂ ℝ⁶ for four feet, and a MuJoCo foot's
coupled step under both contact laws. Medians of real calls, in microseconds, as :mod:`bench`."""
from __future__ import annotations

import time

import numpy as np

from granular.apps.bench import median_us
from granular.compiled import unchecked


def wrench_space(model, contacts: int = 4, repeat: int = 500, seed: int = 0) -> dict:
    """W(θ) of ``contacts`` feet in one call: the extreme wrenches, the fixed-normal offsets (K = 72),
    and the exact hull (qhull in ℝ⁶, fewer calls)."""
    rng = np.random.default_rng(seed)
    thetas = np.column_stack([rng.uniform(model.d_min, 0.0, contacts) * 0.9, rng.uniform(0.0, model.phi_max, contacts)])
    A = model.fixed_normals(72)
    return {"points": {"us_per_call": median_us(lambda: model.points(thetas), repeat)},
            "fixed-72": {"us_per_call": median_us(lambda: model.offsets(A, thetas), repeat)},
            "exact": {"us_per_call": median_us(lambda: model.halfspaces(thetas), max(3, repeat // 100), warmup=1)}}


def foot_step(scenario: str = "drop3d-tilted", steps: int = 300, settle: float = 0.4) -> dict:
    """One coupled MuJoCo step of the scenario's foot in the medium (after ``settle`` s, so that it
    is in contact), per contact law: MuJoCo's stages, θ and Jacobians, the law, and the step."""
    from granular.scenarios import scenario as scenarios, scenario3d
    from granular.simulation import mujoco3d

    out = {}
    for law in ("data-flow", "max-dissipation"):
        world = scenario3d.build(scenarios.find(scenario), law=law)
        m, d = world.mj_model, world.mj_data
        for _ in range(int(settle / m.opt.timestep)):
            mujoco3d.step(m, d, world.feet, world.terrain, workspace=world.workspace)
        out[law] = {"us_per_step": median_us(lambda: mujoco3d.step(m, d, world.feet, world.terrain, workspace=world.workspace), steps, warmup=5)}
    return out


def quadruped(scenario: str = "quad3d-trot", steps: int = 200, settle: float = 1.5) -> dict:
    """The 3D quadruped trotting (four granular feet), per law, after ``settle`` s of the gait: the
    coupled step, MuJoCo included (``us_per_step``: mj_step1, the compiled call, mj_step2 and the
    Python between them), the compiled call within it (θ, W(θ) and the contact law), and the gait
    controller that sets the targets before each step (the shipped gait, Python; a user's robot
    brings its own controller, so it is timed apart, as the planar bench's ``gait_controller``)."""
    from granular.scenarios import scenario as scenarios, scenario3d
    from granular.simulation import mujoco3d

    out = {}
    kernel = mujoco3d.feet_step
    fused = unchecked(kernel)  # as the step calls it
    for law in ("data-flow", "max-dissipation"):
        world = scenario3d.build(scenarios.find(scenario), law=law)
        m, d = world.mj_model, world.mj_data
        for _ in range(int(settle / m.opt.timestep)):
            d.ctrl[:] = world.gait(d)
            mujoco3d.step(m, d, world.feet, world.terrain, workspace=world.workspace)
        calls = []

        def timed(*args):
            t0 = time.perf_counter()
            result = fused(*args)
            calls.append(time.perf_counter() - t0)
            return result

        times, gait = np.empty(steps), np.empty(steps)
        mujoco3d.feet_step = timed  # the step looks it up at each call
        try:
            for i in range(steps):
                t0 = time.perf_counter()
                d.ctrl[:] = world.gait(d)
                t1 = time.perf_counter()
                mujoco3d.step(m, d, world.feet, world.terrain, workspace=world.workspace)
                times[i], gait[i] = time.perf_counter() - t1, t1 - t0
        finally:
            mujoco3d.feet_step = kernel
        out[law] = {"us_per_step": float(np.median(times) * 1e6), "mean_us_per_step": float(np.mean(times) * 1e6),
                    "compiled_call_us": float(np.median(calls) * 1e6), "gait_us_per_call": float(np.median(gait) * 1e6)}
    return out


def run(quick: bool = False) -> dict:
    from granular.learning.catalog import load_model

    model = load_model("sand3d", "3d")
    repeat = 50 if quick else 500
    return {"wrench_space_3d_4_contacts": wrench_space(model, repeat=repeat),
            "single_foot_3d": foot_step(steps=30 if quick else 300, settle=0.05 if quick else 0.4),
            "quadruped_3d": quadruped(steps=20 if quick else 200, settle=0.02 if quick else 1.5)}


#: Time steps (s) the stability search tries, largest first.
STEPS = (5e-2, 2e-2, 1e-2, 5e-3, 2e-3, 1e-3, 5e-4, 2e-4, 1e-4)
#: The share of the energy the medium takes that it may give back over a run and still count as
#: not gaining energy (round-off aside, the implicit contact gives back none).
RETURNED = 0.01


def trots(path, dt: float, explicit: bool, seconds: float = 4.0, speed: float | None = None) -> dict:
    """One run of the scenario at step ``dt`` (the implicit contact, or 3D-RFT applied explicitly
    with regularisation ``speed``): does it still trot? For ``seconds`` (3 s of gait) the torso
    stays above 0.7 m and within 25° of upright, its speed below 5 m/s and everything finite, and
    the medium gives back at most :data:`RETURNED` of the energy it takes (its work on the bodies,
    step by step, at the velocity MuJoCo integrated)."""
    from granular.data.media import medium
    from granular.scenarios import scenario3d
    from granular.simulation import mujoco3d

    world = scenario3d.build(path, dt=dt)
    m, d = world.mj_model, world.mj_data
    preset = medium(world.feet.model.dataset.medium.removesuffix("3d")) if explicit else None
    given = taken = 0.0
    fell = None
    for _ in range(int(round(seconds / dt))):
        d.ctrl[:] = world.gait(d)
        if explicit:
            work = mujoco3d.explicit_step(m, d, world.feet, world.terrain, preset, speed or mujoco3d.EXPLICIT_SPEED)
        else:
            result, _ = mujoco3d.step(m, d, world.feet, world.terrain, workspace=world.workspace)
            work = 0.0 if result is None else result.work
        given, taken = given + max(work, 0.0), taken - min(work, 0.0)
        if not np.isfinite(d.qvel).all() or d.qpos[2] < 0.7 or d.xmat[1][8] < np.cos(np.radians(25)) \
                or np.abs(d.qvel[:3]).max() > 5.0:
            fell = float(d.time)
            break
    returned = given / taken if taken > 0 else 0.0
    return {"dt_s": dt, "trots": fell is None and returned <= RETURNED, "fell_at_s": fell,
            "energy_given_J": round(given, 3), "energy_taken_J": round(taken, 3), "returned": round(returned, 4)}


def stability(scenario: str = "quad3d-trot", steps=STEPS, speeds=(1e-3, 1e-2, 1e-1), seconds: float = 4.0) -> dict:
    """The largest time step at which the scenario's robot still trots (:func:`trots`) under the
    project's implicit contact, and under 3D-RFT applied explicitly each step
    (:func:`granular.simulation.mujoco3d.explicit_step`) for each regularisation speed in ``speeds``
    (the first is ``explicit_dt_s``): each searched from the largest step down; every run tried is
    in ``runs``."""
    from granular.scenarios import scenario as scenarios

    path = scenarios.find(scenario)
    runs, out = [], {}

    def largest(explicit, speed=None):
        for dt in steps:
            run = trots(path, dt, explicit, seconds, speed)
            runs.append({"contact": f"explicit 3D-RFT, regularised below {speed:g} m/s" if explicit else "implicit",
                         **run})
            if run["trots"]:
                return dt
        return None

    out["implicit_dt_s"] = largest(False)
    by_speed = {f"{v:g}": largest(True, v) for v in speeds}
    out["explicit_dt_s"] = by_speed[f"{speeds[0]:g}"]
    out["explicit_dt_s_by_regularisation_m_s"] = by_speed
    if out["implicit_dt_s"] and out["explicit_dt_s"]:
        out["ratio"] = round(out["implicit_dt_s"] / out["explicit_dt_s"], 1)
    out["runs"] = runs
    return out
