"""The simulation's compiled kernels: written once, in numba's subset of Python, and compiled ahead
of time where the machine allows it.

A kernel lives in the module of the stage it belongs to and is marked ``@kernel("arg types")``
(numba's type strings, e.g. ``"f8[::1], i8"``); a kernel that only other kernels call is marked
``@kernel()``. A process runs them one of two ways:

- **Ahead of time** (the default). All kernels are built with ``numba.pycc`` into one extension
  module in the user cache, ``cache_dir()/kernels/KEY/``, the first time a process needs them: once
  per machine and per version of their source (KEY hashes the modules in :data:`MODULES`, this
  file, numpy's and Python's versions). Loading it imports neither numba nor its compiler, which
  took about 0.8 s of every short ``granular sim`` (issue 14).
- **Just in time**, ``numba.njit(cache=True)``: where the build failed (say, no C compiler: the
  reason is logged once and remembered beside the cache), and with ``GRANULAR_JIT=1`` (to debug a
  kernel; the build itself runs so, since it compiles the JIT dispatchers' code).

Both run the same source and agree to the last bit (``tests/test_compiled.py``). numba.pycc's
functions check nothing of their arguments (a strided array is read as if it were contiguous, a
wrong dtype as raw bytes), so each exported kernel is wrapped in a guard that passes well-formed
arrays straight through and converts the rest, as a JIT dispatcher would accept them.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import logging
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
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
    "contact/flow.py",
    "wrench/flow.py",
    "learning/linear.py",
    "simulation/fused.py",
)
NAME = "granular_kernels"
BUILD_TIMEOUT_S = 1800
_PACKAGE = Path(__file__).resolve().parent

_DTYPES = {"f8": np.dtype(np.float64), "i8": np.dtype(np.int64)}
_BY_NUM = {d.num: d for d in _DTYPES.values()}
_ARGUMENT = re.compile(r"(\w+)(\[[^\]]*\])?")

_exports: dict[str, tuple] = {}  # exported name → (JIT dispatcher, argument types); JIT mode only
_loaded = None                    # the AOT module, False once it is known to be unavailable


def jit_only() -> bool:
    """True where kernels must run just in time (``GRANULAR_JIT=1``)."""
    return os.environ.get("GRANULAR_JIT", "") not in ("", "0")


def kernel(*arg_types: str):
    """Mark a numba kernel. With argument types it is callable from Python (exported from the AOT
    module); without, only from other kernels (compiled into them), and in an AOT process the name
    stays the plain Python function."""

    def wrap(fn):
        name = f"{fn.__module__.replace('.', '_')}__{fn.__name__}"
        aot = None if jit_only() else _aot()
        if aot is not None:
            return _guarded(getattr(aot, name), fn, arg_types) if arg_types else fn
        _numba_cache()
        from numba import njit

        compiled = njit(cache=True, error_model="numpy")(fn)
        if arg_types:
            _exports[name] = (compiled, ", ".join(arg_types))
        return compiled

    return wrap


def _numba_cache():
    """Where kernels run just in time, numba caches them; unless the user chose a folder, in the
    user cache (not beside the source: an installed package must not be written to), one folder per
    :func:`key`: numba checks a cached function against its own file only, so a kernel that calls
    kernels of other modules (the fused step) would keep their old code after an edit or upgrade."""
    if "NUMBA_CACHE_DIR" not in os.environ and "numba" not in sys.modules:
        os.environ["NUMBA_CACHE_DIR"] = str(cache_dir() / "numba" / key())


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
    guarded.__doc__, guarded.__wrapped__, guarded.unchecked = fn.__doc__, fn, compiled
    return guarded


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
    for rel in (*MODULES, "compiled.py"):
        digest.update((_PACKAGE / rel).read_bytes())
    digest.update(f"{np.__version__} {sys.version} {platform.machine()} {_cpu_model()}".encode())
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


def _load_or_build():
    root, name = cache_dir() / "kernels", key()
    folder, failed = root / name, root / f"{name}.failed"
    path = _built(folder)
    if path is None and not failed.exists():
        path = _build_locked(root, folder, failed)
    if path is None:
        log.debug("kernels run just in time (numba): %s", failed.read_text().strip() if failed.exists() else "")
        return None
    spec = importlib.util.spec_from_file_location(NAME, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build_locked(root: Path, folder: Path, failed: Path) -> Path | None:
    """Build the AOT module, one process at a time; a process that waited finds it built."""
    import fcntl

    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _built(folder) is None and not failed.exists():
            _build(folder, failed)
    return _built(folder)


def _build(folder: Path, failed: Path) -> None:
    log.info("compiling the simulation kernels ahead of time (once per machine and version, two to four minutes)")
    start = time.perf_counter()
    env = {**os.environ, "GRANULAR_JIT": "1"}
    cmd = [sys.executable, "-m", "granular.compiled", str(folder)]
    try:
        # run beside this package, so that `-m granular.compiled` finds it and not a checkout in the cwd
        done = subprocess.run(cmd, env=env, cwd=_PACKAGE.parent, capture_output=True, text=True,
                              timeout=BUILD_TIMEOUT_S)
        reason = None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["no output"])[-1]
    except (OSError, subprocess.TimeoutExpired) as exc:
        reason = str(exc)
    if reason is None and _built(folder) is not None:
        log.info("kernels compiled in %.0f s", time.perf_counter() - start)
        return
    failed.write_text(f"{reason}\n")
    log.warning("could not compile the kernels ahead of time (%s); numba compiles them at run time "
                "instead, which adds about a second to every start (delete %s to try again)", reason, failed)


def build(folder: Path) -> None:
    """Compile every exported kernel into ``folder/NAME.*.so`` (written to a temporary folder that
    is renamed into place). Runs with GRANULAR_JIT=1, so that the kernels are numba dispatchers."""
    from numba.core import sigutils
    from numba.pycc import CC

    for rel in MODULES:
        importlib.import_module("granular." + rel[:-3].replace("/", "."))
    if not _exports:
        raise RuntimeError("no kernel registered: run with GRANULAR_JIT=1")
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        cc = CC(NAME)
        cc.output_dir = str(tmp)
        cc.target_cpu = _cpu()
        for name, (dispatcher, arg_types) in sorted(_exports.items()):
            args, _ = sigutils.normalize_signature(f"({arg_types},)")
            dispatcher.compile(args)  # the return type comes from numba's own typing
            cc.export(name, dispatcher.overloads[args].signature)(_calling(dispatcher, len(args)))
        cc.compile()
        tmp.rename(folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _calling(dispatcher, count: int):
    """A function of ``count`` arguments that calls ``dispatcher``: what is exported, so that the
    kernel's body is compiled with the dispatcher's own options (numba.pycc compiles an exported
    function with its defaults: Python's error model, under which a division by zero raises where
    the JIT kernel returns inf or NaN)."""
    args = ", ".join(f"a{i}" for i in range(count))
    namespace = {"kernel": dispatcher}
    exec(f"def call({args}):\n    return kernel({args})\n", namespace)
    return namespace["call"]


if __name__ == "__main__":
    # Run as a script this file is ``__main__``; the kernels register with ``granular.compiled``.
    from granular.compiled import build as _build_all

    _build_all(Path(sys.argv[1]))
