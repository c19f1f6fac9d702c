"""What the user of a run should hear: a warning where something is wrong, saying what to change,
and otherwise at most a note at ``-v``.

A shipped scenario on its shipped medium says nothing: its feet may leave the data (a rigid floor's
data are a film 10 µm thick; a trotting foot may sink a little past its medium's deepest row), and W
is then extrapolated in proportion to depth, as designed. It warns when a foot goes far past the
data, where that law is a guess, and when a law is run at a step it is known to be unstable at.
"""
from __future__ import annotations

import logging

log = logging.getLogger(__name__)

#: Undamped Hertz conserves energy only to the symplectic step's error: above this step (s) a dropped
#: foot gains energy (``granular bench --compliant``; docs/accuracy.md, "Compliant contact models").
HERTZ_MAX_STEP = 2e-4
#: How far past its deepest data a foot may go before the depth law is a guess: a factor of the data's
#: depth, and an absolute margin (m) for data a film thick (the rigid floor's).
DEPTH_FACTOR, DEPTH_MARGIN = 1.5, 1e-3


def before(scenario):
    """Warn, before any work, of a contact law run at a step it is unstable at."""
    if scenario.contact == "hertz" and scenario.dt > HERTZ_MAX_STEP * (1 + 1e-9):
        log.warning("undamped hertz contact gains energy at a step of %g s (the feet bounce higher each time): "
                    "give --dt %g or less, or a damped law (--contact hunt-crossley, flores, …)",
                    scenario.dt, HERTZ_MAX_STEP)


def after(rec, summary: dict):
    """Warn of a foot far past its medium's data; note (at -v) a foot that left the data at all."""
    from granular.contact.compliant import LAWS

    if summary["contact"] in LAWS:  # a penalty law does not use the data's W
        return
    model = rec.model.wrenches
    feet = summary["feet"]
    deepest = max(feet, key=lambda name: feet[name]["max_depth_m"], default=None)
    if deepest is None:
        return
    depth, d_min = feet[deepest]["max_depth_m"], float(model.d_min)
    if d_min < 0 and depth > DEPTH_FACTOR * -d_min + DEPTH_MARGIN:
        log.warning("%s went %.3f m deep, %.3g× the deepest data of %r (%.3g m), where W is extrapolated in "
                    "proportion to depth: give the medium data that deep (granular synth or acquire dem with "
                    "--depths=…, then granular train) or make the robot sink less (a lighter body, larger feet)",
                    deepest, depth, depth / -d_min, rec.medium, -d_min)
    outside = {name: f["outside_data_s"] for name, f in feet.items() if f["outside_data_s"] > 0}
    if outside:
        log.debug("outside the %r data (W extrapolated in depth, clamped in tilt): %s", rec.medium,
                  ", ".join(f"{name} {s:.3f} s" for name, s in outside.items()))
