"""The compiled 3D contact step (granular.contact.step3d) against its numpy reference (law3d.step),
on the steps MuJoCo robots actually take."""
import numpy as np
import pytest

from granular.compiled import unchecked
from granular.contact import law3d, step3d
from granular.scenarios import scenario as scenarios, scenario3d
from granular.simulation import coupled3d, mujoco3d
from granular.frames3d import foot_axis
from granular.wrench import flow3d
from granular.wrench.flow3d import SphereMap

#: v⁺ of the kernel and of the reference agree to this (m/s, rad/s). Where four feet give 24
#: impulses on 18 dofs the kernel's QP takes proximal steps (step3d.PROXIMAL): measured on
#: quad3d-trot, its v⁺ is within 4e-6 of quadprog's (2.6e-5 of the speed), its objective above by
#: 1e-8 of it; elsewhere they agree to 1e-9.
AGREE = 1e-5


def captured(name, law, seconds):
    """Every fused call of ``seconds`` of the scenario with a foot in the medium: its arguments and results."""
    world = scenario3d.build(scenarios.find(name), law=law)
    m, d = world.mj_model, world.mj_data
    calls = []
    fused = unchecked(mujoco3d.feet_step)  # as the step calls it

    def keep(*args):
        before = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
        N, steady, status = out = fused(*args)
        thetas, v, c, sticking, impulse = (np.copy(a) for a in args[-5:])  # the kernel's out arrays
        if N:
            calls.append((before, (thetas, args[9][:N].copy(), steady, v, c[:N], sticking[:N], status, impulse)))
        return out

    mujoco3d.feet_step = keep
    try:
        for _ in range(int(seconds / m.opt.timestep)):
            if world.gait is not None:
                d.ctrl[:] = world.gait(d)
            mujoco3d.step(m, d, world.feet, world.terrain, workspace=world.workspace)
    finally:
        mujoco3d.feet_step = fused
    return world, calls


@pytest.mark.parametrize("name, seconds", [("quad3d-trot", 1.0), ("drop3d-tilted", 0.3)])
@pytest.mark.parametrize("law", law3d.LAWS)
def test_the_compiled_step_is_the_reference_step(name, seconds, law):
    """The fused call (coupled3d.feet_step: θ, the Jacobians at p_center in F_c3, W(θ), the law from
    the last step's active set) against law3d.step on its M̃ and v_free, at every step of the run."""
    world, calls = captured(name, law, seconds)
    model, h = world.feet.model, world.mj_model.opt.timestep
    assert len(calls) > 50
    # four feet: 24 impulses on 18 dofs, the proximal QP; one foot: the plain one
    assert max(len(out[1]) for _, out in calls) == (4 if name == "quad3d-trot" else 1)
    fell = slid = unsolved = 0
    for args, (all_thetas, contact, steady, v, c, sticking, status, impulse) in calls:
        xpos, xmat, geom_jac, geoms = args[:4]
        thetas = all_thetas[contact]
        _, rotations, centers, _ = mujoco3d.foot_frames(*args[:2], *args[3:9])
        R, r = rotations[contact], centers[contact] - xpos[geoms[contact]]
        jac = geom_jac[contact]  # a point p of the body moves at v_g + ω × (p − g)
        J = np.concatenate([R.transpose(0, 2, 1) @ (jac[:, :3] + np.cross(jac[:, 3:], r[:, :, None], axis=1)),
                            R.transpose(0, 2, 1) @ jac[:, 3:]], axis=1)
        Mt, v_free = coupled3d.free_motion(*args[12:25])  # the kernel's M̃ and v_free, from its own arguments
        arms = model.dataset.foot.r_offset * foot_axis(thetas[:, 1])
        feet = law3d.Feet(thetas, J, arms, np.tile(mujoco3d.GRAIN_MASS, (len(thetas), 1)))
        # the same feet as the step before: Newton starts from qvel
        ref = law3d.step(model, Mt, v_free, feet, h, law, v0=args[14] if steady else None)
        if status == step3d.UNSOLVED:  # the coupling takes law3d.step's answer itself
            unsolved += 1
            continue
        assert (status == step3d.FELL_BACK) == ref.fell_back
        np.testing.assert_allclose(v, ref.v, rtol=0, atol=AGREE)
        np.testing.assert_allclose(impulse, np.einsum("nap,na->p", feet.Jr, c), atol=1e-12)  # the kernel's J is this J
        fell += ref.fell_back
        slid += not sticking.all()
        if law == "max-dissipation" and len(thetas) == 4:
            continue  # 24 impulses on 18 dofs: only v⁺ (and Σ J_rᵀ c) is unique, not which foot is strictly inside
        assert np.array_equal(sticking, ref.sticking)
        scale = max(np.abs(ref.impulses).max(), 1e-12)
        np.testing.assert_allclose(c, ref.impulses, rtol=0, atol=1e-4 * scale)
    assert unsolved <= 0.01 * len(calls), "the compiled QP solves nearly every step (measured: 3 of 955)"
    if law == "data-flow" and name == "quad3d-trot":
        assert slid > 0.1 * len(calls) and fell < 0.05 * len(calls), (slid, fell, len(calls))


