"""Scenarios: TOML files under sim/ that set up a run.

A scenario names its terrain, robot, initial state, controller, medium, time
step, duration and solver (see sim/README.md for the keys). :func:`load` reads
one into a :class:`Scenario`; :func:`build` turns it into a
:class:`~granular.simulation.simulation.Simulation` (an immutable SimModel and
its mutable state); :func:`run` steps and records it.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from granular.contact.detection import FootContact
from granular.contact.qp import make_solver
from granular.dynamics import terrain as terrain_mod
from granular.dynamics.multibody import Body, MultiBody
from granular.errors import GranularError
from granular.io.files import read_toml
from granular.io.resources import shipped
from granular.scenarios.control import Hold, JointPD, Keyframes, Passive, Path as RefPath, PIDTracker, Trot
from granular.scenarios.robots import load_quadruped
from granular.simulation.simulation import Recorder, Run, Simulation
from granular.simulation.step import SimModel, State

TOP_KEYS = {"description", "duration", "dt", "medium", "solver", "representation", "normals", "terrain",
            "robot", "initial", "control"}


@dataclass(frozen=True)
class Scenario:
    """A scenario file, read and checked. Tables ([terrain], [robot], [initial], [control]) stay
    plain dicts until :func:`build` turns them into objects; ``with_(…)`` applies overrides."""

    name: str
    path: Path
    duration: float
    dt: float = 1e-3
    medium: str = "sand"
    solver: str = "daqp"
    representation: str = "fixed"
    normals: int = 32
    description: str = ""
    terrain: dict = field(default_factory=dict)
    robot: dict = field(default_factory=dict)
    initial: dict = field(default_factory=dict)
    control: dict = field(default_factory=dict)

    def with_(self, **overrides) -> "Scenario":
        """A copy with the given fields replaced; ``None`` values leave a field as it is."""
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})

    @property
    def where(self) -> str:
        return str(self.path)


def names() -> list:
    """The shipped scenarios."""
    return sorted(p.stem for p in shipped("sim").glob("*.toml"))


def find(name: str) -> Path:
    """A shipped scenario's name, or a path to a scenario file."""
    path = Path(name)
    if path.suffix == ".toml" and path.is_file():
        return path
    candidate = shipped("sim") / f"{name}.toml"
    if candidate.is_file():
        return candidate
    raise GranularError(f"unknown scenario {name!r}; known: {', '.join(names())}")


def load(name: str) -> Scenario:
    path = find(name)
    spec = read_toml(path, "scenario", known=TOP_KEYS, required=("duration", "robot"))
    where = str(path)
    tables = {}
    for key in ("terrain", "robot", "initial", "control"):
        tables[key] = spec.get(key, {})
        if not isinstance(tables[key], dict):
            raise GranularError(f"{where}: [{key}] must be a table")
    for key in ("medium", "solver", "representation", "description"):
        if key in spec and not isinstance(spec[key], str):
            raise GranularError(f"{where}: {key} must be a string, got {spec[key]!r}")
    normals = _number(spec, "normals", where, 32, positive=True)
    if normals != int(normals):
        raise GranularError(f"{where}: normals must be a whole number, got {normals}")
    return Scenario(name=path.stem, path=path, duration=_number(spec, "duration", where, positive=True),
                    dt=_number(spec, "dt", where, 1e-3, positive=True), medium=spec.get("medium", "sand"),
                    solver=spec.get("solver", "daqp"), representation=spec.get("representation", "fixed"),
                    normals=int(normals), description=spec.get("description", ""), **tables)


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


def build(scenario: Scenario) -> Simulation:
    """The scenario's simulation at its initial state."""
    from granular.learning.catalog import load_model

    where = scenario.where
    wrenches = load_model(scenario.medium)
    robot_spec = scenario.robot
    kind = robot_spec.get("kind", "foot")
    robot = None
    if kind == "foot":
        mb, contacts = single_foot(robot_spec, wrenches.dataset.foot, f"{where} [robot]")
    elif kind == "quadruped":
        if "spec" not in robot_spec:
            raise GranularError(f"{where} [robot]: kind 'quadruped' needs spec = 'robots/….toml'")
        robot = load_quadruped(Path(scenario.path).parent / robot_spec["spec"], wrenches.dataset.foot)
        mb, contacts = robot.multibody, robot.contacts
    else:
        raise GranularError(f"{where} [robot]: unknown kind {kind!r}; choose 'foot' or 'quadruped'")
    ground = terrain_mod.from_spec(scenario.terrain, f"{where} [terrain]")
    model = SimModel(mb, contacts, ground, wrenches, dt=scenario.dt, representation=scenario.representation,
                     normals=scenario.normals)
    controller = make_controller(scenario.control, mb, scenario.dt, f"{where} [control]", robot)
    state = initial_state(scenario.initial, mb, ground, f"{where} [initial]", controller)
    return Simulation(model, state, controller, make_solver(scenario.solver))


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


def run(scenario: Scenario, progress: bool = False) -> Run:
    """Build the scenario, step it for its duration and record it."""
    sim = build(scenario)
    steps = int(round(scenario.duration / sim.model.dt))
    recorder = Recorder(sim, steps, scenario.name, sim.model.wrenches.dataset.medium)
    sim.rollout(steps, [recorder], progress=scenario.name if progress else None)
    return recorder.run


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
