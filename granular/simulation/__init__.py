"""Simulation: the step (SimModel, State), the one loop (Simulation) and run files."""
