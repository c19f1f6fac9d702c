"""3D scenarios: a MuJoCo robot (MJCF, or a URDF MuJoCo compiles) with granular feet.

A scenario file names the robot's model and which of its geoms are feet in the medium::

    duration = 2.0
    [robot]
    mjcf = "robots/foot3d.xml"          # relative to the scenario file; or urdf = "…" (robot3d)
    [granular]
    medium = "sand3d"                   # a shipped 3D model name or a model file
    feet = ["foot"]                     # geom names: cylinder, sphere or capsule
    law = "data-flow"                   # or max-dissipation
    [terrain]
    kind = "flat"                       # or slope, with angle (rad)
    [control]
    kind = "none"                       # or pd: actuators' targets held (the MJCF's actuators)
    targets = []

The time step is the MJCF's ``<option timestep>`` unless ``dt`` is given; actuators, joint limits
and every rigid contact are MuJoCo's. The run is :func:`run`'s: the coupled step of
:mod:`granular.simulation.mujoco3d` repeated, recording MuJoCo's state, per foot its θ and force,
and the system's energy (MuJoCo's kinetic + gravitational potential) after each step (:data:`RECORD`).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from granular.errors import GranularError
from granular.io.schema import Finite, Positive, Schema, load as load_schema

from granular.contact.law3d import LAWS  # the scenario file's choices of law
from granular.scenarios import gait3d, robot3d

log = logging.getLogger(__name__)


class RobotSection(Schema):
    """The robot's file, relative to the scenario: ``mjcf``, or ``urdf`` with a free base unless
    ``floating = false`` and position actuators of gains ``kp`` (N·m/rad), ``kv`` (N·m·s/rad) on
    its joints (:mod:`granular.scenarios.robot3d`)."""

    mjcf: str | None = None
    urdf: str | None = None
    floating: bool = True
    kp: Positive = 200.0
    kv: Finite = 10.0


class GranularSection(Schema):
    feet: tuple[str, ...]
    medium: str = "sand3d"
    law: Literal["data-flow", "max-dissipation"] = "data-flow"


class TerrainSection(Schema):
    kind: Literal["flat", "slope", "profile"] = "flat"
    angle: Finite = 0.0
    height: Finite = 0.0
    points: tuple[tuple[Finite, Finite], ...] = ()   # profile: [x, z] along x, increasing x


class InitialSection(Schema):
    """The robot's first free joint (its base): x and height (m), the planar pitch ``angle`` (rad,
    counter-clockwise about −y), forward velocity (m/s). Absent: the MJCF's own pose."""

    x: Finite = 0.0
    height: Finite | None = None
    angle: Finite = 0.0
    velocity: Finite = 0.0


#: The 3D control kinds: none; pd (the actuators' targets held); the shipped robots' gaits.
CONTROLS = ("none", "pd", "trot", "hold", "tripod")


class ControlSection(Schema):
    kind: Literal[CONTROLS] = "none"
    targets: tuple[Finite, ...] = ()
    # trot: the planar RoboSimian's gait (granular.scenarios.control.Trot) on a robot whose 12
    # position actuators are its limbs' hip, knee and ankle (FL, FR, RL, RR = front_1, front_2,
    # rear_1, rear_2), with the planar spec's link lengths for the legs' inverse kinematics
    spec: str = "robots/robosimian.toml"
    period: Positive = 0.8
    step: Finite = 0.12
    lift: Finite = 0.15
    z: Finite = -0.70
    start: Finite = 1.0
    # hold: the planar Hold's ankle targets {limb: [x, z]} relative to the hips (joints locked)
    legs: dict[str, tuple[Finite, Finite]] = {}
    # tripod: a hexapod's alternating tripods (12 actuators: yaw, lift per leg, legs left-front,
    # right-front, left-middle, right-middle, left-rear, right-rear), period as the trot's
    swing: Finite = 0.3              # rad: each leg's yaw stroke is ±swing
    lift_angle: Finite = 0.4             # rad: the lift joint's angle at mid-swing


