"""A live viewer in the browser (viser): run scenarios interactively, or replay run files.

viser serves a three.js scene and GUI controls from Python over a websocket,
with its web client bundled in the package (nothing is fetched at run time);
it keeps the viewer in the same process as the simulation, so the controls
act on the same SimModel/State the CLI uses. The planar world is drawn in the
x–z plane (y = 0), z up.

The simulation runs in a background thread in real time (or as fast as it
can); the scene is redrawn about 30 times a second. Closing the page or
losing the connection does not affect the server; Ctrl-C stops it cleanly.
"""
from __future__ import annotations

import threading
import time
from dataclasses import replace

import numpy as np

from granular.simulation import runfile

from granular.scenarios import scenario as scenarios
from granular.errors import GranularError

FPS = 30
MEDIA = ("sand", "pebbles", "beads")
WHEEL_MEDIA = ("wheel-dry-sand", "wheel-sand")


def _quat_y(angle):
    """Quaternion (w, x, y, z) of a counter-clockwise planar rotation as seen from −y (x right, z up)."""
    return (np.cos(angle / 2), 0.0, -np.sin(angle / 2), 0.0)


class Scene:
    """Draws terrain, bodies, feet, contact wrenches and the W(θ) slice of one foot."""

    def __init__(self, server):
        self.server = server
        self.handles = {}

    def line(self, name, points, color=(60, 60, 60), width=3.0):
        """Segments between consecutive (x, z) points."""
        pts = np.asarray(points, dtype=float)
        seg = np.stack([pts[:-1], pts[1:]], axis=1)
        seg3 = np.zeros(seg.shape[:2] + (3,))
        seg3[..., 0], seg3[..., 2] = seg[..., 0], seg[..., 1]
        self.handles[name] = self.server.scene.add_line_segments(name, seg3.astype(np.float32), colors=color,
                                                                 line_width=width)

    def terrain(self, xs, zs):
        self.line("/terrain", np.column_stack([xs, zs]), color=(150, 100, 40), width=4.0)

    def draw(self, geometry, q, theta, active, wrench, selected, space):
        from granular.apps.plots import contact_point, foot_outline, foot_pose, scene_frames, wheel_radius

        angle, origin = scene_frames(geometry, q)
        links = [np.stack([origin[p], origin[b]]) for b, p in enumerate(geometry["parent"]) if p >= 0]
        if links:
            seg = np.array(links)
            seg3 = np.zeros(seg.shape[:2] + (3,))
            seg3[..., 0], seg3[..., 2] = seg[..., 0], seg[..., 1]
            self.server.scene.add_line_segments("/links", seg3.astype(np.float32), colors=(70, 70, 70),
                                                line_width=4.0)
        fmax = max(np.abs(wrench[:, :2]).max(), 1.0)
        for f in range(len(geometry["foot_body"])):
            radius, length = geometry["foot_size"][f]
            pc, axis = foot_pose(geometry, angle, origin, f)
            mid = pc + axis * length / 2
            tilt = np.arctan2(-axis[0], axis[1])
            color = (230, 120, 30) if f == selected else (60, 120, 200)
            if wheel_radius(geometry, f) > 0:  # a rim and a spoke
                rim = foot_outline(geometry, f, pc, axis)
                self.line(f"/feet/{f}", np.vstack([rim, pc, pc + wheel_radius(geometry, f) * axis]), color=color,
                          width=3.0)
            else:
                self.server.scene.add_box(f"/feet/{f}", dimensions=(2 * radius, 2 * radius, length), color=color,
                                          position=(mid[0], 0.0, mid[1]), wxyz=_quat_y(tilt))
            at = contact_point(geometry, f, pc, axis)
            tip = at + (wrench[f, :2] / fmax * 0.25 if active[f] else np.zeros(2))
            self.line(f"/wrench/{f}", [at, tip + 1e-6], color=(220, 30, 30), width=5.0)
        if space is not None:
            self.slice(space, origin[0])

    def slice(self, space, anchor):
        """The F_x–F_z outline of the selected foot's W(θ) and its chosen wrench, as an inset."""
        outline, point = space
        scale = 0.4 / max(np.abs(outline).max(), 1.0)
        base = anchor + np.array([-0.9, 0.3])  # left of the robot: the GUI panel covers the right
        self.line("/slice/outline", base + outline * scale, color=(30, 30, 200), width=2.0)
        p = base + point * scale
        self.line("/slice/point", [p - [0.01, 0], p + [0.01, 0]], color=(220, 30, 30), width=8.0)
        self.line("/slice/axes", [base + [-0.45, 0], base + [0.45, 0]], color=(180, 180, 180), width=1.0)


def _media(spec, medium=None) -> tuple:
    """The media the Medium control offers for a scenario: wheels' for a wheeled robot, feet's else."""
    kinds = WHEEL_MEDIA if spec.robot.get("kind") in ("wheel", "rover") else MEDIA
    return tuple(dict.fromkeys(kinds + (medium or spec.medium,)))


def _slope(spec) -> float:
    return float(spec.terrain.get("angle", 0.0)) if spec.terrain.get("kind") == "slope" else 0.0


