"""HDF5 plumbing shared by datasets, models and run files: atomic writes, checked reads."""
from __future__ import annotations

import contextlib
from pathlib import Path

import h5py
import numpy as np

from granular.errors import GranularError
from granular.io.files import atomic_path


@contextlib.contextmanager
def atomic_h5(path):
    """Write an HDF5 file atomically (see :func:`granular.io.files.atomic_path`)."""
    with atomic_path(path) as tmp:
        with h5py.File(tmp, "w") as f:
            yield f


@contextlib.contextmanager
def read_h5(path, fmt: str, versions):
    """Open ``path`` for reading, checking its ``format`` and ``version`` attributes."""
    path = Path(path)
    if not path.is_file():
        raise GranularError(f"{path}: no such file")
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise GranularError(f"{path}: not a readable HDF5 file ({exc})") from None
    with f:
        found = attr(f, "format", path)
        if found != fmt:
            raise GranularError(f"{path}: format is {found!r}, expected {fmt!r}")
        version = attr(f, "version", path)
        if not isinstance(version, (int, np.integer)) or int(version) not in versions:
            raise GranularError(f"{path}: unknown {fmt} version {version!r} (this granular reads {sorted(versions)})")
        yield f


def attr(node, name: str, where):
    """An attribute, with bytes decoded; a clear error if it is missing."""
    if name not in node.attrs:
        raise GranularError(f"{where}: missing attribute {name!r} in {node.name}")
    value = node.attrs[name]
    if isinstance(value, bytes):
        value = value.decode()
    if isinstance(value, np.generic):
        value = value.item()
    return value


def array(node, name: str, where, shape=None, dtype=np.float64, required=True):
    """A dataset as a numpy array, checked for presence, shape (None = any size) and kind."""
    if name not in node:
        if required:
            raise GranularError(f"{where}: missing array {name!r} in {node.name}")
        return None
    item = node[name]
    if not isinstance(item, h5py.Dataset):
        raise GranularError(f"{where}: {name!r} should be an array, found a group")
    value = item[()]
    value = np.asarray(value)
    if shape is not None:
        ok = value.ndim == len(shape) and all(s is None or s == v for s, v in zip(shape, value.shape))
        if not ok:
            want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
            raise GranularError(f"{where}: array {name!r} has shape {value.shape}, expected {want}")
    kind = np.dtype(dtype).kind
    if kind == "f" and value.dtype.kind not in "fiu":
        raise GranularError(f"{where}: array {name!r} should be numeric, found {value.dtype}")
    if kind == "b" and value.dtype.kind != "b":
        raise GranularError(f"{where}: array {name!r} should be boolean, found {value.dtype}")
    return value.astype(dtype)
