"""The simulation's compiled kernels: written once, in numba's subset of Python, and compiled ahead
of time where the machine allows it.

A kernel lives in the module of the stage it belongs to and is marked ``@kernel("arg types")``
(numba's type strings, e.g. ``"f8[::1], i8"``); a kernel that only other kernels call is marked
``@kernel()``. A process runs them one of two ways:

- **Ahead of time** (the default). All kernels are built with ``numba.pycc`` into one extension
  module when the package is installed (``hatch_build.py``: the folder :data:`INSTALLED` beside
  the package), or else in the user cache, ``cache_dir()/kernels/KEY/``, the first time a process
  needs them (about 80 s; issue 48): once per machine and per version of their source (KEY hashes
  the modules in :data:`MODULES`, this file, numpy's major and Python's versions and the CPU). A
  build writes a manifest (its KEY and the extension's sha256); an extension that does not match
  its manifest (a truncated file, a killed build) is never loaded, since that can crash the
  process: the cache's is built again. Loading it imports neither numba nor its compiler, which
  took about 0.8 s of every short ``granular sim`` (issue 14). ``GRANULAR_IGNORE_INSTALLED_KERNELS=1``
  skips the installed module (to test the cache's).
- **Just in time**, ``numba.njit(cache=True)``: where the build failed (say, no C compiler: the
  reason is logged once and remembered beside the cache), and with ``GRANULAR_JIT=1`` (to debug a
  kernel; the build itself runs so, since it compiles the JIT dispatchers' code).

Both run the same source and agree to the last bit (``tests/test_compiled.py``). numba.pycc's
functions check nothing of their arguments (a strided array is read as if it were contiguous, a
wrong dtype as raw bytes), so each exported kernel is wrapped in a guard that passes well-formed
arrays straight through and converts the rest, as a JIT dispatcher would accept them.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.machinery
import importlib.util
import json
import logging
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from granular.io.resources import cache_dir

log = logging.getLogger(__name__)

#: The modules that define kernels (relative to the package); their source is part of the key.
MODULES = (
    "dynamics/multibody.py",
    "dynamics/terrain.py",
    "contact/detection.py",
    "contact/qp.py",
    "contact/reduction.py",
    "contact/active_set.py",
    "contact/flow.py",
    "contact/step3d.py",
    "wrench/flow.py",
    "wrench/flow3d.py",
    "learning/linear.py",
    "simulation/fused_control.py",
    "simulation/fused.py",
    "simulation/coupled3d.py",
)
#: Modules without kernels whose constants kernels compile in (hashed into the key with MODULES).
CONSTANTS = ("contact/law3d.py",)
NAME = "granular_kernels"
#: The top-level folder that holds kernels built at install time, and each build's manifest in it.
INSTALLED, MANIFEST = "granular_aot", "manifest.json"
#: How a build reports progress on its stderr: ``PROGRESS i n``.
PROGRESS = "granular-progress"
BUILD_TIMEOUT_S = 1800
_PACKAGE = Path(__file__).resolve().parent

_DTYPES = {"f8": np.dtype(np.float64), "i8": np.dtype(np.int64), "b1": np.dtype(np.bool_)}
_BY_NUM = {d.num: d for d in _DTYPES.values()}
_ARGUMENT = re.compile(r"(\w+)(\[[^\]]*\])?")

_exports: dict[str, tuple] = {}  # exported name → (JIT dispatcher, argument types); JIT mode only
_loaded = None                    # the AOT module, False once it is known to be unavailable
_numba_cache_ok = None            # whether numba may cache its compilations (:func:`_numba_cache`)


def jit_only() -> bool:
    """True where kernels must run just in time (``GRANULAR_JIT=1``)."""
    return os.environ.get("GRANULAR_JIT", "") not in ("", "0")


def kernel(*arg_types: str, inline: bool = False):
    """Mark a numba kernel. With argument types it is callable from Python (exported from the AOT
    module); without, only from other kernels (compiled into them), and in an AOT process the name
    stays the plain Python function. ``inline``: numba inlines it into its callers, for a small
    function called in a hot loop (a call that passes array views costs more than its body)."""

    def wrap(fn):
        name = f"{fn.__module__.replace('.', '_')}__{fn.__name__}"
        aot = None if jit_only() else _aot()
        if aot is not None:
            return _guarded(getattr(aot, name), fn, arg_types) if arg_types else fn
        cache = _numba_cache()  # before numba is imported: it reads its cache folder once, at import
        from numba import njit

        compiled = njit(cache=cache, error_model="numpy", inline="always" if inline else "never")(fn)
        if arg_types:
            _exports[name] = (compiled, ", ".join(arg_types))
            compiled.specs = _parse(arg_types)
        return compiled

    return wrap


def _numba_cache():
    """Where kernels run just in time, numba caches them; unless the user chose a folder, in the
    user cache (not beside the source: an installed package must not be written to), one folder per
    :func:`key`: numba checks a cached function against its own file only, so a kernel that calls
    kernels of other modules (the fused step) would keep their old code after an edit or upgrade.
    Whether numba may cache: not where that folder cannot be written (numba would refuse the kernel)."""
    global _numba_cache_ok
    if _numba_cache_ok is None:
        if not os.environ.get("NUMBA_CACHE_DIR"):
            os.environ["NUMBA_CACHE_DIR"] = str(cache_dir() / "numba" / key())
            if "numba" in sys.modules:  # imported before us (by the user's program): make it read it again
                from numba.core import config

                config.reload_config()
        folder = Path(os.environ["NUMBA_CACHE_DIR"])
        try:
            folder.mkdir(parents=True, exist_ok=True)
            tempfile.TemporaryFile(dir=folder).close()
            _numba_cache_ok = True
        except OSError as exc:
            log.warning("numba cannot cache the kernels in %s (%s): they are compiled again in every process "
                        "(set GRANULAR_CACHE to a writable folder)", folder, exc)
            _numba_cache_ok = False
    return _numba_cache_ok


def _parse(arg_types) -> list:
    """(dtype number, ndim, C-contiguous) per argument of numba type strings; ndim 0 for a scalar.
    The number, not the dtype object: arrays the AOT module returns carry dtype objects of their own."""
    specs = []
    for dtype, dims in _ARGUMENT.findall(", ".join(arg_types)):
        if dtype not in _DTYPES:
            raise ValueError(f"kernel argument type {dtype!r}: only {', '.join(_DTYPES)} are supported")
        specs.append((_DTYPES[dtype].num, dims.count(",") + 1 if dims else 0, dims.endswith("::1]")))
    return specs


def _guarded(compiled, fn, arg_types):
    """``compiled`` behind a check of its array arguments. The check is generated as one expression
    per kernel (as dataclasses generate ``__init__``): a loop over the arguments cost twice as much,
    and the quadruped's step calls five kernels with 36 arrays."""
    specs = _parse(arg_types)
    args = ", ".join(f"a{i}" for i in range(len(specs)))
    checks = " and ".join(f"a{i}.__class__ is ndarray and a{i}.dtype.num == {num} and a{i}.ndim == {ndim}"
                          + (f" and a{i}.flags.c_contiguous" if contiguous else "")
                          for i, (num, ndim, contiguous) in enumerate(specs) if ndim) or "True"  # scalars only
    source = (f"def {fn.__name__}({args}):\n"
              f"    if {checks}:\n"
              f"        return compiled({args})\n"
              f"    return compiled(*coerced({fn.__name__!r}, ({args},), specs))\n")
    namespace = {"ndarray": np.ndarray, "compiled": compiled, "coerced": _coerced, "specs": specs}
    exec(source, namespace)
    guarded = namespace[fn.__name__]
    guarded.__doc__, guarded.__wrapped__, guarded.unchecked, guarded.specs = fn.__doc__, fn, compiled, specs
    return guarded


