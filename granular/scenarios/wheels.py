"""Wheels as contact bodies: the single-wheel test bed and a planar rover (issue 13; Ding et al. 2013).

A wheel is a round foot (:class:`~granular.contact.detection.FootContact` with ``roll_radius`` = r)
whose W(θ) was learned from a wheel's own data (``granular synth --source wheel``): θ = (d, 0) with
−d its sinkage, F_r at its centre, and the twist of its lowest rim point, whose direction says the
slip (:mod:`granular.data.wheel`). Its frame's origin is its centre. A wheel needs the data-flow
law: it rolls, so it always slides in the sense of eq. 2, and its data are far from associated
flow (under max-dissipation the test bed pulls four times what its data record: docs/wheels.md).

The test bed (Ding et al. 2013, §4: a carriage at constant speed, the wheel driven at a set slip,
free to sink) reads drawbar pull, driving torque and sinkage off the contact wrench at steady state.
"""
from __future__ import annotations

import numpy as np

from granular.contact.detection import FootContact
from granular.dynamics.multibody import GRAVITY, Body, MultiBody
from granular.errors import GranularError


def is_wheel(dataset) -> bool:
    """Whether a dataset was recorded for a wheel (``granular synth --source wheel``) rather than a foot."""
    return dataset.provenance.get("body") == "wheel"


def _contact(name, body, foot):
    return FootContact(name, body, p_center=(0.0, 0.0), axis=(0.0, 1.0), foot=foot, grain_mass=(0.0, 0.0, 0.0),
                       roll_radius=foot.radius)


def single(mass, inertia, foot):
    """One free wheel of the dataset's geometry (``foot``: radius r, width as length); its inertia
    defaults to a disc's, m r² / 2."""
    inertia = 0.5 * mass * foot.radius**2 if inertia is None else inertia
    mb = MultiBody((Body("wheel", mass, inertia),))
    return mb, (_contact("wheel", 0, foot),)


def rover(mass, inertia, wheels, wheelbase, axle_height, wheel_mass, foot):
    """A chassis (the base, frame at its centre of mass) with ``wheels`` axles spread evenly over
    ``wheelbase`` (m) at ``axle_height`` (m, negative: below), each a driven revolute joint. The
    planar model lumps each axle's left and right wheels into one, of the dataset's width."""
    if wheels < 2:
        raise GranularError(f"a rover needs at least 2 wheels, got {wheels}")
    xs = np.linspace(-wheelbase / 2, wheelbase / 2, wheels)
    bodies = [Body("chassis", mass, inertia)]
    bodies += [Body(f"wheel_{i + 1}", wheel_mass, 0.5 * wheel_mass * foot.radius**2, parent="chassis",
                    joint=(float(x), axle_height)) for i, x in enumerate(xs)]
    mb = MultiBody(tuple(bodies))
    return mb, tuple(_contact(f"wheel_{i + 1}", i + 1, foot) for i in range(wheels))


def steady_state(t, v, theta, wrench, active, radius, settle: float) -> dict:
    """Steady-state figures of a test-bed run (after ``settle`` s): the slip measured,
    1 − v_x / (−ω r), and the soil's drawbar pull (f_x), load (f_z), driving torque (τ: the soil's
    torque on the wheel, resisting a forward drive) and sinkage (−d), averaged."""
    late = (t >= settle) & active
    if late.sum() < 10:
        raise GranularError("the wheel was not in the soil long enough to read the test bed (lengthen the run)")
    speed, rim = v[late, 0], -v[late, 2] * radius
    return {"slip": float(1.0 - speed.mean() / rim.mean()),
            "drawbar_pull_n": float(wrench[late, 0].mean()), "load_n": float(wrench[late, 1].mean()),
            "torque_nm": float(wrench[late, 2].mean()), "sinkage_m": float(-theta[late, 0].mean())}


