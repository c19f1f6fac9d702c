"""The Gymnasium environment granular/Quadruped-v0 (granular.apps.gym)."""
import importlib
import sys
import warnings

import numpy as np
import pytest

from granular.errors import GranularError

gymnasium = pytest.importorskip("gymnasium")
gym_env = importlib.import_module("granular.apps.gym")


@pytest.fixture(scope="module")
def env():
    """One environment over sand and pebbles (building one loads both media's models)."""
    e = gym_env.QuadrupedEnv()
    yield e
    e.close()


def rollout(env, seed, actions):
    obs, info = env.reset(seed=seed)
    out = {"obs": [obs], "reward": [], "medium": info["medium"], "done": []}
    for a in actions:
        obs, reward, terminated, truncated, _ = env.step(a)
        out["obs"].append(obs)
        out["reward"].append(reward)
        out["done"].append((terminated, truncated))
    return out


def test_gymnasium_env_checker_passes():
    """Gymnasium's own checker, with every warning it gives treated as a failure."""
    from gymnasium.utils.env_checker import check_env

    env = gymnasium.make(gym_env.ENV_ID, render_mode="rgb_array")
    assert env.unwrapped.spec.id == "granular/Quadruped-v0"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)
    env.close()


def test_make_imports_the_module_itself():
    env = gymnasium.make("granular.apps.gym:granular/Quadruped-v0", media=["pebbles"], observe_medium=True)
    obs, info = env.reset(seed=0)
    assert info["medium"] == "pebbles"
    assert obs.shape == (34,) and obs[-1] == 1.0  # the one-hot of the only medium
    env.close()


def test_spaces(env):
    assert env.action_space.shape == (12,) and env.action_space.dtype == np.float32
    assert np.all(env.action_space.low == -1) and np.all(env.action_space.high == 1)
    assert env.observation_space.shape == (5 + 12 + 12 + 4,) and env.observation_space.dtype == np.float32
    assert np.all(np.isfinite(env.observation_space.low)) and np.all(np.isfinite(env.observation_space.high))
    assert env.joint_names[:3] == ("front_1_hip", "front_1_knee", "front_1_ankle")
    assert env.substeps == 10 and env.control_period == pytest.approx(0.01)


def test_same_seed_same_trajectory(env):
    actions = np.random.default_rng(5).uniform(-1, 1, (25, 12)).astype(np.float32)
    first = rollout(env, 11, actions)
    other = gym_env.QuadrupedEnv()  # a fresh env: nothing carried over from the first one
    second = rollout(other, 11, actions)
    again = rollout(env, 11, actions)
    for run in (second, again):
        assert run["medium"] == first["medium"]
        np.testing.assert_array_equal(np.array(run["obs"]), np.array(first["obs"]))
        assert run["reward"] == first["reward"]
    different = rollout(env, 12, actions[:1])
    assert not np.array_equal(different["obs"][0], first["obs"][0]), "another seed perturbs the start differently"


@pytest.mark.parametrize("medium", ["sand", "pebbles"])
def test_zero_action_keeps_the_robot_standing(medium):
    env = gym_env.QuadrupedEnv(media=[medium])
    obs, info = env.reset(seed=3)
    assert info["medium"] == medium
    zero = np.zeros(12, np.float32)
    heights, pitches = [], []
    for _ in range(300):  # 3 s
        obs, reward, terminated, truncated, info = env.step(zero)
        assert not terminated and not truncated
        heights.append(obs[0])
        pitches.append(obs[1])
    # Standing in the nominal pose: the torso ~1 m up less the feet's sinkage (several cm), level,
    # at rest, all four feet in the medium, barely moved.
    assert 0.85 < min(heights) and max(heights) < 1.05
    assert np.max(np.abs(pitches[100:])) < 0.03
    assert np.all(np.abs(obs[2:5]) < 0.02)
    assert np.all(obs[-4:] < -0.01), "every foot rests in the medium"
    assert abs(info["x"]) < 0.05 and abs(info["distance"]) < 0.05
    # standing earns the alive bonus, barely more or less
    assert abs(reward - env.task.healthy_reward) < 0.05 and not info["fell"]
    assert info["height"] == pytest.approx(obs[0], abs=1e-6) and info["foot_depth"].shape == (4,)
    assert info["sim_steps"] == 3000 and info["sim_time"] == pytest.approx(3.0)


