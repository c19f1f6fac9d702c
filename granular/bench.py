"""Benchmarks of the real code paths (``granular bench``); speed targets live here, not in tests.

Each entry is the median over repeated calls, after warm-up, in microseconds.
"""
from __future__ import annotations

import sys
import time

import numpy as np


def median_us(fn, repeat: int, warmup: int = 20) -> float:
    for _ in range(warmup):
        fn()
    times = np.empty(repeat)
    for i in range(repeat):
        t0 = time.perf_counter()
        fn()
        times[i] = time.perf_counter() - t0
    return float(np.median(times) * 1e6)


def wrench_space(model, contacts: int = 4, repeat: int = 500, seed: int = 0) -> dict:
    """W(θ) as half-spaces for ``contacts`` configurations in one call, per representation."""
    rng = np.random.default_rng(seed)
    thetas = np.column_stack([rng.uniform(model.d_min, 0.0, contacts) * 0.9,
                              rng.uniform(-model.phi_max, model.phi_max, contacts)])
    out = {"exact": {"us_per_call": median_us(lambda: model.halfspaces(thetas), repeat)}}
    for K in (16, 32, 64):
        A = model.fixed_normals(K)
        out[f"fixed-{K}"] = {"us_per_call": median_us(lambda: model.offsets(A, thetas), repeat)}
    out["points_only"] = {"us_per_call": median_us(lambda: model.points(thetas), repeat)}
    return out


def run(quick: bool = False) -> dict:
    from .training import default_model

    model = default_model("sand", say=lambda m: print(m, file=sys.stderr))
    repeat = 50 if quick else 500
    return {"wrench_space_4_contacts": wrench_space(model, repeat=repeat)}


def print_table(results: dict):
    for scene, rows in results.items():
        print(f"{scene}:")
        for name, row in rows.items():
            extra = "".join(f"  {k} {v:.1f}" for k, v in row.items() if k != "us_per_call")
            print(f"  {name:<24}{row['us_per_call']:>10.1f} µs{extra}")
