"""Scenarios: TOML files under sim/ that set up a run, and the loop that runs them.

A scenario names its terrain, robot, initial state, controller, medium, time
step, duration and solver (see sim/README.md for the keys). ``build`` turns it
into an immutable SimModel, an initial State and a controller; ``run`` steps
them and records a :class:`Run`.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm import tqdm

from . import terrain as terrain_mod
from .contact import FootContact
from .contact_qp import make_solver
from .control import Hold, JointPD, Keyframes, Passive, Path as RefPath, PIDTracker, Trot
from .errors import GranularError
from .files import read_toml
from .multibody import Body, MultiBody
from .robots import load_quadruped
from .simulate import SimModel, State, step

ROOT = Path(__file__).resolve().parent.parent
SIM_DIR = ROOT / "sim"
TOP_KEYS = {"description", "duration", "dt", "medium", "solver", "representation", "normals", "terrain",
            "robot", "initial", "control"}


def find(name: str) -> Path:
    """sim/NAME.toml, or a path to a scenario file."""
    path = Path(name)
    if path.suffix == ".toml" and path.is_file():
        return path
    candidate = SIM_DIR / f"{name}.toml"
    if candidate.is_file():
        return candidate
    known = sorted(p.stem for p in SIM_DIR.glob("*.toml"))
    raise GranularError(f"unknown scenario {name!r}; known: {', '.join(known)}")


def load(name: str) -> dict:
    path = find(name)
    spec = read_toml(path, "scenario", known=TOP_KEYS, required=("duration", "robot"))
    spec["name"] = path.stem
    spec["path"] = str(path)
    return spec


def wrench_model(medium: str):
    """A medium name (default model, trained on first use) or a model file."""
    from . import model as wm
    from .training import default_model, shipped_media

    if medium.endswith(".h5") or Path(medium).is_file():
        return wm.load(medium)
    if medium not in shipped_media():
        raise GranularError(f"unknown medium {medium!r}; choose one of {', '.join(shipped_media())} or a model file")
    return default_model(medium, say=lambda m: print(m, file=sys.stderr))


def _number(table, key, where, default=None, positive=False):
    value = table.get(key, default)
    if value is None:
        raise GranularError(f"{where}: missing {key!r}")
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise GranularError(f"{where}: {key} must be a number, got {value!r}") from None
    if not np.isfinite(value) or (positive and value <= 0):
        raise GranularError(f"{where}: {key} must be a {'positive' if positive else 'finite'} number, got {value}")
    return value


def single_foot(robot: dict, foot, where: str):
    """A free foot: its body frame sits at p_center with z along the axis; its COM is
    ``com_height`` up the axis (default: halfway, a uniform cylinder)."""
    mass = _number(robot, "mass", where, 7.357, positive=True)
    inertia = _number(robot, "inertia", where, 0.061, positive=True)
    grains = robot.get("grain_mass", [2 * mass, 2 * mass, 2 * inertia])
    if len(grains) != 3 or any(not np.isfinite(g) or g < 0 for g in grains):
        raise GranularError(f"{where}: grain_mass must be three non-negative numbers (kg, kg, kg·m²)")
    com = _number(robot, "com_height", where, foot.length / 2)
    mb = MultiBody((Body("foot", mass, inertia, com=(0.0, com)),))
    return mb, (FootContact("foot", 0, foot=foot, grain_mass=tuple(grains)),)


def build(spec: dict, medium=None, dt=None, solver=None, representation=None):
    """(SimModel, State, controller, solver) for a loaded scenario, with command-line overrides."""
    where = spec["path"]
    wrenches = wrench_model(medium or spec.get("medium", "sand"))
    robot_spec = spec["robot"]
    kind = robot_spec.get("kind", "foot")
    robot = None
    if kind == "foot":
        mb, contacts = single_foot(robot_spec, wrenches.dataset.foot, f"{where} [robot]")
    elif kind == "quadruped":
        if "spec" not in robot_spec:
            raise GranularError(f"{where} [robot]: kind 'quadruped' needs spec = 'robots/….toml'")
        robot = load_quadruped(SIM_DIR / robot_spec["spec"], wrenches.dataset.foot)
        mb, contacts = robot.multibody, robot.contacts
    else:
        raise GranularError(f"{where} [robot]: unknown kind {kind!r}; choose 'foot' or 'quadruped'")
    ground = terrain_mod.from_spec(spec.get("terrain", {}), f"{where} [terrain]")
    h = dt or _number(spec, "dt", where, 1e-3, positive=True)
    model = SimModel(mb, contacts, ground, wrenches, dt=h,
                     representation=representation or spec.get("representation", "fixed"),
                     normals=int(spec.get("normals", 32)))
    controller = make_controller(spec.get("control", {}), mb, h, f"{where} [control]", robot)
    state = initial_state(spec.get("initial", {}), mb, ground, f"{where} [initial]", controller)
    return model, state, controller, make_solver(solver or spec.get("solver", "daqp"))


def initial_state(init: dict, mb, ground, where, controller=None):
    """Base pose and velocity from [initial]; joints at the controller's first targets."""
    x = _number(init, "x", where, 0.0)
    if "height" in init:
        z = float(ground.height(x)) + _number(init, "height", where)
    else:
        z = _number(init, "z", where, 0.0)
    q = np.zeros(mb.ndof)
    v = np.zeros(mb.ndof)
    q[:3] = x, z, _number(init, "angle", where, 0.0)
    v[:3] = [_number(init, k, where, 0.0) for k in ("vx", "vz", "omega")]
    if isinstance(controller, JointPD):
        q[3:] = controller.targets(0.0)
    return State(0.0, q, v)


