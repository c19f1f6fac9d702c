"""granular: data-driven simulation of robots on granular media.

The sub-packages follow the pipeline: ``data`` (datasets and their sources: RFT,
terramechanics, rig and DEM runs) → ``learning`` (regressors, the learned W(θ)) →
``wrench`` (polytopes) → ``contact`` (detection, the maximum-dissipation QP) →
``dynamics`` (multibody, terrain) → ``simulation`` (step, the loop, run files) →
``scenarios`` (scenario files, robots, controllers) → ``apps`` (CLI, viewer, plots,
benchmarks). ``io`` holds files, schemas and where shipped and cached files live.
"""
import os as _os

__version__ = "0.1.0"

# Where kernels run just in time (granular/compiled.py), numba caches them beside their source unless
# told otherwise; an installed package must not be written to, so they go to the user cache.
if "NUMBA_CACHE_DIR" not in _os.environ:
    from granular.io.resources import cache_dir as _cache_dir

    _os.environ["NUMBA_CACHE_DIR"] = str(_cache_dir() / "numba")
