"""Dynamics: the planar multibody in reduced coordinates and the terrain."""
