"""granular bench's tables (the timings themselves are measured by `granular bench`, never asserted)."""
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
