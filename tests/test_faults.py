"""Faults of the machine around the program (issue 47): a full disk, two writers of one output, a
scheduler that does not answer, a viewer asked to listen beyond this machine."""
import os
import socket
import subprocess
import sys
import time

import pytest

from granular.data import dataset as wd

from test_newcomer import run


@pytest.fixture
def full_disk(tmp_path):
    """A 256 kB tmpfs, filled to the last block, holding a previous file of every output tried."""
    disk = tmp_path / "full"
    disk.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs to fill needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)], capture_output=True,
                             text=True)
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip()}): no honest full disk to write on")
    try:
        (disk / "figs").mkdir()
        previous = {disk / "run.h5": b"the previous run", disk / "model.h5": b"the previous model",
                    disk / "figs" / "state.png": b"the previous figure"}
        for path, content in previous.items():
            path.write_bytes(content)
        with open(disk / "filler", "wb", buffering=0) as filler:  # every block taken: the next write meets ENOSPC
            try:
                while True:
                    filler.write(b"\0" * 4096)
            except OSError:
                pass
        yield disk, previous
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def assert_one_line_and_nothing_left(code, err, disk, previous, target):
    lines = err.strip().splitlines()   # notes of the work done before may come first (train's)
    assert code == 2 and "Traceback" not in err and [x for x in lines if "error" in x] == lines[-1:], err
    assert lines[-1] == f"granular: error: cannot write {target}: No space left on device; nothing was written, the " \
                       "previous file is kept", lines[-1]
    for path, content in previous.items():
        assert path.read_bytes() == content
    left = sorted(p.name for p in disk.rglob("*") if p.is_file() and p not in previous and p.name != "filler")
    assert left == [], f"partial files left: {left}"


@pytest.mark.parametrize("option, target", [("--out", "run.h5"), ("--plot", "figs/state.png")])
def test_a_full_disk_during_sim_gives_one_line_and_keeps_the_previous_file(full_disk, capsys, option, target):
    disk, previous = full_disk
    given = disk / target if option == "--out" else disk / "figs"
    code, _, err = run(capsys, "sim", "drop-upright", "--duration", "0.05", option, given)
    assert_one_line_and_nothing_left(code, err, disk, previous, disk / target)


def test_a_full_disk_during_train_gives_one_line_and_keeps_the_previous_model(full_disk, sand, tmp_path, capsys):
    disk, previous = full_disk
    wd.write(sand, tmp_path / "sand.h5")
    code, _, err = run(capsys, "train", tmp_path / "sand.h5", "--out", disk / "model.h5")
    assert_one_line_and_nothing_left(code, err, disk, previous, disk / "model.h5")


def test_two_writers_of_one_output_end_with_one_whole_file(tmp_path):
    """Each writes under a name of its own and renames: the last rename wins, whole."""
    out = tmp_path / "d.h5"
    cmds = [[sys.executable, "-m", "granular", "synth", "--source", "rft", "--medium", medium, "--directions", "58",
             "--out", str(out)] for medium in ("sand", "pebbles")]
    for _ in range(3):
        procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in cmds]
        assert all(p.wait(timeout=600) == 0 for p in procs), [p.stderr.read() for p in procs]
        ds = wd.read(out)   # a whole, valid dataset: one writer's, not a mix
        assert ds.medium in ("sand", "pebbles") and ds.m == 58
        assert sorted(p.name for p in tmp_path.iterdir()) == ["d.h5"], "a temporary file was left"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_scheduler_is_a_clear_error_within_30_s(tmp_path, capsys):
    address = f"tcp://127.0.0.1:{_free_port()}"   # nothing listens there
    t0 = time.monotonic()
    code, _, err = run(capsys, "acquire", "dem", "--scheduler", address, "--out", tmp_path / "d.h5")
    assert time.monotonic() - t0 < 30
    assert code == 2 and err.startswith(f"granular: error: --scheduler {address}: no Dask scheduler answered")
    assert "leave out --scheduler" in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == [], "nothing prepared"


@pytest.fixture
def serve(monkeypatch):
    """viewer.serve replaced by a record of what it was asked to listen on."""
    from granular.apps import viewer

    asked = []
    monkeypatch.setattr(viewer, "serve", lambda *a, **kw: asked.append((kw["host"], kw["port"])))
    return asked


def test_the_viewer_listens_on_this_machine_by_default(serve, capsys):
    port = _free_port()
    code, _, err = run(capsys, "view", "--port", port, "--no-browser")
    assert code == 0 and serve == [("127.0.0.1", port)] and err == ""


@pytest.mark.parametrize("host", ["0.0.0.0", socket.gethostname()])
def test_a_viewer_beyond_the_loopback_warns_that_anyone_there_can_drive_it(serve, capsys, host):
    addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    if all(a.startswith("127.") or a == "::1" for a in addresses):
        pytest.skip(f"{host} resolves to the loopback here")
    port = _free_port()
    code, _, err = run(capsys, "view", "--host", host, "--port", port, "--no-browser")
    assert code == 0 and serve == [(host, port)]
    assert err.startswith(f"granular: warning: the viewer listens on {host}:{port}, so anyone who can reach")
    assert "drive the simulation" in err and "leave out --host" in err


def test_the_loopback_by_name_is_this_machine():
    from granular.apps.network import is_loopback

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("no-such-host.invalid")
