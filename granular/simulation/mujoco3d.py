"""Granular feet for MuJoCo models: the coupling step (Zhu et al. 2019's implicit contact, in 3D).

MuJoCo (the ``mujoco`` package) does the multibody dynamics and every rigid contact; the project
does the feet in the medium. One step of length h, in this order:

1. ``mj_step1``: MuJoCo's position and velocity stages (kinematics, the mass matrix M, bias
   forces), then its actuation and smooth acceleration. MuJoCo's integrator moves the velocity by
   v⁺ = v + h M̃⁻¹ f with the step's effective mass M̃ = M − h D, D = ∂f/∂v the derivative of the
   smooth forces it integrates implicitly (:func:`effective_mass`: joint damping under Euler, with
   the actuators' velocity gains under ``implicitfast``). So the bodies would reach the free
   velocity v_free = v + h M̃⁻¹ (applied + actuators + passive − bias) without the medium.
2. Each granular foot's θ against the terrain (p_center: the centre of the foot's lower end face;
   d its lowest point's height above the terrain, φ its axis' tilt from the surface normal, ψ the azimuth
   of its tilt frame F_c3, :mod:`granular.frames3d`) and its Jacobian J (6, nv) at p_center, from
   MuJoCo's ``mj_jacGeom`` at the geom's centre (moved along the rigid body), rotated into F_c3.
   Steps 2 and 3 are one compiled call (:func:`~granular.simulation.coupled3d.feet_step`).
3. The contact law (:mod:`granular.contact.law3d`) solves the feet's impulses c implicitly for the
   step with M̃, v_free and J: the velocity after the step is v_free + M̃⁻¹ Σ J_rᵀ c.
4. The impulses enter MuJoCo as generalized forces Σ J_rᵀ c / h (``qfrc_applied``), and
   ``mj_step2`` finishes the step: its constraint solver for joint limits and every rigid contact,
   integration. Granular feet do not collide with anything in MuJoCo (their contype and
   conaffinity are cleared when the model is loaded).

Why it is consistent: step 3 sees exactly the dynamics step 4 integrates, so the medium's impulse
is the one the law chose: it never does work (a sliding foot's wrench dissipates; a sticking
foot's impulse comes from a QP over ½ v⁺ᵀ M̃ v⁺ whose origin is feasible, so cᵀ J_r v⁺ ≤ 0 at its
optimum), and a foot at rest whose load lies inside W(θ) stays at rest. MuJoCo's own constraints
then act on top, as they would with any applied force. Why ``implicitfast``: a robot's position
servos are stiff; integrated explicitly (Euler) they, not the medium, limit the time step
(``granular bench --stability``). The shipped robots use it; Euler works too. RK4 and the full
``implicit`` integrator are refused (their step is not v + h M̃⁻¹ f with a symmetric M̃).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from granular.compiled import declared, unchecked
from granular.contact import law3d, step3d
from granular.errors import GranularError
from granular.frames3d import foot_axis
from granular.simulation import coupled3d
from granular.simulation.coupled3d import CAPSULE, CYLINDER, SPHERE, _ground, feet_step, foot_frames, free_motion

log = logging.getLogger(__name__)
SHAPES = {"cylinder": CYLINDER, "capsule": CAPSULE, "sphere": SPHERE}  # the foot shapes taken


@dataclass(frozen=True)
class GranularFeet:
    """Which geoms of a MuJoCo model are feet in the medium, and the medium's 3D model."""

    geoms: np.ndarray        # geom ids
    names: tuple
    half_length: np.ndarray  # m: p_center's distance from the geom's centre along its axis
    radius: np.ndarray       # m
    shape: np.ndarray        # mjtGeom ids
    model: object            # WrenchSpaceModel3D
    law: str = law3d.DEFAULT_LAW
    # the MuJoCo model's implicitly integrated forces (:func:`actuation`), read once by :func:`attach`:
    # change the model's integrator, damping or actuator gains after (domain randomisation), and
    # replace(feet, actuation=actuation(mj_model)), or the law no longer sees what MuJoCo integrates
    actuation: "Actuation | None" = None


