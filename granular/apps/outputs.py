"""What a command prints and where, and the checks of its outputs before any work.

One rule for the streams: results (tables, summaries) go to stdout, so ``granular train … >
report.txt`` keeps them; progress, warnings and notes (``wrote …``) go to stderr through
:mod:`logging`; with ``--json`` stdout holds the one JSON object and nothing else.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

from granular.errors import GranularError

log = logging.getLogger("granular")

#: What each kind of output file is, and the suffixes that say so (the first is the one suggested).
SUFFIXES = {
    "hdf5": ("an HDF5 file", (".h5", ".hdf5")),
    "figure": ("a figure", (".png", ".pdf", ".svg", ".jpg", ".jpeg")),
    "video": ("a video", (".gif", ".mp4")),
}
#: The kind of file each output option writes.
KINDS = {"out": "hdf5", "video": "video", "plot": "figure"}


def say(*args):
    """A line of a result: stdout."""
    print(*args)


def wrote(path):
    """The note that a file was written: stderr (the result itself, in --json, names it)."""
    log.info("wrote %s", path)


def emit(obj, as_json: bool, human):
    """The result: one JSON object, or ``human``'s lines."""
    if as_json:
        print(json.dumps(obj, indent=None))
    else:
        human(obj)


def check_suffix(path, kind: str, what: str):
    """Refuse an output whose name says another format than the one written (``--out x.png`` would
    be HDF5 under a picture's name)."""
    desc, suffixes = SUFFIXES[kind]
    suffix = Path(path).suffix.lower()
    if suffix not in suffixes:
        got = f"'{suffix}'" if suffix else "no suffix"
        raise GranularError(f"{what} {path}: writes {desc}, so its name must end in {' or '.join(suffixes)} "
                            f"(got {got}); e.g. {Path(path).with_suffix(suffixes[0])}")


def check_outputs(args, inputs=(), files=("out", "video"), folders=("plot",)):
    """The command's output options, checked against its inputs and their suffixes before any work."""
    from granular.io.files import check_output

    for name in files:
        if getattr(args, name, None):
            check_output(getattr(args, name), inputs, what=f"--{name}")  # first: an input would be destroyed
            check_suffix(getattr(args, name), KINDS[name], f"--{name}")
    for name in folders:
        if getattr(args, name, None):
            check_output(getattr(args, name), inputs, directory=True, what=f"--{name}")
