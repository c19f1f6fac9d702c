"""The single-wheel test bed in the simulator (issue 13; Ding et al. 2013, §4): a carriage at constant
speed, the wheel (:mod:`granular.scenarios.wheels`) driven at a set slip, free to sink; drawbar pull,
driving torque and sinkage read off the contact wrench at steady state, and the wheel model its
medium was synthesised from as the reference (``granular wheel --simulate``).
"""
from __future__ import annotations

import numpy as np

from granular.dynamics.multibody import GRAVITY
from granular.errors import GranularError
from granular.scenarios import scenario as scenarios
from granular.scenarios.wheels import is_wheel


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