def test_the_fused_call_takes_mujocos_jacobian_at_p_center():
    """The fused call moves MuJoCo's Jacobian at each foot's geom centre to p_center; mj_jac at
    p_center itself (MuJoCo's own, for the same state) gives the same J, rotated into F_c3."""
    import mujoco

    world = scenario3d.build(scenarios.find("quad3d-trot"))
    m, d, feet = world.mj_model, world.mj_data, world.feet
    for _ in range(400):
        d.ctrl[:] = world.gait(d)
        mujoco3d.step(m, d, feet, world.terrain, workspace=world.workspace)
    mujoco.mj_step1(m, d)
    mujoco.mj_fwdActuation(m, d)
    mujoco.mj_fwdAcceleration(m, d)
    M, jac = np.zeros((m.nv, m.nv)), np.zeros((len(feet.geoms), 6, m.nv))
    mujoco.mj_fullM(m, d, M)
    for k, g in enumerate(feet.geoms):
        mujoco.mj_jacGeom(m, d, jac[k, :3], jac[k, 3:], g)
    moment = mujoco3d._moment(m, d)
    assert not world.workspace.bound[10], "joint transmissions: the step reads no moment arms from MuJoCo"
    np.testing.assert_array_equal(world.workspace.bound[9], moment, err_msg="the gears the step took: MuJoCo's")
    applied = np.zeros(m.nv)
    shapes, law = mujoco3d.constants(m, feet)
    F = len(feet.geoms)
    feet_in, thetas, c, impulse = np.zeros(F, np.int64), np.zeros((F, 2)), np.zeros((F, 6)), np.zeros(m.nv)
    N, _, _ = mujoco3d.feet_step(d.geom_xpos, d.geom_xmat, jac, *shapes, world.terrain.xs, world.terrain.zs, feet_in,
                                 0, np.zeros(6 * F + 1, np.int64), M, d.qacc_smooth, d.qvel, moment, d.ctrl,
                                 d.actuator_force, m.opt.timestep, *law, applied, thetas, np.zeros(m.nv), c,
                                 np.zeros(F, np.bool_), impulse)
    contact, c = feet_in[:N], c[:N]
    assert len(contact) >= 2 and np.abs(c).max() > 0
    np.testing.assert_allclose(applied, impulse / m.opt.timestep, rtol=1e-15, err_msg="the impulses' force, applied")
    states = mujoco3d.foot_states(m, d, feet, world.terrain)
    J = np.zeros((len(contact), 6, m.nv))
    for n, k in enumerate(contact):
        jacp, jacr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
        mujoco.mj_jac(m, d, jacp, jacr, states[k][2], m.geom_bodyid[feet.geoms[k]])
        J[n] = states[k][1].T @ np.vstack([jacp, jacr])
    np.testing.assert_allclose(J, mujoco3d.stages(m, d, feet, world.terrain, M, jac, moment, contact)[2], atol=1e-12)
    arms = feet.model.dataset.foot.r_offset * foot_axis(thetas[contact, 1])
    Jr = law3d.Feet(thetas[contact], J, arms, np.zeros((len(contact), 6))).Jr  # the impulses are about p_r
    np.testing.assert_allclose(impulse, np.einsum("nap,na->p", Jr, c), atol=1e-12 * np.abs(impulse).max())


