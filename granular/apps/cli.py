"""The ``granular`` command line: sim, view, train, inspect, synth, ingest, acquire, bench.

A thin layer: it parses and checks the options, calls the library, and prints.
Every subcommand reports bad input as one ``granular: error: …`` line (exit
status 2), never a traceback, and checks its inputs and outputs before any
work (an output is never one of the inputs). Results go to stdout (with ``--json``
one JSON object and nothing else), progress, warnings and notes to stderr
(:mod:`granular.apps.outputs`). Ctrl-C ends with
``granular: interrupted`` (exit status 130); a closed stdout ends quietly.
"""
from __future__ import annotations

import argparse
import os
import re
import sys

# Before numpy loads its BLAS: the step's matrices are small and gain nothing from BLAS threads, and
# numpy and scipy each load an OpenBLAS with a thread pool of its own, which on two cores spun
# against each other (a 64-contact step took 8–300 ms instead of 4 ms). A user's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _keep_freed_memory():
    """glibc hands large freed blocks back to the system and maps new ones afresh, so a step that
    allocates arrays of a few hundred kB faults their pages in every time: a 64-contact step took
    2.4–2.9 ms instead of 1.1 ms, depending on what the process had allocated before. Keep
    them instead (fixed thresholds: mapped only above 32 MB, trimmed only above 128 MB)."""
    import ctypes

    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 32 << 20)   # M_MMAP_THRESHOLD
        libc.mallopt(-1, 128 << 20)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        pass  # not glibc: nothing to tune


_keep_freed_memory()

from granular.apps.commands.common import set_up_logging  # noqa: E402

# Before the package's modules load: importing them may compile the step's kernels (once per
# machine, minutes), and its note must reach the terminal. main() sets the verbosity asked for.
set_up_logging(False)

# One module per command, named as the command: its options and its cmd_* function.
from granular.apps.commands import (acquire, bench, calibrate, ingest, inspect, merge, sim, synth,  # noqa: E402
                                    train, validate, view, wheel)
from granular.errors import GranularError  # noqa: E402

#: The commands in the order ``granular --help`` lists them.
COMMANDS = (synth, merge, train, inspect, sim, ingest, acquire, calibrate, validate, view, wheel, bench)

#: A number, or a comma-separated list of them, that starts with a minus sign.
_NEGATIVE = re.compile(r"^-\d*\.?\d+(e[-+]?\d+)?(,\s*-?\d*\.?\d+(e[-+]?\d+)?)*,?$", re.IGNORECASE)


class _Parser(argparse.ArgumentParser):
    """Bad options get the same one line as every other error."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # argparse takes "-0.06,-0.08" for an option (it knows only single negative numbers), so
        # `--depths -0.06,-0.08` failed with "expected one argument"; no option of ours looks like one
        self._negative_number_matcher = _NEGATIVE

    def error(self, message):
        where = "" if self.prog == "granular" else f"{self.prog}: "
        self.exit(2, f"granular: error: {where}{message} (see {self.prog} --help)\n")


def build_parser():
    p = _Parser(prog="granular", description=__doc__.splitlines()[0])
    p.add_argument("-v", "--verbose", action="store_true", help="log debugging detail")
    sub = p.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add(sub)
    for parser in sub.choices.values():  # -v after the command too (only when given: the first one stands)
        parser.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="log debugging detail")
    return p


def _interrupted(exc: BaseException) -> bool:
    """Ctrl-C, also when it landed inside compiled code and came back wrapped in another error."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def main(argv=None):
    try:
        args = build_parser().parse_args(argv)
        set_up_logging(args.verbose)
        args.func(args)
        sys.stdout.flush()
    except GranularError as exc:
        print("granular: error: " + " ".join(str(exc).splitlines()), file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader of stdout went away (``granular … --json | head``): end quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except BaseException as exc:
        if _interrupted(exc):
            print("granular: interrupted", file=sys.stderr)
            return 130
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
