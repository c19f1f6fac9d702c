"""``granular synth``: a synthetic wrench dataset (RFT, 3D-RFT, terramechanics, a rigid floor, a wheel)."""
from __future__ import annotations

from granular.apps.commands.common import _directions, _floats, _number
from granular.apps.outputs import check_outputs, wrote
from granular.data.sampling import SIZES_3D
from granular.errors import GranularError


def add(sub):
    s = sub.add_parser("synth", help="generate a synthetic wrench dataset (RFT, terramechanics, a rigid floor, "
                                     "a wheel)")
    s.add_argument("--source", choices=["rft", "rft3d", "terramechanics", "coulomb", "wheel"], default="rft",
                   help="rft3d: 3D-RFT, a 3D (6-axis) dataset (data/rft3d.py); coulomb: a rigid floor with Coulomb "
                        "friction (data/coulomb.py); wheel: a rigid wheel on a --soil (Wong–Reece, data/wheel.py) "
                        "or an RFT --medium")
    s.add_argument("--medium", help="RFT medium preset: sand, pebbles; for coulomb, the name to give the floor")
    s.add_argument("--soil", help="terramechanics soil (Ding et al. Table 6), e.g. dry-sand, lete-sand")
    s.add_argument("--out", required=True, help="output dataset (.h5)")
    s.add_argument("--depths", type=_floats(-10.0, 0.0), help="comma-separated depths d ≤ 0 of the lowest point (m); default: Table I")
    s.add_argument("--tilts", type=_floats(-1.5708, 1.5708), help="comma-separated tilts φ (rad); default: Table I")
    s.add_argument("--directions", type=_directions, help="m velocity directions: 2 + 8k (default 26, 58, …); "
                                                           "3D: 12, 72 (default) or 232")
    s.add_argument("--foot-radius", type=_number(0, 10, low_open=True), default=0.05, help="m")
    s.add_argument("--foot-length", type=_number(0, 10, low_open=True), default=0.30, help="m")
    s.add_argument("--foot-r-offset", type=_number(-10, 10), default=0.25, help="p_r's distance above p_center (m)")
    s.add_argument("--wheel-radius", type=_number(0, 10, low_open=True), default=0.15, help="--source wheel: m")
    s.add_argument("--wheel-width", type=_number(0, 10, low_open=True), default=0.10, help="--source wheel: m")
    s.add_argument("--friction", type=_number(0, 10, low_open=True),
                   help="--source coulomb: the floor's (static) Coulomb μ (default 0.8)")
    s.set_defaults(func=cmd_synth)


def cmd_synth(args):
    from granular.data import dataset as wd
    from granular.foot import Foot
    from granular.data.synth import synthesize

    if args.source == "wheel" and (args.soil is None) == (args.medium is None):
        raise GranularError("--source wheel needs one of --soil (a Table 6 soil: Wong–Reece) and --medium (an RFT "
                            "medium: sand, pebbles)")
    name = args.soil if args.source == "terramechanics" or args.soil else args.medium
    if name is None:
        raise GranularError("--source rft, rft3d or coulomb needs --medium; --source terramechanics needs --soil")
    if args.friction is not None and args.source != "coulomb":
        raise GranularError("--friction is the rigid floor's (--source coulomb)")
    check_outputs(args)
    if args.source == "wheel":
        foot = Foot(args.wheel_radius, args.wheel_width, args.wheel_radius)
    else:
        foot = Foot(args.foot_radius, args.foot_length, args.foot_r_offset)
    if args.directions is not None and (args.source == "rft3d") != (args.directions in SIZES_3D):
        raise GranularError(f"--directions {args.directions}: " + (
            f"3D data take one of {', '.join(map(str, SIZES_3D))}" if args.source == "rft3d" else
            "planar data take m = 2 + 8k (26, 58, …)"))
    ds = synthesize(args.source, name, args.depths, args.tilts, args.directions, foot, progress=True,
                    friction=args.friction)
    wd.write(ds, args.out)
    wrote(f"{args.out}: {ds.n} configurations × {ds.m} directions ({args.source}, {name})")
