"""What the planar and the 3D viewer share in their control panel (:class:`Panel`): the camera that
follows the robot, the force arrows' scale, and the selected foot's W(θ) in a labelled plot (uPlot,
in viser's GUI).

The plot is the (f_x, f_z) outline of the predicted W(θ) (the convex hull of the model's extreme
wrenches at the foot's θ, in F_r, projected on its force plane) with the wrench the contact law chose
marked. Its upper and lower boundaries are drawn as two curves over f_x and the band between them
filled: uPlot plots y over an increasing x.
"""
from __future__ import annotations

import threading
import time

import numpy as np

LIFT = 0.4  # the camera looks this far above the ground under the robot (m)


def nice(value: float) -> float:
    """The 1, 2 or 5 × 10^k closest (in ratio) to value > 0."""
    k = np.floor(np.log10(value))
    steps = np.array([1.0, 2.0, 5.0, 10.0]) * 10 ** k
    return float(steps[np.argmin(np.abs(np.log(steps / value)))])


def nice_ceil(value: float) -> float:
    """The smallest 1, 2 or 5 × 10^k at least value > 0."""
    k = np.floor(np.log10(value))
    steps = np.array([1.0, 2.0, 5.0, 10.0]) * 10 ** k
    return float(steps[np.argmax(steps >= value * (1 - 1e-12))])


def arrow_scale(weight_n: float, length=0.5) -> float:
    """The default arrows' scale (N per m): the robot's weight about ``length`` metres long."""
    return nice(max(weight_n, 1.0) / length)


class Follow:
    """The "Camera follows the robot" toggle: each client's camera looks at the robot, from where the
    user last orbited or zoomed it to (its offset from the point it looks at); a pan lasts until the
    next frame. Off, the camera is left alone.

    The browser reports its camera when it moves, and first its default view, then the server's
    initial camera, whenever it gets to apply it: an offset is learnt only from a report of a camera
    looking at a point the follower sent, and any report looking elsewhere is corrected."""

    def __init__(self, server, lift=LIFT):
        self.server, self.lift = server, lift
        initial = server.initial_camera
        self.default = np.array(initial.position) - np.array(initial.look_at)
        self.g_follow = server.gui.add_checkbox("Camera follows the robot", initial_value=True)
        self.offset, self.sent = {}, {}   # per client id: the learnt offset, the last targets sent
        self.target = None
        self.lock = threading.Lock()      # two draws at once (a replay's slider and its player) move it once
        server.on_client_connect(lambda client: client.camera.on_update(
            lambda camera, cid=client.client_id: self._report(cid, camera)))

    def _report(self, cid, camera):
        look_at = np.array(camera.look_at)
        if any(np.abs(look_at - p).max() < 1e-3 for p in self.sent.get(cid, ())):
            self.offset[cid] = np.array(camera.position) - look_at

    def update(self, x, y, ground):
        """Keep each client's camera on the robot at (x, y), ``lift`` above the ground height ``ground``."""
        self.target = target = np.array([x, y, ground + self.lift])
        if not self.g_follow.value:
            return
        with self.lock:
            for cid, client in list(self.server.get_clients().items()):
                camera = client.camera
                if np.abs(np.array(camera.look_at) - target).max() < 1e-4:
                    continue
                self.sent[cid] = (self.sent.get(cid, ()) + (target,))[-30:]
                with client.atomic():
                    camera.position = target + self.offset.get(cid, self.default)  # (look_at moves along:
                    camera.look_at = target                                        # set it after)


def slice_title(name, theta) -> str:
    """The plot's title: the foot, and its θ = (d, φ) in cm and degrees."""
    return f"W(θ) of foot {name} · θ = (d {theta[0] * 100:+.1f} cm, φ {np.degrees(theta[1]):+.0f}°)"


def boundaries(ring, point):
    """(f_x grid, upper f_z, lower f_z, marker) of a convex outline (k, 2) and the marked point (2,):
    the marker is NaN but at the point's f_x (added to the grid; the boundaries NaN there if it lies
    beyond the outline's ends)."""
    ring = np.asarray(ring, float)
    closed = np.vstack([ring, ring[:1]])
    xs = np.unique(np.append(ring[:, 0], point[0]))
    upper, lower = np.full(len(xs), -np.inf), np.full(len(xs), np.inf)
    for a, b in zip(closed[:-1], closed[1:]):
        lo, hi = min(a[0], b[0]), max(a[0], b[0])
        inside = (xs >= lo - 1e-9) & (xs <= hi + 1e-9)
        if hi - lo < 1e-12:  # a vertical edge: both its ends at its f_x
            upper = np.where(inside, np.fmax(upper, max(a[1], b[1])), upper)
            lower = np.where(inside, np.fmin(lower, min(a[1], b[1])), lower)
            continue
        z = np.where(inside, a[1] + (xs - a[0]) * (b[1] - a[1]) / (b[0] - a[0]), np.nan)
        upper, lower = np.fmax(upper, z), np.fmin(lower, z)
    upper[~np.isfinite(upper)], lower[~np.isfinite(lower)] = np.nan, np.nan  # a point outside the outline
    marker = np.full(len(xs), np.nan)
    marker[np.argmin(np.abs(xs - point[0]))] = point[1]
    return xs, upper, lower, marker


