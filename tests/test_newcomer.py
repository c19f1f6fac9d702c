"""A newcomer's friction (issue 47): what the README's commands print and where, the warnings a
shipped setup gives (none), the names outputs and inputs may take, and figures that read right.

The commands run in-process (``granular.apps.cli.main``), their streams captured."""
import itertools
import json
import logging
import subprocess
import sys

import h5py
import numpy as np
import pytest

from granular.apps.cli import main
from granular.io.resources import shipped

from test_bad_input import refused


def run(capsys, *args):
    """``granular ARGS`` in-process: (exit status, stdout, stderr)."""
    try:
        code = main([str(a) for a in args])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def small_dataset(tmp_path_factory):
    path = tmp_path_factory.mktemp("newcomer") / "p.h5"
    assert main(["synth", "--source", "rft", "--medium", "pebbles", "--depths=-0.02,-0.04,-0.06", "--tilts", "0,0.5",
                 "--directions", "10", "--out", str(path)]) == 0
    return path


# --- streams: results on stdout, notes on stderr, --json alone ---------------------------------

def test_train_s_report_goes_to_stdout_and_its_notes_to_stderr(small_dataset, tmp_path, capsys):
    code, out, err = run(capsys, "train", small_dataset, "--out", tmp_path / "m.h5", "--cv", 3, "--cv-repeats", 2)
    assert code == 0
    for line in ("3-fold cross-validation", "concavity (Table II)", "fixed-normal outer approximation"):
        assert line in out and line not in err
    assert f"wrote {tmp_path / 'm.h5'}" in err and "wrote" not in out


@pytest.mark.parametrize("args", [
    ("train", "{data}", "--out", "{tmp}/m.h5", "--json"),
    ("sim", "drop-upright", "--duration", "0.02", "--json", "--out", "{tmp}/run.h5"),
    ("inspect", "{data}", "--json", "--plot", "{tmp}/w.png"),
    ("inspect", "sand", "--theta", "-0.03", "0.2", "--json"),
])
def test_json_is_all_that_stdout_holds(args, small_dataset, tmp_path, capsys):
    code, out, err = run(capsys, *[a.format(data=small_dataset, tmp=tmp_path) for a in args])
    assert code == 0, err
    assert isinstance(json.loads(out), dict) and len(out.strip().splitlines()) == 1


def test_sim_summary_goes_to_stdout(capsys, tmp_path):
    code, out, err = run(capsys, "sim", "drop-upright", "--duration", "0.02", "--out", tmp_path / "run.h5")
    assert code == 0 and out.startswith("drop-upright on sand: 20 steps") and "max penetration" in out
    assert err == f"granular: wrote {tmp_path / 'run.h5'}\n"


# --- warnings only where something is wrong ----------------------------------------------------

@pytest.mark.parametrize("scenario, duration", [("walker", 2.0), ("quad-trot", 0.3), ("drop-upright", 0.3)])
def test_a_shipped_scenario_on_its_shipped_medium_runs_silently(scenario, duration, capsys):
    code, out, err = run(capsys, "sim", scenario, "--duration", duration)
    assert code == 0 and out and err == ""


def test_leaving_the_data_is_a_note_at_v(capsys):
    """The walker's point feet press 0.1 mm into a rigid floor whose data are 10 µm thick."""
    code, _, err = run(capsys, "-v", "sim", "walker", "--duration", "1")
    assert code == 0 and "warning" not in err
    assert "outside the 'rigid' data" in err


def test_gymnasium_episodes_are_silent(caplog):
    pytest.importorskip("gymnasium")
    from granular.apps.gym import QuadrupedEnv

    env = QuadrupedEnv(media=["sand", "pebbles"])
    rng = np.random.default_rng(0)
    with caplog.at_level(logging.INFO, logger="granular"):
        for seed in range(3):
            env.reset(seed=seed)
            for _ in range(60):  # random joint targets: feet tilted past the data, deep in the medium
                env.step(rng.uniform(-1, 1, env.action_space.shape))
    assert not caplog.records, [r.getMessage() for r in caplog.records]


