"""A live viewer in the browser (viser): run scenarios interactively, or replay run files.

viser serves a three.js scene and GUI controls from Python over a websocket,
with its web client bundled in the package (nothing is fetched at run time);
it keeps the viewer in the same process as the simulation, so the controls
act on the same SimModel/State the CLI uses. The planar world is drawn in the
x–z plane (y = 0), z up.

The simulation runs in a background thread in real time (or as fast as it
can); the scene is redrawn about 30 times a second. Closing the page or
losing the connection does not affect the server; Ctrl-C stops it cleanly.

What is drawn (:mod:`granular.apps.viewer_scene`): the medium as a translucent slab below the
terrain, the bodies and feet as solids, each foot's contact force as an arrow at a scale the panel
states (N per m). The panel (:mod:`granular.apps.viewer_gui`) also has the camera toggle (it follows
the robot by default) and the selected foot's W(θ) as a plot: f_x [N] across, f_z [N] up, the
wrench the contact law chose marked, θ in the title.
"""
from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from granular.apps.viewer_gui import Panel, Playback, arrow_scale, slice_title
from granular.apps.viewer_scene import Scene
from granular.dynamics.terrain import Terrain
from granular.errors import GranularError
from granular.scenarios import scenario as scenarios
from granular.simulation import runfile

FPS = 30
MEDIA = ("sand", "pebbles", "beads")
WHEEL_MEDIA = ("wheel-dry-sand", "wheel-sand")


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
        self.panel = Panel(self.server, 1000.0, 4)
        self.g_foot, self.g_status = self.panel.g_foot, self.panel.g_status
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
        new_robot = not hasattr(self, "sim") or spec.name != self.spec.name
        with self.lock:
            self.sim, self.spec = sim, spec
            self.geometry = runfile.geometry(sim.model)
        self.scene.span = None  # the medium redrawn at the next frame: its terrain or kind may have changed
        if new_robot:  # the arrows' scale: this robot's weight about half a metre long
            weight = 9.81 * sum(b.mass for b in sim.model.multibody.bodies)
            self.panel.g_scale.value = arrow_scale(weight)
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
            sim, spec, geometry = self.sim, self.spec, self.geometry
            model, state, info = sim.model, sim.state, sim.info
        N = len(model.contacts)
        f = min(self.selected, N - 1)  # a value typed in before the control's range caught up
        theta = info.theta if info is not None else np.zeros((N, 2))
        active = info.active if info is not None else np.zeros(N, bool)
        wrench = info.wrench if info is not None else np.zeros((N, 3))
        x = float(state.q[0])
        self.scene.medium_around(x, model.terrain, model.wrenches.dataset.medium)
        self.scene.draw(geometry, state.q, active, wrench, f, self.panel.scale)
        self.panel.follow.update(x, 0.0, float(model.terrain.height(x)))
        space = _fx_fz_slice(model.wrenches, theta[f], wrench[f]) if active[f] else None
        name = model.contacts[f].name
        self.panel.show(space, slice_title(name, theta[f]) if space is not None else
                        f"W(θ) of foot {name}: not in the medium")
        depths = ", ".join(f"{model.contacts[i].name} {max(0.0, -theta[i, 0]) * 100:.1f} cm" for i in range(N))
        self.g_status.content = (f"t = {state.t:.3f} s · {'running' if self.running else 'paused'}  \n"
                                 f"{spec.name} on {_medium_name(spec.medium)}, dt {model.dt * 1e3:g} ms  \n"
                                 f"depth: {depths}  \n{self.panel.note_scale()}"
                                 + (f"  \n{self.notice}" if self.notice else ""))

    def close(self):
        self.stop_event.set()
        self.thread.join(timeout=2)


