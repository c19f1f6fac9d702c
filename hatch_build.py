"""Build the simulation's compiled kernels when the package is built (``pip install .``, ``pip
install -e .``, a wheel), so that the first command after an install runs at once (issue 48).

The kernels (granular/compiled.py) are compiled with numba.pycc into one extension module, which
the wheel carries in the top-level folder ``granular_aot/`` with a manifest of the key it was built
for (the kernels' source, Python, numpy's major version, this machine's CPU). A build of the same
key in the user cache is copied instead (``granular.compiled.install_build``): a reinstall of the
same source compiles nothing. At run time
``granular.compiled`` loads it when the key matches, and otherwise builds its own in the user
cache, as it does where this build could not run (no C compiler: the install goes on, with a
warning). ``GRANULAR_NO_AOT_BUILD=1`` skips the build (a pure-Python wheel).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

FOLDER = "granular_aot"


class KernelsHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version, build_data):
        if os.environ.get("GRANULAR_NO_AOT_BUILD", "") not in ("", "0"):
            return
        self._scratch = Path(tempfile.mkdtemp(prefix="granular-aot-"))
        built = self._compile(self._scratch)
        if built is None:
            return
        files = {str(path): f"{FOLDER}/{path.name}" for path in built.iterdir()}
        build_data["force_include_editable" if version == "editable" else "force_include"].update(files)
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def finalize(self, version, build_data, artifact_path):
        shutil.rmtree(getattr(self, "_scratch", ""), ignore_errors=True)

    def _compile(self, scratch: Path) -> Path | None:
        print("granular: compiling the simulation kernels (two to three minutes)", file=sys.stderr, flush=True)
        start = time.perf_counter()
        env = {**os.environ, "GRANULAR_JIT": "1", "PYTHONDONTWRITEBYTECODE": "1", "NUMBA_CACHE_DIR": str(scratch / "numba")}
        done = subprocess.run([sys.executable, "-m", "granular.compiled", "--install", str(scratch / "out")],
                              cwd=self.root, env=env, capture_output=True, text=True)
        folders = list((scratch / "out").glob("*")) if done.returncode == 0 else []
        if not folders:
            lines = [line for line in done.stderr.splitlines() if not line.startswith("granular-progress")]
            print(f"granular: WARNING: could not compile the kernels at install time ({(lines or ['?'])[-1]}); "
                  "the first run compiles them into the user cache instead", file=sys.stderr, flush=True)
            return None
        print(f"granular: kernels compiled in {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
        return folders[0]

