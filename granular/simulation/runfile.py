"""Run files (HDF5): what a simulation did, for plots, replays and analysis.

Root attributes: ``format = "granular-run"``, ``version``, ``scenario``,
``medium``, ``solver``, ``representation``, ``dt`` (s), ``bodies`` and
``feet`` (names), ``summary`` (the --json object). Arrays: ``t`` (S+1,) s;
``q``, ``v`` (S+1, n) generalized state (base x, z, angle, then joint
angles; SI units); ``energy`` (S+1,) J; per step and foot: ``theta``
(S, N, 2) [d, φ], ``active`` (S, N) in contact, ``wrench`` (S, N, 3) in F_r
(N, N, N·m), ``slipping`` (S, N) on the boundary of W, ``p_center`` (S, N, 2)
m. Group ``geometry``: what a viewer needs to draw the scene (terrain points,
body COMs and joints, feet; ``foot_roll``, a round foot's or wheel's radius, 0 for a flat foot).
Every array carries a ``units`` attribute (:data:`UNITS`, :data:`GEOMETRY_UNITS`; per column where
they differ, "1" for flags and indices).
"""
from __future__ import annotations

import json

import numpy as np

from granular.errors import GranularError
from granular.io.h5io import array, atomic_h5, attr, read_h5

FORMAT = "granular-run"
VERSION = 1
ARRAYS = ("t", "q", "v", "energy", "theta", "active", "wrench", "slipping", "p_center")
#: Each array's ``units`` attribute, per column where they differ ("1": a flag or a count).
UNITS = {"t": "s", "q": "m, m, rad, then rad per joint", "v": "m/s, m/s, rad/s, then rad/s per joint",
         "energy": "J", "theta": "m, rad", "active": "1", "wrench": "N, N, N·m", "slipping": "1",
         "p_center": "m, m"}
GEOMETRY_UNITS = {"terrain": "m, m", "parent": "1", "com": "m, m", "joint": "m, m", "offset": "m, m",
                  "foot_body": "1", "foot_points": "m, m", "foot_axis": "1", "foot_size": "m, m", "foot_roll": "m"}


def record(rec, summary: dict) -> dict:
    """A run as plain data: the arrays, the attributes and the scene geometry."""
    model = rec.model
    mb = model.multibody
    out = {name: getattr(rec, name) for name in ARRAYS}
    out.update(scenario=rec.name, medium=rec.medium, solver=rec.meta["solver"],
               representation=rec.meta["representation"], dt=model.dt, bodies=[b.name for b in mb.bodies],
               feet=list(model.feet.names), summary=summary)
    out["geometry"] = geometry(model)
    return out


def geometry(model) -> dict:
    """What drawing a scene needs: terrain points, the body tree and the feet."""
    mb = model.multibody
    return {"terrain": np.column_stack([model.terrain.xs, model.terrain.zs]), "parent": mb.parent, "com": mb.com,
            "joint": mb.joint, "offset": mb.offset, "foot_body": model.feet.bodies, "foot_points": model.feet.points,
            "foot_axis": model.feet.axis,
            "foot_size": np.array([[c.foot.radius, c.foot.length] for c in model.contacts]),
            "foot_roll": model.feet.roll_radius}


def write(run: dict, path):
    """Write a run record atomically."""
    with atomic_h5(path) as f:
        f.attrs.update({"format": FORMAT, "version": VERSION, "dt": run["dt"],
                        **{k: run[k] for k in ("scenario", "medium", "solver", "representation")},
                        **{k: json.dumps(run[k]) for k in ("bodies", "feet", "summary")}})
        for name in ARRAYS:
            f.create_dataset(name, data=run[name], compression="gzip", compression_opts=4).attrs["units"] = UNITS[name]
        g = f.create_group("geometry")
        for key, value in run["geometry"].items():
            g.create_dataset(key, data=value).attrs["units"] = GEOMETRY_UNITS.get(key, "m")
    return path


def read(path) -> dict:
    """A run file as the same plain data :func:`record` gives (validated)."""
    with read_h5(path, FORMAT, {VERSION}) as f:
        out = {name: array(f, name, path, dtype=bool if name in ("active", "slipping") else np.float64)
               for name in ARRAYS}
        for key in ("scenario", "medium", "solver", "representation", "dt"):
            out[key] = attr(f, key, path)
        for key in ("bodies", "feet", "summary"):
            out[key] = json.loads(attr(f, key, path))
        if "geometry" not in f:
            raise GranularError(f"{path}: run file lacks its 'geometry' group")
        out["geometry"] = {k: f["geometry"][k][()] for k in f["geometry"]}
    steps = len(out["t"]) - 1
    if out["q"].shape[0] != steps + 1 or out["wrench"].shape[0] != steps:
        raise GranularError(f"{path}: arrays disagree on the number of steps")
    return out