@dataclass(frozen=True)
class Actuation:
    """Of a MuJoCo model's smooth forces, those its integrator treats implicitly, by their velocity
    coefficients (:func:`effective_mass`): per dof, the joint damping; per actuator, an affine gain's
    (× ctrl) and bias's, and its force range (``limited`` 1.0 where clamped forces drop out)."""

    damping: np.ndarray
    gain: np.ndarray
    bias: np.ndarray
    low: np.ndarray
    high: np.ndarray
    limited: np.ndarray


def attach(mj_model, names, wrench_model, law=law3d.DEFAULT_LAW, where="scenario") -> GranularFeet:
    """The geoms ``names`` of ``mj_model`` as granular feet on ``wrench_model``; their MuJoCo
    collisions are turned off (the medium is their contact). One clear error for a name not in the
    model or a shape that is not a cylinder, capsule or sphere."""
    import mujoco

    integrators = (mujoco.mjtIntegrator.mjINT_EULER, mujoco.mjtIntegrator.mjINT_IMPLICITFAST)
    if mj_model.opt.integrator not in integrators:
        name = mujoco.mjtIntegrator(mj_model.opt.integrator).name.removeprefix("mjINT_").lower()
        raise GranularError(f"{where}: MuJoCo's {name} integrator is not supported with granular feet; "
                            f'use <option integrator="implicitfast"/> (or Euler)')
    if law not in law3d.LAWS:
        raise GranularError(f"{where}: contact law {law!r} is not one of the 3D laws ({', '.join(law3d.LAWS)})")
    if getattr(wrench_model.dataset, "dim", 3) != 6:
        raise GranularError(f"{where}: the medium is planar; MuJoCo feet need a 3D medium (e.g. sand3d)")
    if not len(names):
        raise GranularError(f"{where}: no feet: name the geoms in the medium (granular.feet = [\"foot_fl\", …])")
    twice = sorted({name for name in names if list(names).count(name) > 1})
    if twice:
        raise GranularError(f"{where}: foot geom {', '.join(map(repr, twice))} named more than once in granular.feet")
    ids, half = [], []
    for name in names:
        gid = mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_GEOM, name)
        if gid < 0:
            known = [mj_model.geom(i).name for i in range(mj_model.ngeom) if mj_model.geom(i).name]
            raise GranularError(f"{where}: foot geom {name!r} is not in the model (named geoms: {', '.join(known) or 'none'})")
        shape = int(mj_model.geom_type[gid])
        if shape not in SHAPES.values():
            raise GranularError(f"{where}: foot geom {name!r} is a {mujoco.mjtGeom(shape).name.removeprefix('mjGEOM_').lower()}; "
                                f"granular feet are {', '.join(SHAPES)}")
        ids.append(gid)
        radius = float(mj_model.geom_size[gid, 0])
        # p_center: a cylinder's end face; a capsule's tip; a sphere's lowest point
        half.append({SHAPES["cylinder"]: float(mj_model.geom_size[gid, 1]),
                     SHAPES["capsule"]: float(mj_model.geom_size[gid, 1]) + radius, SHAPES["sphere"]: radius}[shape])
        mj_model.geom_contype[gid] = 0
        mj_model.geom_conaffinity[gid] = 0
    _warn_unlike(mj_model, names, ids, wrench_model.dataset.foot, where)
    return GranularFeet(np.array(ids, dtype=np.int64), tuple(names), np.array(half), mj_model.geom_size[ids, 0].copy(),
                        mj_model.geom_type[ids].astype(np.int64), wrench_model, law, actuation(mj_model))


#: A foot whose radius differs from the data's foot's by more than this share is warned about.
LIKE = 0.1