def declared(fn) -> dict:
    """Each argument an exported kernel declares, by name: (dtype, number of dimensions, 0 for a
    scalar), in either mode: what a caller of :func:`unchecked` must pass."""
    source = getattr(fn, "__wrapped__", None) or fn.py_func  # the Python function: AOT guard or JIT dispatcher
    names = source.__code__.co_varnames[:source.__code__.co_argcount]
    return {name: (_BY_NUM[num], ndim) for name, (num, ndim, _) in zip(names, fn.specs, strict=True)}


def unchecked(fn):
    """A kernel without the check of its arguments, for a hot loop that prepared them itself
    (each one of the declared dtype, dimensions and layout: nothing is converted, and a wrong
    array is read as raw memory). Just in time, the dispatcher itself (it checks its types)."""
    return getattr(fn, "unchecked", fn)


def _coerced(name, args, specs):
    """The arguments as the kernel declares them: other layouts and dtypes converted, as a JIT
    dispatcher would accept them; a wrong number of dimensions refused."""
    args = list(args)
    for i, (num, ndim, contiguous) in enumerate(specs):
        if not ndim:
            continue
        x, dtype = np.asarray(args[i]), _BY_NUM[num]
        if x.ndim != ndim:
            raise TypeError(f"{name}: argument {i + 1} must be a {ndim}-D array, got shape {x.shape}")
        if not np.can_cast(x.dtype, dtype, "same_kind"):
            raise TypeError(f"{name}: argument {i + 1} must be {dtype}, got {x.dtype}")
        args[i] = np.ascontiguousarray(x, dtype) if contiguous else x.astype(dtype, copy=False)
    return args


