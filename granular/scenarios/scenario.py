"""Scenarios: TOML files under sim/ that set up a run.

A scenario names its terrain, robot, initial state, controller, medium, time
step, duration and solver (see sim/README.md for the keys). :func:`load` reads
one into a :class:`Scenario`; :func:`build` turns it into a
:class:`~granular.simulation.simulation.Simulation` (an immutable SimModel and
its mutable state); :func:`run` steps and records it.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Annotated, Literal

import logging

import msgspec
import numpy as np
from msgspec import Meta

from granular.contact import compliant as compliant_laws
from granular.contact.detection import FootContact
from granular.contact.flow import DEFAULT_LAW
from granular.contact.solvers import make_solver
from granular.dynamics import terrain as terrain_mod
from granular.dynamics.multibody import Body, MultiBody
from granular.errors import GranularError
from granular.io.schema import Finite, NonNegative, Positive, Schema, load as load_schema, parse
from granular.io.resources import shipped
from granular.scenarios.control import (Carriage, Drive, Hold, JointPD, Keyframes, Passive, Path as RefPath,
                                        PIDTracker, Trot)
from granular.scenarios import walker, wheels
from granular.scenarios.robots import load_quadruped
from granular.simulation.simulation import Recorder, Run, Simulation
from granular.simulation.step import SimModel, State

log = logging.getLogger(__name__)

LIMBS = Literal["front_1", "front_2", "rear_1", "rear_2"]
XZ = tuple[Finite, Finite]


class Flat(Schema, tag="flat", tag_field="kind"):
    height: Finite = 0.0


class Slope(Schema, tag="slope", tag_field="kind"):
    angle: Annotated[float, Meta(ge=-1.2, le=1.2)]  # rad, counter-clockwise
    height: Finite = 0.0


class Profile(Schema, tag="profile", tag_field="kind"):
    points: Annotated[list[XZ], Meta(min_length=2)]


class FootRobot(Schema, tag="foot", tag_field="kind"):
    mass: Positive = 7.357                   # kg (paper §IV-C1)
    inertia: Positive = 0.061                # kg·m²
    grain_mass: tuple[NonNegative, NonNegative, NonNegative] | None = None  # default: twice the foot's
    com_height: Finite | None = None         # m up the axis from p_center; default: half the foot


class QuadrupedRobot(Schema, tag="quadruped", tag_field="kind"):
    spec: str                                # robot spec file, relative to the scenario file


class WalkerRobot(Schema, tag="walker", tag_field="kind"):
    """Zheng & Wang's compass-gait walker (scenarios/walker.py); defaults: their §4 parameters."""
    mass: Positive = 1.0                     # kg per leg
    inertia: Positive = 0.0096               # kg·m² per leg, about its centre of mass
    length: Positive = 0.40                  # m, hip to the bottom of the foot
    com: Positive = 0.10                     # m, hip to the leg's centre of mass
    foot_radius: NonNegative = 0.08          # m, the round foot's arc (0: point feet)
    hip_mass: NonNegative = 0.0              # kg, a point mass at the hip
    swing_margin: NonNegative = 0.03         # m a landing foot must be ahead to take the load (detection.leading)


class WheelRobot(Schema, tag="wheel", tag_field="kind"):
    """One rigid wheel (scenarios/wheels.py) of the medium's geometry: the test bed's."""
    mass: Positive = 10.19                   # kg: 100 N on the soil
    inertia: Positive | None = None          # kg·m² about the axle; default a disc's, m r² / 2


class RoverRobot(Schema, tag="rover", tag_field="kind"):
    """A planar rover: a chassis on driven wheels of the medium's geometry (scenarios/wheels.py)."""
    mass: Positive = 20.0                    # kg, the chassis
    inertia: Positive = 1.5                  # kg·m² about its centre of mass
    wheels: Annotated[int, Meta(ge=2, le=12)] = 3
    wheelbase: Positive = 0.8                # m from the first axle to the last
    axle_height: Finite = -0.1               # m, the axles below (−) the chassis' centre of mass
    wheel_mass: Positive = 2.0               # kg per wheel


