"""``granular wheel``: the single-wheel test bed's reference (Wong–Reece or RFT), and with ``--simulate``
the test bed run in the simulator."""
from __future__ import annotations

from granular.apps import reports
from granular.apps.commands.common import _floats, _number
from granular.apps.outputs import check_outputs, emit


def add(sub):
    w = sub.add_parser("wheel", help="single-wheel test bed: sinkage, drawbar pull and torque against slip "
                                     "(terramechanics reference)")
    w.add_argument("--soil", default="dry-sand", help="Ding et al. Table 6 soil, e.g. dry-sand, lete-sand (Wong–Reece), "
                                                      "or an RFT medium: sand, pebbles")
    w.add_argument("--radius", type=_number(0, 10, low_open=True), default=0.15, help="wheel radius (m)")
    w.add_argument("--width", type=_number(0, 10, low_open=True), default=0.10, help="wheel width (m)")
    w.add_argument("--load", type=_number(0, 1e6, low_open=True), default=100.0, help="vertical load (N)")
    w.add_argument("--slips", type=_floats(0.0, 0.99), default=[round(0.05 * i, 2) for i in range(17)],
                   help="comma-separated slips in [0, 0.99] (default 0 to 0.8)")
    w.add_argument("--shear-modulus", type=_number(0, 10, low_open=True), default=0.01,
                   help="Janosi–Hanamoto K (m); Table 6 gives none")
    w.add_argument("--simulate", nargs="?", const="wheel-bed", metavar="SCENARIO",
                   help="also run the test bed in the simulator at each slip (default scenario wheel-bed); the "
                        "wheel, soil and load are then the scenario's")
    w.add_argument("--plot", help="write the figure (.png)")
    w.add_argument("--json", action="store_true")
    w.set_defaults(func=cmd_wheel)


def cmd_wheel(args):
    from granular.data import wheel

    check_outputs(args, files=("plot",), folders=())
    simulated = None
    if args.simulate:
        from granular.scenarios import scenario as scenarios, testbed

        bed = scenarios.load(args.simulate)
        w, soil = testbed.bed_reference(bed)
        soil_name = f"{scenarios.checked(bed).medium} (the scenario's)"
        simulated = testbed.simulate_bed(bed, args.slips, progress=True)
    else:
        w, soil, soil_name = wheel.Wheel(args.radius, args.width, args.load), wheel.ground(args.soil), args.soil
    sweep = wheel.slip_sweep(w, soil, args.slips, args.shear_modulus)
    model = "RFT" if isinstance(soil, wheel.RFTGround) else "Wong–Reece, Janosi–Hanamoto"
    result = {"soil": soil_name, "model": model, "radius_m": w.radius, "width_m": w.width, "load_n": w.load,
              **{k: [float(x) for x in v] for k, v in sweep.items()}}
    if simulated is not None:
        result["simulated"] = {"scenario": args.simulate, **{k: [float(x) for x in v] for k, v in simulated.items()}}
    if args.plot:
        from granular.apps import plots

        result["figure"] = str(plots.wheel(sweep, args.plot, f"{soil_name}: r {w.radius} m, b {w.width} m, "
                                                             f"load {w.load:.4g} N", simulated, model))

    emit(result, args.json, reports.wheel)