def make_controller(spec: dict, mb, dt, where, robot=None):
    kind = spec.get("kind", "none")
    if kind == "none":
        return Passive(mb.ndof)
    if kind == "track":
        if "path" not in spec:
            raise GranularError(f"{where}: kind 'track' needs a [control.path] table")
        try:
            path = RefPath(**spec["path"])
        except TypeError as exc:
            raise GranularError(f"{where}.path: {exc}") from None
        except GranularError as exc:
            raise GranularError(f"{where}.path: {exc}") from None
        weight = float(mb.mass.sum() * mb.gravity) if spec.get("weight_feedforward", True) else 0.0
        gains = {k: tuple(spec[k]) for k in ("kp", "ki", "kd") if k in spec}
        return PIDTracker(path, dt, weight=weight, ndof=mb.ndof, **gains)
    if kind in ("trot", "keyframes", "hold"):
        if robot is None:
            raise GranularError(f"{where}: kind {kind!r} needs a legged robot")
        return JointPD(robot, _gait(kind, spec, robot, where))
    raise GranularError(f"{where}: unknown control kind {kind!r}; choose none, track, trot, keyframes or hold")


def _legs(table: dict, where):
    try:
        return {limb: (float(x), float(z)) for limb, (x, z) in table.items()}
    except (TypeError, ValueError):
        raise GranularError(f"{where}: legs must map limb names to [x, z] ankle positions") from None


def _gait(kind, spec, robot, where):
    try:
        if kind == "trot":
            return Trot(robot, **{k: float(v) for k, v in spec.items() if k != "kind"})
        if kind == "hold":
            return Hold(robot, _legs(spec["legs"], where))
        frames = spec["frames"]
        return Keyframes(robot, tuple(float(f["t"]) for f in frames),
                         tuple(_legs({k: v for k, v in f.items() if k != "t"}, where) for f in frames))
    except KeyError as exc:
        raise GranularError(f"{where}: kind {kind!r} needs key {exc}") from None
    except TypeError as exc:
        raise GranularError(f"{where}: {exc}") from None


