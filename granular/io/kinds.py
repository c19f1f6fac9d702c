"""What kind of file is this? One answer for every command that takes any of the project's files."""
from __future__ import annotations

from pathlib import Path

#: HDF5 ``format`` attributes of the files granular writes.
FORMATS = {"granular-wrench-model": "model", "granular-wrench-dataset": "dataset", "granular-run": "run",
           "granular-path3d": "path3d"}


def wrench_space(path) -> str:
    """'3d' for a dataset or model file of 6-axis wrenches (its ``wrench_space`` attribute), else
    'planar' (also for a file that cannot be read: the planar reader then says what is wrong)."""
    import h5py

    try:
        with h5py.File(path, "r") as f:
            value = f.attrs.get("wrench_space", "planar")
    except OSError:
        return "planar"
    return "3d" if (value.decode() if isinstance(value, bytes) else value) == "3d" else "planar"


def kind_of(path) -> str:
    """'model', 'dataset', 'run' (a simulation's run file), 'path3d' (a 3D validation path,
    :mod:`granular.data.paths3d`) or 'raw-run' (an acquisition run: CSV,
    HDF5 without a granular format, or a ROS 2 bag folder). Unknown files are 'raw-run' when
    their suffix says so, else 'unknown'."""
    import h5py

    path = Path(path)
    if path.is_dir():
        return "raw-run"  # a ROS 2 bag
    if path.suffix == ".csv":
        return "raw-run"
    fmt = None
    if path.is_file():
        try:
            with h5py.File(path, "r") as f:
                fmt = f.attrs.get("format")
        except OSError:
            return "unknown"
    fmt = fmt.decode() if isinstance(fmt, bytes) else fmt
    if fmt in FORMATS:
        return FORMATS[fmt]
    return "raw-run" if path.suffix in (".h5", ".hdf5") and fmt is None and path.is_file() else "unknown"