def _warn_unlike(mj_model, names, ids, foot, where):
    """One warning for the feet whose radius is not the data's foot's: W(θ) is learned for that
    foot (a cylinder of the data's radius), and another foot gets its wrenches unscaled."""
    unlike = [f"{name} {mj_model.geom_size[gid, 0] * 100:.3g} cm" for name, gid in zip(names, ids)
              if abs(mj_model.geom_size[gid, 0] - foot.radius) > LIKE * foot.radius]
    if unlike:
        log.warning(
            "%s: the medium's data are for a foot of radius %.3g cm; feet of another radius (%s) get that "
            "foot's wrenches, unscaled (for your feet: granular synth --source rft3d --foot-radius …, then "
            "granular train)", where, foot.radius * 100, ", ".join(unlike))


@dataclass
class Workspace:
    """What a simulation's coupled steps carry from one to the next, as MuJoCo's mjData does: which
    feet were in the medium and the active set of their QP, the next step's warm start; and the
    step's :meth:`binding` to its MuJoCo model and data."""

    contact: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    warm: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    #: the same feet were in the medium the step before: data-flow follows its last root
    steady: bool = False
    bound: tuple = field(default=(), repr=False, compare=False)
    #: the compiled step's own arrays: ``contact`` and ``warm`` are views of their first entries
    _feet: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False, compare=False)
    _active: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64), repr=False, compare=False)

    def __getstate__(self):
        """A copy (deepcopy, pickle) binds anew: its views would be of the original's mjData."""
        return {**self.__dict__, "bound": (), "contact": self.contact.copy(), "warm": self.warm.copy()}

    def start(self, contact) -> np.ndarray:
        """The warm start for the feet ``contact`` in the medium now (the numpy path's bookkeeping,
        at every step, none in the medium too; the compiled step keeps it in :func:`feet_step`): the
        last step's set if they are the same feet, else a cold one."""
        self.steady = len(contact) > 0 and np.array_equal(contact, self.contact)
        if not self.steady:
            self.contact, self.warm = contact, np.zeros(6 * len(contact) + 1, np.int64)
        return self.warm

    def reset(self):
        """Start the next step cold, as a new simulation would (an episode's reset)."""
        self.contact, self.warm, self.steady = np.zeros(0, np.int64), np.zeros(1, np.int64), False

    def binding(self, mj_model, mj_data, feet, terrain) -> tuple:
        """What :func:`step` reads and fills, made once per model, data, feet and terrain: MuJoCo's
        functions; numpy views of the mjData arrays it reads (MuJoCo allocates them once, with the
        mjData); the arrays it fills (M, the feet's geom Jacobians as views per foot, the moment
        arms); the feet's compiled constants (:func:`constants`). Found anew where any of the four is
        another object: looking them up at every step cost the quadruped's step about 30 µs."""
        b = self.bound
        if b and b[0] is mj_model and b[1] is mj_data and b[2] is feet and b[3] is terrain:
            return b
        import mujoco

        if not isinstance(terrain, Ground):
            raise GranularError(f"the terrain is a {type(terrain).__name__}; granular feet need a mujoco3d.Ground "
                                f"(mujoco3d.terrain('flat' | 'slope' | 'profile', …))")
        d, nv = mj_data, mj_model.nv
        M, jac, moment = np.zeros((nv, nv)), np.zeros((len(feet.geoms), 6, nv)), np.zeros((mj_model.nu, nv))
        jacobians = tuple((jac[k, :3], jac[k, 3:], int(g)) for k, g in enumerate(feet.geoms))
        # moment arms fixed by the model are filled once, not read again at every step
        sparse = () if _fixed_moments(mj_model, moment) or not mj_model.nu else (
            d.actuator_moment, d.moment_rownnz, d.moment_rowadr, d.moment_colind)
        functions = (mujoco.mj_step1, mujoco.mj_fwdActuation, mujoco.mj_fwdAcceleration, mujoco.mj_fullM,
                     mujoco.mj_jacGeom, mujoco.mju_sparse2dense, mujoco.mj_step2)
        self.bound = (mj_model, mj_data, feet, terrain, functions, mj_model.opt, M, jac, jacobians, moment, sparse,
                      d.geom_xpos, d.geom_xmat, d.qacc_smooth, d.qvel, d.ctrl, d.actuator_force, d.qfrc_applied,
                      constants(mj_model, feet))
        return self.bound

    def arrays(self, F: int) -> tuple:
        """The compiled step's in-and-out arrays for F feet (:func:`feet_step`'s ``feet``, ``count``
        and ``active``): its own, or else, where the user set ``contact`` and ``warm`` (or the feet
        are others), theirs copied in, checked (the kernel reads them unchecked: an active set whose
        length does not match, six entries a foot, starts the step cold)."""
        contact, warm = self.contact, self.warm
        if getattr(contact, "base", None) is self._feet and getattr(warm, "base", None) is self._active \
                and len(self._feet) == F:
            return self._feet, len(contact), self._active
        self._feet, self._active = np.zeros(F, np.int64), np.zeros(6 * F + 1, np.int64)
        contact, warm = np.asarray(contact), np.asarray(warm)
        N = len(contact) if contact.ndim == 1 else F + 1
        if (_is(contact, np.int64, 1) and _is(warm, np.int64, 1) and N <= F and len(warm) == 6 * N + 1
                and 0 <= warm[0] <= 6 * N):
            self._feet[:N], self._active[:len(warm)] = contact, warm
        else:
            N, self.steady = 0, False
        self.keep(N, self.steady)
        return self._feet, N, self._active

    def keep(self, N: int, steady: bool):
        """After a compiled step: its N feet in the medium (views of its arrays)."""
        if N != len(self.contact) or getattr(self.contact, "base", None) is not self._feet:
            self.contact, self.warm = self._feet[:N], self._active[:6 * N + 1]
        self.steady = steady


