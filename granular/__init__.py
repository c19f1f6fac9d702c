"""granular: data-driven simulation of robots on granular media.

Pipeline (one module per step): synthetic sources (rft, terramechanics) and
ingestion → dataset → regressors → model (learned W(θ)) → wrenchspace
(half-spaces) → contact solver → dynamics → scenarios → cli / viewer.
"""
__version__ = "0.1.0"