def mode() -> str:
    """``"aot"`` or ``"jit"``: how this process runs its kernels."""
    return "aot" if not jit_only() and _aot() is not None else "jit"


def key() -> str:
    """What the AOT module was built from: the kernels' source, numpy, Python and the machine."""
    digest = hashlib.sha256()
    for rel in (*MODULES, *CONSTANTS, "compiled.py"):
        digest.update((_PACKAGE / rel).read_bytes())
    # numpy's major version only: the install-time build runs in pip's build environment, whose
    # numpy is the newest 2.x, often newer than the one it then runs with; its C API is kept
    # compatible within the major version (numpy 1.x at run time: the cache builds its own)
    digest.update(f"numpy {np.__version__.split('.')[0]} {sys.version} {platform.machine()} {_cpu_model()}".encode())
    return digest.hexdigest()[:16]


def _cpu() -> str:
    """The CPU the AOT module is built for: this one (as numba's JIT does), so that its loops use its
    vector instructions."""
    from llvmlite import binding

    return binding.get_host_cpu_name()


def _cpu_model() -> str:
    """This machine's CPU model and instruction-set flags, for the key: a cache shared with other
    machines (or virtual machines that hide some of the CPU's instructions) builds theirs."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor()
    wanted = ("model name", "flags")
    return " ".join(dict.fromkeys(line.split(":", 1)[1].strip() for line in lines if line.startswith(wanted)))


def _aot():
    global _loaded
    if _loaded is None:
        _loaded = _load_or_build() or False
    return _loaded or None


def _built(folder: Path) -> Path | None:
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        if (folder / (NAME + suffix)).is_file():
            return folder / (NAME + suffix)
    return None


def installed() -> Path | None:
    """The folder of the kernels built when the package was installed (``hatch_build.py`` puts
    them beside the package, as the top-level folder :data:`INSTALLED`), or None."""
    if os.environ.get("GRANULAR_IGNORE_INSTALLED_KERNELS", "") not in ("", "0"):
        return None
    spec = importlib.util.find_spec(INSTALLED)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]) if locations else None


def _verified(folder: Path | None, name: str) -> Path | None:
    """The extension in ``folder`` if its manifest says it was built from ``name`` (:func:`key`) and
    its bytes are the ones written then; None where there is none. A damaged one (a truncated file,
    a build killed half-way) raises :class:`Damaged`: loading it could crash the process."""
    if folder is None or not (folder / MANIFEST).is_file():
        return None
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        if manifest.get("key") != name:
            return None
        path = folder / manifest["file"]
        if hashlib.sha256(path.read_bytes()).hexdigest() != manifest["sha256"]:
            raise Damaged(f"{path} is not the file that was built (sha256 differs)")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise Damaged(f"{folder}: {exc}") from exc
    return path


class Damaged(Exception):
    """Compiled kernels whose files are not what their build wrote."""


def _load_or_build():
    name = key()
    try:
        path = _verified(installed(), name)
    except Damaged as exc:
        log.warning("the kernels installed with the package are damaged (%s); using the user cache instead", exc)
        path = None
    if path is None and installed() is not None:
        log.info("the kernels installed with the package were built from other sources (an edited checkout, "
                 "another numpy or CPU): the user cache's are used")
    if path is None:
        path = _cached(name)
    if path is None:
        return None
    return _import(path)


def _import(path: Path):
    """The extension at ``path``, or None (with a warning) where it does not load: a cache on a
    noexec mount, or shared with a machine of another C library."""
    try:
        spec = importlib.util.spec_from_file_location(NAME, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    except (ImportError, OSError) as exc:
        log.warning("the compiled kernels in %s do not load (%s); numba compiles them at run time instead",
                    path.parent, exc)
        return None


def _cached(name: str) -> Path | None:
    """The kernels in the user cache, built there first if need be; None where they cannot be (the
    process then runs them just in time)."""
    root = cache_dir() / "kernels"
    folder, failed = root / name, root / f"{name}.failed"
    try:
        path = _intact(folder, name)
        if path is None and not failed.exists():
            path = _build_locked(root, folder, failed)
    except OSError as exc:
        log.warning("cannot use the cache %s for the compiled kernels (%s); numba compiles them at run time "
                    "instead (set GRANULAR_CACHE to a writable folder)", root, exc)
        return None
    if path is None:
        log.debug("kernels run just in time (numba): %s", failed.read_text().strip() if failed.exists() else "")
    return path


def _intact(folder: Path, name: str) -> Path | None:
    """:func:`_verified`, with a damaged build reported and counted as none."""
    try:
        return _verified(folder, name)
    except Damaged as exc:
        log.warning("the compiled kernels in the cache are damaged (%s); compiling them again", exc)
        return None


def _build_locked(root: Path, folder: Path, failed: Path) -> Path | None:
    """Build the AOT module, one process at a time; a process that waited finds it built. A folder
    that is not a whole build (damaged, or without its manifest) is removed first, under the lock."""
    with _locked(root, folder.name):
        if folder.exists() and not _whole(folder):
            shutil.rmtree(folder)
        if not folder.exists() and not failed.exists():
            _build(folder, failed)
    return _intact(folder, folder.name)


@contextlib.contextmanager
def _locked(root: Path, name: str):
    """Hold the cache's lock for key ``name``: one process at a time builds or copies its kernels."""
    import fcntl

    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _whole(folder: Path) -> bool:
    """Whether ``folder`` holds a whole build of its key (said already where it is damaged)."""
    try:
        return _verified(folder, folder.name) is not None
    except Damaged:
        return False