def test_feet_sink_deeper_in_sand_than_in_pebbles():
    """The observed depth reflects the episode's medium (the same robot, softer sand)."""
    depths = {}
    for medium in ("sand", "pebbles"):
        env = gym_env.QuadrupedEnv(media=[medium], reset_noise=0.0)
        env.reset(seed=0)
        for _ in range(100):
            obs, *_ = env.step(np.zeros(12, np.float32))
        depths[medium] = obs[-4:].mean()
    assert depths["sand"] < depths["pebbles"] < 0


def test_medium_follows_the_seed(env):
    drawn = {}
    for seed in range(12):
        _, info = env.reset(seed=seed)
        drawn[seed] = info["medium"]
        # the medium reported is the one simulated
        assert env.sim.model.wrenches.dataset.medium == info["medium"]
    assert set(drawn.values()) == {"sand", "pebbles"}, "both media are drawn over a dozen seeds"
    other = gym_env.QuadrupedEnv()
    for seed in (7, 0, 3, 7):
        assert other.reset(seed=seed)[1]["medium"] == drawn[seed]
    # Without a seed, resets continue the env's RNG: the sequence after a seed is reproducible too.
    env.reset(seed=100)
    sequence = [env.reset()[1]["medium"] for _ in range(8)]
    env.reset(seed=100)
    assert [env.reset()[1]["medium"] for _ in range(8)] == sequence


def test_random_policy_observations_are_finite_and_in_the_space(env):
    env.action_space.seed(0)
    obs, _ = env.reset(seed=1)
    for _ in range(60):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert obs.dtype == np.float32 and np.all(np.isfinite(obs)) and env.observation_space.contains(obs)
        assert np.isfinite(reward) and info["effort"] >= 0
        if terminated or truncated:
            obs, _ = env.reset()
    assert np.all(obs[-4:] <= 0.0)


def test_actions_are_joint_targets_from_the_stance(env):
    """A constant action moves the joints to the nominal stance plus action × action_scale."""
    env.reset(seed=2)
    nominal = env._media[env.medium].nominal
    action = np.zeros(12, np.float32)
    action[0::3] = 0.2   # every hip forward by 0.1 rad
    for _ in range(50):
        obs, *_ = env.step(action)
    moved = (obs[5:17] - nominal).reshape(4, 3)  # limbs × (hip, knee, ankle)
    assert np.all(np.abs(moved[:, 0] - 0.2 * env.action_scale) < 0.03), moved
    # The other joints hold their stance angles up to the PD's give under the shifted load.
    assert np.all(np.abs(moved[:, 1:]) < 0.06), moved


def test_reward_is_the_sum_of_its_named_terms(env):
    env.reset(seed=4)
    x0 = env.sim.state.q[0]
    _, reward, _, _, info = env.step(np.zeros(12, np.float32))
    forward = (info["x"] - x0) / env.control_period
    assert info["forward_velocity"] == pytest.approx(forward)
    assert 0 < info["effort"] < 1
    t = env.task
    terms = {"forward": t.forward_weight * forward, "healthy": t.healthy_reward, "effort": -t.effort_weight * info["effort"],
             "tilt": -t.tilt_weight * info["pitch"] ** 2, "fall": 0.0}
    for name, value in terms.items():
        assert info[f"reward_{name}"] == pytest.approx(value)
    assert reward == pytest.approx(sum(terms.values()))