def foot_states(mj_model, mj_data, feet: GranularFeet, terrain):
    """Per foot: θ (2,), the rotation R (6, 6) from F_c3 to world axes, p_center (3,) and the axis (3,)
    (:func:`foot_frames`)."""
    thetas, rotations, centers, axes = foot_frames(mj_data.geom_xpos, mj_data.geom_xmat, feet.geoms, feet.half_length,
                                                   feet.radius, feet.shape, terrain.xs, terrain.zs)
    R = np.zeros((len(thetas), 6, 6))
    R[:, :3, :3] = R[:, 3:, 3:] = rotations
    return list(zip(thetas, R, centers, axes))


def step(mj_model, mj_data, feet: GranularFeet, terrain, applied=None, workspace: Workspace | None = None):
    """One coupled step (module docstring) on the :class:`Ground` ``terrain``; ``applied`` (nv,)
    generalized forces of the user's, kept in ``qfrc_applied``; ``workspace`` the simulation's
    :class:`Workspace` (the QP then starts from the last step's active set). Returns the law's
    :class:`~granular.contact.law3d.Step` (None when no foot is in the medium) and the feet's θ (F, 2)."""
    ws = Workspace() if workspace is None else workspace
    (_, _, _, _, (step1, actuation, acceleration, full_mass, jacobian, dense, step2), opt, M, jac, jacobians, moment,
     sparse, xpos, xmat, qacc, qvel, ctrl, force, qfrc, compiled) = ws.binding(mj_model, mj_data, feet, terrain)
    h = opt.timestep  # read every step: a user may change it
    qfrc[:] = 0.0 if applied is None else applied
    step1(mj_model, mj_data)
    # every foot's stages before θ is known (the fused call finds it): a foot in the air costs
    # MuJoCo's smooth acceleration and one Jacobian, less than a second crossing into the kernels
    actuation(mj_model, mj_data)
    acceleration(mj_model, mj_data)
    full_mass(mj_model, mj_data, M)
    for jacp, jacr, g in jacobians:
        jacobian(mj_model, mj_data, jacp, jacr, g)
    if sparse:
        dense(moment, *sparse)
    F = len(jacobians)
    thetas = np.empty((F, 2))
    if compiled is None:
        contact = _reference_frames(mj_data, feet, terrain, ws, thetas)
        status = step3d.UNSOLVED
    else:
        v, c, sticking, impulse = np.empty(len(qvel)), np.empty((F, 6)), np.empty(F, np.bool_), np.empty(len(qvel))
        # unchecked: MuJoCo's arrays, the workspace's and the constants checked once (constants, Ground)
        N, steady, status = unchecked(feet_step)(xpos, xmat, jac, *compiled[0], terrain.xs, terrain.zs,
                                                 *ws.arrays(F), M, qacc, qvel, moment, ctrl, force, h, *compiled[1],
                                                 qfrc, thetas, v, c, sticking, impulse)
        ws.keep(N, steady)
        contact, c, sticking = ws.contact, c[:N], sticking[:N]
    if len(contact) and status == step3d.UNSOLVED:  # no compiled form, or its QP did not solve: the reference
        Mt, v_free, J = stages(mj_model, mj_data, feet, terrain, M, jac, moment, contact)
        inside = law3d.Feet(thetas[contact], J, feet.model.dataset.foot.r_offset * foot_axis(thetas[contact, 1]),
                            np.tile(GRAIN_MASS, (len(contact), 1)))
        ref = law3d.step(feet.model, Mt, v_free, inside, h, feet.law, v0=mj_data.qvel.copy() if ws.steady else None)
        v, c, sticking, status = ref.v, ref.impulses, ref.sticking, step3d.FELL_BACK if ref.fell_back else 0
        impulse = np.einsum("nap,na->p", inside.Jr, c)
        qfrc += impulse / h
    step2(mj_model, mj_data)
    if not len(contact):
        return None, thetas
    # the work the impulses did, at the velocity MuJoCo integrated with
    return law3d.Step(v, c, sticking, float(impulse @ qvel), status == step3d.FELL_BACK), thetas