def _interpolant(dmap: SphereMap, Q, phi, twist):
    """The interpolant with coefficients Q at the twist's direction, in numpy (no dissipative correction)."""
    u = twist / dmap.scale / np.linalg.norm(twist / dmap.scale)
    r = np.sqrt(np.maximum(2.0 - 2.0 * dmap.directions @ u, 0.0))
    return r ** 3 @ Q[:len(r)] + flow3d.tail_matrix(u[None], phi, dmap.geometry, dmap.size)[0] @ Q[len(r):]


def test_the_sphere_map_hits_the_data_and_reproduces_its_tail():
    """At any tilt, each tail's interpolant returns the recorded wrench at each recorded direction,
    and reproduces exactly any wrench map in its tail's span (the leading tail: affine in u and in
    u times the disc's leading share)."""
    from granular.learning.catalog import load_model

    ds = load_model("sand3d", "3d").dataset
    rng = np.random.default_rng(3)
    for tail in flow3d.TAILS:
        dmap = SphereMap(ds.directions, ds.velocity_scale, ds.foot.radius, tail)
        for phi in (0.0, 0.3, -0.7):
            points = rng.normal(size=(1, ds.m, 6))
            Q = dmap.coefficients(points, [phi])[0]
            at = np.array([_interpolant(dmap, Q, phi, u * dmap.scale) for u in dmap.directions])
            np.testing.assert_allclose(at, points[0], atol=1e-9)
            E = rng.normal(size=(dmap.size, 6))
            in_span = flow3d.tail_matrix(dmap.directions, phi, dmap.geometry, dmap.size) @ E
            Q = dmap.coefficients(in_span[None], [phi])[0]
            for twist in rng.normal(size=(5, 6)):
                u = twist / np.linalg.norm(twist)
                np.testing.assert_allclose(_interpolant(dmap, Q, phi, twist * dmap.scale),
                                           flow3d.tail_matrix(u[None], phi, dmap.geometry, dmap.size)[0] @ E,
                                           atol=1e-8)
    s = flow3d.tail_matrix(np.eye(6)[[2]], 0.0, dmap.geometry, 14)[0, 7]  # rising straight up
    assert s == 0.0 and flow3d.tail_matrix(-np.eye(6)[[2]], 0.0, dmap.geometry, 14)[0, 7] == 1.0, "sinking: all leads"


