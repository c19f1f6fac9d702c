"""3D run files (HDF5): what a MuJoCo scenario did, for replays and analysis (``granular sim
FILE.toml --out run.h5``, ``granular view --replay run.h5``).

Root attributes: ``format = "granular-run3d"``, ``version``, ``scenario`` (its name), ``scenario_file``
(the path it was run from, absolute), ``medium``, ``contact`` (the law), ``dt`` (s), ``mujoco`` (the
version that ran it), ``feet`` and ``bodies`` (names, JSON), ``summary`` (the --json object, JSON).
Arrays: :data:`granular.scenarios.scenario3d.RECORD`, each with a ``units`` attribute. A replay
rebuilds the scene from the scenario file (:func:`granular.apps.viewer3d.scenario_of`) and sets
MuJoCo's ``qpos`` from the record, so the file
holds the motion, not the model: the scenario file (and its MJCF) must still be where the run says,
or be a shipped scenario of that name.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from granular.errors import GranularError
from granular.io.h5io import array, atomic_h5, attr, read_h5

FORMAT, VERSION = "granular-run3d", 1
UNITS = {"t": "s", "pos": "m", "qpos": "MuJoCo's qpos (m, quaternion, rad)", "qvel": "MuJoCo's qvel (m/s, rad/s)",
         "theta": "m, rad", "energy": "J", "active": "1", "force": "N (world axes)",
         "wrench": "N, N, N, N·m, N·m, N·m (about p_r, in the foot's tilt frame)", "p_center": "m", "work": "J",
         "actuators": "J", "fell_back": "1"}
#: Arrays that runs written before them lack (read as absent, not invented)
LATER = ("actuators",)


def write(world, rec: dict, summary: dict, path) -> Path:
    """Write a 3D run atomically."""
    import mujoco

    m = world.mj_model
    with atomic_h5(path) as f:
        f.attrs.update({"format": FORMAT, "version": VERSION, "scenario": world.path.stem,
                        "scenario_file": str(Path(world.path).resolve()), "medium": world.feet.model.dataset.medium,
                        "contact": world.feet.law, "dt": float(m.opt.timestep), "mujoco": mujoco.__version__,
                        "feet": json.dumps(list(world.feet.names)),
                        "bodies": json.dumps([m.body(b).name or f"body{b}" for b in range(m.nbody)]),
                        "summary": json.dumps(summary)})
        for name, units in UNITS.items():
            f.create_dataset(name, data=rec[name], compression="gzip", compression_opts=4).attrs["units"] = units
    return Path(path)


def read(path) -> dict:
    """A 3D run file as plain data: the record's arrays and the attributes (validated)."""
    with read_h5(path, FORMAT, {VERSION}) as f:
        out = {name: array(f, name, path, dtype=bool if name in ("active", "fell_back") else np.float64,
                           required=name not in LATER) for name in UNITS}
        for key in ("scenario", "scenario_file", "medium", "contact", "dt", "mujoco"):
            out[key] = attr(f, key, path)
        for key in ("feet", "bodies", "summary"):
            try:
                out[key] = json.loads(attr(f, key, path))
            except json.JSONDecodeError:
                raise GranularError(f"{path}: attribute {key!r} is not valid JSON") from None
    states, steps, feet = len(out["t"]), len(out["work"]), len(out["feet"])
    if (steps != states - 1 or out["qpos"].shape[0] != states or out["force"].shape[:2] != (steps, feet)
            or (out["actuators"] is not None and len(out["actuators"]) != steps)):
        raise GranularError(f"{path}: arrays disagree on the number of steps or feet")
    return out


def is_run3d(path) -> bool:
    """Whether ``path`` is a 3D run file."""
    import h5py

    try:
        with h5py.File(path, "r") as f:
            return f.attrs.get("format") == FORMAT
    except OSError:
        return False
