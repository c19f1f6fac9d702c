"""Train PPO (Stable-Baselines3) to walk on sand, log its learning curve, and evaluate it.

    python3 -m pip install -e '.[rl]'       # gymnasium, stable-baselines3 (and torch)
    python3 examples/train_ppo.py --timesteps 8000000 --out ppo-walk    # ~40 min on 2 cores

The quadruped (``granular/Quadruped-v0``, task ``walk``: granular.apps.rewards) steps as a batch of
``--envs`` episodes on the machine's cores (granular.apps.sb3), under the max-dissipation contact
law (the paper's, about twice as fast in a batch as data-flow; ``--contact data-flow`` to train on
the default law). Observations and returns are normalised by SB3's ``VecNormalize``.

Written to ``--out``: ``curve.csv`` (env steps, wall time, mean return, distance and falls of the
episodes that ended since the last row), ``curve.png`` (the same, plotted), ``evaluation.csv`` (the
trained policy, a random policy and the zero action over ``--eval-episodes`` seeded episodes of
``--eval-seconds`` on sand: distance walked, falls, return), ``policy.zip`` and
``vecnormalize.pkl`` (the observation statistics the policy needs) and ``gait.png`` (the trained
policy's first evaluation episode: snapshots, torso height and foot depths). ``--evaluate DIR``
evaluates a policy saved there again without training, and redraws its figures.
"""
from __future__ import annotations

import argparse
import csv
import logging
import time
import warnings
from pathlib import Path

import numpy as np

from granular.errors import GranularError
from granular.io.files import atomic_path

CURVE = ("env_steps", "wall_s", "episodes", "mean_return", "mean_distance_m", "fall_fraction", "env_steps_per_s")
EVALUATION = ("policy", "episodes", "mean_distance_m", "std_distance_m", "falls", "mean_return")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timesteps", type=int, default=8_000_000, help="env steps of training (default 8e6)")
    parser.add_argument("--envs", type=int, default=64, help="episodes stepped together (default 64)")
    parser.add_argument("--workers", type=int, default=None, help="processes stepping them (default: the cores)")
    parser.add_argument("--contact", choices=["max-dissipation", "data-flow"], default="max-dissipation")
    parser.add_argument("--media", nargs="+", default=["sand"], help="media drawn per training episode (default sand)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--eval-seconds", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=Path("ppo-walk"), help="folder for the results (default ppo-walk)")
    parser.add_argument("--evaluate", type=Path, metavar="DIR", help="only evaluate the policy saved in DIR")
    args = parser.parse_args(argv)
    if args.timesteps < 1 or args.envs < 1 or args.eval_episodes < 1 or not args.eval_seconds > 0:
        parser.error("--timesteps, --envs and --eval-episodes must be at least 1, --eval-seconds positive")
    try:
        import torch
        from stable_baselines3 import PPO
    except ImportError as exc:
        parser.error(f"this example needs stable-baselines3 and torch ({exc}): pip install -e '.[rl]'")
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    torch.set_num_threads(1)  # small MLPs: more threads cost more than they save beside the batch's workers
    try:
        if args.evaluate:
            policy, normalize = load(args.evaluate)
            if (args.evaluate / "curve.csv").is_file():  # the figure again, as this version draws it
                plot_curve(read_curve(args.evaluate / "curve.csv"), args.evaluate / "curve.png")
        else:
            policy, normalize = train(args, PPO)
        folder = args.evaluate or args.out
        evaluate(args, policy, normalize, folder / "evaluation.csv")
        filmstrip(args, policy, normalize, folder / "gait.png")
    except GranularError as exc:
        raise SystemExit(f"train_ppo: {exc}")