def test_the_forward_term_is_capped_so_that_a_lunge_does_not_pay():
    env = gym_env.QuadrupedEnv(media=["sand"], max_speed=0.1, reset_noise=0.0)
    env.reset(seed=0)
    env.sim.state.v[0] = 2.0  # thrown forward
    _, _, _, _, info = env.step(np.zeros(12, np.float32))
    assert info["forward_velocity"] > 0.5
    assert info["reward_forward"] == pytest.approx(env.task.forward_weight * 0.1)
    # the old task, kept by name, pays the whole velocity and nothing for being alive
    old = gym_env.QuadrupedEnv(media=["sand"], task="forward", reset_noise=0.0)
    old.reset(seed=0)
    old.sim.state.v[0] = 2.0
    _, reward, _, _, info = old.step(np.zeros(12, np.float32))
    assert info["reward_healthy"] == 0 and reward == pytest.approx(info["forward_velocity"] - 0.05 * info["effort"])


def test_a_fall_ends_the_episode_with_its_penalty():
    env = gym_env.QuadrupedEnv(media=["sand"], reset_noise=0.0, fall_penalty=7.0)
    env.reset(seed=0)
    env.sim.state.q[2] = 1.0  # pitched past fall_tilt
    _, reward, terminated, truncated, info = env.step(np.zeros(12, np.float32))
    assert terminated and not truncated and info["fell"]
    assert info["reward_fall"] == -7.0 and info["reward_healthy"] == 0.0
    assert reward < -7.0 + env.task.forward_weight * env.task.max_speed


def test_the_registration_limits_episodes_to_ten_seconds():
    spec = gymnasium.spec(gym_env.ENV_ID)
    assert spec.max_episode_steps == 1000
    env = gym_env.QuadrupedEnv(media=["sand"])
    assert env.max_steps * env.control_period == pytest.approx(10.0)


def test_unknown_tasks_and_weights_are_clear_errors():
    with pytest.raises(GranularError, match="task must be one of walk, forward"):
        gym_env.QuadrupedEnv(media=["sand"], task="run")
    with pytest.raises(GranularError, match="healthy_reward must be a non-negative"):
        gym_env.QuadrupedEnv(media=["sand"], healthy_reward=-1.0)
    from granular.apps.rewards import TASKS

    with pytest.raises(GranularError, match="unknown reward weight"):
        TASKS["walk"].with_(speed=1.0)


def test_fall_terminates_and_time_truncates():
    low = gym_env.QuadrupedEnv(media=["sand"], fall_height=1.5)  # the torso stands ~0.95 m up: "fallen"
    low.reset(seed=0)
    _, _, terminated, truncated, _ = low.step(np.zeros(12, np.float32))
    assert terminated and not truncated
    tilted = gym_env.QuadrupedEnv(media=["sand"], fall_tilt=0.01, reset_noise=0.0)
    tilted.reset(seed=0)
    tilted.sim.state.q[2] = 0.05  # pitched past the limit
    assert tilted.step(np.zeros(12, np.float32))[2]
    short = gym_env.QuadrupedEnv(media=["sand"], episode_seconds=0.05)
    short.reset(seed=0)
    done = [short.step(np.zeros(12, np.float32))[2:4] for _ in range(5)]
    assert done == [(False, False)] * 4 + [(False, True)]


def test_rgb_array_render():
    env = gym_env.QuadrupedEnv(media=["sand"], render_mode="rgb_array")
    env.reset(seed=0)
    env.step(np.zeros(12, np.float32))
    image = env.render()
    assert image.ndim == 3 and image.shape[2] == 3 and image.dtype == np.uint8
    assert image.std() > 10, "something is drawn"
    env.close()


def test_the_contact_law_is_the_scenarios_unless_chosen():
    assert gym_env.QuadrupedEnv(media=["sand"])._media["sand"].model.contact_law == "data-flow"
    paper = gym_env.QuadrupedEnv(media=["sand"], contact="max-dissipation")
    assert paper._media["sand"].model.contact_law == "max-dissipation"


