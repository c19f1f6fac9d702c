"""The browser viewer, driven by a real headless Chromium (Debian's, through Playwright)."""
import os
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
        page.wait_for_timeout(1500)
        t1 = status(page)[0]
        assert t1 > 0.3, "the simulation advances (close to real time)"
        shot = page.screenshot()
        assert not_blank(shot)
        page.get_by_role("button", name="Reset").click()
        page.wait_for_timeout(800)
        assert status(page)[0] < t1, "Reset restarts the simulation"
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
        page.wait_for_timeout(1000)
        assert status(page)[0] > 0.1 and "on pebbles" in status(page)[1]
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
        page.wait_for_timeout(1500)
        assert status(page)[0] > 0.2, status(page)[1]
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
        page.wait_for_timeout(3000)
        t, text = status(page)
        assert t > 0.05, "the simulation advances"
        assert "4 feet in the medium" in text or "2 feet in the medium" in text, text  # standing, or trotting
        assert not_blank(page.screenshot())
    finally:
        proc.send_signal(signal.SIGINT)
        out = proc.communicate(timeout=30)[0]
    assert proc.returncode == 0 and "granular viewer stopped" in out, out