def constants(mj_model, feet: GranularFeet):
    """:func:`feet_step`'s constant arguments for ``feet`` on ``mj_model``, made once per binding
    (the step calls it unchecked) as the kernel declares them and checked against the model: the
    feet's geoms and shapes, then the integrator's implicit forces (``feet.actuation``, or the
    model's own), the medium's RBF, the fixed normals, the data map and the law. None for a medium
    without the compiled form (not an RBF): the step then takes the numpy reference."""
    model = feet.model
    linear = model._linear
    if linear is None:
        return None
    dmap, act = model.direction_map, feet.actuation or actuation(mj_model)
    specs = list(declared(coupled3d.feet_step).items())  # the kernel's own (tests and the bench stand in for mujoco3d's)
    names = [name for name, _ in specs]
    shapes = (feet.geoms, feet.half_length, feet.radius, feet.shape)
    law = (*_fields(act), model.dataset.foot.r_offset, GRAIN_MASS, *linear, model.fixed_normals(law3d.NORMALS),
           dmap.kernel_inverse, dmap.tail_inverse, dmap.directions, dmap.geometry, dmap.size,
           law3d.LAWS.index(feet.law))
    # their places in feet_step's arguments: geoms to shape, and damping to law
    shapes = tuple(_declared(x, *spec) for x, (_, spec) in
                   zip(shapes, specs[names.index("geoms"):names.index("shape") + 1], strict=True))
    law = tuple(_declared(x, *spec) for x, (_, spec) in
                zip(law, specs[names.index("damping"):names.index("law") + 1], strict=True))
    geoms = shapes[0]
    if {len(x) for x in shapes} != {len(geoms)} or not ((geoms >= 0) & (geoms < mj_model.ngeom)).all():
        raise GranularError(f"granular feet: {len(geoms)} geoms {geoms.tolist()} with {len(shapes[1])} lengths, "
                            f"{len(shapes[2])} radii and {len(shapes[3])} shapes; the model has {mj_model.ngeom} geoms")
    if len(law[0]) != mj_model.nv or any(len(x) != mj_model.nu for x in law[1:6]):
        raise GranularError(f"granular feet: the actuation is for another model (damping for {len(law[0])} dofs, "
                            f"gains for {len(law[1])} actuators; this model has {mj_model.nv} and {mj_model.nu}): "
                            f"replace(feet, actuation=mujoco3d.actuation(mj_model))")
    return shapes, law