@pytest.mark.parametrize("which", ["sand3d", "random"])
def test_the_data_maps_jacobian_is_its_derivative(which):
    """flow_into's wrench is SphereMap's (the interpolant, made dissipative), and its Jacobian the
    central differences of it: on sand3d's extreme wrenches, and on random ones, where the
    dissipative correction is active too; at a tilt where the disc's leading share ramps."""
    from granular.learning.catalog import load_model

    model = load_model("sand3d", "3d")
    dmap: SphereMap = model.direction_map
    assert dmap.tail == "leading", "sand3d's own directions choose the disc's leading share"
    phi = 0.3
    points = model.points(np.array([[-0.04, phi]]))
    if which == "random":
        points = np.random.default_rng(2).normal(size=points.shape) * np.abs(points).max()
    Q = dmap.coefficients(points, [phi])[0]
    arm = 0.25 * np.array([-np.sin(phi), 0.0, np.cos(phi)])
    rng = np.random.default_rng(5)
    corrected, ramps = 0, 0
    for _ in range(40):
        twist = rng.normal(size=6) * dmap.scale
        w, dw = np.zeros(6), np.zeros((6, 6))
        flow3d.flow_into(Q, dmap.directions, dmap.geometry, phi, arm, twist, w, dw, np.zeros((12, 6)),
                         np.zeros(len(dmap.directions)))
        ref = dmap.wrenches(points, [phi], twist[None], arm[None])[0]
        np.testing.assert_allclose(w, ref, rtol=1e-10, atol=1e-9 * np.abs(ref).max())
        corrected += not np.allclose(_interpolant(dmap, Q, phi, twist), ref)
        u = twist / dmap.scale / np.linalg.norm(twist / dmap.scale)
        ramps += 0.0 < flow3d.tail_matrix(u[None], phi, dmap.geometry, 14)[0, 7] < 1.0
        eps = 1e-6 * dmap.scale
        fd = np.column_stack([(dmap.wrenches(points, [phi], (twist + e)[None], arm[None])[0]
                               - dmap.wrenches(points, [phi], (twist - e)[None], arm[None])[0]) / (2 * e[i])
                              for i, e in enumerate(np.diag(eps))])
        np.testing.assert_allclose(dw, fd, rtol=1e-4, atol=1e-5 * np.abs(fd).max())
    assert ramps > 5, "the leading share's ramp is tried"
    if which == "random":
        assert 5 < corrected < 35, "both branches are tried"
    w, dw = np.ones(6), np.ones((6, 6))
    flow3d.flow_into(Q, dmap.directions, dmap.geometry, phi, arm, np.zeros(6), w, dw, np.zeros((12, 6)),
                     np.zeros(len(dmap.directions)))
    assert not w.any() and not dw.any(), "zero at rest"


def test_a_medium_without_a_compiled_form_steps_through_the_reference():
    """An SVR 3D model has no linear form for the fused call: the MuJoCo step takes law3d's numpy
    path (free_motion, the Jacobians in numpy, law3d.step), and the foot still lands on it, supported,
    the medium taking energy and giving none."""
    from dataclasses import replace

    from granular.learning import model3d

    world = scenario3d.build(scenarios.find("drop3d-tilted"))
    svr = model3d.fit(world.feet.model.dataset, "svr")
    assert svr._linear is None
    feet = replace(world.feet, model=svr)
    m, d = world.mj_model, world.mj_data
    gave = took = 0.0
    steps = 0
    for _ in range(int(0.22 / m.opt.timestep)):  # it lands at 0.14 s; each reference step costs ~80 ms
        result, thetas = mujoco3d.step(m, d, feet, world.terrain, workspace=world.workspace)
        if result is not None:
            steps += 1
            gave, took = gave + max(result.work, 0.0), took - min(result.work, 0.0)
            assert result.impulses.shape == (1, 6)
    assert steps > 50 and took > 1.0 and gave < 1e-9 * took
    # free fall would leave it at z = 0.013 m falling at 2.2 m/s; landed on the SVR medium: 0.108 m, slowing
    assert d.qpos[2] > 0.05 and d.qvel[2] > -1.0, "held up by the medium"


def test_a_blown_up_state_is_left_to_the_reference_and_a_callable_terrain_is_refused():
    """NaN in the free velocity: the kernel does not report it solved (numba's max and min drop NaN,
    so its checks would pass), the caller's reference takes the step. And a terrain that is not a
    mujoco3d.Ground (say, the callable older versions took) is one clear error."""
    from granular.errors import GranularError

    world = scenario3d.build(scenarios.find("drop3d-tilted"))
    model, nv = world.feet.model, world.mj_model.nv
    dmap, A = model.direction_map, model.fixed_normals(72)
    b, points = model.support(A, np.array([[-0.03, 0.3]]))
    J = np.ascontiguousarray(np.eye(6)[None, :, :nv])
    out = step3d.contact_step(np.eye(nv), np.full(nv, np.nan), np.zeros(nv), J, np.array([[0.0, 0.0, 0.25]]),
                              np.zeros((1, 6)), A, 1e-3 * b, points, np.array([0.3]), dmap.kernel_inverse,
                              dmap.tail_inverse, dmap.directions, dmap.geometry, dmap.size, 1e-3, 1,
                              np.zeros(7, np.int64))
    assert out[3] == step3d.UNSOLVED
    with pytest.raises(GranularError, match="mujoco3d.Ground"):
        mujoco3d.step(world.mj_model, world.mj_data, world.feet, lambda xy: (0.0, np.array([0.0, 0.0, 1.0])))