def test_a_foot_far_past_its_data_warns_and_says_what_to_change(tmp_path, capsys):
    """Data to 1 cm only: the dropped foot sinks past 1.5× that, and the run says so, once."""
    assert main(["synth", "--source", "rft", "--medium", "sand", "--depths=-0.005,-0.01", "--tilts", "0,0.5",
                 "--out", str(tmp_path / "shallow.h5")]) == 0
    assert main(["train", str(tmp_path / "shallow.h5"), "--out", str(tmp_path / "shallow_model.h5")]) == 0
    capsys.readouterr()
    code, out, err = run(capsys, "sim", "drop-upright", "--medium", tmp_path / "shallow_model.h5", "--duration", "0.5")
    warnings = [line for line in err.splitlines() if line.startswith("granular: warning:")]
    assert code == 0 and len(warnings) == 1, err
    assert "the deepest data of 'sand' (0.01 m)" in warnings[0] and "--depths" in warnings[0]


def test_hertz_at_a_step_it_gains_energy_at_warns_before_the_run(capsys):
    code, _, err = run(capsys, "sim", "drop-upright", "--contact", "hertz", "--duration", "0.01")
    assert code == 0 and "granular: warning: undamped hertz" in err and "--dt 0.0002 or less" in err
    code, _, err = run(capsys, "sim", "drop-upright", "--contact", "hertz", "--dt", "0.0002", "--duration", "0.01")
    assert code == 0 and "warning" not in err


def test_the_walker_s_summary_says_when_it_fell(capsys):
    code, out, _ = run(capsys, "sim", "walker", "--contact", "hertz", "--json")
    gait = json.loads(out)["gait"]
    assert code == 0 and 0 < gait["fell_at_s"] < 8
    code, out, _ = run(capsys, "sim", "walker", "--contact", "hertz")
    assert f"fell at t = {gait['fell_at_s']:.2f} s" in out
    code, out, _ = run(capsys, "sim", "walker", "--json")
    assert json.loads(out)["gait"]["fell_at_s"] is None   # the shipped walker walks on


# --- names: outputs say their format, options take negative lists, inspect takes what others do ---

@pytest.mark.parametrize("args, message", [
    (("sim", "drop-upright", "--out", "{tmp}/x.png"), "--out {tmp}/x.png: writes an HDF5 file"),
    (("sim", "drop-upright", "--video", "{tmp}/x.h5"), "must end in .gif or .mp4"),
    (("synth", "--medium", "sand", "--out", "{tmp}/x"), "(got no suffix); e.g. {tmp}/x.h5"),
    (("train", "{data}", "--out", "{tmp}/m.png"), "model output {tmp}/m.png: writes an HDF5 file"),
    (("inspect", "sand", "--plot", "{tmp}/w.h5"), "--plot {tmp}/w.h5: writes a figure"),
])
def test_an_output_named_for_another_format_is_refused(args, message, small_dataset, tmp_path, capsys):
    refused(capsys, tmp_path, *[a.format(data=small_dataset, tmp=tmp_path) for a in args],
            message=message.format(tmp=tmp_path))


def test_run_files_carry_units(tmp_path, capsys):
    assert run(capsys, "sim", "drop-upright", "--duration", "0.02", "--out", tmp_path / "r.h5")[0] == 0
    with h5py.File(tmp_path / "r.h5") as f:
        units = {name: f[name].attrs["units"] for name in ("t", "q", "energy", "wrench", "theta", "p_center")}
        assert all(f["geometry"][k].attrs["units"] for k in f["geometry"])
    assert units["t"] == "s" and units["energy"] == "J" and units["wrench"] == "N, N, N·m"
    assert units["theta"] == "m, rad" and units["q"].startswith("m, m, rad")


def test_a_list_of_negative_numbers_needs_no_equals_sign(tmp_path, capsys):
    code, _, err = run(capsys, "synth", "--medium", "sand", "--depths", "-0.06,-0.08", "--tilts", "0,-0.5",
                       "--out", tmp_path / "d.h5")
    assert code == 0, err
    code, out, _ = run(capsys, "inspect", tmp_path / "d.h5", "--json")
    summary = json.loads(out)
    assert summary["depths_m"] == [-0.08, -0.06] and summary["tilts_rad"] == [-0.5, 0.0]