def _period(spec) -> float:
    return float(spec.control.get("period", 0.8)) if spec.control.get("kind") == "trot" else 0.8


def _fx_fz_slice(model, theta, w):
    """Convex outline of the predicted extreme wrenches' (F_x, F_z) at θ, closed, and the wrench w."""
    from scipy.spatial import ConvexHull, QhullError

    pts = np.vstack([model.points(theta[None])[0][:, :2], [0.0, 0.0]])
    try:
        ring = pts[ConvexHull(pts).vertices]
    except QhullError:
        ring = pts
    return np.vstack([ring, ring[:1]]), w[:2]


class Live:
    """A scenario running in a background thread, steered by the GUI.

    The controls start at the scenario's own medium, time step, slope and gait period; a reset
    applies only the controls the user touched since the scenario was chosen.
    """

    def __init__(self, server, scenario, medium=None):
        self.server = server
        self.scene = Scene(server)
        self.lock = threading.Lock()
        self.running = False
        self.stop_event = threading.Event()
        self.selected = 0
        self.notice = ""            # an error the status line keeps showing until the next reset
        self.touched = set()
        self._syncing = False
        self._gui(scenario, medium)
        self.reset()
        scenarios.build(self.spec).advance(2)  # compile the step's kernels now, not at the first Start
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _gui(self, name, medium):
        gui = self.server.gui
        spec = scenarios.load(name)
        media = _media(spec, medium)
        self.g_scenario = gui.add_dropdown("Scenario", scenarios.names(), initial_value=spec.name)
        self.g_medium = gui.add_dropdown("Medium", media, initial_value=medium or spec.medium)
        self.g_slope = gui.add_slider("Slope (rad)", min=-0.4, max=0.4, step=0.01, initial_value=_slope(spec))
        self.g_dt = gui.add_number("Time step (s)", initial_value=spec.dt, min=0.0002, max=0.01, step=0.0001)
        self.g_run = gui.add_button("Start / pause")
        self.g_step = gui.add_button("Step")
        self.g_reset = gui.add_button("Reset")
        self.g_gait = gui.add_slider("Gait period (s)", min=0.4, max=2.0, step=0.05, initial_value=_period(spec))
        self.g_push = gui.add_button("Push the torso")
        self.g_foot = gui.add_number("Selected foot", initial_value=0, min=0, max=3, step=1)
        self.g_status = gui.add_markdown("")
        if medium:
            self.touched.add("medium")
        self.g_run.on_click(lambda _: setattr(self, "running", not self.running))
        self.g_step.on_click(lambda _: self._advance(1))
        self.g_reset.on_click(lambda _: self.reset())
        self.g_push.on_click(lambda _: self._push())
        self.g_scenario.on_update(lambda _: self._choose())
        for key, control in (("medium", self.g_medium), ("slope", self.g_slope), ("dt", self.g_dt),
                             ("gait", self.g_gait)):
            control.on_update(lambda _, key=key: self._touch(key))
        self.g_foot.on_update(lambda _: setattr(self, "selected", int(self.g_foot.value)))

    def _touch(self, key):
        if not self._syncing:
            self.touched.add(key)
            self.reset()

    def _choose(self):
        """A new scenario: the controls show its own settings again."""
        spec = scenarios.load(self.g_scenario.value)
        self._syncing = True
        try:
            self.touched.clear()
            self.g_medium.options = _media(spec)
            self.g_medium.value, self.g_dt.value = spec.medium, spec.dt
            self.g_slope.value, self.g_gait.value = _slope(spec), _period(spec)
        finally:
            self._syncing = False
        self.reset()

    def scenario(self):
        """The chosen scenario with the touched controls applied."""
        spec = scenarios.load(self.g_scenario.value)
        spec = spec.with_(medium=self.g_medium.value if "medium" in self.touched else None,
                          dt=float(self.g_dt.value) if "dt" in self.touched else None)
        if "slope" in self.touched and spec.terrain.get("kind", "flat") in ("flat", "slope"):
            spec = spec.with_(terrain={**spec.terrain, "kind": "slope", "angle": float(self.g_slope.value)})
        if "gait" in self.touched and spec.control.get("kind") == "trot":
            spec = spec.with_(control={**spec.control, "period": float(self.g_gait.value)})
        return spec

    def reset(self):
        """Rebuild the simulation from the scenario and the touched controls; a choice that cannot be
        built (e.g. a foot medium for a wheel) is said in the status line and the run left as it was."""
        spec = self.scenario()
        try:
            sim = scenarios.build(spec)
        except GranularError as exc:
            if not hasattr(self, "sim"):  # the first scenario: the command line says what is wrong
                raise
            self.notice = f"**cannot run this**: {exc}"
            return
        self.notice = ""
        with self.lock:
            self.sim, self.spec = sim, spec
            self.geometry = runfile.geometry(sim.model)
        xs = np.linspace(sim.state.q[0] - 3, sim.state.q[0] + 3, 121)
        self.scene.terrain(xs, sim.model.terrain.height(xs))
        self.selected = min(self.selected, len(sim.model.contacts) - 1)
        self.g_foot.max = len(sim.model.contacts) - 1  # the control offers only this scenario's feet
        self.g_foot.value = self.selected

    def _push(self):
        with self.lock:
            v = self.sim.state.v.copy()
            v[0] += 0.5
            self.sim.state = replace(self.sim.state, v=v)

    def _advance(self, n):
        with self.lock:
            self.sim.advance(n)

    def _loop(self):
        last_draw = 0.0
        while not self.stop_event.is_set():
            start = time.perf_counter()
            if self.running:
                try:
                    self._advance(max(1, int(round(1.0 / (FPS * self.sim.model.dt)))))
                except GranularError as exc:
                    self.running = False
                    self.notice = f"**stopped**: {exc}"
            if time.perf_counter() - last_draw >= 1.0 / FPS:
                self.draw()
                last_draw = time.perf_counter()
            time.sleep(max(0.0, 1.0 / FPS - (time.perf_counter() - start)))

    def draw(self):
        with self.lock:
            sim, spec = self.sim, self.spec
            model, state, info = sim.model, sim.state, sim.info
        N = len(model.contacts)
        f = min(self.selected, N - 1)  # a value typed in before the control's range caught up
        theta = info.theta if info is not None else np.zeros((N, 2))
        active = info.active if info is not None else np.zeros(N, bool)
        wrench = info.wrench if info is not None else np.zeros((N, 3))
        space = _fx_fz_slice(model.wrenches, theta[f], wrench[f]) if active[f] else None
        self.scene.draw(self.geometry, state.q, theta, active, wrench, f, space)
        depths = ", ".join(f"{model.contacts[i].name} {max(0.0, -theta[i, 0]) * 100:.1f} cm" for i in range(N))
        self.g_status.content = (f"t = {state.t:.3f} s · {'running' if self.running else 'paused'}  \n"
                                 f"{spec.name} on {spec.medium}, dt {model.dt * 1e3:g} ms  \n"
                                 f"depth: {depths}" + (f"  \n{self.notice}" if self.notice else ""))

    def close(self):
        self.stop_event.set()
        self.thread.join(timeout=2)


