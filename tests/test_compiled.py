"""The kernels compiled ahead of time (granular/compiled.py): the same numbers as numba's JIT, a
short simulation that never imports numba, and a machine that cannot build them still simulates."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import granular
from granular import compiled

PACKAGE = Path(granular.__file__).parent


def sim_json(args, **env):
    done = subprocess.run([sys.executable, "-m", "granular", "sim", *args, "--json"], capture_output=True,
                          text=True, timeout=600, env={**os.environ, **env})
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    out.pop("wall_time_s")
    return out, done.stderr


def test_every_module_with_kernels_is_part_of_the_key():
    """A kernel whose source is not hashed would keep running its old compiled code after an edit."""
    with_kernels = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                    if p.name != "compiled.py" and re.search(r"^@kernel\(", p.read_text(), re.M)}
    assert with_kernels == set(compiled.MODULES)


def test_this_process_runs_the_ahead_of_time_kernels():
    from granular.dynamics import multibody

    assert compiled.mode() == "aot"
    assert not hasattr(multibody._frames, "py_func")  # a guarded AOT function, not a numba dispatcher


# numba compiles the fused step just in time once (a minute) for these: one worker runs them all, sharing
# its numba cache (conftest's NUMBA_CACHE_DIR)
@pytest.mark.slow
@pytest.mark.xdist_group("jit")
@pytest.mark.parametrize("args", [["quad-trot", "--duration", "0.4"],
                                  ["quad-trot", "--duration", "0.4", "--contact", "data-flow"],
                                  ["foot-track-curved", "--duration", "0.4", "--representation", "exact"]])
def test_ahead_of_time_and_just_in_time_kernels_agree_exactly(args):
    aot, _ = sim_json(args)
    jit, _ = sim_json(args, GRANULAR_JIT="1")
    assert aot == jit


def test_an_exported_kernel_divides_by_zero_as_the_jit_kernel_does():
    """numpy's error model (x / 0 is inf) in the AOT module too: numba.pycc compiles an exported
    function with Python's, under which the same division raised ZeroDivisionError."""
    from granular.learning.linear import depth_factor

    assert compiled.mode() == "aot"
    assert depth_factor(0.1, 0.0, 0) == float("inf")


def test_a_short_simulation_does_not_import_numba():
    code = ("import sys; from granular.scenarios import scenario as s; "
            "s.run(s.load('foot-track-curved').with_(duration=0.05)); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numba', 'llvmlite', 'cvxpy')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.slow
@pytest.mark.xdist_group("jit")
def test_without_a_c_compiler_the_kernels_run_just_in_time(tmp_path):
    """The build fails at once (CC names no compiler): one warning that says why, the failure
    remembered, the run the same."""
    cache = {"GRANULAR_CACHE": str(tmp_path), "CC": "/bin/false", "GRANULAR_IGNORE_INSTALLED_KERNELS": "1"}
    args = ["drop-upright", "--duration", "0.2"]
    first, err = sim_json(args, **cache)
    assert "could not compile the kernels ahead of time" in err and "no working C compiler" in err
    assert list((tmp_path / "kernels").glob("*.failed"))
    again, err = sim_json(args, **cache)
    assert "could not compile" not in err  # said once: the next process goes straight to numba's JIT
    assert first == again == sim_json(args)[0]


def test_arguments_of_any_layout_or_dtype_give_the_jit_answer_and_a_wrong_shape_is_refused():
    """numba.pycc's own entry points check nothing: a strided array would be read as contiguous."""
    import numpy as np

    from granular.learning.linear import rbf_features

    X = np.arange(24.0).reshape(12, 2)
    centers = X[::3]                                      # strided
    expected = rbf_features(np.ascontiguousarray(X), np.ascontiguousarray(centers), (centers**2).sum(1), 1, 1)
    assert np.array_equal(rbf_features(X.T.copy().T, centers, (centers**2).sum(1), 1, 1), expected)  # F order
    assert np.array_equal(rbf_features(X.astype(np.float32).astype(int), centers, (centers**2).sum(1), 1, 1),
                          rbf_features(X.astype(int).astype(float), np.ascontiguousarray(centers),
                                       (centers**2).sum(1), 1, 1))  # integers, as floats
    with pytest.raises(TypeError, match="must be a 2-D array"):
        rbf_features(np.ones(3), centers, (centers**2).sum(1), 1, 1)


def test_the_kernels_built_at_install_time_are_the_ones_this_process_runs():
    """pip builds the kernels into granular_aot/ (hatch_build.py): the first command needs no build."""
    folder = compiled.installed()
    assert folder is not None, "no kernels were built at install time (see hatch_build.py's warning in pip -v)"
    built_for = json.loads((folder / compiled.MANIFEST).read_text())["key"]
    if built_for != compiled.key():
        pytest.skip("the kernels' sources changed since the install: reinstall (pip install -e .)")
    assert compiled._verified(folder, compiled.key()) is not None
    assert Path(compiled._aot().__file__).parent == folder


def _fake_build(tmp_path, name):
    """A cache folder as a build leaves it, with a copy of this process's extension."""
    folder = tmp_path / "kernels" / name
    folder.mkdir(parents=True)
    source = Path(compiled._aot().__file__)
    (folder / source.name).write_bytes(source.read_bytes())
    (folder / compiled.MANIFEST).write_text((source.parent / compiled.MANIFEST).read_text().replace(
        compiled.key(), name))
    return folder / source.name


def test_a_truncated_extension_in_the_cache_is_never_loaded_but_built_again(tmp_path, monkeypatch, caplog):
    """Loading a truncated extension crashed the process (SIGBUS): its sha256 now refuses it."""
    path = _fake_build(tmp_path, "k")
    assert compiled._verified(path.parent, "k") == path
    path.write_bytes(path.read_bytes()[:4096])
    with pytest.raises(compiled.Damaged, match="sha256"):
        compiled._verified(path.parent, "k")
    built = []
    monkeypatch.setattr(compiled, "cache_dir", lambda: tmp_path)
    monkeypatch.setattr(compiled, "_build", lambda folder, failed: built.append(folder))
    assert compiled._cached("k") is None and built == [path.parent]
    assert not path.parent.exists()  # removed before the build, which would write it anew
    assert "damaged" in caplog.text


def test_a_build_without_its_manifest_is_not_a_build(tmp_path, monkeypatch):
    """A killed build can leave the extension without the manifest a whole build writes last."""
    path = _fake_build(tmp_path, "k")
    (path.parent / compiled.MANIFEST).unlink()
    built = []
    monkeypatch.setattr(compiled, "cache_dir", lambda: tmp_path)
    monkeypatch.setattr(compiled, "_build", lambda folder, failed: built.append(folder))
    compiled._cached("k")
    assert built == [path.parent]


@pytest.mark.parametrize("where", ["a file", "unwritable"])
def test_an_unusable_cache_gives_a_warning_and_just_in_time_kernels(tmp_path, monkeypatch, caplog, where):
    """A cache path that is a file, or a folder nobody may write (/proc: root included): one warning,
    no traceback; numba is told not to cache rather than refusing every kernel."""
    if where == "a file":
        cache = tmp_path / "file"
        cache.write_text("")
    else:
        cache = Path("/proc/granular-cache")
    monkeypatch.setattr(compiled, "cache_dir", lambda: cache)
    assert compiled._cached("k") is None
    assert "cannot use the cache" in caplog.text and "GRANULAR_CACHE" in caplog.text
    monkeypatch.setattr(compiled, "_numba_cache_ok", None)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(cache / "numba"))
    assert compiled._numba_cache() is False
    assert "cannot cache" in caplog.text