def _build(folder: Path, failed: Path) -> None:
    log.info("compiling the simulation kernels (once per machine and version; about a minute and a half, "
             "done at install time where the package is installed with pip)")
    start = time.perf_counter()
    env = {**os.environ, "GRANULAR_JIT": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "granular.compiled", str(folder)]
    try:
        # run beside this package, so that `-m granular.compiled` finds it and not a checkout in the cwd
        with subprocess.Popen(cmd, env=env, cwd=_PACKAGE.parent, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                              text=True) as proc:
            # a hung build must not hold the lock (and every other process) forever: killed, its
            # stderr closes and the reading below ends
            deadline = threading.Timer(BUILD_TIMEOUT_S, proc.kill)
            deadline.start()
            try:
                last = _follow(proc.stderr)
                proc.wait()
            finally:
                deadline.cancel()
        timed_out = proc.returncode == -signal.SIGKILL
        reason = (None if proc.returncode == 0 else f"took longer than {BUILD_TIMEOUT_S} s" if timed_out
                  else last or f"exit status {proc.returncode}")
    except OSError as exc:
        reason = str(exc)
    if reason is None and _built(folder) is not None:
        log.info("kernels compiled in %.0f s", time.perf_counter() - start)
        return
    failed.write_text(f"{reason}\n")
    log.warning("could not compile the kernels ahead of time (%s); numba compiles them at run time "
                "instead, which adds about a second to every start (delete %s to try again)", reason, failed)


