"""Benchmarks of the real code paths (``granular bench``); speed targets live here, not in tests.

Each entry is the median over repeated calls or steps, after warm-up, in
microseconds. Scenes run the real scenario loop (controller + step) of a
scenario from sim/; the reference is the cvxpy formulation with exact hulls.
"""
from __future__ import annotations

import time

import numpy as np


def median_us(fn, repeat: int, warmup: int = 20) -> float:
    for _ in range(warmup):
        fn()
    times = np.empty(repeat)
    for i in range(repeat):
        t0 = time.perf_counter()
        fn()
        times[i] = time.perf_counter() - t0
    return float(np.median(times) * 1e6)


def wrench_space(model, contacts: int = 4, repeat: int = 500, seed: int = 0) -> dict:
    """W(θ) as half-spaces for ``contacts`` configurations in one call, per representation."""
    rng = np.random.default_rng(seed)
    thetas = np.column_stack([rng.uniform(model.d_min, 0.0, contacts) * 0.9,
                              rng.uniform(-model.phi_max, model.phi_max, contacts)])
    out = {"exact": {"us_per_call": median_us(lambda: model.halfspaces(thetas), repeat)}}
    for K in (16, 32, 64):
        A = model.fixed_normals(K)
        out[f"fixed-{K}"] = {"us_per_call": median_us(lambda: model.offsets(A, thetas), repeat)}
    out["points_only"] = {"us_per_call": median_us(lambda: model.points(thetas), repeat)}
    return out


#: The law the controller's profile runs under; the fused calls and the stages run under both
#: :data:`QP_LAWS` (data-flow adds the sliding feet's Newton solve: the stages' ``contact_law``).
PROFILED_LAW = "max-dissipation"
QP_LAWS = ("max-dissipation", "data-flow")


def controller(scenario: str = "quad-trot", repeat: int = 2000, settle: int = 1100) -> dict:
    """The scenario's controller alone (a quadruped's gait and joint PD), called at the state it
    reaches after ``settle`` steps, at advancing times."""
    from granular.scenarios import scenario as scenarios

    sim = scenarios.build(scenarios.load(scenario).with_(contact=PROFILED_LAW))
    sim.advance(settle)
    state, clock = sim.state, iter(range(10**9))
    return {"us_per_call": median_us(lambda: sim.controller(state.t + 1e-3 * next(clock), state.q, state.v,
                                                            sim.memory), repeat)}


def fused_call(scenario: str = "quad-trot", steps: int = 2000, settle: int = 1100, repeat: int = 5,
               law: str = PROFILED_LAW) -> dict:
    """µs per step where many steps run in one fused call (``advance(steps)``, no callback between
    steps: a batch worker's or an RL environment's control period), against one call per step (the
    loop with a callback after each step), after ``settle`` steps; medians over ``repeat`` runs."""
    from granular.scenarios import scenario as scenarios

    def per_step(calls):
        sim = scenarios.build(scenarios.load(scenario).with_(contact=law))
        sim.advance(settle)
        t0 = time.perf_counter()
        for n in calls:
            sim.advance(n)
        return (time.perf_counter() - t0) / steps * 1e6

    return {"us_per_step_in_one_call": float(np.median([per_step([steps]) for _ in range(repeat)])),
            "us_per_step_one_call_each": float(np.median([per_step([1] * steps) for _ in range(repeat)]))}


