"""granular bench's tables (the timings themselves are measured by `granular bench`, never asserted)."""
import pytest

from granular.apps import bench


def test_a_small_number_is_not_printed_as_zero(capsys):
    """`bench --compliant` printed every law's time step, 0.0002 s, as `dt_s 0.0`."""
    bench.print_table({"compliant_largest_stable_step": {"hertz": {"dt_s": 0.0002, "us_per_step": 31.25,
                                                                    "stable": 0.0}}})
    out = capsys.readouterr().out
    assert "dt_s 0.0002" in out and "us_per_step 31.2" in out and "stable 0.0" in out


def test_the_stages_time_the_data_flow_law():
    """Under data-flow the stages time the sliding feet's solve (`contact_law`), which the
    max-dissipation profile alone did not."""
    out = bench.stages(steps=30, settle=1100, law="data-flow")
    assert {"qp_solve", "contact_law", "whole_step", "rest"} <= set(out) and out["contact_law"] > 0


def test_the_data_flow_floor_is_max_dissipation_plus_the_following_feet_s_coefficients():
    """The floor counts the feet that follow the data (the trot's stance feet slide: some, at most
    four) and adds their coefficients' solves to the max-dissipation step; the batch's ceiling is
    what two workers could do at that floor (sums of timings: no timing is compared)."""
    out = bench.data_flow_floor(steps=50, settle=1100, repeat=20)
    assert 0 < out["following_feet_per_step"] <= 4 and out["coefficients_us_per_foot"] > 0
    assert out["floor_us_per_step_in_one_call"] == pytest.approx(
        out["max_dissipation_us_per_step_in_one_call"] + out["coefficients_us_per_foot"] * out["following_feet_per_step"])
    assert out["batch_ceiling_robot_steps_per_s"] == pytest.approx(2e6 / out["floor_us_per_step_in_one_call"])


def test_the_3d_quadruped_bench_times_the_step_its_compiled_call_and_the_gait_apart():
    """Each law's step, the compiled call within it and the gait controller are timed (no timing is
    compared), and the step's kernel is left as it was."""
    from granular.apps import bench3d
    from granular.simulation import mujoco3d

    kernel = mujoco3d.feet_step
    out = bench3d.quadruped(steps=5, settle=0.05)
    assert set(out) == {"data-flow", "max-dissipation"} and mujoco3d.feet_step is kernel
    for row in out.values():
        assert set(row) == {"us_per_step", "mean_us_per_step", "compiled_call_us", "gait_us_per_call"}
        assert all(v > 0 for v in row.values())
