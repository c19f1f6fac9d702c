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
   d its lowest point's height above the terrain, φ its axis' tilt from the vertical, ψ the azimuth
   of its tilt frame F_c3, :mod:`granular.frames3d`) and its Jacobian J (6, nv) from MuJoCo's
   ``mj_jac`` at p_center, rotated into F_c3.
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

from dataclasses import dataclass, replace

import numpy as np

from granular.contact import law3d
from granular.errors import GranularError
from granular.frames3d import foot_axis, tilt_frame

SHAPES = {"cylinder": 5, "capsule": 3, "sphere": 2}  # mjtGeom ids of the foot shapes taken


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
    return GranularFeet(np.array(ids), tuple(names), np.array(half), mj_model.geom_size[ids, 0].copy(),
                        mj_model.geom_type[ids].astype(int), wrench_model, law)


def foot_states(mj_model, mj_data, feet: GranularFeet, terrain):
    """Per foot: θ (2,), the rotation R (6, 6) from F_c3 to world axes, p_center (3,) and the axis (3,).
    θ's d is the height of the foot's lowest point (a cylinder's bottom rim, a capsule's or sphere's
    lowest point; :func:`granular.data.rft3d.center_height`)."""
    out = []
    for gid, half, radius, shape in zip(feet.geoms, feet.half_length, feet.radius, feet.shape):
        axis = mj_data.geom_xmat[gid].reshape(3, 3)[:, 2].copy()
        if shape == SHAPES["sphere"]:  # its axis is taken along the surface normal
            axis = terrain(mj_data.geom_xpos[gid][:2])[1]
        elif axis[2] < 0:  # the lower end face is the foot's bottom: taken end for end
            axis = -axis
        p_center = mj_data.geom_xpos[gid] - half * axis
        height, normal = terrain(p_center[:2])
        S = _surface_frame(normal)
        phi, psi = tilt_frame(S.T @ axis)
        c, s = np.cos(psi), np.sin(psi)
        R = np.zeros((6, 6))  # F_c3 → world for twists and wrenches: the surface frame turned by ψ about its z
        R[:3, :3] = R[3:, 3:] = S @ np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        d = (p_center - np.array([p_center[0], p_center[1], height])) @ normal
        d -= radius * (np.sin(phi) if shape == SHAPES["cylinder"] else 1.0 - np.cos(phi))  # to the lowest point
        out.append((np.array([d, phi]), R, p_center, axis))
    return out


def _surface_frame(normal) -> np.ndarray:
    """(3, 3) columns x, y, z of a frame whose z is the surface normal and whose x is level across
    y (the world's axes on flat ground)."""
    if normal[2] == 1.0:  # level ground (the terrain callbacks give exactly (0, 0, 1))
        return np.eye(3)
    x = np.cross([0.0, 1.0, 0.0], normal)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(normal, x), normal])