def data_flow_floor(scenario: str = "quad-trot", steps: int = 1000, settle: int = 1100, repeat: int = 2000,
                    workers: int = 2) -> dict:
    """What a data-flow step cannot go below with the law as it is computed today, measured: the
    max-dissipation step it starts from (fused, many steps in one call: which feet stick is its QP's
    answer) plus, per foot that follows the data, its interpolant's coefficients (a Schur solve per
    foot and step, since the tail changes with θ: :func:`~granular.wrench.flow.coefficients`), before
    any of Newton's evaluations; that floor at one call per step (plus max-dissipation's crossing from
    Python); and the ``workers``-process batch's robot-steps/s it allows even with no cost of its
    own. The feet that follow the data are counted along ``steps`` steps
    after ``settle``; the coefficients are timed four at a time, at the first four such feet's
    configurations (cycled where fewer; the quadruped's feet are alike, so foot 0's arm serves)."""
    from granular.contact.flow import flow_coefficients
    from granular.scenarios import scenario as scenarios
    from granular.wrench.flow import TAILS

    sim = scenarios.build(scenarios.load(scenario).with_(contact="data-flow"))
    sim.advance(settle)
    wrenches, follow, thetas = sim.model.wrenches, 0, []
    for _ in range(steps):
        sim.advance(1)
        info = sim.info
        slides = info.active & info.slipping & (np.abs(info.theta[:, 1]) <= wrenches.phi_max)
        follow += int(slides.sum())
        thetas.extend(info.theta[slides])
    dmap = wrenches.direction_map
    thetas = np.ascontiguousarray(np.resize(np.array(thetas).reshape(-1, 2), (4, 2)))
    points = np.ascontiguousarray(wrenches.points(thetas))
    arms = np.full(4, float(sim.model.feet.r_offset[0]))
    per_foot = median_us(lambda: flow_coefficients(points, dmap.kernel_inverse, dmap.directions, dmap.geometry,
                                                   TAILS[dmap.tail], thetas, arms), repeat) / 4
    md = fused_call(scenario, steps=steps, settle=settle, law="max-dissipation")
    floor = md["us_per_step_in_one_call"] + per_foot * follow / steps
    crossing = md["us_per_step_one_call_each"] - md["us_per_step_in_one_call"]
    return {"max_dissipation_us_per_step_in_one_call": md["us_per_step_in_one_call"],
            "following_feet_per_step": follow / steps, "coefficients_us_per_foot": per_foot,
            "floor_us_per_step_in_one_call": floor, "floor_us_per_step_one_call_each": floor + crossing,
            "batch_ceiling_robot_steps_per_s": workers * 1e6 / floor}


#: Scenarios whose controllers carry integrals through the fused call (a PI or PID servo).
SERVOED = ("wheel-bed", "foot-track-straight", "foot-track-curved", "foot-track-rig")


def servoed(scenario: str, steps: int = 1000, settle: int = 1500) -> dict:
    """µs per step of a scenario under its own law, its ``steps`` in one fused call against the
    same steps by stages, after ``settle`` steps (the foot in the medium, the wheel rolling)."""
    from granular.scenarios import scenario as scenarios

    def per_step(fused):
        sim = scenarios.build(scenarios.load(scenario).with_(solver="native"))
        sim.advance(settle)
        t0 = time.perf_counter()
        if fused:
            sim.advance(steps)
        else:
            for _ in range(steps):
                sim._stage_step()
        return (time.perf_counter() - t0) / steps * 1e6

    return {"us_per_step_fused": per_step(True), "us_per_step_by_stages": per_step(False)}


def stages(scenario: str = "quad-trot", steps: int = 2000, settle: int = 1100, law: str = PROFILED_LAW) -> dict:
    """Where a step's time goes. Along ``steps`` steps of the scenario after ``settle``, each state
    is first stepped as the loop steps it (controller + step, timed: ``whole_step``), then each stage
    of :func:`~granular.simulation.step.step` is called once more on that state's own inputs, timed
    alone; ``contact_law`` is what the law adds to the QP's impulses (the grain term's check, which
    feet slip, and under data-flow the sliding feet's Newton solve). Medians in µs; ``rest`` is the
    whole step less the stages: the Python between them (the step's arrays, the next state)."""
    from granular.contact.detection import detect
    from granular.scenarios import scenario as scenarios
    from granular.simulation.step import _learned, contact_qp, step, wrench_spaces

    sim = scenarios.build(scenarios.load(scenario).with_(contact=law))
    sim.advance(settle)
    model, solver, mb = sim.model, sim.solver, sim.model.multibody
    names = ("controller", "kinematics_and_detection", "dynamics", "wrench_spaces", "qp_assembly", "qp_solve",
             "contact_law", "whole_step")
    times = np.zeros((steps, len(names)))
    clock = time.perf_counter
    for i in range(steps):
        state, memory = sim.state, sim.memory
        t0 = clock()
        u, _ = sim.controller(state.t, state.q, state.v, memory)
        step(model, state, u, solver)
        times[i, 7] = clock() - t0
        t0 = clock()
        sim.controller(state.t, state.q, state.v, memory)
        t1 = clock()
        body = mb.frames(state.q)
        frames = detect(mb, model.feet, model.terrain, body)
        t2 = clock()
        M, k = mb.dynamics(state.q, state.v, body)
        t3 = clock()
        on = np.flatnonzero(frames.active)
        A, b, rows, points = wrench_spaces(model, frames.theta[on])
        t4 = clock()
        qp = contact_qp(model, state, u, frames, on, M, k, A, b, rows)
        qp.reduced  # formed lazily, on the solver's first use
        t5 = clock()
        if len(on):
            solver.solve(qp)
        t6 = clock()
        if len(on):
            _learned(model, qp, frames, on, points, state, solver, i)
        t7 = clock()
        times[i, :7] = np.diff([t0, t1, t2, t3, t4, t5, t6, t7])
        times[i, 6] -= times[i, 5]  # _learned solves the QP again
        sim.advance(1)
    out = {name: float(t) for name, t in zip(names, np.median(times, axis=0) * 1e6)}
    out["rest"] = out["whole_step"] - sum(out[name] for name in names[:7])
    return out