def test_newton_follows_its_last_root_only_while_the_same_feet_stay_in_the_medium():
    """Workspace.steady (data-flow's Newton then starts from the velocity before the step): the same
    feet in the medium as the step before; never at a first step, a landing (after a flight phase
    too) or after a reset, where max-dissipation's velocity picks the root."""
    ws = mujoco3d.Workspace()
    two, one, none = np.array([0, 2]), np.array([0]), np.zeros(0, np.int64)
    ws.start(two)
    assert not ws.steady, "the first step"
    ws.start(two.copy())
    assert ws.steady
    ws.start(one)
    assert not ws.steady, "a foot lifted"
    ws.start(none)
    assert not ws.steady, "in flight"
    ws.start(one)
    assert not ws.steady, "a landing after a flight"
    ws.start(one)
    ws.reset()
    ws.start(one)
    assert not ws.steady, "after a reset"


def test_the_unchecked_call_gets_arrays_as_it_reads_them():
    """The step calls its kernel unchecked, so what it passes is made what the kernel reads, or
    refused in one clear error, never read as raw memory: a Ground of integers is made floats, one
    of a single point refused; feet's integer geoms of another width converted, float ones refused;
    an active set the user set of the wrong length (the kernel writes six entries a foot) started
    cold; a copied world binds its own mjData."""
    import copy
    from dataclasses import replace

    from granular.errors import GranularError

    world = scenario3d.build(scenarios.find("drop3d-tilted"))
    m, d = world.mj_model, world.mj_data
    ground = mujoco3d.Ground([-100, 100], [0, 0])
    assert ground.xs.dtype == np.float64 and ground(np.zeros(2))[0] == 0.0
    for xs, zs in (([0.0], [0.0]), ([0.0, 1.0], [0.0]), ([1.0, 0.0], [0.0, 0.0])):
        with pytest.raises(GranularError, match="Ground's profile"):
            mujoco3d.Ground(xs, zs)
    with pytest.raises(GranularError, match="integers"):
        mujoco3d.step(m, d, replace(world.feet, geoms=world.feet.geoms.astype(float)), ground, workspace=mujoco3d.Workspace())
    with pytest.raises(GranularError, match="model has"):
        mujoco3d.step(m, d, replace(world.feet, geoms=world.feet.geoms + m.ngeom), ground, workspace=mujoco3d.Workspace())
    feet = replace(world.feet, geoms=world.feet.geoms.astype(np.int32), radius=list(world.feet.radius))
    ws = mujoco3d.Workspace(contact=[0], warm=[3, 1, 2])
    landed = 0
    for _ in range(int(0.3 / m.opt.timestep)):
        result, thetas = mujoco3d.step(m, d, feet, ground, workspace=ws)
        landed += result is not None
        if landed == 5:
            ws.contact, ws.warm = ws.contact.copy(), np.array([10**6], np.int64)  # a count far past its end
    assert landed > 50 and len(ws.warm) == 6 * len(ws.contact) + 1 and np.isfinite(d.qpos).all()
    assert d.qpos[2] > 0.05, "held up by the medium"
    twin = copy.deepcopy(world)
    for w in (world, twin):
        for _ in range(20):
            mujoco3d.step(w.mj_model, w.mj_data, w.feet, w.terrain, workspace=w.workspace)
    assert twin.workspace.bound[1] is twin.mj_data
    np.testing.assert_array_equal(twin.mj_data.qpos, world.mj_data.qpos)


