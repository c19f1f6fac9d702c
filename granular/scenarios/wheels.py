"""Wheels as contact bodies: the single-wheel test bed and a planar rover (issue 13; Ding et al. 2013).

A wheel is a round foot (:class:`~granular.contact.detection.FootContact` with ``roll_radius`` = r)
whose W(θ) was learned from a wheel's own data (``granular synth --source wheel``): θ = (d, 0) with
−d its sinkage, F_r at its centre, and the twist of its lowest rim point, whose direction says the
slip (:mod:`granular.data.wheel`). Its frame's origin is its centre. A wheel needs the data-flow
law: it rolls, so it always slides in the sense of eq. 2, and its data are far from associated
flow (under max-dissipation the test bed pulls four times what its data record: docs/wheels.md).

The test bed run in the simulator is :mod:`granular.scenarios.testbed`.
"""
from __future__ import annotations

import numpy as np

from granular.contact.detection import FootContact
from granular.dynamics.multibody import Body, MultiBody
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