def _declared(x, dtype, ndim):
    """x as a kernel argument declared ``dtype`` (float64 or int64) with ``ndim`` dimensions (0: a scalar)."""
    integer = np.issubdtype(dtype, np.integer)
    if ndim == 0:
        return int(x) if integer else float(x)
    x = np.asarray(x)
    if x.ndim != ndim or (integer and not np.issubdtype(x.dtype, np.integer)):
        raise GranularError(f"granular feet: an array of shape {x.shape} and type {x.dtype} where the compiled step "
                            f"takes {ndim}-D {'integers' if integer else 'numbers'}")
    return np.ascontiguousarray(x, dtype)


def _is(x, dtype, ndim) -> bool:
    return x.__class__ is np.ndarray and x.dtype == dtype and x.ndim == ndim and x.flags.c_contiguous


def _reference_frames(mj_data, feet, terrain, ws, thetas):
    """:func:`feet_step`'s bookkeeping in numpy, for a medium without the compiled form (not an RBF):
    θ into ``thetas``; returns the feet in the medium, with the law left to the caller."""
    thetas[:] = foot_frames(mj_data.geom_xpos, mj_data.geom_xmat, feet.geoms, feet.half_length, feet.radius,
                            feet.shape, terrain.xs, terrain.zs)[0]
    contact = np.flatnonzero(thetas[:, 0] < 0)
    ws.start(contact)
    return contact


def stages(mj_model, mj_data, feet, terrain, M, jac, moment, contact):
    """(M̃, v_free, J (N, 6, nv)) of the feet ``contact`` in numpy, as :func:`feet_step` makes them
    inside: the effective mass and free velocity (:func:`free_motion`) and each foot's Jacobian at
    p_center in F_c3, from MuJoCo's at its geom's centre ``jac`` (F, 6, nv), for the reference law."""
    _, rotations, centers, _ = foot_frames(mj_data.geom_xpos, mj_data.geom_xmat, feet.geoms, feet.half_length,
                                           feet.radius, feet.shape, terrain.xs, terrain.zs)
    Mt, v_free = free_motion(M, mj_data.qacc_smooth, mj_data.qvel, moment, mj_data.ctrl, mj_data.actuator_force,
                             mj_model.opt.timestep, *_fields(feet.actuation or actuation(mj_model)))
    R, r = rotations[contact], centers[contact] - mj_data.geom_xpos[feet.geoms[contact]]
    linear = jac[contact, :3] + np.cross(jac[contact, 3:], r[:, :, None], axis=1)  # a point of the body: v + ω × r
    J = np.concatenate([R.transpose(0, 2, 1) @ linear, R.transpose(0, 2, 1) @ jac[contact, 3:]], axis=1)
    return Mt, v_free, J


def foot_forces(states, thetas, result, h) -> dict:
    """Each foot in contact in a step (``thetas`` and ``result`` as :func:`step` returns them; ``states``
    the feet's :func:`foot_states` now, for where to draw): k → (p_center (3,), its force in world axes
    (3,) N, the step's θ (2,), its wrench about p_r in F_c3 (6,) N, N·m)."""
    if result is None:
        return {}
    contact = [k for k, theta in enumerate(thetas) if theta[0] < 0]
    return {k: (states[k][2], states[k][1][:3, :3] @ c[:3] / h, np.asarray(thetas[k], float), np.asarray(c) / h)
            for k, c in zip(contact, result.impulses)}