def test_the_numpy_path_takes_the_compiled_steps_and_feet_without_actuation_stay_compiled():
    """Where a medium has no compiled form the step takes numpy's stages (the Jacobians moved to
    p_center, M̃ and v_free) and law3d: on an RBF medium forced onto that path, a drop's trajectory
    is the compiled one's. Feet built without an Actuation get the model's own and the compiled call."""
    from dataclasses import replace

    def drop(patch=None):
        world = scenario3d.build(scenarios.find("drop3d-tilted"))
        m, d = world.mj_model, world.mj_data
        feet, called = world.feet, []
        if patch == "numpy":
            real, mujoco3d.constants = mujoco3d.constants, lambda *a: None
        elif patch == "no actuation":
            feet, real = replace(feet, actuation=None), mujoco3d.feet_step
            mujoco3d.feet_step = lambda *a: called.append(1) or unchecked(real)(*a)
        try:
            for _ in range(int(0.25 / m.opt.timestep)):
                mujoco3d.step(m, d, feet, world.terrain, workspace=world.workspace)
        finally:
            if patch == "numpy":
                mujoco3d.constants = real
            elif patch == "no actuation":
                mujoco3d.feet_step = real
        return d.qpos.copy(), len(called)

    compiled, _ = drop()
    numpy_path, _ = drop("numpy")
    np.testing.assert_allclose(numpy_path, compiled, atol=1e-8)
    bare, calls = drop("no actuation")
    assert calls == 250
    np.testing.assert_array_equal(bare, compiled)


def test_proximal_steps_solve_a_singular_qp():
    """More impulses than the dofs they move (P = Bᵀ B singular): the plain dual active-set method
    refuses it, the proximal steps sharing its factors find the velocity a general solver finds."""
    import cvxpy as cp

    from granular.contact.active_set import dual_active_set, proximal_active_set

    rng = np.random.default_rng(3)
    nv, feet = 5, 2
    B, base = rng.normal(size=(nv, 6 * feet)), rng.normal(size=nv) * 3.0
    P, g = B.T @ B, B.T @ base
    A = np.vstack([np.eye(6), -np.eye(6)])
    Ablock = np.zeros((12 * feet, 6 * feet))
    for f in range(feet):
        Ablock[12 * f:12 * f + 12, 6 * f:6 * f + 6] = A
    ub, rows = rng.uniform(0.05, 0.5, 12 * feet), np.arange(feet + 1) * 12
    assert dual_active_set(P, g, Ablock, ub, rows, 1e-12, np.zeros(6 * feet, np.int64), 0)[1] == -3
    active = np.zeros(6 * feet, np.int64)
    x, status, size = proximal_active_set(P, g, Ablock, ub, rows, 1e-12, active, 0, 1e-6 * np.trace(P) / (6 * feet),
                                          np.ascontiguousarray(B), base, 1e-9, 16)
    assert status >= 0 and 0 < size <= 6 * feet
    assert (Ablock @ x <= ub + 1e-9).all()
    c = cp.Variable(6 * feet)
    cp.Problem(cp.Minimize(0.5 * cp.sum_squares(base + B @ c)), [Ablock @ c <= ub]).solve(solver=cp.CLARABEL)
    np.testing.assert_allclose(base + B @ x, base + B @ c.value, atol=1e-6)
    assert np.abs(base + B @ x).max() < np.abs(base).max(), "the impulses slow the bodies down"


def test_a_step_of_the_active_set_that_overflows_is_reported_not_taken():
    """A trotting quadruped's proximal QP (four feet, captured under max-dissipation) whose step
    overflows to NaN. The iterations once took a NaN step for the removal of a constraint with none
    to remove: the set shrank below zero and the solver wrote before its arrays (a segfault, 6 s
    into a run). Now it reports failure, and the step's reference law takes the step."""
    from pathlib import Path

    from granular.contact.active_set import proximal_active_set

    d = np.load(Path(__file__).parent / "data" / "proximal_overflow.npz")
    x, status, size = proximal_active_set(d["H"], d["g"], d["A"], d["ub"], d["rows"], float(d["tol"]), d["active"].copy(),
                                          int(d["count"]), float(d["ridge"]), d["V"], d["base"], float(d["rtol"]),
                                          int(d["steps"]))
    assert status < 0 and 0 <= size <= len(d["g"])
