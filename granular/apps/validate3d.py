"""``granular validate`` on 3D paths (:mod:`granular.data.paths3d`): a 3D model's wrench under the
data-flow law at each sample's (θ, twist) against the path's, per component; ``--source
rft3d:MEDIUM`` scores 3D-RFT itself on the same paths (the direct baseline)."""
from __future__ import annotations

import numpy as np

from granular.apps.outputs import emit, say
from granular.data import paths3d
from granular.errors import GranularError

#: The planar options that have no meaning for 3D paths yet.
PLANAR_ONLY = ("calibrate", "sim", "mapping", "plot")


def validate(args):
    from granular.data.media import MEDIA
    from granular.learning.catalog import load_model

    for option in PLANAR_ONLY:
        if getattr(args, option):
            raise GranularError(f"--{option}: planar validation runs only; these are 3D paths")
    if args.contact != "data-flow" or args.representation != "exact":
        raise GranularError("3D paths are scored under the data-flow law (drop --contact and --representation)")
    model = load_model(args.model, "3d")
    runs = [paths3d.read(p) for p in args.runs]
    result = {"model": args.model, "wrench_space": "3d", "law": "data-flow", "runs": [str(p) for p in args.runs],
              "nrmse": paths3d.score(model, runs)}
    if args.source:
        kind, _, medium = args.source.partition(":")
        if kind != "rft3d" or medium not in MEDIA:
            raise GranularError(f"--source {args.source!r}: for 3D paths give rft3d:MEDIUM ({', '.join(MEDIA)})")
        result["source"] = {"source": args.source, "nrmse": paths3d.score(_RFT3D(medium, model.dataset.foot), runs)}
    emit(result, args.json, _report)


class _RFT3D:
    """3D-RFT of a medium with the ``flow`` of a model, so that it is scored the same way."""

    def __init__(self, medium, foot):
        from granular.data.media import medium as preset

        self.medium, self.foot = preset(medium), foot

    def flow(self, thetas, twists):
        from granular.data import rft3d

        return np.array([rft3d.foot_wrench(self.foot, th, tw[None], self.medium.zeta, self.medium.coeffs)[0]
                         for th, tw in zip(thetas, twists)])


def _report(r):
    columns = paths3d.COMPONENTS
    say(f"{r['model']} on {len(r['runs'])} 3D paths, data-flow law: NRMSE per component "
        "(RMS error / the path's RMS force or torque)")
    say(f"  {'path':22s}" + "".join(f"{c:>7s}" for c in columns))
    for name, row in r["nrmse"].items():
        say(f"  {name:22s}" + "".join(f"{row[c]:7.3f}" for c in columns))
    if "source" in r:
        row = r["source"]["nrmse"]["all"]
        say(f"  {r['source']['source']:22s}" + "".join(f"{row[c]:7.3f}" for c in columns))