def test_bad_arguments_are_clear_errors(env):
    with pytest.raises(GranularError, match="control_period"):
        gym_env.QuadrupedEnv(media=["sand"], control_period=0.0105)
    with pytest.raises(GranularError, match="unknown medium"):
        gym_env.QuadrupedEnv(media=["mud"])
    with pytest.raises(GranularError, match="legged robot"):
        gym_env.QuadrupedEnv(media=["sand"], scenario="drop-upright")
    with pytest.raises(GranularError, match="render_mode"):
        gym_env.QuadrupedEnv(media=["sand"], render_mode="human")
    with pytest.raises(GranularError, match="contact must be one of max-dissipation, data-flow"):
        gym_env.QuadrupedEnv(media=["sand"], contact="hertz")
    fresh = gym_env.QuadrupedEnv(media=["sand"])
    for call in (lambda: fresh.step(np.zeros(12)), fresh.foot_depths):
        with pytest.raises(GranularError, match=r"call reset\(\) before"):
            call()
    env.reset(seed=0)
    with pytest.raises(GranularError, match="12 finite numbers"):
        env.step(np.zeros(3))
    with pytest.raises(GranularError, match="12 finite numbers"):
        env.step(np.full(12, np.nan))


def test_without_gymnasium_the_package_imports_and_the_env_says_what_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "gymnasium", None)  # import gymnasium now fails as if not installed
    monkeypatch.delitem(sys.modules, "granular.apps.gym")
    importlib.import_module("granular.apps.cli")
    with pytest.raises(GranularError, match=r"needs gymnasium.*granular\[rl\]"):
        importlib.import_module("granular.apps.gym")


def test_random_policy_example_runs_and_reports_throughput(capsys):
    import runpy
    from pathlib import Path

    example = runpy.run_path(str(Path(__file__).resolve().parent.parent / "examples" / "random_policy.py"))
    example["main"](["--steps", "30", "--warmup", "2", "--media", "pebbles"])
    out = capsys.readouterr().out
    assert "30 env steps in" in out and "simulator steps/s" in out


def test_random_policy_example_runs_the_3d_robot(capsys):
    import runpy
    from pathlib import Path

    example = runpy.run_path(str(Path(__file__).resolve().parent.parent / "examples" / "random_policy.py"))
    example["main"](["--3d", "--steps", "30", "--warmup", "2"])
    out = capsys.readouterr().out
    assert "30 env steps in" in out and "simulator steps/s" in out
    with pytest.raises(SystemExit):  # no 3D batch: one clear line from argparse
        example["main"](["--3d", "--envs", "2"])


def test_random_policy_example_steps_environments_in_processes(capsys):
    import runpy
    from pathlib import Path

    example = runpy.run_path(str(Path(__file__).resolve().parent.parent / "examples" / "random_policy.py"))
    example["main"](["--steps", "20", "--warmup", "2", "--media", "pebbles", "--envs", "2"])
    out = capsys.readouterr().out
    assert "2 environments × 20 steps in" in out and "simulator steps/s" in out


# --- the batch: many episodes on the cores (granular.apps.vector) -----------------------------

def test_the_batch_equals_single_environments_bit_for_bit():
    """Three episodes on two worker processes, through an autoreset, against three single
    environments with the same seeds and actions: the same observations, rewards and ends."""
    from granular.apps.vector import QuadrupedVectorEnv

    n, steps = 3, 8
    rng = np.random.default_rng(1)
    actions = rng.uniform(-1, 1, (steps, n, 12))
    batch = QuadrupedVectorEnv(n, workers=2, episode_seconds=0.05)
    try:
        assert batch.observation_space.shape == (n, 33) and batch.action_space.shape == (n, 12)
        obs, info = batch.reset(seed=7)
        got = [obs]
        ends = []
        for a in actions:
            obs, reward, terminated, truncated, info = batch.step(a)
            got.append((obs, reward))
            ends.append(truncated.copy())
    finally:
        batch.close()
    assert any(e.all() for e in ends), "the episodes (5 env steps) ended and were reset"
    singles = [gym_env.QuadrupedEnv(episode_seconds=0.05) for _ in range(n)]
    first = np.stack([env.reset(seed=7 + i)[0] for i, env in enumerate(singles)])
    np.testing.assert_array_equal(got[0], first)
    done = [False] * n
    for t, a in enumerate(actions):
        for i, env in enumerate(singles):
            if done[i]:
                o, _ = env.reset()
                r, done[i] = 0.0, False
            else:
                o, r, te, tr, _ = env.step(a[i])
                done[i] = te or tr
            np.testing.assert_array_equal(got[t + 1][0][i], o)
            assert got[t + 1][1][i] == r