def effective_mass(mj_model, mj_data, M) -> np.ndarray:
    """M̃ = M − h D (nv, nv): the mass matrix MuJoCo's integrator divides a step's forces by
    (:func:`free_motion`). Call after ``mj_fwdActuation``."""
    return free_motion(np.ascontiguousarray(M, dtype=float), mj_data.qacc_smooth, mj_data.qvel, _moment(mj_model, mj_data),
                       mj_data.ctrl, mj_data.actuator_force, mj_model.opt.timestep, *_fields(actuation(mj_model)))[0]


def actuation(mj_model) -> Actuation:
    """The velocity coefficients of the smooth forces ``mj_model``'s integrator treats implicitly:
    the joints' damping (Euler, unless its ``eulerdamp`` is disabled; ``implicitfast``) and, under
    ``implicitfast`` only, the actuators' affine gains and biases (a position servo's kv)."""
    import mujoco

    nu = mj_model.nu
    euler = mj_model.opt.integrator == mujoco.mjtIntegrator.mjINT_EULER
    damped = not (euler and mj_model.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_EULERDAMP)
    servo = not euler and nu > 0
    gain = np.where(mj_model.actuator_gaintype == mujoco.mjtGain.mjGAIN_AFFINE, mj_model.actuator_gainprm[:, 2], 0.0)
    bias = np.where(mj_model.actuator_biastype == mujoco.mjtBias.mjBIAS_AFFINE, mj_model.actuator_biasprm[:, 2], 0.0)
    return Actuation(mj_model.dof_damping.copy() if damped else np.zeros(mj_model.nv),
                     gain if servo else np.zeros(nu), bias if servo else np.zeros(nu),
                     mj_model.actuator_forcerange[:, 0].copy(), mj_model.actuator_forcerange[:, 1].copy(),
                     mj_model.actuator_forcelimited.astype(float))


def _fields(a: Actuation):
    return a.damping, a.gain, a.bias, a.low, a.high, a.limited


def _fixed_moments(mj_model, moment) -> bool:
    """Where every actuator drives a hinge or slide joint directly (a joint transmission), its
    moment arm is its gear, whatever the state (MuJoCo's ``mj_transmission``): ``moment`` (nu, nv)
    ← them, and True; else False (MuJoCo's, state-dependent, are read at every step)."""
    import mujoco

    joints = mj_model.actuator_trnid[:, 0]
    if mj_model.nu == 0 or not (mj_model.actuator_trntype == mujoco.mjtTrn.mjTRN_JOINT).all() or not np.isin(
            mj_model.jnt_type[joints], (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE)).all():
        return False
    moment[:] = 0.0
    moment[np.arange(mj_model.nu), mj_model.jnt_dofadr[joints]] = mj_model.actuator_gear[:, 0]
    return True


def _moment(mj_model, mj_data) -> np.ndarray:
    """The actuators' moment arms (nu, nv), dense."""
    import mujoco

    moment = np.zeros((mj_model.nu, mj_model.nv))
    if mj_model.nu:
        mujoco.mju_sparse2dense(moment, mj_data.actuator_moment, mj_data.moment_rownnz, mj_data.moment_rowadr,
                                mj_data.moment_colind)
    return moment


#: The dragged grains' mass (kg ×3, kg·m² ×3): the planar foot's (granular.contact.detection), its
#: horizontal value for both horizontal axes and its rotational value about every axis.
GRAIN_MASS = np.array([14.714, 14.714, 14.714, 0.122, 0.122, 0.122])


