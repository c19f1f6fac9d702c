"""The browser viewer, driven by a real headless Chromium (Debian's, through Playwright)."""
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed "
                                 "(.ci/run installs it: apt-get install chromium)")]
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(*args):
    port = free_port()
    # Ctrl-C as from a terminal: a shell without job control starts background jobs with SIGINT
    # ignored, and the viewer would inherit that (and rightly keep it) if the suite ran in one.
    proc = subprocess.Popen([sys.executable, "-m", "granular", "view", *args, "--no-browser", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 120
    while time.time() < deadline:
        line = proc.stdout.readline()
        if "granular viewer at" in line:
            return proc, f"http://127.0.0.1:{port}/"
        if proc.poll() is not None:
            break
    proc.kill()
    pytest.fail(f"viewer did not start: {proc.stdout.read()}")


@pytest.fixture
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def status(page):
    text = page.get_by_text("t = ").first.inner_text()
    return float(text.split("t = ")[1].split(" s")[0]), text


def status_until(page, holds, what, timeout=30.0):
    """Wait until ``holds(t, text)`` for the status line's time and text; a busy machine's software
    renderer can hold the page for seconds, and a GUI callback (a reset rebuilds the scenario) runs
    when the server gets to it. Returns the status that held."""
    deadline = time.time() + timeout
    while not holds(*(said := status(page))):
        assert time.time() < deadline, f"{what}: the status line says {said[1]!r}"
        page.wait_for_timeout(100)
    return said


def status_says(page, text, timeout=30.0):
    status_until(page, lambda t, said: text in said, f"the status line does not say {text!r}", timeout)


def not_blank(png_bytes):
    from io import BytesIO

    from PIL import Image

    img = np.asarray(Image.open(BytesIO(png_bytes)).convert("L"), dtype=float)
    return img.std() > 10 and (img < 200).mean() > 0.005


def test_live_viewer_runs_responds_and_survives(browser):
    proc, url = start("drop-tilted")
    try:
        page = browser.new_page(viewport={"width": 1000, "height": 700})
        page.goto(url)
        page.get_by_text("t = ").first.wait_for(timeout=30_000)
        assert status(page)[0] == 0.0
        page.get_by_role("button", name="Start / pause").click()
        t1 = status_until(page, lambda t, _: t > 0.3, "the simulation advances")[0]
        shot = page.screenshot()
        assert not_blank(shot)
        page.get_by_role("button", name="Reset").click()
        status_until(page, lambda t, _: t < t1, "Reset restarts the simulation")
        assert page.screenshot() != shot, "the scene changed"
        page.close()  # closing the page must not take the server down
        page = browser.new_page()
        page.goto(url)
        page.get_by_text("t = ").first.wait_for(timeout=30_000)
        assert proc.poll() is None
    finally:
        proc.send_signal(signal.SIGINT)
        out = proc.communicate(timeout=30)[0]
    assert proc.returncode == 0 and "granular viewer stopped" in out, out


def test_replay_and_bad_replay(browser, tmp_path):
    subprocess.run([sys.executable, "-m", "granular", "sim", "drop-upright", "--duration", "0.3", "--out",
                    tmp_path / "run.h5"], check=True, capture_output=True)
    proc, url = start("--replay", str(tmp_path / "run.h5"))
    try:
        page = browser.new_page()
        page.goto(url)
        page.get_by_text("replay of").first.wait_for(timeout=30_000)
        assert not_blank(page.screenshot())
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    bad = tmp_path / "bad.h5"
    bad.write_text("not a run")
    out = subprocess.run([sys.executable, "-m", "granular", "view", "--replay", bad, "--no-browser"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "not a readable HDF5 file" in out.stderr and "Traceback" not in out.stderr


def test_viewer_starts_from_the_scenarios_own_medium_and_time_step(browser):
    """foot-track-curved is a pebbles scenario: the viewer runs it on pebbles at its own 1 ms."""
    proc, url = start("foot-track-curved")
    try:
        page = browser.new_page()
        page.goto(url)
        page.get_by_text("t = ").first.wait_for(timeout=30_000)
        text = status(page)[1]
        assert "foot-track-curved on pebbles, dt 1 ms" in text, text
        page.get_by_role("button", name="Start / pause").click()
        status_until(page, lambda t, said: t > 0.1 and "on pebbles" in said, "it runs on pebbles")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)


def test_a_foot_number_past_the_scenarios_feet_does_not_stop_the_simulation(browser):
    """The 'Selected foot' control offers this scenario's feet only; a larger number typed in before
    its range caught up used to kill the simulation thread (IndexError in draw)."""
    proc, url = start("foot-track-curved")
    try:
        page = browser.new_page()
        page.goto(url)
        page.get_by_text("t = ").first.wait_for(timeout=30_000)
        foot = page.locator("input[type=text]").nth(3)  # the number inputs: slope, time step, gait period, foot
        foot.fill("3")
        foot.press("Enter")
        page.get_by_role("button", name="Start / pause").click()
        status_until(page, lambda t, _: t > 0.2, "the simulation goes on")
    finally:
        proc.send_signal(signal.SIGINT)
        out = proc.communicate(timeout=30)[0]
    assert "Traceback" not in out and "Exception" not in out, out


def test_a_3d_scenario_runs_live_in_the_viewer(browser):
    """quad3d-trot in the browser: the MuJoCo robot and its granular feet drawn, time advancing."""
    proc, url = start("quad3d-trot")
    try:
        page = browser.new_page(viewport={"width": 1000, "height": 700})
        page.goto(url)
        page.get_by_text("t = ").first.wait_for(timeout=60_000)
        assert status(page)[0] == 0.0 and "sand" in status(page)[1]
        page.get_by_role("button", name="Start / pause").click()
        text = status_until(page, lambda t, _: t > 1.0, "the simulation advances into the gait")[1]
        feet = re.search(r"(\d) feet in the medium", text)
        # Standing (4), trotting (2), or a diagonal pair landing while the other lifts (3).
        assert feet and 2 <= int(feet.group(1)) <= 4, text
        assert not_blank(page.screenshot())
    finally:
        proc.send_signal(signal.SIGINT)
        out = proc.communicate(timeout=30)[0]
    assert proc.returncode == 0 and "granular viewer stopped" in out, out


# In-process viewers: the test drives the simulation (so that the robot has walked in a known time,
# whatever the machine's load) and reads the scene and the GUI the server sends to the browser,
# besides what the browser shows.

PEBBLES_MODEL = os.path.join(os.path.dirname(__file__), "..", "training", "models", "pebbles.h5")


@contextlib.contextmanager
def viewer_in_process(scenario, **kw):
    from granular.apps import viewer

    server, app = viewer.start(scenario, port=free_port(), **kw)
    try:
        yield server, app, f"http://127.0.0.1:{server.get_port()}/"
    finally:
        app.close()
        server.stop()


def pixels(png_bytes):
    from io import BytesIO

    from PIL import Image

    return np.asarray(Image.open(BytesIO(png_bytes)).convert("RGB"), dtype=int)


def feet_x(png_bytes):
    """Mean column of the feet's pixels (blue, the selected one orange) in the scene: left of the
    control panel, below the notice on software rendering, right of the axes' gizmo."""
    img = pixels(png_bytes)[160:640, 60:640]
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    feet = ((b - r > 80) & (b > 120)) | ((r > 170) & (g < 150) & (b < 80) & (g > 70))
    assert feet.sum() > 200, "the feet are drawn as solids"
    return 60 + np.nonzero(feet)[1].mean()


def red_pixels(png_bytes):
    img = pixels(png_bytes)[160:640, 60:640]
    return int(((img[..., 0] > 150) & (img[..., 1] < 80) & (img[..., 2] < 80)).sum())


def settled(page, tries=6):
    """A screenshot of the page once the scene is drawn: two in a row alike (the first frames after
    loading fade in, and a software renderer on a busy machine draws a frame in seconds)."""
    shot = page.screenshot()
    for _ in range(tries):
        page.wait_for_timeout(300)
        again = page.screenshot()
        if np.abs(pixels(again) - pixels(shot)).mean() < 0.5:
            return again
        shot = again
    return shot


def camera_on(server, target, timeout=5.0):
    """The one client's camera, once it looks at ``target`` (the viewer sets it)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        clients = list(server.get_clients().values())
        if clients and np.allclose(clients[0].camera.look_at, target, atol=1e-6):
            return clients[0].camera
        time.sleep(0.05)
    raise AssertionError(f"the camera looks at {clients[0].camera.look_at if clients else None}, not {target}")


def test_live_camera_follows_arrows_are_in_newtons_and_w_is_a_labelled_plot_on_a_model_file(browser):
    """quad-trot on a model file (--medium), three seconds of trotting at a time:

    - the camera keeps the walking robot where it was on the page, and lets it walk on when the
      toggle is off; the medium is a translucent slab with depth, the feet solids;
    - each foot's arrow is its force / the stated scale (N per m), from the point it acts on, and
      is drawn twice as long at half the scale;
    - the selected foot's W(θ) is a plot with labelled axes, θ in its title, the wrench marked."""
    from granular.apps.viewer_scene import BAND_DEPTH

    with viewer_in_process("quad-trot", medium=PEBBLES_MODEL) as (server, app, url):
        page = browser.new_page(viewport={"width": 1000, "height": 700})
        page.goto(url)
        page.get_by_text("t = ").first.wait_for(timeout=30_000)
        assert "quad-trot on pebbles.h5" in status(page)[1], "the model file is the medium"
        lift = 0.4  # the camera looks at 0.4 m above the (flat, z = 0) ground under the torso
        camera_on(server, (app.sim.state.q[0], 0.0, lift))
        first = settled(page)
        assert not_blank(first)
        slab = app.scene.slab
        assert slab.opacity < 1 and np.ptp(slab.vertices[:, 2]) >= BAND_DEPTH, "a translucent slab with depth"

        x0 = app.sim.state.q[0]
        app._advance(3000)
        x1 = app.sim.state.q[0]
        assert x1 - x0 > 0.2, "the robot walked"
        camera_on(server, (x1, 0.0, lift))
        second = settled(page)
        assert abs(feet_x(second) - feet_x(first)) < 25, "followed: the robot stays where it was on the page"

        # the arrows
        info = app.sim.info
        scale = app.panel.scale
        assert scale == 2000 and "arrows: 1 m = 2000 N" in status(page)[1], "the scale is stated"
        assert info.active.sum() >= 2
        for f, handle in app.scene.arrows.items():
            w = info.wrench[f]
            assert np.isclose(app.scene.arrow_length(f), np.hypot(w[0], w[1]) / scale if info.active[f] else 0.0,
                              atol=1e-5)  # (float32 in the scene)
            if info.active[f]:  # flat ground: the contact frame's axes are the world's
                tail, tip = handle.points[0]
                assert np.allclose(tip - tail, [w[0] / scale, 0.0, w[1] / scale], atol=1e-5)
                assert np.allclose(tail[[0, 2]], app.scene.forces[f][0], atol=1e-5)
        red = red_pixels(second)
        assert red > 40, "the arrows are on the page"
        scale_input = page.locator("input[type=text]").nth(4)  # slope, time step, gait period, foot, scale
        scale_input.fill("1000")
        scale_input.press("Enter")
        status_says(page, "arrows: 1 m = 1000 N")
        f = int(np.argmax(info.active))
        assert np.isclose(app.scene.arrow_length(f), np.hypot(*info.wrench[f, :2]) / 1000, atol=1e-5)
        assert red_pixels(settled(page)) > 1.4 * red, "twice as long on the page"

        # the W(θ) plot of the selected foot
        plot = app.panel.plot.handle
        assert [a["label"] for a in plot.axes] == ["f_x [N]", "f_z [N]"]
        assert info.active[0], "front_1, selected, is in the medium"
        assert "W(θ) of foot front_1 · θ = (d " in page.locator(".u-title").first.inner_text()
        assert "chosen wrench" in page.locator(".u-legend").first.inner_text()
        marker = np.asarray(plot.data[3])
        k = np.flatnonzero(~np.isnan(marker))
        assert len(k) == 1 and np.isclose(plot.data[0][k[0]], info.wrench[0, 0]) and \
            np.isclose(marker[k[0]], info.wrench[0, 1]), "the chosen wrench marked"
        shot = page.locator(".uplot").first.screenshot()
        img = pixels(shot)
        assert not_blank(shot) and ((img[..., 2] - img[..., 0] > 60).sum() > 300), "the outline filled"
        assert ((img[..., 0] > 150) & (img[..., 1] < 80) & (img[..., 2] < 80)).sum() > 20, "the wrench marked"
        foot = page.locator("input[type=text]").nth(3)
        foot.fill("2")
        foot.press("Enter")
        page.locator(".u-title", has_text="rear_1").first.wait_for(timeout=10_000)

        # the toggle off: the camera stays, the robot walks on (not yet under the control panel)
        page.get_by_text("Camera follows the robot").click()
        page.wait_for_timeout(300)
        assert not app.panel.follow.g_follow.value
        app._advance(1000)
        assert app.sim.state.q[0] - x1 > 0.2
        third = settled(page)
        assert np.allclose(list(server.get_clients().values())[0].camera.look_at, (x1, 0.0, lift))
        assert feet_x(third) - feet_x(second) > 30, "not followed: the robot walks on across the page"
        assert feet_x(third) < 640, "yet not under the control panel"


def test_a_replay_draws_the_recorded_forces_and_follows_the_robot(browser, tmp_path):
    from granular.scenarios import scenario as scenarios
    from granular.simulation import runfile

    rec = scenarios.run(scenarios.load("quad-trot").with_(duration=2.0))
    runfile.write(runfile.record(rec, scenarios.summary(rec)), tmp_path / "run.h5")
    with viewer_in_process("quad-trot", replay=str(tmp_path / "run.h5")) as (server, app, url):
        page = browser.new_page(viewport={"width": 1000, "height": 700})
        page.goto(url)
        page.get_by_text("replay of").first.wait_for(timeout=30_000)
        app.g_time.value = 1.9
        run, i = app.run, int(round(1.9 / app.run["dt"]))
        camera_on(server, (run["q"][i, 0], 0.0, 0.4))
        status_says(page, "t = 1.900 s")
        shot = settled(page)
        assert not_blank(shot) and red_pixels(shot) > 20
        scale = app.panel.scale
        for f in app.scene.arrows:
            w, on = run["wrench"][i - 1, f], run["active"][i - 1, f]
            assert np.isclose(app.scene.arrow_length(f), np.hypot(w[0], w[1]) / scale if on else 0.0, atol=1e-5)
        assert "W(θ) of foot front_1" in page.locator(".u-title").first.inner_text()


def test_a_medium_file_of_the_wrong_kind_is_one_clear_error_before_the_server_starts():
    from granular.apps import viewer
    from granular.errors import GranularError

    models = os.path.join(os.path.dirname(__file__), "..", "training", "models")
    with pytest.raises(GranularError, match="a 3D \\(6-axis\\) model, where a planar one is expected"):
        viewer.start("quad-trot", medium=os.path.join(models, "sand3d.h5"), port=free_port())
    with pytest.raises(GranularError, match="sand.h5: "):  # a planar model file for a 3D scenario
        viewer.start("quad3d-trot", medium=os.path.join(models, "sand.h5"), port=free_port())


def test_the_3d_viewer_draws_force_arrows_follows_the_trunk_and_plots_w(browser):
    with viewer_in_process("quad3d-trot") as (server, app, url):
        page = browser.new_page(viewport={"width": 1000, "height": 700})
        page.goto(url)
        page.get_by_text("t = ").first.wait_for(timeout=60_000)
        app._advance(150)
        status_says(page, "4 feet in the medium")
        with app.lock:
            forces, trunk = dict(app.forces), app.world.mj_data.xpos[app.trunk].copy()
        camera_on(server, (trunk[0], trunk[1], app.world.terrain(trunk[:2])[0] + 0.5))
        shot = settled(page)
        assert not_blank(shot) and red_pixels(shot) > 20, "the arrows are on the page"
        scale = app.panel.scale
        for k, (p, f) in forces.items():  # from beside the foot's p_center, level with it
            tail, tip = app.arrows[k].points[0]
            assert np.isclose(tail[2], p[2], atol=1e-5) and np.linalg.norm(tail - p) < 0.1
            assert np.allclose(tip - tail, f / scale, atol=1e-5)
        assert "W(θ) of foot foot_fl · θ = (d " in page.locator(".u-title").first.inner_text()


def test_a_3d_run_file_replays_the_recorded_state_and_forces(browser, tmp_path):
    from granular.scenarios import scenario3d
    from granular.simulation import runfile3d

    world = scenario3d.build("sim/quad3d-trot.toml", duration=1.0)
    rec = scenario3d.run(world)
    runfile3d.write(world, rec, scenario3d.summary(world, rec), tmp_path / "run3d.h5")
    with viewer_in_process("quad-trot", replay=str(tmp_path / "run3d.h5")) as (server, app, url):
        page = browser.new_page(viewport={"width": 1000, "height": 700})
        page.goto(url)
        page.get_by_text("replay of").first.wait_for(timeout=30_000)
        app.g_time.value = 0.9
        status_says(page, "t = 0.90 s")
        run, i = app.run, int(round(0.9 / app.run["dt"]))
        with app.lock:
            assert np.array_equal(app.world.mj_data.qpos, run["qpos"][i])
            trunk = app.world.mj_data.xpos[app.trunk].copy()
        assert np.allclose(trunk, run["pos"][i, app.trunk])
        scale = app.panel.scale
        for k in range(len(run["feet"])):
            on = run["active"][i - 1, k]
            assert app.arrows[k].visible == bool(on)
            if on:
                tail, tip = app.arrows[k].points[0]
                assert np.allclose(tip - tail, run["force"][i - 1, k] / scale, atol=1e-5)
        camera_on(server, (trunk[0], trunk[1], 0.5))
        shot = settled(page)
        assert not_blank(shot) and red_pixels(shot) > 20