def _range(values):
    lo, hi = min(values.min(), 0.0), max(values.max(), 0.0)
    pad = 0.08 * max(hi - lo, 1.0)
    return (float(lo - pad), float(hi + pad))


class WrenchPlot:
    """The selected foot's W(θ) in the control panel: axes f_x [N] and f_z [N], θ in the title."""

    AXES = ("f_x [N]", "f_z [N]")

    def __init__(self, server):
        self.handle = server.gui.add_uplot(
            *self._data(None), title="W(θ): no foot in contact", aspect=1.1,
            bands=({"series": (1, 2), "fill": "rgba(40, 70, 200, 0.22)"},),
            axes=({"label": self.AXES[0], "stroke": "#333"}, {"label": self.AXES[1], "stroke": "#333"}),
            legend={"show": True, "live": False}, cursor={"show": False})
        self.space = None

    @staticmethod
    def _data(space):
        series = ({"label": "f_x [N]"},
                  {"label": "W(θ) upper", "stroke": "rgb(40, 70, 200)", "width": 2, "points": {"show": False}},
                  {"label": "W(θ) lower", "stroke": "rgb(40, 70, 200)", "width": 2, "points": {"show": False}},
                  {"label": "chosen wrench", "stroke": "rgb(210, 30, 30)", "width": 0, "spanGaps": False,
                   "points": {"show": True, "size": 11, "fill": "rgb(210, 30, 30)", "stroke": "rgb(120, 0, 0)"}})
        if space is None:
            return (np.zeros(2), np.full(2, np.nan), np.full(2, np.nan), np.full(2, np.nan)), series
        return boundaries(*space), series

    def update(self, space, title):
        """Show ``space`` = (outline (k, 2), chosen wrench (2,)) in N, or none (a foot not in contact);
        only what changed is sent (the browser redraws the chart on every change)."""
        data, _ = self._data(space)
        if space is not None:  # square, fixed-step ranges: the shape is not distorted frame to frame
            lo_x, hi_x = _range(np.append(space[0][:, 0], space[1][0]))
            lo_z, hi_z = _range(np.append(space[0][:, 1], space[1][1]))
            half = nice_ceil(max(hi_x - lo_x, hi_z - lo_z) / 2)
            cx = round((lo_x + hi_x) / 2 / (half / 5)) * half / 5
            cz = round((lo_z + hi_z) / 2 / (half / 5)) * half / 5
            half *= 1.2
            scales = {"x": {"time": False, "auto": False, "range": (cx - half, cx + half)},
                      "y": {"auto": False, "range": (cz - half, cz + half)}}
            if scales != self.handle.scales:
                self.handle.scales = scales
        old = self.handle.data
        if len(old) != len(data) or any(a.shape != b.shape or not np.array_equal(a, b, equal_nan=True)
                                        for a, b in zip(old, data)):
            self.handle.data = data
        if title != self.handle.title:
            self.handle.title = title
        self.space = space


class Panel:
    """The controls every view has (planar, replay, 3D): follow, selected foot, arrow scale, a status
    line and the W(θ) plot, in this order below the view's own controls."""

    def __init__(self, server, scale, feet, lift=LIFT):
        gui = server.gui
        self.follow = Follow(server, lift)
        self.g_foot = gui.add_number("Selected foot", initial_value=0, min=0, max=max(feet - 1, 0), step=1)
        self.g_scale = gui.add_number("Arrow scale (N per m)", initial_value=scale, min=1e-3, max=1e7)
        self.g_status = gui.add_markdown("")
        with gui.add_folder("W(θ) of the selected foot"):
            self.plot = WrenchPlot(server)
        self.last_plot = 0.0

    @property
    def scale(self) -> float:
        return max(float(self.g_scale.value or 1.0), 1e-3)

    def note_scale(self) -> str:
        return f"arrows: 1 m = {self.scale:g} N"

    def show(self, space, title, now=False):
        """The plot, at most 10 times a second (the scene is drawn 30 times) unless ``now``."""
        if now or time.perf_counter() - self.last_plot >= 0.1:
            self.plot.update(space, title)
            self.last_plot = time.perf_counter()


class Playback:
    """A replay's time slider and Play / pause, and the thread that moves the slider ``fps`` times a
    second while playing; ``draw`` is called on every change of the slider (and of the controls
    :meth:`watch` adds)."""

    def __init__(self, server, t_end: float, dt: float, draw, fps: int = 30):
        gui = server.gui
        self.g_time = gui.add_slider("Time (s)", min=0.0, max=float(t_end), step=float(dt), initial_value=0.0)
        self.g_play = gui.add_button("Play / pause")
        self.playing, self.t_end, self.fps, self.draw = False, float(t_end), fps, draw
        self.g_play.on_click(lambda _: setattr(self, "playing", not self.playing))
        self.watch(self.g_time)
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def watch(self, *controls):
        for control in controls:
            control.on_update(lambda _: self.draw())

    def _loop(self):
        while not self.stop_event.is_set():
            if self.playing:
                self.g_time.value = (self.g_time.value + 1.0 / self.fps) % max(self.t_end, 1e-9)
            time.sleep(1.0 / self.fps)

    def close(self):
        self.stop_event.set()
        self.thread.join(timeout=2)
