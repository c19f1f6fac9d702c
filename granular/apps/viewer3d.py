"""The browser viewer (viser) for 3D scenarios: a MuJoCo robot on granular feet, live or replayed.

``granular view quad3d-trot`` (any scenario file naming an MJCF) runs it live (:class:`Live3D`);
``granular view --replay run.h5`` plays a 3D run file back (:class:`Replay3D`, its scene rebuilt
from the scenario file the run names). Both draw the model's geoms as
primitives (boxes, spheres, capsules and cylinders as meshes), the medium as a translucent mesh
(its surface over x, y, with skirts down to its bottom), and each foot's contact force as an arrow
(the law's impulse / h, its force part, at the panel's scale in N per m) from beside the foot's
p_center, on the side the camera sees (from p_center itself it would be inside the foot). The simulation runs in a
background thread in real time (or as fast as it can); Start / pause, Step and Reset act on it; the
scene is redrawn about 30 times a second, in MuJoCo's frames (z up, SI units). The panel's camera
toggle, arrow scale, selected foot and W(θ) plot are the planar viewer's
(:class:`granular.apps.viewer_gui.Panel`): the plot shows the foot's (f_x, f_z) outline of the 3D
model's W(θ) (6-axis, in F_r) and the chosen wrench.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np

from granular.apps.viewer_gui import Panel, Playback, arrow_scale, slice_title
from granular.apps.viewer_scene import FOOT, FORCE, SELECTED, medium_colour
from granular.errors import GranularError

FPS = 30
LIFT = 0.5       # the camera looks this far above the ground under the trunk (m)
DEPTH = 0.4      # the medium drawn this deep (m)
SKIP = {0}  # mjGEOM_PLANE: the MJCF's floor; the medium's surface is drawn instead


def _cylinder_mesh(radius, half, sides=24, caps=True):
    """Vertices and faces of a cylinder along z (a capsule's body too), centred on the origin."""
    a = 2 * np.pi * np.arange(sides) / sides
    ring = np.column_stack([radius * np.cos(a), radius * np.sin(a)])
    v = np.vstack([np.column_stack([ring, np.full(sides, -half)]), np.column_stack([ring, np.full(sides, half)]),
                   [[0, 0, -half], [0, 0, half]]])
    k = np.arange(sides)
    n = (k + 1) % sides
    faces = np.vstack([np.column_stack([k, n, sides + n]), np.column_stack([k, sides + n, sides + k]),
                       np.column_stack([np.full(sides, 2 * sides), n, k]),
                       np.column_stack([np.full(sides, 2 * sides + 1), sides + k, sides + n])])
    return v.astype(np.float32), faces.astype(np.uint32)


class Scene3D:
    """A 3D scenario's scene in a viser server: the robot, the medium, the feet's forces, the panel.
    ``self.forces`` / ``self.contacts`` (as :func:`granular.simulation.mujoco3d.foot_forces` splits
    them) are what :meth:`_redraw` draws with the world's state."""

    def __init__(self, server, world):
        import mujoco

        from granular.scenarios import scenario3d

        self.server, self.mujoco, self.scenario3d, self.world = server, mujoco, scenario3d, world
        self.lock = threading.Lock()
        self.forces, self.contacts = {}, {}
        self.handles = self._draw_model()
        self._surface()
        m = world.mj_model
        weight = float(np.linalg.norm(m.opt.gravity)) * float(m.body_mass.sum())
        # the weight a metre long: a foot's share sticks out of the foot the arrow stands beside
        self.panel = Panel(server, arrow_scale(weight, 1.0), len(world.feet.geoms), lift=LIFT)
        self.g_status = self.panel.g_status
        self.arrows = {k: server.scene.add_arrows(f"/forces/{k}", np.zeros((1, 2, 3), np.float32), colors=FORCE,
                                                  shaft_radius=0.01, head_radius=0.025, head_length=0.05,
                                                  visible=False) for k in range(len(world.feet.geoms))}
        free = [int(m.jnt_bodyid[j]) for j in range(m.njnt) if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE]
        self.trunk = free[0] if free else min(1, m.nbody - 1)

    def _split(self, forces: dict):
        """:func:`~granular.simulation.mujoco3d.foot_forces`'s map as (where, force) and (θ, wrench)."""
        self.forces = {k: (p, f) for k, (p, f, _, _) in forces.items()}
        self.contacts = {k: (th, w) for k, (_, _, th, w) in forces.items()}

    def status(self, t) -> str:
        w = self.world
        return (f"t = {t:.2f} s · {len(self.forces)} feet in the medium · {w.feet.model.dataset.medium}, "
                f"{w.feet.law}  \n{self.panel.note_scale()}")

    def _draw_model(self):
        m, scene, mj = self.world.mj_model, self.server.scene, self.mujoco
        feet = set(self.world.feet.geoms.tolist())
        handles = {}
        for g in range(m.ngeom):
            kind, size = int(m.geom_type[g]), m.geom_size[g]
            if kind in SKIP:
                continue
            color = FOOT if g in feet else (150, 155, 165)
            name = f"/robot/geom{g}"
            if kind == mj.mjtGeom.mjGEOM_BOX:
                handles[g] = scene.add_box(name, dimensions=tuple(2 * size), color=color)
            elif kind == mj.mjtGeom.mjGEOM_SPHERE:
                handles[g] = scene.add_icosphere(name, radius=float(size[0]), color=color)
            elif kind in (mj.mjtGeom.mjGEOM_CYLINDER, mj.mjtGeom.mjGEOM_CAPSULE):
                half = float(size[1]) + (float(size[0]) if kind == mj.mjtGeom.mjGEOM_CAPSULE else 0.0)
                v, f = _cylinder_mesh(float(size[0]), half)
                handles[g] = scene.add_mesh_simple(name, vertices=v, faces=f, color=color)
        return handles

    def _surface(self, extent=6.0, n=60):
        """The medium as a translucent mesh over x, y around the start: its surface, and skirts down to
        DEPTH below its lowest point."""
        xs = np.linspace(-extent, extent, n)
        ys = np.linspace(-extent / 3, extent / 3, n // 3)
        X, Y = np.meshgrid(xs, ys, indexing="ij")
        Z = np.array([[self.world.terrain((x, y))[0] for y in ys] for x in xs]) - 1e-3
        nx, ny = X.shape
        top = np.column_stack([X.ravel(), Y.ravel(), Z.ravel()])
        i, j = np.meshgrid(np.arange(nx - 1), np.arange(ny - 1), indexing="ij")
        a = (i * ny + j).ravel()
        faces = [np.column_stack([a, a + ny, a + 1]), np.column_stack([a + 1, a + ny, a + ny + 1])]
        # the rim of the grid, walked around once, and a skirt from it down to the bottom
        rim = np.concatenate([np.arange(ny), (np.arange(1, nx) + 1) * ny - 1, (nx - 1) * ny + np.arange(ny - 2, -1, -1),
                              np.arange(nx - 2, 0, -1) * ny])
        bottom = top[rim].copy()
        bottom[:, 2] = Z.min() - DEPTH
        k = np.arange(len(rim))
        lo = len(top) + k
        faces += [np.column_stack([rim[k], rim[(k + 1) % len(rim)], lo]),
                  np.column_stack([rim[(k + 1) % len(rim)], lo[(k + 1) % len(rim)], lo])]
        v = np.vstack([top, bottom]).astype(np.float32)
        self.server.scene.add_mesh_simple("/medium", vertices=v, faces=np.vstack(faces).astype(np.uint32),
                                          color=medium_colour(self.world.feet.model.dataset.medium.removesuffix("3d")),
                                          opacity=0.7, side="double", cast_shadow=False)

    def _redraw(self):
        with self.lock:
            w = self.world
            m, d = w.mj_model, w.mj_data
            self.mujoco.mj_kinematics(m, d)
            quat = np.zeros(4)
            for g, handle in self.handles.items():
                self.mujoco.mju_mat2Quat(quat, d.geom_xmat[g])
                handle.position, handle.wxyz = tuple(d.geom_xpos[g]), tuple(quat)
            forces, contacts, t = dict(self.forces), dict(self.contacts), float(d.time)
            trunk = d.xpos[self.trunk].copy()
        scale, eye = self.panel.scale, self._eye()
        self.drawn = {}
        for k, handle in self.arrows.items():
            p, f = forces.get(k, (None, np.zeros(3)))
            if p is None or np.linalg.norm(f) / scale < 1e-4:
                handle.visible = False
                continue
            side = (eye - p) * [1.0, 1.0, 0.0]  # beside the foot, on the side the camera sees
            tail = p + (w.feet.radius[k] + 0.03) * side / max(np.linalg.norm(side), 1e-9)
            handle.points = np.array([[tail, tail + f / scale]], np.float32)
            handle.head_length = min(0.05, 0.4 * float(np.linalg.norm(f)) / scale)
            handle.visible = True
            self.drawn[k] = (np.asarray(p, float), np.asarray(f, float))
        self.panel.follow.update(float(trunk[0]), float(trunk[1]), float(w.terrain(trunk[:2])[0]))
        self._plot(w, contacts)
        self._colour_selected(w)
        self.g_status.content = self.status(t)

    def _colour_selected(self, w):
        """The selected foot orange, the others blue (as in the planar viewer)."""
        f = min(max(int(self.panel.g_foot.value or 0), 0), len(w.feet.geoms) - 1)
        if getattr(self, "coloured", None) != f:
            for k, g in enumerate(w.feet.geoms):
                if int(g) in self.handles:
                    self.handles[int(g)].color = SELECTED if k == f else FOOT
            self.coloured = f

    def _eye(self):
        """Where the (first) browser's camera is, else the initial camera."""
        for client in list(self.server.get_clients().values()):
            try:
                return np.array(client.camera.position)
            except AssertionError:  # not reported yet
                break
        return np.array(self.server.initial_camera.position)

    def _plot(self, w, contacts):
        """The selected foot's (f_x, f_z) outline of W(θ) and its chosen wrench."""
        from scipy.spatial import ConvexHull, QhullError

        f = min(max(int(self.panel.g_foot.value or 0), 0), len(w.feet.geoms) - 1)
        name = w.feet.names[f]
        if f not in contacts:
            self.panel.show(None, f"W(θ) of foot {name}: not in the medium")
            return
        theta, wrench = contacts[f]
        pts = np.vstack([w.feet.model.points(theta[None])[0][:, [0, 2]], [0.0, 0.0]])
        try:
            ring = pts[ConvexHull(pts).vertices]
        except QhullError:
            ring = pts
        self.panel.show((ring, wrench[[0, 2]]), slice_title(name, theta))


class Live3D(Scene3D):
    """A 3D scenario stepping in a thread, drawn in a viser server."""

    def __init__(self, server, path, medium=None):
        from granular.scenarios import scenario3d

        self.path, self.medium = path, medium
        super().__init__(server, scenario3d.build(path, medium=medium))
        self.running, self.stop_event = False, threading.Event()
        gui = server.gui
        self.g_run, self.g_step = gui.add_button("Start / pause"), gui.add_button("Step")
        self.g_reset = gui.add_button("Reset")
        self.g_run.on_click(lambda _: setattr(self, "running", not self.running))
        self.g_step.on_click(lambda _: self._advance(1))
        self.g_reset.on_click(lambda _: self.reset())
        self._redraw()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def reset(self):
        with self.lock:
            self.world = self.scenario3d.build(self.path, medium=self.medium)
            self.forces, self.contacts = {}, {}
        self._redraw()

    def _advance(self, steps):
        from granular.simulation import mujoco3d

        with self.lock:
            w = self.world
            for _ in range(steps):
                if w.gait is not None:
                    w.mj_data.ctrl[:] = w.gait(w.mj_data)
                result, thetas = mujoco3d.step(w.mj_model, w.mj_data, w.feet, w.terrain, workspace=w.workspace)
            states = mujoco3d.foot_states(w.mj_model, w.mj_data, w.feet, w.terrain)
            self._split(mujoco3d.foot_forces(states, thetas, result, w.mj_model.opt.timestep))

    def _loop(self):
        while not self.stop_event.is_set():
            start = time.perf_counter()
            if self.running:
                try:
                    self._advance(max(1, int(round(1.0 / FPS / self.world.mj_model.opt.timestep))))
                except Exception as exc:  # noqa: BLE001 (the thread must not die silently: say it on the page)
                    self.running = False
                    self.g_status.content = f"stopped: {exc if isinstance(exc, GranularError) else repr(exc)}"
                    continue
            self._redraw()
            time.sleep(max(0.0, 1.0 / FPS - (time.perf_counter() - start)))

    def close(self):
        self.stop_event.set()
        self.thread.join(timeout=2)


class Replay3D(Scene3D):
    """A 3D run file played back: a time slider and Play / pause; the scene rebuilt from the
    scenario the run names (:func:`scenario_of`), its state set from
    the record at each frame."""

    def __init__(self, server, run, medium=None):
        from granular.scenarios import scenario3d

        self.run = run
        world = scenario3d.build(scenario_of(run), medium=medium, law=run["contact"], dt=run["dt"])
        if world.mj_model.nq != run["qpos"].shape[1] or len(world.feet.names) != len(run["feet"]):
            raise GranularError(f"the scenario {run['scenario']!r} has changed since the run (another robot or "
                                "feet): cannot replay it")
        super().__init__(server, world)
        self.playback = Playback(server, run["t"][-1], run["dt"], self.draw, FPS)
        self.g_time = self.playback.g_time
        self.playback.watch(self.panel.g_foot, self.panel.g_scale)
        self.draw()

    def draw(self):
        """The record's state at the slider's time, and the forces of the step that ended there."""
        run, d = self.run, self.world.mj_data
        i = min(max(int(round(self.g_time.value / run["dt"])), 0), len(run["t"]) - 1)
        s = min(max(i - 1, 0), len(run["work"]) - 1)  # step s ends at time t[s + 1]
        with self.lock:
            d.qpos[:], d.qvel[:], d.time = run["qpos"][i], run["qvel"][i], run["t"][i]
            self._split({k: (run["p_center"][s, k], run["force"][s, k], run["theta"][s, k], run["wrench"][s, k])
                         for k in np.flatnonzero(run["active"][s])} if i > 0 else {})
        self._redraw()

    def status(self, t) -> str:
        return f"replay of **{self.run['scenario']}** · " + super().status(t)

    def close(self):
        self.playback.close()


def scenario_of(run: dict) -> Path:
    """The scenario file a replay rebuilds its scene from: where it was run, else the shipped one."""
    from granular.scenarios import scenario as scenarios

    where = Path(run["scenario_file"])
    if where.is_file():
        return where
    try:
        return scenarios.find(run["scenario"])
    except GranularError:
        raise GranularError(f"the run's scenario file {where} is gone and {run['scenario']!r} is not a shipped "
                            "scenario: the replay needs it to draw the robot") from None
