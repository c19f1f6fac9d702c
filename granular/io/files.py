"""Atomic file writes: write to a temporary name beside the target, then rename it into place."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path``; on success it replaces ``path``, on error it is removed.

    A crash or an exception leaves any previous file at ``path`` untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix or ".tmp", dir=path.parent)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file the usual permissions
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def read_toml(path, what: str = "file", known=None, required=()) -> dict:
    """A TOML file as a dict, with one clear error for a missing file, bad TOML, unknown or missing keys."""
    import tomllib

    from granular.errors import GranularError

    path = Path(path)
    try:
        spec = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise GranularError(f"{path}: no such {what}") from None
    except tomllib.TOMLDecodeError as exc:
        raise GranularError(f"{path}: not valid TOML ({exc})") from None
    unknown = set(spec) - set(known) if known is not None else set()
    if unknown:
        raise GranularError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")
    for key in required:
        if key not in spec:
            raise GranularError(f"{path}: missing key {key!r}")
    return spec
