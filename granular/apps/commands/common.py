"""What the commands share: the argparse types of their options, and the log's one handler.

The types keep their names: argparse puts a type's name in the message of a value it cannot
convert (``invalid _directions value``).
"""
from __future__ import annotations

import argparse
import logging
import sys

import numpy as np

from granular.data.sampling import SIZES_3D


class _Format(logging.Formatter):
    """``granular: warning: …`` for warnings and errors, ``granular: …`` for notes."""

    def format(self, record):
        prefix = "granular: " if record.levelno < logging.WARNING else f"granular: {record.levelname.lower()}: "
        return prefix + record.getMessage()


def set_up_logging(verbose: bool):
    """One handler for the package's log, on stderr (:class:`_Format`); ``verbose``: debugging detail too."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Format())
    root = logging.getLogger("granular")
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose else logging.INFO)


def _number(low=-1e12, high=1e12, low_open=False, kind=float):
    """An argparse type: a finite number in [low, high] (or (low, high] with ``low_open``)."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {'a whole number' if kind is int else 'a number'}, "
                                             f"got {text!r}") from None
        if not (np.isfinite(value) and (value > low if low_open else value >= low) and value <= high):
            # stripped as float() strips it: a line break in the text ('0\x85') must not split the message
            raise argparse.ArgumentTypeError(f"{text.strip()} is out of range: expected {'>' if low_open else '≥'} {low:g}"
                                             f" and ≤ {high:g}")
        return value
    return parse


def _floats(low=-1e12, high=1e12):
    number = _number(low, high)

    def parse(text: str):
        values = [number(v.strip()) for v in text.split(",") if v.strip()]
        if not values:
            raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}")
        return values
    return parse


def _directions(text: str) -> int:
    m = _number(10, 10**5, kind=int)(text)
    if (m - 2) % 8 and m not in SIZES_3D:
        raise argparse.ArgumentTypeError(f"{m} directions: the direction grid has m = 2 + 8k (10, 18, 26, 58, …); "
                                         f"in 3D one of {', '.join(map(str, SIZES_3D))}")
    return m


def _directions_or_dataset(text: str):
    """m of the direction grid, or a dataset (.h5) whose directions to sample (read in the command)."""
    return text if text.lower().endswith(".h5") else _directions(text)


def _sampled_directions(value, kind=None):
    """--directions as the data functions take it: m, or the named dataset's directions (of the
    wrench space ``kind``, None: either, as ingest's mapping decides)."""
    if not isinstance(value, str):
        return value
    from granular.data import dataset as wd

    return wd.read(value, kind=kind).directions