@dataclass
class Run:
    """A recorded run: time (S+1,), q and v (S+1, n), energy (S+1,); per step and foot:
    theta (S, N, 2), active, wrench (S, N, 3) in F_r, slipping, p_center (S, N, 2)."""

    name: str
    medium: str
    model: SimModel
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    energy: np.ndarray
    theta: np.ndarray
    active: np.ndarray
    wrench: np.ndarray
    slipping: np.ndarray
    p_center: np.ndarray
    wall_time_s: float = 0.0
    meta: dict = field(default_factory=dict)


def run(spec: dict, duration=None, progress: bool = False, **overrides) -> Run:
    model, state, controller, solver = build(spec, **overrides)
    steps = int(round((duration or _number(spec, "duration", spec["path"], positive=True)) / model.dt))
    mb, N = model.multibody, len(model.contacts)
    rec = Run(spec["name"], model.wrenches.dataset.medium, model,
              t=np.zeros(steps + 1), q=np.zeros((steps + 1, mb.ndof)), v=np.zeros((steps + 1, mb.ndof)),
              energy=np.zeros(steps + 1), theta=np.zeros((steps, N, 2)), active=np.zeros((steps, N), bool),
              wrench=np.zeros((steps, N, 3)), slipping=np.zeros((steps, N), bool), p_center=np.zeros((steps, N, 2)),
              meta={"solver": solver.name, "representation": model.representation, "dt": model.dt})
    rec.q[0], rec.v[0], rec.energy[0] = state.q, state.v, mb.energy(state.q, state.v)
    memory = controller.initial_memory()
    start = time.perf_counter()
    for i in tqdm(range(steps), desc=spec["name"], disable=None if progress else True, mininterval=0.5):
        u, memory = controller(state.t, state.q, state.v, memory)
        state, info = step(model, state, u, solver, i)
        rec.t[i + 1], rec.q[i + 1], rec.v[i + 1] = state.t, state.q, state.v
        rec.energy[i + 1] = mb.energy(state.q, state.v)
        rec.theta[i], rec.active[i], rec.wrench[i] = info.theta, info.active, info.wrench
        rec.slipping[i], rec.p_center[i] = info.slipping, info.p_center
    rec.wall_time_s = time.perf_counter() - start
    return rec


def body_state(mb, q, v):
    com, angle, com_v, omega = mb.com_states(q, v)
    return {b.name: {"x": float(com[i, 0]), "z": float(com[i, 1]), "angle": float(angle[i]),
                     "vx": float(com_v[i, 0]), "vz": float(com_v[i, 1]), "omega": float(omega[i])}
            for i, b in enumerate(mb.bodies)}


def summary(rec: Run) -> dict:
    """The ``--json`` object of a run. Body x, z are centre-of-mass coordinates; angle is
    the body frame's angle (for a foot, its tilt from vertical). Per foot: ``slip_m``, the
    horizontal distance p_center travelled while in contact, and ``max_depth_m``."""
    mb = rec.model.multibody
    first, last = body_state(mb, rec.q[0], rec.v[0]), body_state(mb, rec.q[-1], rec.v[-1])
    depth = np.where(rec.active, -rec.theta[..., 0], 0.0)
    moved = np.abs(np.diff(rec.p_center[..., 0], axis=0)) * (rec.active[1:] & rec.active[:-1])
    feet = {name: {"slip_m": float(moved[:, i].sum()), "max_depth_m": float(depth[:, i].max()) if depth.size else 0.0}
            for i, name in enumerate(rec.model.feet.names)}
    return {
        "scenario": rec.name, "medium": rec.medium, "steps": len(rec.t) - 1, "dt": rec.model.dt,
        "wall_time_s": rec.wall_time_s, "solver": rec.meta["solver"], "representation": rec.meta["representation"],
        "bodies": {name: {"initial": first[name], "final": last[name]} for name in first},
        "max_penetration_m": float(depth.max()) if depth.size else 0.0,
        "feet": feet,
        "energy": {"initial": float(rec.energy[0]), "final": float(rec.energy[-1]),
                   "max_step_increase": float(np.diff(rec.energy).max()) if len(rec.energy) > 1 else 0.0},
    }