class Initial(Schema):
    x: Finite = 0.0
    z: Finite | None = None                  # base frame height, or:
    height: Finite | None = None             # base frame height above the terrain at x
    angle: Finite = 0.0
    vx: Finite = 0.0
    vz: Finite = 0.0
    omega: Finite = 0.0
    stance: tuple[Finite, Finite] | None = None  # walker: (angle, rate) of the leg standing at x
    swing: tuple[Finite, Finite] | None = None   # walker: (angle, rate) of the other leg


class Line(Schema, tag="line", tag_field="kind"):
    duration: Positive
    start: XZ = (0.0, 0.0)
    velocity: XZ = (0.0, 0.0)
    angle: Finite = 0.0


class Arc(Schema, tag="arc", tag_field="kind"):
    duration: Positive
    center: XZ
    radius: Positive
    from_angle: Finite
    to_angle: Finite
    angle: Finite = 0.0


Gains = tuple[NonNegative, NonNegative, NonNegative]


class NoControl(Schema, tag="none", tag_field="kind"):
    pass


class Track(Schema, tag="track", tag_field="kind"):
    path: Line | Arc
    kp: Gains = (8000.0, 20000.0, 300.0)
    ki: Gains = (4000.0, 6000.0, 1000.0)
    kd: Gains = (200.0, 400.0, 10.0)
    weight_feedforward: bool = True


class TrotGait(Schema, tag="trot", tag_field="kind"):
    period: Annotated[float, Meta(ge=0.05, le=100.0)] = 0.8   # s per gait cycle
    step: Finite = 0.12                                        # m stroke
    lift: NonNegative = 0.08                                   # m swing height
    z: Annotated[float, Meta(ge=-2.0, lt=0.0)] = -0.62         # m ankle below the hip
    start: NonNegative = 0.5                                   # s of standing first


#: The test bed's slip when a scenario sets neither slip nor torque.
DEFAULT_SLIP = 0.2


class TestBedControl(Schema, tag="testbed", tag_field="kind"):
    speed: Positive = 0.05                                    # m/s, the carriage
    slip: Annotated[float, Meta(ge=-1.0, lt=1.0)] | None = None   # the wheel turns at −speed / ((1 − slip) r); default 0.2
    torque: Finite | None = None                              # N·m: drive at this torque instead (slip free)


class DriveControl(Schema, tag="drive", tag_field="kind"):
    speed: Finite = 0.2                                       # m/s, the wheels' rim speed (forward > 0)
    max_torque: Positive = 20.0                               # N·m per wheel
    ramp: NonNegative = 0.5                                   # s from rest to speed
    torque: Finite | None = None                              # N·m per wheel: drive at this torque instead


class HoldPose(Schema, tag="hold", tag_field="kind"):
    legs: dict[LIMBS, XZ]


class KeyframeGait(Schema, tag="keyframes", tag_field="kind"):
    frames: Annotated[list[dict[str, float | tuple[float, float]]], Meta(min_length=1)]  # {t = …, limb = [x, z]}


class CompliantParameters(Schema):
    """A compliant law's parameters that override the ones fitted to the medium (contact/compliant.py)."""

    stiffness: Positive | None = None            # K, N/mⁿ of the whole plate
    exponent: Positive | None = None             # n
    friction: NonNegative | None = None          # μ_k, while sliding
    static_friction: NonNegative | None = None   # μ_s, the most a held foot's friction bears
    restitution: Annotated[float, Meta(gt=0.0, le=1.0)] | None = None   # e at impact_speed
    impact_speed: Positive | None = None         # m/s
    damping: NonNegative | None = None           # kelvin-voigt's D, N·s/m


class ScenarioFile(Schema):
    """A scenario file (sim/README.md documents the keys)."""

    duration: Annotated[float, Meta(gt=0.0, le=1e4)]   # s
    robot: FootRobot | QuadrupedRobot | WalkerRobot | WheelRobot | RoverRobot
    dt: Annotated[float, Meta(ge=1e-5, le=0.05)] = 1e-3
    medium: str = "sand"
    solver: Literal["native", "daqp", "quadprog", "osqp", "cvxpy"] = "native"
    representation: Literal["fixed", "exact"] = "fixed"
    normals: Annotated[int, Meta(ge=8, le=256)] = 32
    contact: Literal["max-dissipation", "data-flow", "hertz", "kelvin-voigt", "hunt-crossley",
                     "lankarani-nikravesh", "flores"] = DEFAULT_LAW
    description: str = ""
    terrain: Flat | Slope | Profile = Flat()
    initial: Initial = Initial()
    control: NoControl | Track | TrotGait | HoldPose | KeyframeGait | TestBedControl | DriveControl = NoControl()
    compliant: CompliantParameters = CompliantParameters()
    kinetic_friction: Positive | None = None   # a rigid floor's μ_k under the QP (its data's μ is μ_s)


