"""granular: data-driven simulation of robots on granular media.

The sub-packages follow the pipeline: ``data`` (datasets and their sources: RFT,
terramechanics, rig and DEM runs) → ``learning`` (regressors, the learned W(θ)) →
``wrench`` (polytopes) → ``contact`` (detection, the maximum-dissipation QP) →
``dynamics`` (multibody, terrain) → ``simulation`` (step, the loop, run files) →
``scenarios`` (scenario files, robots, controllers) → ``apps`` (CLI, viewer, plots,
benchmarks). ``io`` holds files, schemas and where shipped and cached files live.
"""
__version__ = "0.1.0"