def train(args, PPO):
    from stable_baselines3.common.vec_env import VecMonitor, VecNormalize

    from granular.apps.sb3 import make_vec_env

    args.out.mkdir(parents=True, exist_ok=True)
    env = VecNormalize(VecMonitor(make_vec_env(args.envs, workers=args.workers, media=args.media,
                                               contact=args.contact)), gamma=0.99)
    env.seed(args.seed)
    # 64 episodes × 64 steps = 4096 samples a rollout; large minibatches keep the update's Python
    # overhead small beside the simulation.
    model = PPO("MlpPolicy", env, n_steps=64, batch_size=min(1024, 64 * args.envs), n_epochs=5, learning_rate=3e-4, gamma=0.99,
                gae_lambda=0.95, clip_range=0.2, ent_coef=0.0, policy_kwargs={"net_arch": [128, 128]},
                seed=args.seed, device="cpu", verbose=0)
    curve = Curve(args.out / "curve.csv")
    with warnings.catch_warnings():  # SB3's bar uses tqdm's rich front end, which calls itself experimental
        warnings.filterwarnings("ignore", message="rich is experimental")
        model.learn(total_timesteps=args.timesteps, callback=curve.callback(), progress_bar=_has_rich())
    curve.close()
    model.save(args.out / "policy.zip")
    env.save(str(args.out / "vecnormalize.pkl"))
    plot_curve(curve.rows, args.out / "curve.png")
    logging.info("wrote %s: curve.csv, curve.png, policy.zip, vecnormalize.pkl", args.out)
    env.close()
    return (lambda obs: model.predict(obs, deterministic=True)[0]), env.normalize_obs


def load(folder: Path):
    import pickle

    from stable_baselines3 import PPO

    for name in ("policy.zip", "vecnormalize.pkl"):
        if not (folder / name).is_file():
            raise GranularError(f"{folder / name}: not found (a folder written by this example's training)")
    model = PPO.load(folder / "policy.zip", device="cpu")
    with open(folder / "vecnormalize.pkl", "rb") as f:
        stats = pickle.load(f)
    return (lambda obs: model.predict(obs, deterministic=True)[0]), stats.normalize_obs


def _has_rich() -> bool:
    try:
        import rich  # noqa: F401  (SB3's progress bar)
        import tqdm  # noqa: F401
    except ImportError:
        return False
    return True


class Curve:
    """The learning curve: after each rollout, the episodes that ended in it (return, distance,
    fall), one CSV row, flushed as it goes so that a run cut short keeps its curve."""

    def __init__(self, path: Path):
        self.path, self.rows, self.start = path, [], time.perf_counter()
        self.returns, self.distances, self.falls = [], [], []
        self.file = open(path.with_suffix(".csv.part"), "w", newline="")
        self.writer = csv.writer(self.file)
        self.writer.writerow(CURVE)

    def callback(self):
        from stable_baselines3.common.callbacks import BaseCallback

        curve = self

        class _Log(BaseCallback):
            def _on_step(self):
                for i in np.flatnonzero(self.locals["dones"]):
                    info = self.locals["infos"][i]
                    curve.returns.append(info["episode"]["r"])  # VecMonitor's, before VecNormalize scales rewards
                    curve.distances.append(float(info["distance"]))
                    curve.falls.append(bool(info["fell"]))
                return True

            def _on_rollout_end(self):
                curve.row(self.num_timesteps)

        return _Log()

    def row(self, steps: int):
        if not self.returns:
            return
        wall = time.perf_counter() - self.start
        row = (steps, round(wall, 1), len(self.returns), float(np.mean(self.returns)),
               float(np.mean(self.distances)), float(np.mean(self.falls)), round(steps / wall))
        self.rows.append(row)
        self.writer.writerow(row)
        self.file.flush()
        if len(self.rows) % 20 == 1:
            logging.info("%9d env steps  %6.0f s  return %8.1f  distance %+.2f m  falls %3.0f %%  %5.0f env steps/s",
                         steps, wall, row[3], row[4], 100 * row[5], row[6])
        self.returns, self.distances, self.falls = [], [], []

    def close(self):
        self.file.close()
        self.path.with_suffix(".csv.part").replace(self.path)


def read_curve(path: Path) -> list:
    with open(path, newline="") as f:
        reader = csv.reader(f)
        if tuple(next(reader, ())) != CURVE:
            raise GranularError(f"{path}: not a learning curve written by this example")
        return [tuple(float(x) for x in row) for row in reader]


def plot_curve(rows, path: Path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = np.array(rows, dtype=float)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4), constrained_layout=True)
    steps = data[:, 0] / 1e6
    for ax, column, label in zip(axes, (3, 4, 5), ("mean episode return", "distance per episode (m)",
                                                     "episodes ending in a fall")):
        ax.plot(steps, data[:, column], lw=0.5, color="0.7", label="per rollout")
        window = max(1, len(data) // 50)
        smooth = np.convolve(data[:, column], np.ones(window) / window, mode="valid")
        ax.plot(steps[window - 1:], smooth, lw=1.5, label=f"mean of {window} rollouts")
        ax.set_xlabel("env steps (millions)")
        ax.set_title(label, fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8, loc="lower right")
    fig.suptitle("PPO on granular/Quadruped-v0 (task walk)", fontsize=11)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)