class Scenario3DFile(Schema):
    robot: RobotSection
    granular: GranularSection
    description: str = ""
    duration: Positive = 1.0
    dt: Positive | None = None
    terrain: TerrainSection = TerrainSection()
    control: ControlSection = ControlSection()
    initial: InitialSection | None = None


def is_3d(path) -> bool:
    """Whether a scenario file names a MuJoCo model (its [robot] has ``mjcf`` or ``urdf``, or their
    options, or it has a [granular] section)."""
    import tomllib

    try:
        data = tomllib.loads(Path(path).read_text())
        robot = data.get("robot", {})
        # a [granular] section is 3D's alone: a misspelt mjcf is then named as 3D's unknown key
        return bool(set(RobotSection.__struct_fields__) & set(robot)) or "granular" in data
    except (OSError, ValueError, AttributeError):
        return False


@dataclass
class World:
    """A built 3D scenario: MuJoCo's model and data, the granular feet, the terrain (a mujoco3d.Ground)."""

    spec: Scenario3DFile
    path: Path
    mj_model: object
    mj_data: object
    feet: object
    terrain: object
    gait: object = None      # gait3d.Quadruped or Tripod: MuJoCo's data -> actuator targets, each step
    workspace: object = None  # the coupling's Workspace, carried from step to step


def load(path) -> Scenario3DFile:
    return load_schema(path, Scenario3DFile, "3D scenario",
                       {"granular.law": LAWS, "control.kind": CONTROLS, "terrain.kind": ("flat", "slope", "profile")})


def _warn_limits(path, mj_model, targets):
    """One warning for held targets at or past their joint's limits: MuJoCo's limit then acts after
    the medium's impulse, which the contact law did not see, and that impulse can do work at the
    velocity MuJoCo integrates (the summary's ``medium_gave_J``)."""
    import mujoco

    at = []
    for a, target in enumerate(targets):
        joint = mj_model.actuator_trnid[a, 0]
        if (mj_model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT and mj_model.jnt_limited[joint]
                and not mj_model.jnt_range[joint, 0] < target < mj_model.jnt_range[joint, 1]):
            lo, hi = mj_model.jnt_range[joint]
            at.append(f"targets[{a}] = {target:g} ({mj_model.joint(joint).name or joint}: {lo:g} to {hi:g})")
    if at:
        log.warning("%s: control.%s: at or past the joint's limit; MuJoCo's limit then acts after the medium's "
                    "impulse, which the contact law does not see (the medium may give energy back)", path, "; ".join(at))


def build(path, medium: str | None = None, law: str | None = None, duration: float | None = None,
          dt: float | None = None) -> World:
    import mujoco

    from granular.simulation import mujoco3d

    path = Path(path)
    spec = load(path)
    robot = spec.robot
    if (robot.mjcf is None) == (robot.urdf is None):
        raise GranularError(f"{path}: [robot] names its model by one of mjcf = \"….xml\" or urdf = \"….urdf\"")
    key, name = ("urdf", robot.urdf) if robot.urdf is not None else ("mjcf", robot.mjcf)
    model_file = (path.parent / name).resolve()
    if not model_file.is_file():
        raise GranularError(f"{path}: robot.{key} {name!r}: no such file ({model_file})")
    mj_model = robot3d.load(model_file, key == "urdf", robot.floating, robot.kp, robot.kv)
    if dt is not None or spec.dt is not None:
        mj_model.opt.timestep = dt if dt is not None else spec.dt
    wrenches = _medium(path, medium or spec.granular.medium)
    try:
        feet = robot3d.foot_geoms(mj_model, spec.granular.feet)
    except GranularError as exc:
        raise GranularError(f"{path}: {exc}") from None
    feet = mujoco3d.attach(mj_model, feet, wrenches, law or spec.granular.law, where=str(path))
    gait = (gait3d.quadruped(path, spec.control, mj_model) if spec.control.kind in ("trot", "hold")
            else gait3d.tripod(path, spec.control, mj_model) if spec.control.kind == "tripod" else None)
    if spec.control.kind == "pd" and len(spec.control.targets) != mj_model.nu:
        raise GranularError(f"{path}: control.targets has {len(spec.control.targets)} values; the model has "
                            f"{mj_model.nu} actuators")
    try:
        terrain = mujoco3d.terrain(spec.terrain.kind, angle=spec.terrain.angle, height=spec.terrain.height,
                                   points=spec.terrain.points)
    except GranularError as exc:
        raise GranularError(f"{path}: {exc}") from None
    data = mujoco.MjData(mj_model)
    if spec.control.kind == "pd":
        data.ctrl[:] = spec.control.targets
        _warn_limits(path, mj_model, spec.control.targets)
    if gait is not None:  # standing in the gait's first pose, its joints at their targets
        data.ctrl[:] = gait.at(0.0)
        data.qpos[mj_model.jnt_qposadr[mj_model.actuator_trnid[:, 0]]] = data.ctrl
    if spec.initial is not None:
        _place(path, spec.initial, mj_model, data)
    mujoco.mj_forward(mj_model, data)
    if duration is not None:
        spec = _with_duration(spec, duration)
    return World(spec, path, mj_model, data, feet, terrain, gait, mujoco3d.Workspace())


