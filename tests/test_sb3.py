"""The batch for standard RL clients: same-step autoreset and Stable-Baselines3's VecEnv (granular.apps.sb3)."""
import importlib
import warnings

import numpy as np
import pytest

from granular.errors import GranularError

gymnasium = pytest.importorskip("gymnasium")
gym_env = importlib.import_module("granular.apps.gym")
from gymnasium.vector import AutoresetMode  # noqa: E402

from granular.apps.rewards import TASKS  # noqa: E402
from granular.apps.vector import QuadrupedVectorEnv  # noqa: E402


def test_same_step_autoreset_begins_the_next_episode_in_the_step_that_ends_one():
    """Episodes of 3 env steps: the third step reports the end, the ended episode's last observation
    in final_obs, and already the next episode's first observation, as a fresh single env gives."""
    n = 2
    batch = QuadrupedVectorEnv(n, workers=0, media=["sand"], episode_seconds=0.03,
                               autoreset_mode=AutoresetMode.SAME_STEP)
    single = [gym_env.QuadrupedEnv(media=["sand"], episode_seconds=0.03) for _ in range(n)]
    try:
        obs, _ = batch.reset(seed=3)
        for i, env in enumerate(single):
            np.testing.assert_array_equal(obs[i], env.reset(seed=3 + i)[0])
        a = np.zeros((n, 12))
        for t in range(3):
            obs, reward, terminated, truncated, info = batch.step(a)
            expected = [env.step(a[i]) for i, env in enumerate(single)]
            np.testing.assert_array_equal(reward, [e[1] for e in expected])
        assert truncated.all() and not terminated.any() and info["_final_obs"].all()
        np.testing.assert_array_equal(info["final_obs"], np.stack([e[0] for e in expected]))
        np.testing.assert_array_equal(obs, np.stack([env.reset()[0] for env in single]))  # the RNG goes on
        # the next step is the new episode's first, with its reward (not NEXT_STEP's reset with 0)
        obs, reward, terminated, truncated, info = batch.step(a)
        assert not (terminated | truncated).any() and not info["_final_obs"].any()
        np.testing.assert_array_equal(reward, [env.step(a[i])[1] for i, env in enumerate(single)])
    finally:
        batch.close()
    with pytest.raises(GranularError, match="autoreset_mode"):
        QuadrupedVectorEnv(2, workers=0, autoreset_mode="sometimes")


sb3 = pytest.importorskip("stable_baselines3", reason="the SB3 adapter's tests need stable-baselines3 and torch")


def test_sb3_vec_env_reports_ends_as_sb3_expects():
    from granular.apps.sb3 import SB3VecEnv, make_vec_env

    env = make_vec_env(3, workers=0, media=["sand"], episode_seconds=0.02)
    try:
        env.seed(5)
        obs = env.reset()
        assert obs.shape == (3, 33) and obs.dtype == np.float32
        assert env.reset_infos[0]["distance"] == 0.0
        env.step(np.zeros((3, 12)))
        obs, rewards, dones, infos = env.step(np.zeros((3, 12)))
        assert dones.all() and rewards.dtype == np.float32 and len(infos) == 3
        for info in infos:
            assert info["TimeLimit.truncated"] is True  # ended by time, not by a fall
            assert info["terminal_observation"].shape == (33,)
            assert {"x", "fell", "height", "reward_forward"} <= info.keys()
    finally:
        env.close()
    with pytest.raises(GranularError, match="SAME_STEP"):
        SB3VecEnv(QuadrupedVectorEnv(2, workers=0))


def test_a_fall_is_terminal_not_truncated_for_sb3():
    from granular.apps.sb3 import make_vec_env

    env = make_vec_env(2, workers=0, media=["sand"], fall_height=1.5)  # standing ~0.95 m up: "fallen"
    try:
        env.reset()
        _, rewards, dones, infos = env.step(np.zeros((2, 12)))
        assert dones.all() and all(info["TimeLimit.truncated"] is False and info["fell"] for info in infos)
        assert np.all(rewards < -TASKS["walk"].fall_penalty + 1)
    finally:
        env.close()


@pytest.mark.slow
def test_ppo_trains_on_the_batch_and_the_example_writes_its_curve_and_table(tmp_path, capsys):
    """The shipped example end to end, briefly: SB3's PPO on the batch, the learning curve (CSV and
    figure) and the evaluation table of PPO, random and zero action."""
    import runpy
    from pathlib import Path

    example = runpy.run_path(str(Path(__file__).resolve().parent.parent / "examples" / "train_ppo.py"))
    out = tmp_path / "run"
    example["main"](["--timesteps", "8192", "--envs", "8", "--workers", "0", "--eval-episodes", "2",
                     "--eval-seconds", "0.5", "--out", str(out)])
    printed = capsys.readouterr().out
    for name in ("curve.csv", "curve.png", "evaluation.csv", "policy.zip", "vecnormalize.pkl"):
        assert (out / name).is_file(), name
    lines = (out / "curve.csv").read_text().splitlines()
    assert lines[0].startswith("env_steps,wall_s") and len(lines) >= 2
    for policy in ("PPO", "random", "zero action"):
        assert policy in printed
    table = (out / "evaluation.csv").read_text().splitlines()
    assert table[0] == "policy,episodes,mean_distance_m,std_distance_m,falls,mean_return" and len(table) == 4
    example["main"](["--evaluate", str(out), "--eval-episodes", "2", "--eval-seconds", "0.5"])
    assert "PPO" in capsys.readouterr().out


def test_sb3s_own_environment_checker_passes():
    from stable_baselines3.common.env_checker import check_env

    env = gym_env.QuadrupedEnv(media=["sand"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env, warn=True)
    env.close()