def evaluate(args, policy, normalize, path: Path):
    """Each policy over the same seeded episodes on sand, ``--eval-seconds`` long: the distance its
    torso moved, whether it fell, its return. One batch of episodes, stepped in this process."""
    from gymnasium.vector import AutoresetMode

    from granular.apps.vector import QuadrupedVectorEnv

    n = args.eval_episodes
    env = QuadrupedVectorEnv(n, workers=0, media=["sand"], contact=args.contact, episode_seconds=args.eval_seconds,
                             autoreset_mode=AutoresetMode.SAME_STEP)
    rng = np.random.default_rng(args.seed)
    policies = {"PPO": lambda obs: policy(normalize(obs)),
                "random": lambda obs: rng.uniform(-1, 1, (n, 12)),
                "zero action": lambda obs: np.zeros((n, 12))}
    rows = []
    for name, act in policies.items():
        obs, _ = env.reset(seed=10_000)  # the same episodes for every policy
        total, distance, fell, running = np.zeros(n), np.zeros(n), np.zeros(n, bool), np.ones(n, bool)
        while running.any():
            obs, reward, terminated, truncated, info = env.step(act(obs))
            total += reward * running
            ended = running & (terminated | truncated)
            distance[ended], fell[ended] = info["distance"][ended], info["fell"][ended]
            running &= ~ended
        rows.append((name, n, float(distance.mean()), float(distance.std()), int(fell.sum()), float(total.mean())))
    env.close()
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
        csv.writer(f).writerows([EVALUATION, *rows])
    print(f"{'policy':12s} {'distance (m)':>16s} {'falls':>7s} {'return':>9s}   ({n} episodes of {args.eval_seconds:g} s on sand)")
    for name, count, mean, std, falls, ret in rows:
        print(f"{name:12s} {mean:+8.2f} ± {std:5.2f} {falls:4d}/{count:<2d} {ret:9.1f}")
    logging.info("wrote %s", path)


def filmstrip(args, policy, normalize, path: Path, frames: int = 6):
    """The trained policy's first evaluation episode on sand as ``frames`` snapshots, evenly spaced
    over ``--eval-seconds``, above the torso's height and each foot's depth against time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from granular.apps.gym import QuadrupedEnv

    env = QuadrupedEnv(media=["sand"], contact=args.contact, episode_seconds=args.eval_seconds, render_mode="rgb_array")
    obs, info = env.reset(seed=10_000)
    at = set(np.linspace(0, env.max_steps, frames).round().astype(int).tolist())
    images, t, height, depth = [], [], [], []
    for k in range(env.max_steps + 1):
        if k in at:
            images.append((env.sim.state.t, env.render()))
        if k == env.max_steps:
            break
        obs, _, terminated, truncated, info = env.step(policy(normalize(obs[None]))[0])
        t.append(info["sim_time"]), height.append(info["height"]), depth.append(info["foot_depth"])
        if terminated or truncated:
            images.append((env.sim.state.t, env.render()))
            break
    env.close()
    fig = plt.figure(figsize=(2.2 * len(images), 4.6), constrained_layout=True)
    grid = fig.add_gridspec(2, len(images), height_ratios=[1.3, 1])
    for i, (when, image) in enumerate(images):
        ax = fig.add_subplot(grid[0, i])
        ax.imshow(image)
        ax.set_axis_off()
        ax.set_title(f"t = {when:.1f} s", fontsize=9)
    ax = fig.add_subplot(grid[1, :])
    ax.plot(t, height, label="torso height above the sand (m)")
    for j, d in enumerate(np.array(depth).T):
        ax.plot(t, d, lw=0.7, label=f"foot {j + 1} depth (m)")
    ax.set_xlabel("time (s)")
    ax.legend(fontsize=7, ncol=5, loc="center right")
    ax.grid(alpha=0.3)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=100)
    plt.close(fig)
    logging.info("wrote %s", path)


if __name__ == "__main__":
    main()
