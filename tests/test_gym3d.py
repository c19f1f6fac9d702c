"""granular/Quadruped3D-v0: the 3D RoboSimian (MuJoCo, granular feet) as a Gymnasium environment."""
import importlib
import warnings

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")
pytest.importorskip("mujoco")
gym3d = importlib.import_module("granular.apps.gym3d")


def test_gymnasiums_and_sb3s_checkers_pass():
    from gymnasium.utils.env_checker import check_env

    env = gymnasium.make(gym3d.ENV_ID)
    assert env.spec.max_episode_steps == 1000
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped, skip_render_check=True)
    sb3 = pytest.importorskip("stable_baselines3.common.env_checker")
    sb3.check_env(gym3d.Quadruped3DEnv(), warn=True)


def test_seeds_are_bit_exact_and_standing_earns_the_alive_bonus():
    a, b = gym3d.Quadruped3DEnv(), gym3d.Quadruped3DEnv()
    runs = []
    for env in (a, b, a):
        obs, _ = env.reset(seed=7)
        out = [obs]
        for _ in range(20):
            obs, reward, terminated, truncated, info = env.step(np.zeros(12))
            out.append(obs)
        runs.append((np.array(out), reward, info))
    for other in runs[1:]:
        np.testing.assert_array_equal(other[0], runs[0][0])
    _, reward, info = runs[0]
    assert not info["fell"] and 0.7 < info["height"] < 1.1
    assert abs(reward - a.task.healthy_reward) < 0.1
    assert info["foot_depth"].shape == (4,) and np.all(info["foot_depth"] < 0), "standing in the sand"


def test_a_fall_ends_the_episode_with_its_penalty():
    env = gym3d.Quadruped3DEnv(fall_height=1.5)  # the torso stands ~0.95 m up: "fallen"
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step(np.zeros(12))
    assert terminated and not truncated and info["fell"]
    assert info["reward_fall"] == -env.task.fall_penalty and info["reward_healthy"] == 0.0


def test_bad_arguments_are_clear_errors():
    from granular.errors import GranularError

    with pytest.raises(GranularError, match="planar scenario"):
        gym3d.Quadruped3DEnv(scenario="quad-trot")
    env = gym3d.Quadruped3DEnv()
    with pytest.raises(GranularError, match="call reset"):
        env.step(np.zeros(12))
    env.reset(seed=0)
    with pytest.raises(GranularError, match="12 finite numbers"):
        env.step(np.full(12, np.nan))
