"""The single-wheel terramechanics reference (issue 13.1)."""
import numpy as np
import pytest

from granular.data import wheel
from granular.data.terramechanics import soil
from granular.errors import GranularError

SAND = soil("dry-sand")


def test_drawbar_pull_is_compaction_resistance_at_zero_slip_and_grows_with_slip():
    sweep = wheel.slip_sweep(wheel.Wheel(), SAND, np.linspace(0, 0.8, 17))
    assert sweep["drawbar_pull_n"][0] <= 0
    assert (np.diff(sweep["drawbar_pull_n"]) > 0).all()
    assert (np.diff(sweep["torque_nm"]) > 0).all()


def test_the_soil_carries_the_load_and_a_heavier_wheel_sinks_deeper():
    w = wheel.Wheel(load=150.0)
    z = wheel.sinkage(w, SAND, 0.2)
    assert wheel.forces(w, SAND, z, 0.2)[0] == pytest.approx(150.0, rel=1e-6)
    assert wheel.sinkage(wheel.Wheel(load=300.0), SAND, 0.2) > z


def test_normal_force_agrees_with_the_papers_closed_form():
    # Ding et al. 2013 eq. 25 with linearised stresses, θ₂ = 0: F_N = r b (A σ_m + B τ_m); their Fig. 11
    # puts the linearisation within 17.5 % of the integral
    w, z, s = wheel.Wheel(0.05, 0.08, 1.0), 0.01, 0.0
    t1 = np.arccos(1 - z / w.radius)
    tm = (wheel.C1 + wheel.C2 * s) * t1
    sm, taum = wheel.stresses(w, SAND, z, s, np.array([tm]))
    A = (np.cos(tm) - 1) / tm + (np.cos(tm) - np.cos(t1)) / (t1 - tm)
    B = np.sin(tm) / tm + (np.sin(tm) - np.sin(t1)) / (t1 - tm)
    closed = w.radius * w.width * (A * sm[0] + B * taum[0])
    assert wheel.forces(w, SAND, z, s)[0] == pytest.approx(closed, rel=0.2)


def test_bad_wheels_and_loads_are_clear_errors():
    with pytest.raises(GranularError, match="radius"):
        wheel.Wheel(radius=-1)
    with pytest.raises(GranularError, match="past the axle"):
        wheel.sinkage(wheel.Wheel(load=1e6), SAND, 0.1)
    with pytest.raises(GranularError, match="slips"):
        wheel.slip_sweep(wheel.Wheel(), SAND, [1.5])