CHOICES = {"terrain.kind": ("flat", "slope", "profile"),
           "robot.kind": ("foot", "quadruped", "walker", "wheel", "rover"),
           "control.kind": ("none", "track", "trot", "hold", "keyframes", "testbed", "drive"),
           "control.path.kind": ("line", "arc")}


@dataclass(frozen=True)
class Scenario:
    """A scenario file, read and checked. Tables ([terrain], [robot], [initial], [control]) stay
    plain dicts until :func:`build` turns them into objects; ``with_(…)`` applies overrides."""

    name: str
    path: Path
    duration: float
    dt: float = 1e-3
    medium: str = "sand"
    solver: str = "native"
    representation: str = "fixed"
    normals: int = 32
    contact: str = DEFAULT_LAW
    description: str = ""
    terrain: dict = field(default_factory=dict)
    robot: dict = field(default_factory=dict)
    initial: dict = field(default_factory=dict)
    control: dict = field(default_factory=dict)
    compliant: dict = field(default_factory=dict)
    kinetic_friction: float | None = None

    def with_(self, **overrides) -> "Scenario":
        """A copy with the given fields replaced; ``None`` values leave a field as it is."""
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})

    @property
    def where(self) -> str:
        return str(self.path)


def names(kind: str = "planar") -> list:
    """The shipped scenarios of ``kind``: 'planar' (this module's) or '3d' (MuJoCo robots,
    :mod:`granular.scenarios.scenario3d`)."""
    from granular.scenarios.scenario3d import is_3d

    return sorted(p.stem for p in shipped("sim").glob("*.toml") if is_3d(p) == (kind == "3d"))


def find(name: str) -> Path:
    """A shipped scenario's name, or a path to a scenario file."""
    path = Path(name)
    if path.suffix == ".toml" and path.is_file():
        return path
    candidate = shipped("sim") / f"{name}.toml"
    if candidate.is_file():
        return candidate
    raise GranularError(f"unknown scenario {name!r}; known: {', '.join(names())}; 3D: {', '.join(names('3d'))}")


def load(name: str) -> Scenario:
    """A scenario file, checked against :class:`ScenarioFile`."""
    path = find(name)
    parsed = load_schema(path, ScenarioFile, "scenario", CHOICES)
    return Scenario(name=path.stem, path=path, **msgspec.to_builtins(parsed))


def checked(scenario: Scenario) -> ScenarioFile:
    """The scenario, overrides included, checked against the schema."""
    fields = {k: v for k, v in asdict(scenario).items() if k not in ("name", "path")}
    return parse(fields, ScenarioFile, scenario.where, CHOICES)


def single_foot(robot: FootRobot, foot):
    """A free foot: its body frame sits at p_center with z along the axis; its COM is
    ``com_height`` up the axis (default: halfway, a uniform cylinder)."""
    grains = robot.grain_mass or (2 * robot.mass, 2 * robot.mass, 2 * robot.inertia)
    com = foot.length / 2 if robot.com_height is None else robot.com_height
    mb = MultiBody((Body("foot", robot.mass, robot.inertia, com=(0.0, com)),))
    return mb, (FootContact("foot", 0, foot=foot, grain_mass=tuple(grains)),)