def _follow(stream) -> str:
    """Show the build's progress (its ``PROGRESS i n`` lines) as a bar on a terminal, else a log line
    a quarter of the way; the last other line it printed (its error, where it fails)."""
    from tqdm import tqdm

    bar, last, told = None, "", 0
    for line in stream:
        if not line.startswith(PROGRESS):
            last = line.strip() or last
            continue
        done, total = (int(x) for x in line.split()[1:3])
        if bar is None:
            bar = tqdm(total=total, desc="compiling kernels", unit="kernel", disable=None, mininterval=0.5)
        bar.update(done - bar.n)
        if bar.disable and done >= (told + 1) * total / 4:
            told += 1
            log.info("compiling kernels: %d of %d", done, total)
    if bar is not None:
        bar.close()
    return last


def build(folder: Path) -> None:
    """Compile every exported kernel into ``folder/NAME.*.so`` with its manifest (written to a
    temporary folder that is renamed into place), reporting progress on stderr. Runs with
    GRANULAR_JIT=1, so that the kernels are numba dispatchers."""
    _numba_cache()  # before numba is imported: its compilations go to the user cache, not beside the source
    _check_c_compiler()
    from numba.core import sigutils
    from numba.pycc import CC

    for rel in MODULES:
        importlib.import_module("granular." + rel[:-3].replace("/", "."))
    if not _exports:
        raise RuntimeError("no kernel registered: run with GRANULAR_JIT=1")
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    total = len(_exports) + 1
    try:
        cc = CC(NAME)
        cc.output_dir = str(tmp)
        cc.target_cpu = _cpu()
        for i, (name, (dispatcher, arg_types)) in enumerate(sorted(_exports.items())):
            print(PROGRESS, i, total, file=sys.stderr, flush=True)
            args, _ = sigutils.normalize_signature(f"({arg_types},)")
            dispatcher.compile(args)  # the return type comes from numba's own typing
            cc.export(name, dispatcher.overloads[args].signature)(_calling(dispatcher, len(args)))
        print(PROGRESS, total - 1, total, file=sys.stderr, flush=True)
        cc.compile()
        path = _built(tmp)
        manifest = {"key": folder.name, "file": path.name, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
        (tmp / MANIFEST).write_text(json.dumps(manifest))
        tmp.rename(folder)
        print(PROGRESS, total, total, file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _check_c_compiler():
    """Fail at once where there is no C compiler (numba.pycc's last step needs one), not after a
    minute of compiling the kernels for nothing. The compiler is the one Python's build uses (or $CC)."""
    import sysconfig

    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    try:
        ok = subprocess.run([cc, "--version"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    if not ok:
        raise RuntimeError(f"no working C compiler ({cc} --version fails; install gcc, or set CC)")


def _calling(dispatcher, count: int):
    """A function of ``count`` arguments that calls ``dispatcher``: what is exported, so that the
    kernel's body is compiled with the dispatcher's own options (numba.pycc compiles an exported
    function with its defaults: Python's error model, under which a division by zero raises where
    the JIT kernel returns inf or NaN)."""
    args = ", ".join(f"a{i}" for i in range(count))
    namespace = {"kernel": dispatcher}
    exec(f"def call({args}):\n    return kernel({args})\n", namespace)
    return namespace["call"]


def install_build(out: Path) -> Path:
    """The install-time build (``hatch_build.py``) into ``out/KEY``: a copy of the user cache's
    kernels where they were built from the same key (a reinstall of the same source compiles
    nothing), else compiled, and then copied into the cache for the next install."""
    name = key()
    root = cache_dir() / "kernels"
    cached, folder = root / name, out / name
    try:
        found = _verified(cached, name)
    except (Damaged, OSError):
        found = None
    if found is not None:
        shutil.copytree(cached, folder)
        return folder
    build(folder)
    try:
        _share(folder, root, name)
    except OSError:
        pass  # the cache is only a shortcut for the next install
    return folder


def _share(folder: Path, root: Path, name: str):
    """Copy a build into the cache, under the runtime's lock for that key, unless one is there."""
    with _locked(root, name):
        if (root / name).exists():
            return
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
        try:
            shutil.copytree(folder, tmp, dirs_exist_ok=True)
            tmp.rename(root / name)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    # Run as a script this file is ``__main__``; the kernels register with ``granular.compiled``.
    # ``--install OUT``: the install-time build (``hatch_build.py``), which does not know the key.
    from granular.compiled import build as _build_all, install_build as _install_build

    if sys.argv[1] == "--install":
        _install_build(Path(sys.argv[2]))
    else:
        _build_all(Path(sys.argv[1]))
