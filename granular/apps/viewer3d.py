"""The browser viewer (viser) for 3D scenarios: a MuJoCo robot on granular feet, live.

``granular view quad3d-trot`` (any scenario file naming an MJCF) draws the model's geoms as
primitives (boxes, spheres, capsules and cylinders as meshes), the medium's surface, and each foot's
contact force as an arrow (the law's impulse / h, its force part, 1 mm per 2 N). The simulation
runs in a background thread in real time (or as fast as it can); Start / pause, Step and Reset act
on it; the scene is redrawn about 30 times a second, in MuJoCo's frames (z up, SI units).
"""
from __future__ import annotations

import threading
import time

import numpy as np

from granular.errors import GranularError

FPS = 30
ARROW_M_PER_N = 0.0005
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


class Live3D:
    """A 3D scenario stepping in a thread, drawn in a viser server."""

    def __init__(self, server, path):
        import mujoco

        from granular.scenarios import scenario3d

        self.server, self.path, self.mujoco = server, path, mujoco
        self.scenario3d = scenario3d
        self.world = scenario3d.build(path)
        self.lock, self.running, self.stop_event = threading.Lock(), False, threading.Event()
        self.forces = {}
        self.handles = self._draw_model()
        self._surface()
        gui = server.gui
        self.g_run, self.g_step, self.g_reset = gui.add_button("Start / pause"), gui.add_button("Step"), gui.add_button("Reset")
        self.g_status = gui.add_markdown("")
        self.g_run.on_click(lambda _: setattr(self, "running", not self.running))
        self.g_step.on_click(lambda _: self._advance(1))
        self.g_reset.on_click(lambda _: self.reset())
        self._redraw()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _draw_model(self):
        m, scene, mj = self.world.mj_model, self.server.scene, self.mujoco
        feet = set(self.world.feet.geoms.tolist())
        handles = {}
        for g in range(m.ngeom):
            kind, size = int(m.geom_type[g]), m.geom_size[g]
            if kind in SKIP:
                continue
            color = (90, 140, 200) if g in feet else (150, 155, 165)
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
        """The medium's surface as a mesh over x, y around the start."""
        xs = np.linspace(-extent, extent, n)
        ys = np.linspace(-extent / 3, extent / 3, n // 3)
        X, Y = np.meshgrid(xs, ys, indexing="ij")
        Z = np.array([[self.world.terrain((x, y))[0] for y in ys] for x in xs])
        v = np.column_stack([X.ravel(), Y.ravel(), Z.ravel() - 1e-3]).astype(np.float32)
        i, j = np.meshgrid(np.arange(len(xs) - 1), np.arange(len(ys) - 1), indexing="ij")
        a = (i * len(ys) + j).ravel()
        faces = np.vstack([np.column_stack([a, a + len(ys), a + 1]), np.column_stack([a + 1, a + len(ys), a + len(ys) + 1])])
        self.server.scene.add_mesh_simple("/medium", vertices=v, faces=faces.astype(np.uint32), color=(210, 180, 130))

    def reset(self):
        with self.lock:
            self.world = self.scenario3d.build(self.path)
            self.forces = {}
        self._redraw()

    def _advance(self, steps):
        from granular.simulation import mujoco3d

        with self.lock:
            w = self.world
            for _ in range(steps):
                if w.gait is not None:
                    w.mj_data.ctrl[:] = w.gait(w.mj_data.time, self.scenario3d.pitch(w.mj_data))
                result, thetas = mujoco3d.step(w.mj_model, w.mj_data, w.feet, w.terrain)
            self.forces = self._foot_forces(result, thetas)

    def _foot_forces(self, result, thetas):
        """Each foot in contact: (p_center, world force in N) from the law's impulses (under the lock)."""
        from granular.simulation import mujoco3d

        w = self.world
        if result is None:
            return {}
        states = mujoco3d.foot_states(w.mj_model, w.mj_data, w.feet, w.terrain)
        contact = [k for k, th in enumerate(thetas) if th[0] < 0]
        h = w.mj_model.opt.timestep
        return {k: (states[k][2], states[k][1][:3, :3] @ c[:3] / h) for k, c in zip(contact, result.impulses)}

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

    def _redraw(self):
        with self.lock:
            w = self.world
            m, d = w.mj_model, w.mj_data
            self.mujoco.mj_kinematics(m, d)
            quat = np.zeros(4)
            for g, handle in self.handles.items():
                self.mujoco.mju_mat2Quat(quat, d.geom_xmat[g])
                handle.position, handle.wxyz = tuple(d.geom_xpos[g]), tuple(quat)
            forces, t = dict(self.forces), float(d.time)
        segments = [[p, p + ARROW_M_PER_N * f] for p, f in forces.values()]
        if segments:
            self.server.scene.add_line_segments("/forces", np.array(segments, dtype=np.float32), colors=(200, 40, 40),
                                                line_width=4.0)
        elif "/forces" in getattr(self, "_drawn", set()):
            self.server.scene.add_line_segments("/forces", np.zeros((1, 2, 3), np.float32), colors=(200, 40, 40))
        self._drawn = {"/forces"} if segments else set()
        self.g_status.content = f"t = {t:.2f} s · {len(forces)} feet in the medium · {w.feet.model.dataset.medium}, {w.feet.law}"

    def close(self):
        self.stop_event.set()
        self.thread.join(timeout=2)