def test_inspect_reads_a_validation_run(tmp_path, capsys):
    code, out, err = run(capsys, "inspect", shipped("data") / "validation" / "arc_s1.csv", "--json",
                         "--plot", tmp_path / "arc.png")
    summary = json.loads(out)
    assert code == 0, err
    assert summary["kind"] == "validation run" and summary["path"] == "arc" and summary["seed"] == 1
    assert summary["z_range_m"][0] < -0.04 and summary["cutoff_hz"] == 50.0
    assert (tmp_path / "arc.png").read_bytes().startswith(b"\x89PNG")


def test_inspect_takes_a_medium_s_name_as_validate_does(capsys):
    code, out, err = run(capsys, "inspect", "sand", "--json")
    assert code == 0, err
    assert json.loads(out)["kind"] == "model" and json.loads(out)["medium"] == "sand"
    code, _, err = run(capsys, "inspect", "quicksand")
    assert code == 2 and "nor a medium: beads, pebbles" in err


# --- figures ------------------------------------------------------------------------------------

@pytest.fixture
def figures(monkeypatch):
    """The figures the plots module saves, drawn, before they close."""
    from granular.apps import plots

    drawn, save = {}, plots.save

    def keep(fig, path):
        fig.canvas.draw()
        drawn[str(path).rsplit("/", 1)[-1]] = (fig, fig.canvas.get_renderer())
        boxes = [(a.get_title() or a.get_label(), a.get_tightbbox(fig.canvas.get_renderer())) for a in fig.axes]
        if fig._suptitle is not None:
            boxes.append(("the figure's title", fig._suptitle.get_window_extent(fig.canvas.get_renderer())))
        # 3 px of clear space around each: text that merely touches another reads as one line
        overlaps = [(a, b) for (a, x), (b, y) in itertools.combinations(boxes, 2) if x.padded(3).overlaps(y.padded(3))]
        drawn[str(path).rsplit("/", 1)[-1]] = overlaps
        return save(fig, path)

    monkeypatch.setattr(plots, "save", keep)
    return drawn


def test_inspect_plot_panels_do_not_overlap(figures, tmp_path, capsys):
    assert run(capsys, "inspect", "sand", "--plot", tmp_path / "w.png")[0] == 0
    assert figures["w.png"] == []


def test_the_rover_s_figures_keep_their_titles_apart(figures, tmp_path, capsys):
    assert run(capsys, "sim", "rover-climb", "--duration", "0.3", "--plot", tmp_path / "figs")[0] == 0
    assert set(figures) >= {"drive.png", "scene.png", "state.png", "wrench.png"}
    assert all(v == [] for v in figures.values()), figures


def test_the_scene_s_force_arrows_are_not_a_trace_s_colour(tmp_path, capsys, monkeypatch):
    from matplotlib.colors import to_hex
    from matplotlib.patches import FancyArrow

    from granular.apps import plots

    seen = {}

    def keep(fig, path):
        ax = fig.axes[0]
        if path.name != "scene.png":
            return plots.plt.close(fig) or path
        seen[path.name] = ({to_hex(p.get_facecolor(), keep_alpha=False) for p in ax.patches if isinstance(p, FancyArrow)},
                           {t.get_text(): to_hex(h.get_color()) for t, h in zip(ax.get_legend().get_texts(),
                                                                                 ax.get_legend().get_lines())},
                           ax.get_title())
        return plots.plt.close(fig) or path

    monkeypatch.setattr(plots, "save", keep)
    from granular.scenarios import scenario as scenarios
    from granular.simulation import runfile

    rec = scenarios.run(scenarios.load("quad-trot").with_(duration=0.2))
    plots.run_figures(runfile.record(rec, scenarios.summary(rec)), tmp_path)
    arrows, legend, title = seen["scene.png"]
    traces = {c for name, c in legend.items() if name.endswith("trace")}
    assert arrows and len(arrows) == 1 and not arrows & traces, (arrows, legend)
    assert legend["contact force"] in arrows and "red" not in title


# --- the vector environment in a script ---------------------------------------------------------

def test_a_script_without_the_main_guard_is_told_to_add_it(tmp_path):
    pytest.importorskip("gymnasium")
    script = tmp_path / "batch.py"
    script.write_text("from granular.apps.vector import QuadrupedVectorEnv\n"
                      "envs = QuadrupedVectorEnv(2, workers=1)\n"
                      "envs.reset(seed=0)\n")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert 'if __name__ == "__main__":' in last and "ended without answering" in last, proc.stderr[-2000:]
