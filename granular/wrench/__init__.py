"""Wrench spaces as polytopes: convex hulls, half-spaces, fixed normals, concavity."""