REFERENCE = "cvxpy/exact"
#: The path every step took before the fused step (issue 12): stage by stage, DAQP.
TODAY = "daqp/fixed"
CONFIGS = ("native/fixed", "daqp/fixed", "native/fixed/data-flow", "daqp/fixed/data-flow", "daqp/exact", "quadprog/fixed", "quadprog/exact", "osqp/fixed",
           "osqp/exact", "cvxpy/fixed", "cvxpy/exact")


def scene_steps(scenario: str, solver: str, representation: str, steps: int, warmup: int,
                contact: str = "max-dissipation") -> np.ndarray:
    """Wall time (s) of each simulation step (controller + step) of a scenario, after warm-up."""
    from granular.scenarios import scenario as scenarios
    from granular.simulation.simulation import StepTimer

    sim = scenarios.build(scenarios.load(scenario).with_(solver=solver, representation=representation,
                                                                      contact=contact))
    timer = StepTimer(steps, warmup)
    sim.rollout(warmup + steps, [timer])
    return timer.times


#: The paper's time per frame for its 13-body quadruped (MATLAB, i7 2.4 GHz), §IV-C4.
PAPER_S_PER_FRAME = 0.343


def scene(scenario: str, steps: int, warmup: int, configs=CONFIGS, paper: bool = False) -> dict:
    """Median µs per step for each solver/representation[/contact law], the speed-up over the
    reference and over today's path (:data:`TODAY`) and, with ``paper``, over the paper's 0.343 s
    per frame. ``native/fixed`` is the fused step where the scene's controller allows it."""
    out = {}
    for config in configs:
        solver, representation, *law = config.split("/")
        times = scene_steps(scenario, solver, representation, steps, warmup, *law)
        out[config] = {"us_per_step": float(np.median(times) * 1e6), "mean_us_per_step": float(np.mean(times) * 1e6)}
    ref, today = out[REFERENCE]["us_per_step"], out[TODAY]["us_per_step"]
    for row in out.values():
        row["speedup_vs_reference"] = ref / row["us_per_step"]
        row["speedup_vs_today"] = today / row["us_per_step"]
        if paper:
            row["speedup_vs_paper"] = PAPER_S_PER_FRAME * 1e6 / row["us_per_step"]
    return out


def centipede(n_legs: int, wrenches, spacing: float = 0.3):
    """A scaling test scene: a bar (30 kg per leg) on ``n_legs`` planar RoboSimian legs (thigh,
    shank, foot), joints held by PD: 1 + 3n bodies, n contacts, 3n + 3 coordinates."""
    from granular.contact.detection import FootContact
    from granular.dynamics.multibody import Body, MultiBody
    from granular.simulation.step import SimModel, State
    from granular.dynamics.terrain import flat

    foot = wrenches.dataset.foot
    width = spacing * (n_legs - 1)
    bodies = [Body("bar", 30.0 * n_legs, 30.0 * n_legs * max(width, 0.3) ** 2 / 12)]
    for i in range(n_legs):
        bodies += [Body(f"thigh_{i}", 8.587, 0.132, com=(0.0, -0.215), parent="bar", joint=(spacing * i - width / 2, 0.0)),
                   Body(f"shank_{i}", 5.386, 0.083, com=(0.0, -0.215), parent=f"thigh_{i}", joint=(0.0, -0.43)),
                   Body(f"foot_{i}", 4.677, 0.0388, com=(0.0, -foot.length / 2), parent=f"shank_{i}",
                        joint=(0.0, -0.43))]
    contacts = tuple(FootContact(f"foot_{i}", 3 * i + 3, p_center=(0.0, -foot.length), foot=foot,
                                 grain_mass=(9.354, 9.354, 0.0776)) for i in range(n_legs))
    model = SimModel(MultiBody(tuple(bodies)), contacts, flat(), wrenches)
    q = np.zeros(model.multibody.ndof)
    q[1] = 0.86 + foot.length
    return model, State(0.0, q, np.zeros_like(q))


