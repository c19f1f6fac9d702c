"""The MuJoCo coupling's splitting (granular.simulation.mujoco3d): the law sees the dynamics MuJoCo
integrates, under Euler and implicitfast, so the medium never gives energy, even at large steps."""
import mujoco
import numpy as np
import pytest

from granular.errors import GranularError
from granular.scenarios import scenario3d
from granular.simulation import mujoco3d

from test_sim3d import stranger


def _gait_steps(world, n):
    m, d = world.mj_model, world.mj_data
    for _ in range(n):
        if world.gait is not None:
            d.ctrl[:] = world.gait(d)
        yield mujoco3d.step(m, d, world.feet, world.terrain)[0]


@pytest.mark.parametrize("where, dt", [pytest.param("quad3d-trot", 5e-3, marks=pytest.mark.slow), ("stranger", 2e-3)])
def test_the_law_predicts_the_velocity_mujoco_integrates(tmp_path, where, dt):
    """quad3d-trot: implicitfast with stiff servos; the stranger: Euler with joint damping."""
    path = stranger(tmp_path) if where == "stranger" else f"sim/{where}.toml"
    world = scenario3d.build(path)
    world.mj_model.opt.timestep = dt
    checked = 0
    for result in _gait_steps(world, int(2.0 / dt)):
        d = world.mj_data
        if result is None or d.nefc:  # MuJoCo's own constraints act on top of the law's velocity
            continue
        assert np.abs(d.qvel - result.v).max() <= 1e-8 * (1 + np.abs(d.qvel).max())
        checked += 1
    assert checked > 100


def test_the_effective_mass_is_mujocos_including_clamped_servos():
    world = scenario3d.build("sim/quad3d-trot.toml")
    m, d = world.mj_model, world.mj_data
    for ctrl in (np.zeros(m.nu), np.full(m.nu, 1.0)):   # the second far from the joints: every servo clamped
        d.ctrl[:] = ctrl
        mujoco.mj_forward(m, d)
        M = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, M)
        ours = mujoco3d.effective_mass(m, d, M)
        mujoco.mj_step(m, d)   # MuJoCo's implicitfast fills qDeriv from the same state
        deriv = np.zeros((m.nv, m.nv))
        mujoco.mju_sparse2dense(deriv, d.qDeriv, m.D_rownnz, m.D_rowadr, m.D_colind)
        assert ours == pytest.approx(M - m.opt.timestep * deriv, abs=1e-9)
    assert np.abs(d.actuator_force).min() > 0   # the clamped servos pushed


@pytest.mark.slow
def test_the_medium_gives_no_energy_at_a_20_ms_step_where_explicit_rft_does_at_10():
    from granular.apps.bench3d import trots

    implicit = trots("sim/quad3d-trot.toml", 2e-2, explicit=False)
    assert implicit["trots"] and implicit["energy_given_J"] <= 1e-9 * implicit["energy_taken_J"]
    explicit = trots("sim/quad3d-trot.toml", 1e-2, explicit=True)
    assert not explicit["trots"] and explicit["returned"] > 0.01


def test_integrators_other_than_euler_and_implicitfast_are_refused(tmp_path):
    path = stranger(tmp_path)
    xml = (tmp_path / "robot.xml").read_text().replace('<option timestep="0.002"/>',
                                                       '<option timestep="0.002" integrator="RK4"/>')
    (tmp_path / "robot.xml").write_text(xml)
    with pytest.raises(GranularError, match="rk4 integrator is not supported.*implicitfast"):
        scenario3d.build(path)
