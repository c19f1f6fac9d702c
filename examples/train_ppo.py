"""Train PPO (stable-baselines3) on granular/Quadruped-v0, then evaluate it against a zero action.

    python3 -m pip install -e '.[rl]' stable-baselines3 torch
    python3 examples/train_ppo.py --timesteps 20000 --out ppo_quadruped.zip

This shows the wiring, not a finished gait: at about 200 env steps a second on one core, a walking
policy (typically 10⁶ env steps or more) is hours of training, not minutes. Short episodes
(``--episode-seconds``) give PPO more resets, and so more of both media, per update.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import gymnasium
import numpy as np

import granular.apps.gym as granular_gym  # registers granular/Quadruped-v0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timesteps", type=int, default=20000, help="env steps of training (default 20000)")
    parser.add_argument("--episode-seconds", type=float, default=2.0, help="simulated time per episode (s)")
    parser.add_argument("--media", nargs="+", default=["sand", "pebbles"])
    parser.add_argument("--eval-episodes", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="save the trained policy here (.zip)")
    args = parser.parse_args(argv)
    if args.timesteps < 1 or args.eval_episodes < 1 or not args.episode_seconds > 0:
        parser.error("--timesteps and --eval-episodes must be at least 1, --episode-seconds positive")
    try:
        import torch
        from stable_baselines3 import PPO
        from stable_baselines3.common.monitor import Monitor
    except ImportError as exc:
        parser.error(f"this example needs stable-baselines3 and torch ({exc}): "
                     "pip install stable-baselines3 torch")
    torch.set_num_threads(1)  # small MLPs: threads cost more than they save on a shared machine

    def make():
        return Monitor(gymnasium.make(granular_gym.ENV_ID, media=args.media, episode_seconds=args.episode_seconds))

    env = make()
    model = PPO("MlpPolicy", env, n_steps=1024, batch_size=128, n_epochs=5, seed=args.seed, device="cpu", verbose=0)
    start = time.perf_counter()
    model.learn(total_timesteps=args.timesteps)
    elapsed = time.perf_counter() - start
    print(f"trained {args.timesteps} env steps in {elapsed:.1f} s ({args.timesteps / elapsed:,.0f} env steps/s, "
          f"PPO updates included)")
    if args.out:
        model.save(args.out)
        print(f"saved {args.out}")

    evaluation = make()
    for name, policy in (("PPO", lambda obs: model.predict(obs, deterministic=True)[0]),
                         ("zero action", lambda obs: np.zeros(evaluation.action_space.shape, np.float32))):
        returns, progress = [], []
        for episode in range(args.eval_episodes):
            obs, info = evaluation.reset(seed=10_000 + episode)  # the same episodes for both policies
            x0, done, total = info["x"], False, 0.0
            while not done:
                obs, reward, terminated, truncated, info = evaluation.step(policy(obs))
                total += reward
                done = terminated or truncated
            returns.append(total)
            progress.append(info["x"] - x0)
        print(f"{name}: return {np.mean(returns):+.2f} ± {np.std(returns):.2f}, "
              f"forward progress {np.mean(progress):+.3f} m over {args.eval_episodes} episodes")


if __name__ == "__main__":
    main()
