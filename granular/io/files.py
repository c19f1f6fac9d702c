"""Atomic file writes (a temporary name beside the target, then a rename) and output checks."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from granular.errors import GranularError


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path``; on success it replaces ``path``, on error it is removed.

    A crash or an exception leaves any previous file at ``path`` untouched; a failed write (a full
    disk) is a :class:`GranularError` that says so.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix or ".tmp", dir=path.parent)
    except OSError as exc:
        raise GranularError(f"cannot write {path}: {_reason(exc)}; {_kept(path)}") from None
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file the usual permissions
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as exc:
        # a full disk, a quota, a device gone: one line for the user, not a traceback from deep in h5py
        raise GranularError(f"cannot write {path}: {_reason(exc)}; {_kept(path)}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _reason(exc: OSError) -> str:
    """The system's words for a failed write (h5py wraps them in a page of its own)."""
    return os.strerror(exc.errno) if exc.errno else " ".join(str(exc).split())


def _kept(path: Path) -> str:
    return "nothing was written" + (", the previous file is kept" if path.exists() else "")


def check_output(path, inputs=(), directory: bool = False, what: str = "output"):
    """Refuse, before any work, an output path that cannot be written or that is one of ``inputs``.

    ``directory``: the output is a folder of files (figures), else a single file. Missing parent
    folders are fine (they are created on writing) if the nearest existing one is writable.
    """
    path = Path(path)
    for given in inputs:
        given = Path(given)
        same = given.exists() and path.exists() and os.path.samefile(given, path)
        if same or path.resolve() == given.resolve():
            raise GranularError(f"{what} {path} is also an input ({given}); choose another path, nothing was written")
    if path.exists() and path.is_dir() != directory:
        kind = "a directory" if path.is_dir() else "a file"
        raise GranularError(f"{what} {path} is {kind}; expected {'a directory' if directory else 'a file path'}")
    folder = path if directory else path.parent
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        raise GranularError(f"{what} {path}: {folder} is not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".granular-probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise GranularError(f"{what} {path}: cannot write in {folder} ({exc.strerror or exc})") from None
