import numpy as np
import pytest

from granular.errors import GranularError
from granular.io.resources import shipped
from granular.learning import training


@pytest.mark.slow   # three regressors' 4-fold CV: ~18 s; the jobs' tests below (cv = 3) cover the path in the fast tier
def test_cv_runs_for_all_three_regressors(sand):
    cv = training.cross_validate(sand, folds=4)
    assert set(cv) == {"rbf", "gp", "svr"}
    for name, row in cv.items():
        for key in ("rel_rmse", "rel_rmse_fx", "rel_rmse_fz", "rel_rmse_tau"):
            assert 0 < row[key] < 0.5, (name, key, row[key])


def test_cv_detects_a_bad_regressor(sand):
    """Held-out error must reflect the data: shuffled wrenches cannot be predicted."""
    from dataclasses import replace

    rng = np.random.default_rng(0)
    shuffled = replace(sand, wrenches=sand.wrenches[rng.permutation(sand.n)])
    bad = training.cross_validate(shuffled, names=("rbf",), folds=4)["rbf"]["rel_rmse"]
    good = training.cross_validate(sand, names=("rbf",), folds=4)["rbf"]["rel_rmse"]
    assert bad > 3 * good


def test_cv_says_where_its_error_lies(sand):
    """One configuration's wrenches made three times too large carry most of the held-out error,
    and the cells' shares, largest first, add up to the whole where the data have ten or fewer."""
    from dataclasses import replace

    below = np.flatnonzero(sand.configs[:, 0] < 0)
    keep = np.concatenate([np.flatnonzero(sand.configs[:, 0] >= 0), below[:: max(1, len(below) // 9)][:9]])
    small = sand.subset(np.sort(keep))
    j = int(np.flatnonzero(small.configs[:, 0] < 0)[6])
    wrenches = small.wrenches.copy()
    wrenches[j] *= 3.0
    cells = training.cross_validate(replace(small, wrenches=wrenches), names=("rbf",), folds=3)["rbf"]["cells"]
    assert cells[0]["theta"] == small.configs[j].tolist() and cells[0]["share"] > 0.5, cells[0]
    shares = [c["share"] for c in cells]
    assert shares == sorted(shares, reverse=True) and abs(sum(shares) - 1.0) < 1e-9
    assert all(c["realisations"] == 1.0 for c in cells), "synthetic data say nothing of realisations"
    counts = np.ones(small.valid.shape)
    counts[j] = 3.0
    cells = training.cross_validate(replace(small, wrenches=wrenches, provenance={"realisations": counts}),
                                    names=("rbf",), folds=3)["rbf"]["cells"]
    assert [c["realisations"] for c in cells if c["theta"] == small.configs[j].tolist()] == [3.0]


def test_repeated_cv_pools_its_draws_of_the_folds(sand):
    """Each draw of the folds is an ordinary CV with the next seed; the pooled figure is their RMS, and
    every configuration is held out once per draw. The draws differ: one draw is not the figure."""
    repeated = training.cross_validate(sand, names=("rbf",), folds=4, repeats=3, cells=None)["rbf"]
    each = [training.cross_validate(sand, names=("rbf",), folds=4, seed=s)["rbf"]["rel_rmse"] for s in range(3)]
    assert repeated["rel_rmse_repeats"] == pytest.approx(each, rel=1e-12)
    assert repeated["rel_rmse"] == pytest.approx(np.sqrt(np.mean(np.square(each))), rel=1e-12)
    assert np.ptp(each) > 0
    assert len(repeated["cells"]) == int((sand.configs[:, 0] < 0).sum())
    assert sum(c["share"] for c in repeated["cells"]) == pytest.approx(1.0)
    once = training.cross_validate(sand, names=("rbf",), folds=4)["rbf"]
    assert once["rel_rmse_repeats"] == [pytest.approx(once["rel_rmse"], rel=1e-12)]


def test_cv_rejects_bad_fold_count(sand):
    with pytest.raises(GranularError, match="--cv-repeats 0"):
        training.cross_validate(sand, folds=3, repeats=0)
    with pytest.raises(GranularError, match="--cv 1"):
        training.cross_validate(sand, folds=1)
    with pytest.raises(GranularError, match="--cv 99"):
        training.cross_validate(sand, folds=99)


def test_cv_noise_floor_is_the_held_out_samples_own_realisation_noise(sand):
    """Samples from n beds carry spread / √n; single-bed ones the pooled single-bed spread ρ |w|."""
    from dataclasses import replace

    assert training.cv_noise_floor(sand) is None, "synthetic data have no bed-to-bed noise"
    n = np.full(sand.valid.shape, 4.0)
    noisy = replace(sand, provenance={"realisations": n, "realisation_spread": 0.2 * np.abs(sand.wrenches)})
    floor = training.cv_noise_floor(noisy)
    assert floor["floor"] == pytest.approx(0.2 / 2) and floor["single_bed_spread"] == pytest.approx(0.2)
    n[::2] = 1.0  # half the configurations from one bed: they take ρ = 0.2, unshrunk
    floor = training.cv_noise_floor(noisy)
    assert 0.2 / 2 < floor["floor"] < 0.2 and floor["single_bed_spread"] == pytest.approx(0.2)
    assert floor["samples_with_spread"] < floor["samples"]
    spread = 0.2 * np.abs(sand.wrenches)
    spread[::2] = 0.0  # runs repeated in one bed agree exactly: one bed's noise, not none
    repeated = replace(sand, provenance={"realisations": np.full(sand.valid.shape, 2.0), "realisation_spread": spread})
    assert training.cv_noise_floor(repeated)["floor"] > 0.2 / np.sqrt(2)


def test_concavity_table(sand):
    table = training.concavity_table(sand)
    assert len(table["per_config"]) == int((sand.configs[:, 0] < 0).sum())
    assert 0 <= table["average"] <= table["worst"] < 0.2
    assert table["paper"] == {"average": 0.0, "worst": 0.0}, "sand is reported next to the paper's Table II"


def test_job_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("dataset = 'x.h5'\nout = 'y.h5'\nregresor = 'rbf'\n")
    with pytest.raises(GranularError, match="unknown field `regresor`"):
        training.load_job(bad)
    bad.write_text("dataset = \n")
    with pytest.raises(GranularError, match="not valid TOML"):
        training.load_job(bad)
    bad.write_text("out = 'y.h5'\n")
    with pytest.raises(GranularError, match="missing required field `dataset`"):
        training.load_job(bad)
    bad.write_text("dataset = 'x.h5'\nout = 'y.h5'\nplot_thetas = 'abc'\n")
    with pytest.raises(GranularError, match="plot_thetas: expected a list, got a string"):
        training.load_job(bad)
    bad.write_bytes(b"dataset = 'x\xff.h5'\n")
    with pytest.raises(GranularError, match="not UTF-8"):
        training.load_job(bad)
    with pytest.raises(GranularError, match="no such training job"):
        training.load_job(tmp_path / "none.toml")


def test_shipped_jobs_load():
    for job in sorted(shipped("training").glob("*.toml")):
        spec = training.load_job(job)
        assert spec.dataset.is_file(), f"{job} points at a missing dataset {spec.dataset}"


@pytest.fixture(scope="module")
def coarse_sand(sand):
    """Every other depth of the synthetic sand (4 × 8 configurations): the jobs' options reach the model
    as on the whole set, and the GP's cross-validation, a job's cost, takes a fifth of the time."""
    depths = np.unique(sand.configs[:, 0])[::2]
    return sand.subset(np.isin(sand.configs[:, 0], depths))


def test_a_job_learns_the_target_it_names(coarse_sand, tmp_path):
    """``target = "per-depth"`` reaches the model and its cross-validation; a wrong one is refused."""
    from granular.data import dataset as wd
    from granular.learning import model as wm

    wd.write(coarse_sand, tmp_path / "sand.h5")
    job = tmp_path / "job.toml"
    job.write_text("dataset = 'sand.h5'\nout = 'm.h5'\ncv = 3\ncv_repeats = 1\ntarget = 'per-depth'\n")
    result, model, _ = training.run_job(training.load_job(job))
    assert result["target"] == "per-depth" == wm.load(tmp_path / "m.h5").target
    assert result["cv_repeated"] == result["cv"]["rbf"], "one draw of the folds: the comparison's own"
    assert result["cv_repeated"]["rel_rmse_repeats"] == [pytest.approx(result["cv"]["rbf"]["rel_rmse"], rel=1e-12)]
    plain = training.cross_validate(coarse_sand, names=("rbf",), folds=3)["rbf"]["rel_rmse"]
    assert result["cv"]["rbf"]["rel_rmse"] != pytest.approx(plain, rel=1e-6)  # the folds learned w / |d|
    job.write_text("dataset = 'sand.h5'\nout = 'm.h5'\ntarget = 'log'\n")
    with pytest.raises(GranularError, match="target"):
        training.load_job(job)


def test_a_job_learns_with_the_rbf_kernel_it_names(coarse_sand, tmp_path):
    """``kernel = "linear"`` (and ``smoothing``) reaches the model (stored, and reloaded to the same W(θ)) and
    the RBF's folds; GP and SVR ignore it; an unknown kernel is refused."""
    from granular.data import dataset as wd
    from granular.learning import model as wm

    wd.write(coarse_sand, tmp_path / "sand.h5")
    job = tmp_path / "job.toml"
    job.write_text("dataset = 'sand.h5'\nout = 'm.h5'\ncv = 3\nkernel = 'linear'\n")
    result, model, _ = training.run_job(training.load_job(job))
    loaded = wm.load(tmp_path / "m.h5")
    assert loaded.params["group0"]["kernel"] == "linear"
    thetas = np.array([[-0.02, 0.3], [-0.05, -0.9], [-0.11, 1.2]])
    np.testing.assert_allclose(loaded.points(thetas), model.points(thetas), rtol=1e-12)
    plain = wm.fit(coarse_sand)
    assert not np.allclose(loaded.points(thetas), plain.points(thetas), rtol=1e-3)
    tps = training.cross_validate(coarse_sand, names=("rbf", "svr"), folds=3)
    assert result["cv"]["rbf"]["rel_rmse"] != pytest.approx(tps["rbf"]["rel_rmse"], rel=1e-6)
    assert result["cv"]["svr"]["rel_rmse"] == pytest.approx(tps["svr"]["rel_rmse"], rel=1e-9)
    job.write_text("dataset = 'sand.h5'\nout = 'm.h5'\nkernel = 'gaussian'\n")
    with pytest.raises(GranularError, match="kernel"):
        training.load_job(job)
    from dataclasses import replace

    valid = coarse_sand.valid.copy()
    valid[-1, 0] = False  # direction 0 one configuration short: two groups of directions
    grouped = wm.fit(replace(coarse_sand, valid=valid), "rbf", kernel="linear")
    grouped.points(thetas)
    assert [grouped.params[g]["kernel"] for g in sorted(grouped.params)] == ["linear", "linear"]
    job.write_text("dataset = 'sand.h5'\nout = 'm.h5'\nsmoothing = 0.1\n")
    training.run_job(training.load_job(job))
    assert wm.load(tmp_path / "m.h5").params["group0"]["smoothing"] == 0.1
    job.write_text("dataset = 'sand.h5'\nout = 'm.h5'\nsmoothing = -1\n")
    with pytest.raises(GranularError, match="smoothing"):
        training.load_job(job)


def test_cv_noise_budget_is_the_error_of_a_smooth_medium_at_the_data_noise(sand):
    """The budget's medium is smooth by construction (a model's W): its noise is the data's, one bed's
    variance over the beds a sample averages (and its provenance says so); measured without noise it
    scores that model's own interpolation error; with noise more, more beds less."""
    from dataclasses import replace
    from granular.learning import model as wm

    rng = np.random.default_rng(3)
    w = sand.wrenches * (1 + 0.2 * rng.standard_normal(sand.wrenches.shape))
    n = np.ones(sand.valid.shape)
    n[::2] = 2.0  # half the configurations from two beds, half from one
    spread = 0.2 * np.abs(w) * (n > 1)[..., None]  # one bed: no spread
    noisy = replace(sand, wrenches=w, provenance={"realisations": n, "realisation_spread": spread})
    truth = wm.fit(sand)
    noise = training._sample_noise(noisy)
    smooth = np.where(noise.ok[..., None], truth.points(sand.configs), w)
    scale = wm.wrench_scale(noisy)
    for extra in (0, 2):
        # one draw's sum of squares spreads by 9–15 % (a few large samples dominate it): 20 draws, ~3 %
        added = []
        for _ in range(20):
            syn = training._synthetic(noisy, smooth, noise, extra, rng.standard_normal(w.shape))
            added.append((((syn.wrenches - smooth) / scale) ** 2).sum(axis=-1)[noise.ok].sum())
        expected = (noise.single / (noise.beds + extra))[noise.ok].sum()
        assert np.mean(added) == pytest.approx(expected, rel=0.1)
        own = wm.wrench_scale(syn)  # the floor's scale is the data's own
        ratio = ((scale / own) ** 2).sum() / 3
        floor = np.sqrt(expected * ratio / (((syn.wrenches / own) ** 2).sum(axis=-1)[noise.ok].sum()))
        assert training.cv_noise_floor(syn)["floor"] == pytest.approx(floor, rel=1e-9), "the provenance says so"
    budget = training.cv_noise_budget(noisy, truth, folds=3, extra_beds=(0, 1, 3), draws=2)
    errors = budget["rel_rmse"]
    assert errors["0"] > errors["1"] > errors["3"]
    assert errors["0"] > training.cv_noise_floor(noisy)["floor"], "the held-out cells' neighbours are noisy too"
    assert len(budget["cells"]) == int((sand.configs[:, 0] < 0).sum())
    quiet = replace(noisy, provenance={"realisations": n, "realisation_spread": 1e-9 * np.abs(w)})
    exact = training.cross_validate(replace(sand, wrenches=smooth), ("rbf",), 3)["rbf"]["rel_rmse"]
    below = sand.configs[:, 0] < 0
    assert np.abs(smooth[~below] - w[~below]).max() == 0.0
    quiet_budget = training.cv_noise_budget(quiet, truth, folds=3, extra_beds=(0,), draws=1)
    assert quiet_budget["rel_rmse"]["0"] == pytest.approx(exact, rel=1e-3)
    assert quiet_budget["draw_std"]["0"] is None, "one draw has no spread to report"
    paired = training.cv_noise_budget(quiet, truth, folds=3, extra_beds=(0,), draws=2)["rel_rmse"]["0"]
    repeated = training.cross_validate(replace(sand, wrenches=smooth), ("rbf",), 3, repeats=2)["rbf"]["rel_rmse"]
    assert paired == pytest.approx(repeated, rel=1e-3), "noise draw i is cross-validated on fold draw i"
    assert training.cv_noise_budget(sand, truth, folds=3) is None, "synthetic data have no bed-to-bed noise"


@pytest.mark.slow   # a training job with its CV: ~18 s
def test_smoothing_from_the_data_noise_misses_the_samples_by_that_noise(sand, tmp_path, monkeypatch):
    """``smoothing = "noise"`` (discrepancy principle): the largest λ whose model misses its own samples
    by no more than the data's noise floor; more noise, more smoothing; a job and its folds use it;
    data without bed-to-bed noise are refused with a message that says why."""
    from dataclasses import replace
    from granular.data import dataset as wd
    from granular.learning import model as wm

    def noisy(rel):
        rng = np.random.default_rng(1)
        w = sand.wrenches * (1 + rel * rng.standard_normal(sand.wrenches.shape))
        return replace(sand, wrenches=w, provenance={"realisations": np.full(sand.valid.shape, 2.0),
                                                     "realisation_spread": rel * np.abs(w)})

    lams = []
    for rel in (0.05, 0.2):
        ds = noisy(rel)
        floor = training.cv_noise_floor(ds)["floor"]
        lam = training.noise_smoothing(ds)
        assert lam > 0
        assert training.fit_residual(ds, smoothing=lam) <= floor < training.fit_residual(ds, smoothing=1.02 * lam)
        lams.append(lam)
    assert lams[1] > 3 * lams[0]
    with pytest.raises(GranularError, match="two beds or more"):
        training.noise_smoothing(sand)
    wd.write(noisy(0.2), tmp_path / "noisy.h5")
    job = tmp_path / "job.toml"
    job.write_text("dataset = 'noisy.h5'\nout = 'm.h5'\ncv = 3\nsmoothing = 'noise'\n")
    result, model, _ = training.run_job(training.load_job(job))
    assert result["rbf"] == {"kernel": "thin_plate_spline", "smoothing": pytest.approx(lams[1]),
                             "smoothing_from_noise": True}
    assert wm.load(tmp_path / "m.h5").params["group0"]["smoothing"] == pytest.approx(lams[1])
    assert wm.load(tmp_path / "m.h5").info["rbf"]["smoothing_from_noise"]
    assert set(result["cv_noise_budget"]["rel_rmse"]) == {"0", "1", "3"}
    assert result["cv_noise_budget"]["rel_rmse"]["0"] > result["cv_noise_floor"]["floor"]
    assert len(result["cv_repeated"]["rel_rmse_repeats"]) == 10, "the job's default: the RBF on ten draws of the folds"
    assert all("smooth_rel_rmse" in c for c in result["cv_repeated"]["cells"])
    chosen, choose = [], training.noise_smoothing

    def spy(ds, *args):
        chosen.append((ds.n, choose(ds, *args)))
        return chosen[-1][1]

    monkeypatch.setattr(training, "noise_smoothing", spy)
    training.cross_validate(noisy(0.2), names=("rbf", "svr"), folds=3, smoothing="noise")
    assert len(chosen) == 3 and all(n < sand.n for n, _ in chosen), "each fold chooses λ from its own data, once"
    assert all(lam != pytest.approx(lams[1], rel=0.02) for _, lam in chosen)
    job.write_text("dataset = 'noisy.h5'\nout = 'm.h5'\nregressor = 'gp'\nsmoothing = 'noise'\n")
    with pytest.raises(GranularError, match="neither fits an RBF nor cross-validates one"):
        training.run_job(training.load_job(job))
    job.write_text("dataset = 'noisy.h5'\nout = 'm.h5'\nsmoothing = 'lots'\n")
    with pytest.raises(GranularError, match="smoothing"):
        training.load_job(job)