class Replay:
    """A recorded run with a timeline slider and play/pause."""

    def __init__(self, server, run: dict):
        self.server, self.run = server, run
        self.scene = Scene(server)
        pts = run["geometry"]["terrain"]
        x0 = run["q"][0, 0]
        xs = np.linspace(x0 - 3, x0 + 3, 121)
        self.scene.terrain(xs, np.interp(xs, pts[:, 0], pts[:, 1]))
        gui = server.gui
        self.g_time = gui.add_slider("Time (s)", min=0.0, max=float(run["t"][-1]), step=float(run["dt"]),
                                     initial_value=0.0)
        self.g_play = gui.add_button("Play / pause")
        self.g_status = gui.add_markdown(f"replay of **{run['scenario']}** on {run['medium']}")
        self.playing = False
        self.g_play.on_click(lambda _: setattr(self, "playing", not self.playing))
        self.g_time.on_update(lambda _: self.draw())
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()
        self.draw()

    def _loop(self):
        while not self.stop_event.is_set():
            if self.playing:
                self.g_time.value = (self.g_time.value + 1.0 / FPS) % max(self.run["t"][-1], 1e-9)
            time.sleep(1.0 / FPS)

    def draw(self):
        i = int(round(self.g_time.value / self.run["dt"]))
        i = min(max(i, 0), len(self.run["t"]) - 1)
        s = min(i, len(self.run["wrench"]) - 1)
        self.scene.draw(self.run["geometry"], self.run["q"][i], self.run["theta"][s], self.run["active"][s],
                        self.run["wrench"][s], 0, None)

    def close(self):
        self.stop_event.set()
        self.thread.join(timeout=2)


def serve(scenario="quad-trot", medium=None, replay=None, host="127.0.0.1", port=8080, browser=True):
    """Start the viewer and block until Ctrl-C."""
    import viser

    from granular.scenarios.scenario3d import is_3d

    run = runfile.read(replay) if replay else None  # a bad file fails before the server starts
    path = scenarios.find(scenario)
    spatial = is_3d(path)
    if spatial and (replay or medium):
        raise GranularError(f"{path.name} is a 3D (MuJoCo) scenario: the viewer runs it live, with its own medium "
                            "(no --replay, no --medium yet)")
    server = viser.ViserServer(host=host, port=port, verbose=False)
    server.initial_camera.position = (0.0, -4.0, 1.6) if spatial else (0.0, -2.6, 0.6)
    server.initial_camera.look_at = (0.0, 0.0, 0.5) if spatial else (0.0, 0.0, 0.4)
    server.initial_camera.up = (0.0, 0.0, 1.0)
    if spatial:
        from granular.apps.viewer3d import Live3D

        app = Live3D(server, path)
    else:
        app = Replay(server, run) if run else Live(server, scenario, medium)
    url = f"http://{host}:{server.get_port()}"
    print(f"granular viewer at {url} (Ctrl-C to stop)", flush=True)
    if browser:
        import webbrowser

        webbrowser.open(url)
    try:
        while True:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        app.close()
        server.stop()
        print("granular viewer stopped", flush=True)
