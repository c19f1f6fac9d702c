"""``granular sim``: a scenario run, planar or 3D (MuJoCo), with its run file, figures and video."""
from __future__ import annotations

from pathlib import Path

from granular.apps import reports
from granular.apps.commands.common import _number
from granular.apps.outputs import check_outputs, emit
from granular.contact.compliant import LAWS as COMPLIANT_LAWS
from granular.errors import GranularError


def add(sub):
    r = sub.add_parser("sim", help="run a scenario from sim/ (or a scenario .toml)")
    r.add_argument("scenario", help="scenario name (e.g. drop-upright) or path")
    r.add_argument("--medium", help="sand, pebbles, or a trained model file (.h5)")
    r.add_argument("--duration", type=_number(0, 1e4, low_open=True), help="simulated time (s)")
    r.add_argument("--dt", type=_number(1e-5, 0.05), help="time step (s), 1e-5 to 0.05")
    r.add_argument("--solver", choices=["native", "daqp", "quadprog", "osqp", "cvxpy"], help="contact QP solver (default: native)")
    r.add_argument("--representation", choices=["fixed", "exact"], help="polytope representation of W(θ)")
    r.add_argument("--contact", choices=["max-dissipation", "data-flow", *COMPLIANT_LAWS],
                   help="contact law: the data's own flow rule (default, unless the scenario file sets one), "
                        "the hull's maximum dissipation (paper eq. 2), or a compliant (penalty) law fitted to the "
                        "medium's data (undamped hertz needs --dt ≤ 0.0002)")
    r.add_argument("--out", help="run file to write (.h5)")
    r.add_argument("--plot", help="directory for the figures")
    r.add_argument("--video", help="render the run to a video (.gif, or .mp4 with ffmpeg)")
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_sim)


def cmd_sim(args):
    from granular.simulation import runfile
    from granular.scenarios import advice, scenario as scenarios, scenario3d

    if scenario3d.is_3d(scenarios.find(args.scenario)):
        return _sim3d(args, scenarios.find(args.scenario))
    scenario = scenarios.load(args.scenario).with_(
        medium=args.medium, dt=args.dt, solver=args.solver, representation=args.representation,
        contact=args.contact, duration=args.duration)
    inputs = [scenario.path] + ([scenario.medium] if Path(scenario.medium).is_file() else [])
    check_outputs(args, inputs)
    advice.before(scenario)
    rec = scenarios.run(scenario, progress=True)
    summary = scenarios.summary(rec)
    advice.after(rec, summary)
    data = runfile.record(rec, summary)
    if args.out:
        runfile.write(data, args.out)
        summary["run_file"] = str(args.out)
    if args.plot or args.video:
        from granular.apps import plots

        if args.plot:
            summary["figures"] = plots.run_figures(data, args.plot)
        if args.video:
            summary["video"] = str(plots.video(data, args.video))

    emit(summary, args.json, reports.sim)


def _sim3d(args, path):
    from granular.scenarios import scenario3d
    from granular.simulation import runfile3d

    for option in ("video", "solver", "representation"):
        if getattr(args, option, None):
            raise GranularError(f"--{option}: not for a 3D (MuJoCo) scenario yet; {path.name} is one")
    check_outputs(args, [path])
    world = scenario3d.build(path, medium=args.medium, law=args.contact, duration=args.duration, dt=args.dt)
    rec = scenario3d.run(world, progress=True)
    summary = scenario3d.summary(world, rec)
    if args.out:
        runfile3d.write(world, rec, summary, args.out)
        summary["run_file"] = str(args.out)
    if args.plot:
        from granular.apps import plots3d

        summary["figures"] = plots3d.motion(world, rec, args.plot)
    emit(summary, args.json, reports.summary)