def build(scenario: Scenario, wrenches=None) -> Simulation:
    """The scenario's simulation at its initial state; ``wrenches``: the medium's model, if the caller
    has it loaded already (e.g. validate, which simulates many runs in one)."""
    from granular.learning.catalog import load_model

    spec = checked(scenario)
    where = scenario.where
    try:
        wrenches = load_model(spec.medium) if wrenches is None else wrenches
    except GranularError as exc:
        raise GranularError(f"{where}: medium: {exc}") from None
    rolls = isinstance(spec.robot, (WheelRobot, RoverRobot))
    if rolls != wheels.is_wheel(wrenches.dataset):
        kind = type(spec.robot).__struct_config__.tag
        raise GranularError(f"{where}: a {kind} robot needs a {'wheel' if rolls else 'foot'} medium, but "
                            f"{spec.medium!r} was recorded for a {'foot' if rolls else 'wheel'}"
                            + (" (granular synth --source wheel)" if rolls else ""))
    robot, leading = None, None
    if isinstance(spec.robot, FootRobot):
        mb, contacts = single_foot(spec.robot, wrenches.dataset.foot)
    elif isinstance(spec.robot, WalkerRobot):
        r = spec.robot
        mb, contacts = walker.multibody(r.mass, r.inertia, r.length, r.com, r.foot_radius, wrenches.dataset.foot,
                                        r.hip_mass)
        leading = r.swing_margin
    elif isinstance(spec.robot, WheelRobot):
        mb, contacts = wheels.single(spec.robot.mass, spec.robot.inertia, wrenches.dataset.foot)
    elif isinstance(spec.robot, RoverRobot):
        r = spec.robot
        mb, contacts = wheels.rover(r.mass, r.inertia, r.wheels, r.wheelbase, r.axle_height, r.wheel_mass,
                                    wrenches.dataset.foot)
    else:
        robot = load_quadruped(Path(scenario.path).parent / spec.robot.spec, wrenches.dataset.foot)
        mb, contacts = robot.multibody, robot.contacts
    ground = make_terrain(spec.terrain)
    try:
        model = SimModel(mb, contacts, ground, wrenches, dt=spec.dt, representation=spec.representation,
                         normals=spec.normals, contact_law=spec.contact, leading_foot=leading,
                         compliant=_compliant(spec, wrenches.dataset, where), kinetic_friction=spec.kinetic_friction)
    except GranularError as exc:
        raise GranularError(f"{where}: {exc}") from None
    controller = make_controller(spec.control, mb, spec.dt, f"{where} [control]", robot, spec.robot, contacts)
    state = initial_state(spec.initial, mb, ground, f"{where} [initial]", controller, spec.robot)
    return Simulation(model, state, controller, make_solver(spec.solver))


def make_terrain(spec):
    if isinstance(spec, Flat):
        return terrain_mod.flat(spec.height)
    if isinstance(spec, Slope):
        return terrain_mod.slope(spec.angle, spec.height)
    pts = np.asarray(spec.points, dtype=float)
    return terrain_mod.Terrain(tuple(pts[:, 0]), tuple(pts[:, 1]))


def initial_state(init: Initial, mb, ground, where, controller=None, robot=None):
    """Base pose and velocity from [initial]; joints at the controller's first targets; a walker
    from its legs' angles and rates."""
    legs = init.stance is not None or init.swing is not None
    if isinstance(robot, WalkerRobot):
        if init.stance is None or init.swing is None:
            raise GranularError(f"{where}: a walker needs stance = [angle, rate] and swing = [angle, rate]")
        return walker.initial_state(ground, init.x, init.stance, init.swing, robot.length, robot.foot_radius)
    if legs:
        raise GranularError(f"{where}: stance and swing are for a walker robot")
    if init.z is not None and init.height is not None:
        raise GranularError(f"{where}: give z or height, not both")
    z = float(ground.height(init.x)) + init.height if init.height is not None else (init.z or 0.0)
    q = np.zeros(mb.ndof)
    v = np.zeros(mb.ndof)
    q[:3] = init.x, z, init.angle
    v[:3] = init.vx, init.vz, init.omega
    if isinstance(controller, JointPD):
        q[3:] = controller.targets(0.0)
    return State(0.0, q, v)


def _compliant(spec: ScenarioFile, dataset, where):
    """The compliant law fitted to the medium, with the scenario's [compliant] overrides; None
    under the QP's laws (whose W(θ) ignores the table: said, not fatal, as --contact may switch)."""
    options = {k: v for k, v in msgspec.structs.asdict(spec.compliant).items() if v is not None}
    if spec.contact not in compliant_laws.LAWS:
        if options:
            log.warning("%s: [compliant] is ignored under contact = %r", where, spec.contact)
        return None
    return compliant_laws.fit(spec.contact, dataset, **options)