def test_the_batch_runs_in_process_too_and_reports_bad_input():
    from granular.apps.vector import QuadrupedVectorEnv

    batch = gymnasium.make_vec(gym_env.ENV_ID, num_envs=2, vectorization_mode="vector_entry_point", workers=0,
                               media="pebbles")
    assert isinstance(batch, QuadrupedVectorEnv)
    obs, info = batch.reset(seed=0)
    assert obs.shape == (2, 33) and list(info["medium"]) == ["pebbles", "pebbles"] and info["_medium"].all()
    with pytest.raises(GranularError, match="actions must have shape"):
        batch.step(np.zeros((3, 12)))
    with pytest.raises(GranularError, match="seeds for 2 environments"):
        batch.reset(seed=[1, 2, 3])
    batch.close()
    with pytest.raises(GranularError, match="num_envs"):
        QuadrupedVectorEnv(0)
    with pytest.raises(GranularError, match="media"):
        QuadrupedVectorEnv(2, workers=0, media=())


def test_the_fused_step_gives_the_stage_by_stage_episode():
    """The environment's steps run fused (one compiled call per control period) with the native
    solver; with DAQP they run stage by stage. The same episode either way, to the solvers' tolerance:
    the goal each action sets reaches the compiled controller."""
    rng = np.random.default_rng(3)
    fused, stages = gym_env.QuadrupedEnv(solver="native"), gym_env.QuadrupedEnv(solver="daqp")
    a, _ = fused.reset(seed=5)
    b, _ = stages.reset(seed=5)
    assert fused.sim.fused_control() is not None and stages.sim.fused_control() is None
    for _ in range(40):
        action = rng.uniform(-1, 1, 12)
        a, ra, *_ = fused.step(action)
        b, rb, *_ = stages.step(action)
        np.testing.assert_allclose(a, b, atol=1e-4)
        assert ra == pytest.approx(rb, abs=1e-4)
    assert abs(fused.sim.state.q[3:] - fused._media[fused.medium].nominal).max() > 0.05, "the actions moved the joints"


def test_a_batch_worker_that_dies_is_a_clear_error():
    from granular.apps.vector import QuadrupedVectorEnv

    batch = QuadrupedVectorEnv(2, workers=2)
    try:
        batch.reset(seed=0)
        process, _ = batch._workers[1]
        process.kill()
        process.join()
        with pytest.raises(GranularError, match=f"process {process.pid}.* ended without answering, exit code -9"):
            batch.step(np.zeros((2, 12)))
    finally:
        batch.close()


def test_batched_infos_are_gymnasiums():
    """The vector env's shards send their infos as columns and the env joins them key by key: the
    same arrays and masks as Gymnasium's _add_info."""
    from granular.apps.vector import QuadrupedVectorEnv, _columns

    batch = QuadrupedVectorEnv(3, workers=0)
    try:
        per_env = [{"medium": m, "x": 0.1 * i, "sim_steps": 10 * i, "fell": i == 1}
                   for i, m in enumerate(("sand", "pebbles", "sand"))]
        reference = {}
        for k, info in enumerate(per_env):
            reference = batch._add_info(reference, info, k)
        got = batch._infos([_columns(per_env[:2]), _columns(per_env[2:])])
        assert got.keys() == reference.keys()
        for key, value in reference.items():
            assert got[key].dtype == value.dtype, key
            np.testing.assert_array_equal(got[key], value)
    finally:
        batch.close()
