"""Scenarios: scenario files, robots and controllers, built into a Simulation."""