@dataclass(frozen=True, eq=False)
class Ground:
    """The medium's surface under a MuJoCo robot: the planar scenarios' terrain (piecewise linear
    along x through (xs, zs), :mod:`granular.dynamics.terrain`) extruded along y. Called at a point
    (x, y), it gives (height, unit normal (3,))."""

    xs: np.ndarray
    zs: np.ndarray

    def __post_init__(self):  # the compiled step reads them unchecked
        xs, zs = (np.ascontiguousarray(a, dtype=float) for a in (self.xs, self.zs))
        if xs.ndim != 1 or xs.shape != zs.shape or len(xs) < 2 or not (np.diff(xs) > 0).all() \
                or not np.isfinite(zs).all():
            raise GranularError(f"a Ground's profile needs two or more points, x increasing, as two 1-D arrays of "
                                f"one length; got x of shape {xs.shape}, z of shape {zs.shape}")
        object.__setattr__(self, "xs", xs)
        object.__setattr__(self, "zs", zs)

    def __call__(self, xy):
        height, normal = _ground(self.xs, self.zs, float(xy[0]))
        return float(height), normal


def terrain(kind: str, angle: float = 0.0, height: float = 0.0, points=()) -> Ground:
    """The :class:`Ground` of a scenario's terrain section: flat, slope (rising at ``angle`` towards
    +x) or a profile through ``points`` (x, z)."""
    from granular.dynamics import terrain as planar

    if kind == "flat":
        ground = planar.flat(height)
    elif kind == "slope":
        ground = planar.slope(angle, height)
    elif kind == "profile":
        ground = planar.Terrain(*zip(*points))
    else:
        raise GranularError(f"unknown terrain {kind!r}; choose flat, slope or profile")
    return Ground(np.array(ground.xs, dtype=float), np.array(ground.zs, dtype=float))


#: The explicit baseline's regularisation: below this speed of p_center (m/s) 3D-RFT's
#: rate-independent wrench is scaled down in proportion (at rest its direction is undefined).
EXPLICIT_SPEED = 1e-3


def explicit_step(mj_model, mj_data, feet: GranularFeet, terrain, medium, speed: float = EXPLICIT_SPEED) -> float:
    """One step with 3D-RFT's wrench applied explicitly at the step's start (the approach of open
    MuJoCo-RFT implementations; a baseline for ``granular bench``, not a contact law of this
    project): each foot in contact gets ``rft3d.foot_wrench`` for its current twist as a
    generalized force, and MuJoCo integrates. ``medium``: an RFT preset (:mod:`granular.data.media`);
    ``speed``: the regularisation (m/s). Returns the work (J) the wrenches did on the bodies in the
    step, at the velocity MuJoCo integrated with (positive: the medium gave energy)."""
    import mujoco

    from granular.data import rft3d

    mj_data.qfrc_applied[:] = 0.0
    mujoco.mj_step1(mj_model, mj_data)
    jacp, jacr = np.zeros((3, mj_model.nv)), np.zeros((3, mj_model.nv))
    foot = feet.model.dataset.foot
    impulse = np.zeros(mj_model.nv)
    for k, (theta, R, p_center, _) in enumerate(foot_states(mj_model, mj_data, feet, terrain)):
        if theta[0] >= 0:
            continue
        mujoco.mj_jac(mj_model, mj_data, jacp, jacr, p_center, mj_model.geom_bodyid[feet.geoms[k]])
        J = R.T @ np.vstack([jacp, jacr])
        twist = J @ mj_data.qvel
        w = rft3d.foot_wrench(foot, theta, twist[None], medium.zeta, medium.coeffs)[0] * min(1.0, np.linalg.norm(twist[:3]) / speed)
        arm = foot.r_offset * foot_axis(theta[1])
        Jr = law3d.Feet(theta[None], J[None], arm[None], np.zeros((1, 6))).Jr[0]
        impulse += mj_model.opt.timestep * Jr.T @ w
    mj_data.qfrc_applied[:] = impulse / mj_model.opt.timestep
    mujoco.mj_step2(mj_model, mj_data)
    return float(impulse @ mj_data.qvel)