class _HoldJoints:
    """PD holding every joint of a centipede at zero."""

    def initial_memory(self):
        return None

    def __call__(self, t, q, v, memory):
        u = np.zeros(len(q))
        u[3:] = -2000.0 * q[3:] - 50.0 * v[3:]
        return u, memory


def scaling(solver: str = "daqp", feet=(1, 4, 16, 64, 256), steps: int = 300, warmup: int = 300) -> dict:
    """Median µs per step of :func:`centipede` scenes against the number of feet (contacts) and bodies."""
    from granular.contact.solvers import make_solver
    from granular.learning.catalog import load_model
    from granular.simulation.simulation import Simulation, StepTimer

    wrenches = load_model("sand")
    out = {}
    for n in feet:
        model, state = centipede(n, wrenches)
        timer = StepTimer(steps, warmup)
        Simulation(model, state, _HoldJoints(), make_solver(solver)).rollout(warmup + steps, [timer])
        out[str(n)] = {"us_per_step": float(np.median(timer.times) * 1e6), "contacts": n, "bodies": 3 * n + 1}
    return out


#: Time steps tried for the compliant laws, largest first (s).
STEPS_TRIED = (5e-3, 2e-3, 1e-3, 5e-4, 2e-4, 1e-4, 5e-5, 2e-5, 1e-5)


def contact_energy(sim) -> tuple[float, float]:
    """(the bodies' energy plus the elastic energy a compliant law stores, that elastic energy), J."""
    from granular.contact.compliant import elastic_energy

    E = sim.model.multibody.energy(sim.state.q, sim.state.v)
    law, elastic = sim.model.compliant, 0.0
    if law is not None and sim.info is not None and sim.info.active.any():
        on = sim.info.active
        elastic = float(elastic_energy(law, sim.info.theta[on], sim.model.feet.r_offset[on]).sum())
    return E + elastic, elastic


def stable(scenario: str, law: str, dt: float, tolerance: float = 0.01) -> tuple[bool, float, float]:
    """(stable, energy gain, µs per step) of ``scenario`` under ``law`` at ``dt``. Nothing drives a
    dropped foot, so its energy (:func:`contact_energy`) may only fall; the gain is the largest rise
    above the initial energy, relative to the largest elastic energy the contact stores (for the QP's
    laws, which store none, to the energy lost), and the run is stable if it stays finite with a
    gain ≤ ``tolerance``."""
    from granular.scenarios import scenario as scenarios

    spec = scenarios.load(scenario).with_(contact=law, dt=dt)
    sim = scenarios.build(spec)
    energy = [contact_energy(sim)]
    t0 = time.perf_counter()
    sim.rollout(scenarios.check_size(spec), [lambda s: energy.append(contact_energy(s))])
    us = (time.perf_counter() - t0) / (len(energy) - 1) * 1e6
    E, elastic = np.array(energy).T
    scale = elastic.max() if elastic.max() > 0 else E[0] - E.min()
    gain = float((E.max() - E[0]) / max(scale, 1e-12)) if np.isfinite(E).all() else float("inf")
    return gain <= tolerance, gain, us


def compliant(scenario: str = "drop-upright") -> dict:
    """Per compliant law: the largest stable time step on ``scenario`` (the first of
    :data:`STEPS_TRIED` that :func:`stable` accepts, else the smallest tried, marked unstable), the
    µs per step there (with the energy bookkeeping, a few µs) and the wall time per simulated second;
    max-dissipation at the scenario's own step beside them."""
    from granular.contact.compliant import LAWS
    from granular.scenarios import scenario as scenarios

    spec = scenarios.load(scenario)

    def row(law, dt):
        ok, gain, us = stable(scenario, law, dt)
        return ok, {"stable": float(ok), "dt_s": dt, "energy_gain": gain, "us_per_step": us,
                    "s_per_simulated_s": us * 1e-6 / dt}

    out = {"max-dissipation": row("max-dissipation", spec.dt)[1]}
    for law in LAWS:
        for dt in STEPS_TRIED:
            ok, out[law] = row(law, dt)
            if ok:
                break
    return out