def make_controller(spec, mb, dt, where, robot=None, robot_spec=None, contacts=()):
    """The controller of [control]; ``robot`` is a legged robot's model, ``robot_spec`` the [robot]
    table, ``contacts`` its feet or wheels."""
    if isinstance(spec, NoControl):
        return Passive(mb.ndof)
    if isinstance(spec, (TestBedControl, DriveControl)):
        return _wheel_controller(spec, mb, dt, where, robot_spec, contacts)
    if isinstance(spec, Track):
        path = RefPath(kind=type(spec.path).__struct_config__.tag, **msgspec.structs.asdict(spec.path))
        weight = float(mb.mass.sum() * mb.gravity) if spec.weight_feedforward else 0.0
        return PIDTracker(path, dt, kp=spec.kp, ki=spec.ki, kd=spec.kd, weight=weight, ndof=mb.ndof)
    if robot is None:
        raise GranularError(f"{where}: kind {type(spec).__struct_config__.tag!r} needs a legged robot")
    if isinstance(spec, TrotGait):
        gait = Trot(robot, **msgspec.structs.asdict(spec))
    elif isinstance(spec, HoldPose):
        gait = Hold(robot, dict(spec.legs))
    else:
        gait = _keyframes(spec, robot, where)
    return JointPD(robot, gait)


def _wheel_controller(spec, mb, dt, where, robot_spec, contacts):
    """A wheel's test bed or a rover's motors (the wheels' radius: their contacts')."""
    radius = contacts[0].roll_radius if contacts else 0.0
    if isinstance(spec, TestBedControl):
        if not isinstance(robot_spec, WheelRobot):
            raise GranularError(f"{where}: kind 'testbed' drives a single wheel (robot kind 'wheel')")
        body = mb.bodies[0]
        if spec.slip is not None and spec.torque is not None:
            raise GranularError(f"{where}: a test bed sets the slip or the torque, not both (the other is measured)")
        slip = DEFAULT_SLIP if spec.slip is None else spec.slip
        return Carriage(spec.speed, slip, radius, dt, body.mass, body.inertia, spec.torque)
    if not isinstance(robot_spec, RoverRobot):
        raise GranularError(f"{where}: kind 'drive' drives a rover's wheels (robot kind 'rover')")
    return Drive(spec.speed, radius, dt, mb.bodies[1].inertia, spec.max_torque, mb.ndof, spec.ramp, spec.torque)


def _keyframes(spec: KeyframeGait, robot, where):
    times, poses = [], []
    for i, frame in enumerate(spec.frames):
        if not isinstance(frame.get("t"), float) or not np.isfinite(frame["t"]):
            raise GranularError(f"{where}: frames[{i}] needs a time t = … (s)")
        legs = {k: v for k, v in frame.items() if k != "t"}
        unknown = set(legs) - set(LIMBS.__args__)
        if unknown or any(not isinstance(v, tuple) or not np.isfinite(v).all() for v in legs.values()):
            raise GranularError(f"{where}: frames[{i}]: each limb ({', '.join(LIMBS.__args__)}) maps to [x, z]")
        times.append(frame["t"])
        poses.append(legs)
    return Keyframes(robot, tuple(times), tuple(poses))


#: The most steps one recorded run may take (its record grows by a few hundred bytes a step).
MAX_STEPS = 2_000_000


def check_size(scenario: Scenario) -> int:
    """The run's number of steps, refused before any work if its record would not fit in memory."""
    steps = int(round(scenario.duration / scenario.dt))
    if steps > MAX_STEPS:
        raise GranularError(f"{scenario.name}: {scenario.duration:g} s at dt = {scenario.dt:g} s is {steps:,} steps; "
                            f"a recorded run takes at most {MAX_STEPS:,} (shorten --duration or raise --dt)")
    return max(steps, 1)


def run(scenario: Scenario, progress: bool = False) -> Run:
    """Build the scenario, step it for its duration and record it."""
    steps = check_size(scenario)
    sim = build(scenario)
    recorder = Recorder(sim, steps, scenario.name, sim.model.wrenches.dataset.medium)
    sim.rollout(steps, [recorder], progress=scenario.name if progress else None)
    return recorder.run