def test_a_command_runs_with_a_cache_path_that_is_a_file(tmp_path):
    cache = tmp_path / "file"
    cache.write_text("")
    out, err = sim_json(["drop-upright", "--duration", "0.05"], GRANULAR_CACHE=str(cache))
    assert out["steps"] == 50 and "Traceback" not in err


def test_a_build_in_the_cache_shows_its_progress_and_keeps_its_error(caplog, monkeypatch):
    """Off a terminal the build's progress is a log line each quarter; its last other line, the
    error where it fails, is what the warning quotes."""
    import io
    import logging

    monkeypatch.setattr(sys, "stderr", io.StringIO())  # not a terminal, whatever runs the tests

    lines = [f"{compiled.PROGRESS} {i} 8\n" for i in range(9)] + ["Traceback …\n", "RuntimeError: boom\n"]
    with caplog.at_level(logging.INFO, logger="granular.compiled"):
        last = compiled._follow(iter(lines))
    assert last == "RuntimeError: boom"
    told = [r.getMessage() for r in caplog.records if "compiling kernels" in r.getMessage()]
    assert told == ["compiling kernels: 2 of 8", "compiling kernels: 4 of 8", "compiling kernels: 6 of 8",
                    "compiling kernels: 8 of 8"]


def test_just_in_time_kernels_cache_in_the_user_cache_never_beside_the_source(tmp_path):
    """numba read its cache folder when it was imported, before granular named one: every JIT
    process wrote its cache into the package's __pycache__ folders."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(GRANULAR_JIT="1", GRANULAR_CACHE=str(tmp_path))
    before = {p for p in PACKAGE.rglob("*") if p.suffix in (".nbi", ".nbc")}
    code = "from granular.learning.linear import depth_factor; print(depth_factor(0.1, 0.5, 0))"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert list((tmp_path / "numba").rglob("*.nbi")), "numba cached the kernel in the user cache"
    assert {p for p in PACKAGE.rglob("*") if p.suffix in (".nbi", ".nbc")} == before


def test_an_extension_that_does_not_load_means_jit_with_one_warning(tmp_path, caplog):
    """A cache on a noexec mount, or shared with a machine of another C library: not a traceback."""
    fake = tmp_path / "granular_kernels.cpython-311-x86_64-linux-gnu.so"
    fake.write_bytes(b"not an ELF file")
    assert compiled._import(fake) is None
    assert "do not load" in caplog.text


@pytest.mark.slow
@pytest.mark.xdist_group("jit")
def test_a_truncated_extension_in_the_cache_is_refused_end_to_end(tmp_path):
    """The case that crashed the process with SIGBUS: the cache's extension cut short (a full disk,
    a killed copy). The command says so, cannot rebuild it here (no C compiler), runs just in time
    and gets the same answer."""
    name = compiled.key()
    path = _fake_build(tmp_path, name)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 3])
    args = ["drop-upright", "--duration", "0.2"]
    out, err = sim_json(args, GRANULAR_CACHE=str(tmp_path), GRANULAR_IGNORE_INSTALLED_KERNELS="1", CC="/bin/false")
    assert "damaged" in err and "no working C compiler" in err and "Traceback" not in err
    assert not path.exists(), "the damaged build was removed"
    assert out == sim_json(args)[0]
