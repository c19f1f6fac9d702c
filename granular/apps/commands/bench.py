"""``granular bench``: the real code paths timed (:mod:`granular.apps.bench`, :mod:`granular.apps.bench3d`)."""
from __future__ import annotations

from granular.apps.outputs import check_outputs, emit


def add(sub):
    b = sub.add_parser("bench", help="time the real code paths")
    b.add_argument("--json", action="store_true")
    b.add_argument("--quick", action="store_true", help="fewer repetitions")
    b.add_argument("--scaling", action="store_true", help="also time scenes of 1, 4, 16, 64 and 256 legged contacts")
    b.add_argument("--compliant", action="store_true",
                   help="also find each compliant law's largest stable time step (drop-upright; a few minutes)")
    b.add_argument("--batch", action="store_true",
                   help="also time batches of 1, 16, 256 and 1024 quadrupeds on the cores (needs gymnasium)")
    b.add_argument("--stability", action="store_true",
                   help="also the largest time step at which quad3d-trot trots, implicit contact against explicit 3D-RFT")
    b.add_argument("--plot", help="with --scaling: write the scaling figure (.png)")
    b.set_defaults(func=cmd_bench)


def cmd_bench(args):
    from granular.apps import bench

    check_outputs(args, files=("plot",), folders=())
    from granular.apps import bench3d

    results = bench.run(quick=args.quick)
    results.update(bench3d.run(quick=args.quick))
    if args.stability:
        results["stability"] = bench3d.stability()
    if args.scaling:
        from granular.apps import plots

        results["scaling"] = {f"daqp/fixed, {n} contacts": row for n, row in bench.scaling().items()}
        if args.plot:
            rows = {k.split(", ")[1]: v for k, v in results["scaling"].items()}
            plots.scaling({"daqp/fixed": rows}, args.plot)
    if args.compliant:
        results["compliant_largest_stable_step"] = bench.compliant()
    if args.batch:
        results["batch"] = bench.batch()
    emit(results, args.json, bench.print_table)