def step(mj_model, mj_data, feet: GranularFeet, terrain, applied=None):
    """One coupled step (module docstring); ``applied`` (nv,) generalized forces of the user's,
    kept in ``qfrc_applied``. Returns the law's :class:`~granular.contact.law3d.Step` and the feet's θ."""
    import mujoco

    h = mj_model.opt.timestep
    base = np.zeros(mj_model.nv) if applied is None else applied
    mj_data.qfrc_applied[:] = base
    mujoco.mj_step1(mj_model, mj_data)
    states = foot_states(mj_model, mj_data, feet, terrain)
    contact = [k for k, (theta, *_) in enumerate(states) if theta[0] < 0]
    result = None
    if contact:
        mujoco.mj_fwdActuation(mj_model, mj_data)
        mujoco.mj_fwdAcceleration(mj_model, mj_data)
        M = np.zeros((mj_model.nv, mj_model.nv))
        mujoco.mj_fullM(mj_model, mj_data, M)
        Mt = effective_mass(mj_model, mj_data, M)
        v_free = mj_data.qvel + h * np.linalg.solve(Mt, M @ mj_data.qacc_smooth)
        J, thetas, arms = [], [], []
        jacp, jacr = np.zeros((3, mj_model.nv)), np.zeros((3, mj_model.nv))
        r_offset = feet.model.dataset.foot.r_offset
        for k in contact:
            theta, R, p_center, _ = states[k]
            mujoco.mj_jac(mj_model, mj_data, jacp, jacr, p_center, mj_model.geom_bodyid[feet.geoms[k]])
            J.append(R.T @ np.vstack([jacp, jacr]))
            thetas.append(theta)
            arms.append(r_offset * foot_axis(theta[1]))
        inside = law3d.Feet(np.array(thetas), np.array(J), np.array(arms), np.tile(GRAIN_MASS, (len(contact), 1)))
        result = law3d.step(feet.model, Mt, v_free, inside, h, feet.law)
        Jr = inside.Jr
        mj_data.qfrc_applied[:] = base + np.einsum("nap,na->p", Jr, result.impulses) / h
    mujoco.mj_step2(mj_model, mj_data)
    if result is not None:  # the work the impulses did, at the velocity MuJoCo integrated with
        result = replace(result, work=float(np.einsum("na,nap,p->", result.impulses, Jr, mj_data.qvel)))
    return result, [s[0] for s in states]


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
    """M̃ = M − h D (nv, nv): the mass matrix MuJoCo's integrator divides a step's forces by. D is the
    derivative of the smooth forces by the velocity that it integrates implicitly: the joints' damping
    (Euler, unless its ``eulerdamp`` is disabled) and, under ``implicitfast``, also the actuators'
    velocity gains (affine gain and bias, a position servo's kv), skipped while an actuator's force
    is clamped, as MuJoCo does. Call after ``mj_fwdActuation``."""
    import mujoco

    h = mj_model.opt.timestep
    D = np.zeros_like(M)
    euler = mj_model.opt.integrator == mujoco.mjtIntegrator.mjINT_EULER
    if not (euler and mj_model.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_EULERDAMP):
        D[np.diag_indices_from(D)] -= mj_model.dof_damping
    if not euler and mj_model.nu:
        moment = np.zeros((mj_model.nu, mj_model.nv))
        mujoco.mju_sparse2dense(moment, mj_data.actuator_moment, mj_data.moment_rownnz, mj_data.moment_rowadr,
                                mj_data.moment_colind)
        gain = np.where(mj_model.actuator_gaintype == mujoco.mjtGain.mjGAIN_AFFINE,
                        mj_model.actuator_gainprm[:, 2] * mj_data.ctrl, 0.0)
        bias = np.where(mj_model.actuator_biastype == mujoco.mjtBias.mjBIAS_AFFINE, mj_model.actuator_biasprm[:, 2], 0.0)
        low, high = mj_model.actuator_forcerange.T
        force = mj_data.actuator_force
        clamped = mj_model.actuator_forcelimited.astype(bool) & ((force <= low) | (force >= high))
        D += moment.T @ (np.where(clamped, 0.0, gain + bias)[:, None] * moment)
    return M - h * D


#: The dragged grains' mass (kg ×3, kg·m² ×3): the planar foot's (granular.contact.detection), its
#: horizontal value for both horizontal axes and its rotational value about every axis.
GRAIN_MASS = np.array([14.714, 14.714, 14.714, 0.122, 0.122, 0.122])


def terrain(kind: str, angle: float = 0.0, height: float = 0.0, points=()):
    """The terrain callback, (height, unit normal) at a point (x, y): the planar scenarios' terrain
    (:mod:`granular.dynamics.terrain`, piecewise linear along x) extruded along y."""
    from granular.dynamics import terrain as planar

    if kind == "flat":
        ground = planar.flat(height)
    elif kind == "slope":
        ground = planar.slope(angle, height)
    elif kind == "profile":
        ground = planar.Terrain(*zip(*points))
    else:
        raise GranularError(f"unknown terrain {kind!r}; choose flat, slope or profile")

    def at(xy):
        x = float(xy[0])
        nx, nz = ground.normal(x)
        return ground.height(x), np.array([nx, 0.0, nz])
    return at


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