def _place(path, initial, mj_model, data):
    """Put the base (the model's first joint, a free joint) where [initial] says."""
    import mujoco

    if mj_model.njnt == 0 or mj_model.jnt_type[0] != mujoco.mjtJoint.mjJNT_FREE:
        raise GranularError(f"{path}: [initial] places the robot's base: its first joint must be a free joint")
    data.qpos[0] = initial.x
    if initial.height is not None:
        data.qpos[2] = initial.height
    half = -0.5 * initial.angle  # the planar angle turns about −y
    data.qpos[3:7] = [np.cos(half), 0.0, np.sin(half), 0.0]
    data.qvel[0] = initial.velocity


def _with_duration(spec, duration):
    import msgspec

    return msgspec.structs.replace(spec, duration=duration)


def _medium(path, name):
    """A 3D medium's name (sand3d), or a 3D model file, relative to the scenario file."""
    from granular.learning.catalog import load_model

    if name.endswith(".h5") and not Path(name).is_file():
        name = str(path.parent / name)
    return load_model(name, "3d")


def energy(world) -> float:
    """Kinetic plus gravitational potential energy (J) of the MuJoCo model now."""
    import mujoco

    m, d = world.mj_model, world.mj_data
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    mass = m.body_mass[1:]
    return float(0.5 * d.qvel @ M @ d.qvel - (mass * (d.xipos[1:] @ m.opt.gravity)).sum())


def run(world, progress: bool = False) -> dict:
    """Step the scenario to its duration: the record (:data:`RECORD`)."""
    import mujoco
    from tqdm import tqdm

    from granular.simulation import mujoco3d

    m, d = world.mj_model, world.mj_data
    steps = int(round(world.spec.duration / m.opt.timestep))
    n = len(world.feet.names)
    rec = {"t": np.zeros(steps + 1), "pos": np.zeros((steps + 1, m.nbody, 3)), "qpos": np.zeros((steps + 1, m.nq)),
           "qvel": np.zeros((steps + 1, m.nv)), "theta": np.zeros((steps + 1, n, 2)), "energy": np.zeros(steps + 1),
           "active": np.zeros((steps, n), bool), "force": np.zeros((steps, n, 3)), "wrench": np.zeros((steps, n, 6)),
           "p_center": np.zeros((steps, n, 3)), "work": np.zeros(steps), "actuators": np.zeros(steps),
           "fell_back": np.zeros(steps, bool)}
    _record(rec, 0, world)
    for k in tqdm(range(1, steps + 1), desc=world.path.stem, disable=None if progress else True, unit="step"):
        if world.gait is not None:
            d.ctrl[:] = world.gait(d)
        result, thetas = mujoco3d.step(m, d, world.feet, world.terrain, workspace=world.workspace)
        mujoco.mj_fwdPosition(m, d)  # positions and mass matrix after the step, for the record
        rec["actuators"][k - 1] = m.opt.timestep * (d.qfrc_actuator @ d.qvel)  # the step's force, v⁺ (as the medium's)
        states = _record(rec, k, world)
        for j, (p, force, _, wrench) in mujoco3d.foot_forces(states, thetas, result, m.opt.timestep).items():
            rec["active"][k - 1, j], rec["force"][k - 1, j], rec["wrench"][k - 1, j], rec["p_center"][k - 1, j] = \
                True, force, wrench, p
        if result is not None:
            rec["work"][k - 1], rec["fell_back"][k - 1] = result.work, result.fell_back
    return rec