def body_state(mb, q, v):
    com, angle, com_v, omega = mb.com_states(q, v)
    return {b.name: {"x": float(com[i, 0]), "z": float(com[i, 1]), "angle": float(angle[i]),
                     "vx": float(com_v[i, 0]), "vz": float(com_v[i, 1]), "omega": float(omega[i])}
            for i, b in enumerate(mb.bodies)}


def travel(rec: Run) -> np.ndarray:
    """(steps − 1, feet): the horizontal distance each foot's p_center moves from one recorded step to
    the next while it stays in contact (``slip_m`` sums it over the run)."""
    step = np.diff(rec.p_center, axis=0)
    # a foot tipped past lying flat changes the end that meets the medium (contact.detection): that jump
    # of p_center by about the foot's length is not travel; no foot moves half its length in one step
    length = np.array([c.foot.length for c in rec.model.feet.contacts])
    kept = rec.active[1:] & rec.active[:-1] & (np.hypot(step[..., 0], step[..., 1]) < 0.5 * length)
    return np.abs(step[..., 0]) * kept


def summary(rec: Run) -> dict:
    """The ``--json`` object of a run. Body x, z are centre-of-mass coordinates; angle is
    the body frame's angle (for a foot, its tilt from vertical). Per foot: ``slip_m``, the
    horizontal distance p_center travelled while in contact (not its jump when a tipped foot changes
    the end that meets the medium), ``max_depth_m``, and ``outside_data_s``,
    the time it spent at a configuration outside the data (W extrapolated in depth, clamped in tilt);
    a wheel's also ``wheel_slip`` and ``wheel_slip_end``, its mean slip ratio over the run and over its
    last second (:func:`~granular.scenarios.wheels.slips`).
    A walker's run adds ``gait`` (:func:`~granular.scenarios.walker.gait`)."""
    mb = rec.model.multibody
    first, last = body_state(mb, rec.q[0], rec.v[0]), body_state(mb, rec.q[-1], rec.v[-1])
    depth = np.where(rec.active, -rec.theta[..., 0], 0.0)
    moved = travel(rec)
    outside = rec.model.wrenches.outside(rec.theta.reshape(-1, 2)).reshape(rec.active.shape) & rec.active
    extra = {}
    if rec.model.leading_foot is not None:  # a walker: its steps and limit cycle
        extra["gait"] = walker.gait(rec.t, rec.q, rec.v, rec.active, rec.p_center)
    feet = {name: {"slip_m": float(moved[:, i].sum()), "max_depth_m": float(depth[:, i].max()) if depth.size else 0.0,
                   "outside_data_s": float(outside[:, i].sum() * rec.model.dt)}
            for i, name in enumerate(rec.model.feet.names)}
    if wheels.is_wheel(rec.model.wrenches.dataset) and len(rec.t) > 1:
        for key, slip in (("wheel_slip", wheels.slips(rec)), ("wheel_slip_end", wheels.slips(rec, 1.0))):
            for name, value in zip(rec.model.feet.names, slip):
                feet[name][key] = None if np.isnan(value) else float(value)
    return {
        "scenario": rec.name, "medium": rec.medium, "steps": len(rec.t) - 1, "dt": rec.model.dt,
        "wall_time_s": rec.wall_time_s, "solver": rec.meta["solver"], "representation": rec.meta["representation"],
        "contact": rec.meta["contact"],
        # steps where the data-flow law kept max-dissipation's impulses (simulation.step: no motion under
        # the data's flow for the sliding feet, or the grains' term would have done work)
        "law_fallback_steps": int(rec.meta.get("law_fallback_steps", 0)),
        "bodies": {name: {"initial": first[name], "final": last[name]} for name in first},
        "max_penetration_m": float(depth.max()) if depth.size else 0.0,
        "feet": feet,
        "energy": {"initial": float(rec.energy[0]), "final": float(rec.energy[-1]),
                   "max_step_increase": float(np.diff(rec.energy).max()) if len(rec.energy) > 1 else 0.0},
        **extra,
    }