class Replay:
    """A recorded run with a timeline slider and play/pause. The W(θ) plot needs the medium's model:
    ``medium`` (a name or model file), else the one the run's medium is named after."""

    def __init__(self, server, run: dict, medium=None):
        from granular.learning.catalog import load_model

        self.server, self.run = server, run
        self.scene = Scene(server)
        pts = run["geometry"]["terrain"]
        self.terrain = Terrain(tuple(pts[:, 0]), tuple(pts[:, 1]))
        self.playback = Playback(server, run["t"][-1], run["dt"], self.draw, FPS)
        self.g_time = self.playback.g_time
        forces = np.hypot(run["wrench"][..., 0], run["wrench"][..., 1])[run["active"]]
        self.panel = Panel(server, arrow_scale(forces.max() if forces.size else 1.0), len(run["feet"]))
        try:
            self.model, self.note = load_model(medium or run["medium"]), ""
        except GranularError as exc:
            self.model, self.note = None, f"no W(θ) plot: {exc}"
        self.playback.watch(self.panel.g_foot, self.panel.g_scale)
        self.draw()

    def draw(self):
        run = self.run
        i = int(round(self.g_time.value / run["dt"]))
        i = min(max(i, 0), len(run["t"]) - 1)
        s = min(max(i - 1, 0), len(run["wrench"]) - 1)  # step s ends at time t[s + 1]
        f = min(max(int(self.panel.g_foot.value or 0), 0), len(run["feet"]) - 1)
        theta, active, wrench = run["theta"][s], run["active"][s], run["wrench"][s]
        x = float(run["q"][i, 0])
        self.scene.medium_around(x, self.terrain, run["medium"])
        self.scene.draw(run["geometry"], run["q"][i], active, wrench, f, self.panel.scale)
        self.panel.follow.update(x, 0.0, float(self.terrain.height(x)))
        name = run["feet"][f]
        space = _fx_fz_slice(self.model, theta[f], wrench[f]) if active[f] and self.model is not None else None
        self.panel.show(space, slice_title(name, theta[f]) if space is not None else
                        f"W(θ) of foot {name}: " + ("not in the medium" if self.model is not None else "no model"),
                        now=True)
        self.panel.g_status.content = (f"replay of **{run['scenario']}** on {run['medium']}  \n"
                                       f"t = {run['t'][i]:.3f} s · {self.panel.note_scale()}"
                                       + (f"  \n{self.note}" if self.note else ""))

    def close(self):
        self.playback.close()


def _medium_name(medium: str) -> str:
    """A medium as the status line says it: its name, or a model file's name."""
    return Path(medium).name if str(medium).endswith(".h5") else str(medium)


def start(scenario="quad-trot", medium=None, replay=None, host="127.0.0.1", port=8080):
    """The viewer's server and app (Live, Replay or Live3D), serving; what :func:`serve` blocks on.

    ``medium``: a medium's name or a model file (.h5), checked before the server starts as
    ``granular sim --medium`` checks it: a planar model for a planar scenario (or a replay, whose
    W(θ) plot it then draws), a 3D model for a 3D one; anything else is one GranularError."""
    import viser

    from granular.scenarios import scenario3d

    from granular.apps.viewer3d import scenario_of
    from granular.simulation import runfile3d

    run3d = runfile3d.read(replay) if replay and runfile3d.is_run3d(replay) else None
    run = runfile.read(replay) if replay and run3d is None else None  # a bad file fails before the server starts
    path = scenario_of(run3d) if run3d else scenarios.find(scenario)
    spatial = scenario3d.is_3d(path)
    if spatial and replay and run3d is None:
        raise GranularError(f"{replay}: a planar run file; {path.name} is a 3D (MuJoCo) scenario")
    if medium is not None:  # the same check as the simulation's: it loads the model for this scenario
        if spatial:
            scenario3d.build(path, medium=medium)
        elif run is not None:
            from granular.learning.catalog import load_model

            try:
                load_model(medium)
            except GranularError as exc:
                raise GranularError(f"--medium: {exc}") from None
        else:
            scenarios.build(scenarios.load(scenario).with_(medium=medium))
    server = viser.ViserServer(host=host, port=port, verbose=False)
    try:
        server.initial_camera.position = (0.0, -4.0, 1.6) if spatial else (0.0, -2.6, 0.9)
        server.initial_camera.look_at = (0.0, 0.0, 0.5) if spatial else (0.0, 0.0, 0.4)
        server.initial_camera.up = (0.0, 0.0, 1.0)
        if spatial:
            from granular.apps.viewer3d import Live3D, Replay3D

            app = Replay3D(server, run3d, medium) if run3d else Live3D(server, path, medium)
        else:
            app = Replay(server, run, medium) if run else Live(server, scenario, medium)
    except BaseException:
        server.stop()
        raise
    return server, app


def serve(scenario="quad-trot", medium=None, replay=None, host="127.0.0.1", port=8080, browser=True):
    """Start the viewer and block until Ctrl-C (:func:`start` says what ``medium`` may be)."""
    server, app = start(scenario, medium, replay, host, port)
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