#: What :func:`run` records: after each step (S + 1 rows) ``t`` s, ``pos`` (nbody, 3) m, ``qpos``,
#: ``qvel`` (MuJoCo's), the feet's ``theta`` (d m, φ rad), ``energy`` J; per step (S rows) and foot,
#: ``active`` (in the medium), ``force`` (3,) N in world axes at ``p_center`` (3,) m, ``wrench`` (6,)
#: N, N·m about p_r in the foot's tilt frame, the step's ``work`` J by the medium on the bodies and
#: ``actuators`` J by the actuators (each: the step's generalized force times h and the velocity
#: MuJoCo integrated), and whether data-flow ``fell_back`` to max-dissipation's impulses in the step.
RECORD = ("t", "pos", "qpos", "qvel", "theta", "energy", "active", "force", "wrench", "p_center", "work",
          "actuators", "fell_back")


def _record(rec, k, world):
    """Row k of the per-state record; returns the feet's states now."""
    from granular.simulation import mujoco3d

    d = world.mj_data
    states = mujoco3d.foot_states(world.mj_model, d, world.feet, world.terrain)
    rec["t"][k] = d.time
    rec["pos"][k] = d.xpos
    rec["qpos"][k], rec["qvel"][k] = d.qpos, d.qvel
    rec["theta"][k] = [s[0] for s in states]
    rec["energy"][k] = energy(world)
    return states


def summary(world, rec) -> dict:
    """What ``granular sim FILE.toml --json`` prints for a 3D scenario."""
    m = world.mj_model
    bodies = {}
    for b in range(1, m.nbody):
        name = m.body(b).name or f"body{b}"
        bodies[name] = {"initial_pos": rec["pos"][0, b].round(6).tolist(), "final_pos": rec["pos"][-1, b].round(6).tolist()}
    depth = -rec["theta"][:, :, 0]
    gained = np.diff(rec["energy"])
    # time in the medium beyond the data (deeper, or more tilted: W(θ) is then extrapolated or clamped)
    theta = rec["theta"][1:]
    outside = world.feet.model.outside(theta).reshape(theta.shape[:2]).sum(axis=0)
    return {"scenario": world.path.stem, "kind": "3d", "duration_s": round(float(rec["t"][-1]), 9),
            "dt_s": float(m.opt.timestep), "steps": len(rec["t"]) - 1, "medium": world.feet.model.dataset.medium,
            "contact": world.feet.law, "law_fallback_steps": int(rec["fell_back"].sum()), "bodies": bodies,
            "feet": {name: {"max_depth_m": float(max(0.0, depth[:, j].max())),
                            "outside_data_s": round(float(outside[j]) * float(m.opt.timestep), 9),
                            "final_theta": rec["theta"][-1, j].round(6).tolist()}
                     for j, name in enumerate(world.feet.names)},
            "energy": {"initial_J": float(rec["energy"][0]), "final_J": float(rec["energy"][-1]),
                       "largest_gain_per_step_J": float(max(0.0, gained.max())) if len(gained) else 0.0,
                       "medium_took_J": float(-np.minimum(rec["work"], 0.0).sum()),
                       "medium_gave_J": float(np.maximum(rec["work"], 0.0).sum()),
                       "actuators_did_J": float(rec["actuators"].sum())},
            "final_speed": float(np.abs(world.mj_data.qvel).max())}