def run(quick: bool = False) -> dict:
    from granular.learning.catalog import load_model

    model = load_model("sand")
    repeat = 50 if quick else 500
    steps = 100 if quick else 1000
    # --quick: a check that every path runs, not a measurement (the quadruped not yet trotting)
    return {"single_foot": scene("drop-upright", steps=steps, warmup=100 if quick else 300),
            "quadruped": scene("quad-trot", steps=steps, warmup=100 if quick else 1100, paper=True),
            "wrench_space_4_contacts": wrench_space(model, repeat=repeat),
            "gait_controller": {"quad-trot": controller(repeat=4 * repeat)},
            "fused": {f"quad-trot, {law}": fused_call(steps=4 * repeat, law=law) for law in QP_LAWS},
            "stages_us": {f"quad-trot, {law}": stages(steps=4 * repeat, law=law) for law in QP_LAWS},
            "servoed": {name: servoed(name, steps=steps, settle=100 if quick else 1500) for name in SERVOED},
            "data_flow_floor": {"quad-trot": data_flow_floor(steps=steps, settle=100 if quick else 1100,
                                                             repeat=repeat)}}


def print_table(results: dict):
    for name, rows in results.items():
        print(f"{name}:")
        for config, row in rows.items():
            if not isinstance(row, (dict, list)):   # a figure of its own (the stability search's)
                print(f"  {config:<24}  {cell(row)}")
                continue
            for item in (row if isinstance(row, list) else [row]):
                cells = "".join(f"  {k} {cell(v)}" for k, v in item.items())
                print(f"  {config:<24}{cells}")
    print(f"(speed-ups against {REFERENCE}, measured in the same run)")


def cell(v) -> str:
    """A table's cell: a number as :func:`number` writes it, anything else as it is."""
    return number(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)


def number(v: float) -> str:
    """A table's number: one decimal, or three significant digits where that would print 0.0 (a
    time step of 0.0002 s)."""
    return f"{v:,.1f}" if v == 0 or abs(v) >= 0.1 else f"{v:.3g}"


def batch(sizes=(1, 16, 256, 1024), steps: int = 100, workers: int | None = None, seed: int = 0) -> dict:
    """Simulator throughput of the quadruped vector environment (quad-trot on sand and pebbles,
    random joint targets): robot-steps (robots × 1 ms simulator steps) per second for each batch
    size, against 16 robots stepped one after another in this process by the stage-by-stage step
    with DAQP (today's path), measured in the same run. Every size runs the same ``steps`` env steps (1 s of simulated time at the 10 ms
    control period), so each robot goes through the same phases of its episodes (standing is
    cheaper than falling); the first env step (process start, kernels loaded) is not timed. The
    sizes run the environment's default law (data-flow); a last row runs 256 robots under the
    paper's max-dissipation, for comparison."""
    from granular.apps.vector import QuadrupedVectorEnv

    def rate(n, workers, solver=None, contact=None):
        env = QuadrupedVectorEnv(n, workers=workers, solver=solver, contact=contact)
        try:
            rng = np.random.default_rng(seed)
            env.reset(seed=seed)
            env.step(rng.uniform(-1, 1, env.action_space.shape))
            start = time.perf_counter()
            for _ in range(steps):
                env.step(rng.uniform(-1, 1, env.action_space.shape))
            return n * env.substeps * steps / (time.perf_counter() - start), env.workers
        finally:
            env.close()

    def plural(k, word):
        return f"{k} {word}{'s' if k > 1 else ''}"

    base, _ = rate(16, 0, solver="daqp", contact="max-dissipation")
    rows = {"16 robots, in-process, daqp by stages, max-dissipation (today's path)": {"robot_steps_per_s": base, "ratio": 1.0}}
    for n in sizes:
        r, used = rate(n, workers)
        rows[f"{plural(n, 'robot')}, {plural(used, 'worker')}"] = {"robot_steps_per_s": r, "ratio": r / base}
    r, used = rate(256, workers, contact="max-dissipation")
    rows[f"256 robots, {plural(used, 'worker')}, max-dissipation"] = {"robot_steps_per_s": r, "ratio": r / base}
    return rows
