"""``granular train``: a wrench-space model trained from a dataset or a training job (.toml)."""
from __future__ import annotations

import argparse
from pathlib import Path

from granular.apps import reports
from granular.apps.commands.common import _number
from granular.apps.commands.inspect import default_thetas, label
from granular.apps.outputs import emit
from granular.errors import GranularError
from granular.learning.linear import KERNELS


def add(sub):
    t = sub.add_parser("train", help="train a wrench-space model from a dataset or a training job (.toml)")
    t.add_argument("source", help="dataset .h5, or a training job .toml")
    t.add_argument("--out", help="model file to write (.h5)")
    t.add_argument("--regressor", choices=["rbf", "gp", "svr"])
    t.add_argument("--target", choices=["wrench", "per-depth"],
                   help="learn the wrenches, or the wrenches per unit depth (w / |d|; default: the job's, else wrench)")
    t.add_argument("--kernel", choices=list(KERNELS),
                   help="the RBF's kernel (default: the job's, else thin_plate_spline)")
    t.add_argument("--smoothing", type=_smoothing,
                   help="the RBF's smoothing, added to its kernel matrix's diagonal, or 'noise': as much as "
                        "the data's bed-to-bed noise allows (data of several beds, granular merge --average; "
                        "chosen again in every --cv fold) (default: the job's, else 0)")
    t.add_argument("--cv", type=_number(0, 1000, kind=int), help="K-fold cross-validation of all regressors")
    t.add_argument("--cv-repeats", type=_number(1, 1000, kind=int),
                   help="the RBF's cross-validation, its folds drawn this many times (default: the job's, else 10)")
    t.add_argument("--figures", help="directory for the figures")
    t.add_argument("--json", action="store_true", help="print one JSON object")
    t.set_defaults(func=cmd_train)


def _smoothing(text: str):
    """--smoothing: a number in [0, 1e6], or 'noise' (training.NOISE)."""
    if text == "noise":
        return text
    try:
        return _number(0, 1e6)(text)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (or 'noise')") from None


def cmd_train(args):
    from granular.apps import plots
    from granular.learning import training

    source = Path(args.source)
    if source.suffix == ".toml":
        job = training.load_job(source)
    else:
        if args.out is None:
            raise GranularError("granular train DATASET needs --out MODEL.h5 (or pass a training job .toml)")
        job = training.Job(dataset=source, out=Path(args.out))
    job.regressor = args.regressor or job.regressor
    job.target = args.target or job.target
    job.kernel = args.kernel or job.kernel
    job.smoothing = job.smoothing if args.smoothing is None else args.smoothing
    job.cv = job.cv if args.cv is None else args.cv
    job.cv_repeats = job.cv_repeats if args.cv_repeats is None else args.cv_repeats
    job.out = Path(args.out) if args.out else job.out
    job.figures = Path(args.figures) if args.figures else job.figures
    from granular.apps.outputs import check_suffix
    from granular.io.files import check_output

    inputs = [source, job.dataset]
    check_output(job.out, inputs, what="model output")
    check_suffix(job.out, "hdf5", "model output")
    if job.figures:
        check_output(job.figures, inputs + [job.out], directory=True, what="--figures")
        from granular.data import dataset as wd

        if wd.read(job.dataset, kind=None).dim == 6:
            raise GranularError("--figures: the training figures are planar; a 3D model has none yet")
    if job.cv == 1:
        raise GranularError("--cv needs K ≥ 2 folds (or 0 for none)")
    if args.cv_repeats is not None and not job.cv:
        raise GranularError(f"--cv-repeats {args.cv_repeats} draws the folds of a cross-validation, and this job "
                            f"has none: add --cv K (K ≥ 2 folds)")

    result, model, concavity = training.run_job(job, progress=True)
    medium = result["medium"]
    if job.figures:
        thetas = job.plot_thetas or default_thetas(model)
        result["figures"] = [
            str(plots.wrench_spaces(model.points(thetas), [label(t) for t in thetas],
                                    job.figures / "wrench_space.png", f"{medium}: predicted W(θ)")),
            str(plots.training_report(result.get("cv", {}), result.get("cv_repeated"), result["fixed_normals"],
                                      concavity, job.figures / "training_report.png",
                                      f"{medium} ({job.regressor})")),
        ]

    emit(result, args.json, lambda r: reports.train(r, job.cv))
