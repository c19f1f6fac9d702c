"""A random policy on granular/Quadruped-v0: episodes, returns and throughput.

    python3 -m pip install -e '.[rl]'
    python3 examples/random_policy.py --steps 2000 --media sand pebbles --seed 0
    python3 examples/random_policy.py --envs 64     # a batch on the cores (granular.apps.vector)
    python3 examples/random_policy.py --3d          # the 3D RoboSimian on MuJoCo (granular/Quadruped3D-v0)

Prints each finished episode (medium, length, return, why it ended) and then the wall-clock
throughput: env steps per second and simulator steps per second (each env step is the control
period's worth of simulator steps, 10 at the default 10 ms period and 1 ms time step). The first
few steps include numba loading its compiled kernels, so they are left out of the timing.
"""
from __future__ import annotations

import argparse
import time

import gymnasium
import numpy as np

import granular.apps.gym as granular_gym  # registers granular/Quadruped-v0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="env steps to time (default 2000)")
    parser.add_argument("--media", nargs="+", default=["sand", "pebbles"], help="media drawn per episode")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=20, help="env steps run before timing starts")
    parser.add_argument("--envs", type=int, default=1,
                        help="environments stepped together on the cores (QuadrupedVectorEnv); default 1: this process")
    parser.add_argument("--workers", type=int, default=None, help="with --envs: processes (default: the cores)")
    parser.add_argument("--contact", choices=["data-flow", "max-dissipation"], default=None,
                        help="contact law (default: the scenario's, data-flow)")
    parser.add_argument("--3d", dest="three_d", action="store_true",
                        help="granular/Quadruped3D-v0, the 3D RoboSimian on MuJoCo and sand3d (one environment)")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.warmup < 0 or args.envs < 1:
        parser.error("--steps and --envs must be at least 1 and --warmup not negative")
    if args.envs > 1:
        if args.three_d:
            parser.error("--3d runs one environment (no 3D batch yet)")
        return vector(args)

    if args.three_d:
        import granular.apps.gym3d as gym3d  # registers granular/Quadruped3D-v0

        env = gymnasium.make(gym3d.ENV_ID, contact=args.contact)
    else:
        env = gymnasium.make(granular_gym.ENV_ID, media=args.media, contact=args.contact)
    env.action_space.seed(args.seed)
    substeps = env.unwrapped.substeps
    obs, info = env.reset(seed=args.seed)
    for _ in range(args.warmup):
        obs, _, terminated, truncated, info = env.step(env.action_space.sample())
        if terminated or truncated:
            obs, info = env.reset()

    episode_return, episode_steps, medium = 0.0, 0, info.get("medium", "sand3d")
    start = time.perf_counter()
    for _ in range(args.steps):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert np.all(np.isfinite(obs))
        episode_return += reward
        episode_steps += 1
        if terminated or truncated:
            print(f"episode on {medium}: {episode_steps} steps ({episode_steps * env.unwrapped.control_period:.2f} s), "
                  f"return {episode_return:+.3f}, {'fell' if terminated else 'time limit'}, "
                  f"torso at x = {info['x']:+.3f} m")
            obs, info = env.reset()
            episode_return, episode_steps, medium = 0.0, 0, info.get("medium", "sand3d")
    elapsed = time.perf_counter() - start
    env.close()
    print(f"{args.steps} env steps in {elapsed:.2f} s: {args.steps / elapsed:,.0f} env steps/s, "
          f"{args.steps * substeps / elapsed:,.0f} simulator steps/s "
          f"({elapsed / (args.steps * substeps) * 1e6:.0f} µs a simulator step, resets included)")


def vector(args):
    """Throughput of ``args.envs`` environments stepped together on the cores; they reset themselves."""
    from granular.apps.vector import QuadrupedVectorEnv

    envs = QuadrupedVectorEnv(args.envs, workers=args.workers, media=args.media, contact=args.contact)
    envs.action_space.seed(args.seed)
    substeps = envs.substeps
    envs.reset(seed=args.seed)
    for _ in range(args.warmup):
        envs.step(envs.action_space.sample())
    start = time.perf_counter()
    for _ in range(args.steps):
        obs, *_ = envs.step(envs.action_space.sample())
        assert np.all(np.isfinite(obs))
    elapsed = time.perf_counter() - start
    envs.close()
    total = args.steps * args.envs
    print(f"{args.envs} environments × {args.steps} steps in {elapsed:.2f} s on {envs.workers} processes: "
          f"{total / elapsed:,.0f} env steps/s, {total * substeps / elapsed:,.0f} simulator steps/s")


if __name__ == "__main__":
    main()