def simulate_bed(scenario, slips, settle: float = 1.0, progress: bool = False) -> dict:
    """The test bed run in the simulator at each slip (the scenario's [control] slip replaced):
    :func:`steady_state` per slip, as arrays."""
    from tqdm import tqdm

    from granular.scenarios import scenario as scenarios

    rows = []
    for slip in tqdm(slips, desc="test bed", disable=None if progress else True):
        control = {k: v for k, v in scenario.control.items() if k != "torque"}  # the slip is set here
        spec = scenario.with_(control={**control, "slip": float(slip)})
        steps = scenarios.check_size(spec)
        sim = scenarios.build(spec)
        t, v, theta = np.empty(steps), np.empty((steps, 3)), np.empty((steps, 2))
        wrench, active = np.empty((steps, 3)), np.empty(steps, dtype=bool)

        def record(s):
            i = s.steps - 1
            t[i], v[i], theta[i] = s.state.t, s.state.v[:3], s.info.theta[0]
            wrench[i], active[i] = s.info.wrench[0], s.info.active[0]

        sim.rollout(steps, [record])
        rows.append(steady_state(t, v, theta, wrench, active, sim.model.contacts[0].roll_radius, settle))
    return {key: np.array([r[key] for r in rows]) for key in rows[0]}


def bed_reference(scenario):
    """The wheel and ground a test-bed scenario's medium was synthesised from (a Table 6 soil or an
    RFT medium), carrying the scenario's wheel's weight: the reference its simulation is compared with."""
    from dataclasses import fields

    from granular.data import rft
    from granular.data.terramechanics import Soil
    from granular.data.wheel import RFTGround, Wheel
    from granular.learning.catalog import load_model
    from granular.scenarios import scenario as scenarios

    spec = scenarios.checked(scenario)
    ds = load_model(spec.medium).dataset
    prov = ds.provenance
    if is_wheel(ds) and all(f"soil_{f.name}" in prov for f in fields(Soil)):
        ground = Soil(**{f.name: float(prov[f"soil_{f.name}"]) for f in fields(Soil)})
    elif is_wheel(ds) and "zeta" in prov:
        ground = RFTGround(float(prov["zeta"]), rft.with_drag(rft.GENERIC, float(prov.get("drag", 1.0))))
    else:
        raise GranularError(f"{scenario.where}: medium {spec.medium!r} is not a synthesised wheel "
                            "(granular synth --source wheel): no reference to compare with")
    if not isinstance(spec.robot, scenarios.WheelRobot):
        raise GranularError(f"{scenario.where}: the test bed needs robot kind 'wheel'")
    return Wheel(ds.foot.radius, ds.foot.length, spec.robot.mass * GRAVITY), ground


def slips(rec, last: float | None = None) -> np.ndarray:
    """Per wheel of a recorded run, its mean slip while in the soil and turning: 1 − v_t / (−ω r),
    with v_t its centre's velocity along the surface beneath it (0: rolling, 1: spinning in place);
    over the whole run, or its ``last`` seconds (NaN where the wheel did not turn in the soil)."""
    mb, feet = rec.model.multibody, rec.model.contacts
    # after each step, as theta and active
    com, _, com_v, omega = map(np.array, zip(*(mb.com_states(q, v) for q, v in zip(rec.q[1:], rec.v[1:]))))
    late = rec.t[1:] > rec.t[-1] - last if last is not None else np.ones(len(rec.t) - 1, dtype=bool)
    out = np.full(len(feet), np.nan)
    for i, foot in enumerate(feet):
        n = rec.model.terrain.normal(com[:, foot.body, 0])
        along = com_v[:, foot.body, 0] * n[:, 1] - com_v[:, foot.body, 1] * n[:, 0]
        rim = -omega[:, foot.body] * foot.roll_radius
        turning = rec.active[:, i] & (np.abs(rim) > 1e-3) & late
        if turning.any():
            out[i] = float(np.mean(1.0 - along[turning] / rim[turning]))
    return out
