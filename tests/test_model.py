import logging
from dataclasses import replace

import numpy as np
import pytest

from granular.learning import model as wm
from granular.wrench import polytopes as ws
from granular.errors import GranularError
from granular.frames import MIRROR


def inside(A, b, pts, tol=1e-7):
    return np.all(pts @ A.T <= b + tol * max(1.0, np.abs(b).max()))


def test_rbf_reproduces_training_points(sand, sand_model):
    np.testing.assert_allclose(sand_model.points(sand.configs), sand.wrenches, atol=1e-8)


@pytest.mark.parametrize("regressor", ["rbf", "gp", "svr"])
def test_model_is_exactly_mirror_symmetric(sand, regressor, rng):
    model = sand_model_for(sand, regressor)
    thetas = np.column_stack([rng.uniform(-0.07, -0.001, 10), rng.uniform(-0.9, 0.9, 10)])
    w = model.points(thetas)
    wm_ = model.points(thetas * [1, -1])
    np.testing.assert_allclose(wm_[:, model.perm] * MIRROR, w, atol=1e-9 * np.abs(w).max())


_models = {}


def sand_model_for(sand, regressor):
    if regressor not in _models:
        _models[regressor] = wm.fit(sand, regressor)
    return _models[regressor]


def test_hull_contains_points_and_origin(sand_model, rng):
    thetas = np.column_stack([rng.uniform(-0.07, -0.001, 20), rng.uniform(-0.9, 0.9, 20)])
    for (A, b), pts in zip(sand_model.halfspaces(thetas), sand_model.points(thetas)):
        assert inside(A, b, pts)
        assert np.all(b >= 0)
        np.testing.assert_allclose(np.linalg.norm(A, axis=1), 1.0)
        # minimal: every facet supports the hull (touched by a point or the origin)
        touch = np.vstack([pts, np.zeros(3)]) @ A.T - b
        assert np.all(touch.max(axis=0) > -1e-6 * np.abs(pts).max())
        assert len(np.unique(A.round(9), axis=0)) == len(A)


def test_hull_is_minimal_for_a_cube():
    cube = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    A, b = ws.hull_halfspaces(cube, np.ones(3))
    assert len(A) == 6  # 12 triangles merged into 6 faces
    np.testing.assert_allclose(b, 1.0)


def test_at_or_above_surface_W_is_zero(sand_model):
    for d in (0.0, 0.05):
        (A, b), = sand_model.halfspaces([[d, 0.3]])
        assert np.all(b == 0)
        # {A w ≤ 0} = {0}: the axes are all blocked both ways
        assert not inside(A, b, np.eye(3) * 1e-3, tol=0)


@pytest.mark.parametrize("points", [
    np.zeros((26, 3)),                                                   # nothing
    np.column_stack([np.linspace(-1, 1, 26), np.zeros(26), np.zeros(26)]),  # a segment
    np.column_stack([np.cos(np.arange(26)), np.sin(np.arange(26)) + 2, np.zeros(26)]),  # flat, off the origin
    np.column_stack([np.cos(np.arange(26)), np.sin(np.arange(26)), 1e-13 * np.arange(26)]),  # nearly flat
])
def test_degenerate_points_give_a_bounded_polytope_with_the_origin(points):
    A, b = ws.hull_halfspaces(points, np.ones(3))
    assert np.all(b >= 0)
    assert inside(A, b, np.vstack([points, np.zeros(3)]))
    # bounded: no direction u with A u ≤ 0
    probe = np.random.default_rng(0).normal(size=(2000, 3))
    assert np.all((probe @ A.T).max(axis=1) > 0)


def test_concavity_zero_for_convex_and_positive_for_a_dent():
    rng = np.random.default_rng(3)
    pts = rng.normal(size=(40, 3))
    pts = 50 * pts / np.linalg.norm(pts, axis=1, keepdims=True)  # on a sphere: convex position
    assert ws.concavity(pts) == pytest.approx(0.0, abs=1e-9)
    dented = pts.copy()
    dented[0] *= 0.5
    # the dent sits well inside the hull of the other points (between 0 and its 50 % drop)
    assert 0.2 < ws.concavity(dented) <= 1.0  # at most (50 − 25) / 25
    assert ws.concavity(pts * 1e-3) == 0.0  # all below the magnitude floor


@pytest.mark.parametrize("kind", ["fitted", "sphere"])
@pytest.mark.parametrize("K", [16, 32, 64])
def test_fixed_normal_polytope_contains_exact_hull(sand_model, rng, kind, K):
    A = sand_model.fixed_normals(K, kind)
    assert A.shape == (K, 3)
    thetas = np.column_stack([rng.uniform(-0.07, -0.001, 10), rng.uniform(-0.9, 0.9, 10)])
    B = sand_model.offsets(A, thetas)
    for b, pts in zip(B, sand_model.points(thetas)):
        assert inside(A, b, pts)
        assert inside(A, b, np.zeros((1, 3)))
    assert ws.outer_error(sand_model.points(thetas[:1])[0], sand_model.scale, A) < 0.5


def test_offsets_and_points_in_one_call_match_points_and_their_support(sand_model, rng):
    """The compiled path builds the inputs itself (clamp, mirror, scale); against the Python path's
    points, with configurations out of contact, past the deepest data and past the largest tilt."""
    A = sand_model.fixed_normals(32)
    thetas = np.column_stack([rng.uniform(-0.3, 0.02, 30), rng.uniform(-1.7, 1.7, 30)])
    thetas[:3] = [[0.01, 0.2], [-0.2, 0.3], [-0.05, 1.6]]
    b, points = sand_model.offsets_and_points(A, thetas)
    np.testing.assert_allclose(points, sand_model.points(thetas), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(b, ws.support_offsets(A, points), rtol=1e-12, atol=1e-9)
    assert not points[0].any() and not b[0].any()


def test_fixed_normals_tighten_with_K(sand_model):
    pts = sand_model.points([[-0.05, 0.3]])[0]
    errs = [ws.outer_error(pts, sand_model.scale, sand_model.fixed_normals(K)) for K in (16, 64)]
    assert errs[1] < errs[0]


@pytest.mark.parametrize("regressor", ["rbf", "gp", "svr"])
def test_model_file_round_trip(sand, tmp_path, regressor):
    model = sand_model_for(sand, regressor)
    model.info = {"note": "x"}
    wm.save(model, tmp_path / "m.h5")
    back = wm.load(tmp_path / "m.h5")
    thetas = [[-0.02, 0.1], [-0.06, -0.7]]
    np.testing.assert_allclose(back.points(thetas), model.points(thetas), rtol=1e-9, atol=1e-9)
    assert back.info == {"note": "x"} and back.regressor == regressor


def test_rbf_model_file_loads_its_coefficients_without_refitting(sand_model, tmp_path, monkeypatch):
    from granular.learning import regressors

    wm.save(sand_model, tmp_path / "m.h5")
    monkeypatch.setattr(regressors.RBF, "fit", lambda *a: pytest.fail("loading an RBF model refitted it"))
    back = wm.load(tmp_path / "m.h5")
    np.testing.assert_array_equal(back.points([[-0.03, 0.4]]), sand_model.points([[-0.03, 0.4]]))


@pytest.mark.parametrize("name", ["rbf", "gp", "svr"])
def test_regressors_follow_the_scikit_learn_estimator_contract(name, rng):
    from sklearn.base import clone
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    from granular.learning import regressors

    reg = regressors.make(name)
    with pytest.raises(NotFittedError):
        check_is_fitted(reg)  # nothing is learnt in the constructor
    params = reg.get_params()
    X, Y = rng.uniform(-1, 1, (20, 2)), rng.normal(size=(20, 3))
    fitted = reg.fit(X, Y)
    assert fitted is reg and reg.get_params().keys() == params.keys()
    check_is_fitted(reg)
    twin = clone(reg)
    with pytest.raises(NotFittedError):
        check_is_fitted(twin)
    np.testing.assert_allclose(twin.fit(X, Y).predict(X[:5]), reg.predict(X[:5]), rtol=1e-6, atol=1e-8)
    assert reg.predict(X[:4]).shape == (4, 3)
    refit = regressors.make(name, **reg.fitted_params()).fit(X, Y)
    np.testing.assert_allclose(refit.predict(X[:5]), reg.predict(X[:5]), rtol=1e-6, atol=1e-8)


def test_model_file_rejections(sand_model, tmp_path):
    import h5py

    wm.save(sand_model, tmp_path / "m.h5")
    with h5py.File(tmp_path / "m.h5", "a") as f:
        f.attrs["regressor"] = "pickle"
    with pytest.raises(GranularError, match="unknown regressor 'pickle'"):
        wm.load(tmp_path / "m.h5")
    with pytest.raises(GranularError, match="format is 'granular-wrench-dataset'"):
        from granular.data import dataset as wd
        wm.load(wd.write(sand_model.dataset, tmp_path / "d.h5"))


def test_outside_the_data_notes_once_scales_in_depth_and_clamps_tilt(sand, caplog):
    """Leaving the data is what the depth law is for: a note at -v, once (a run warns where a foot
    goes far past the data: scenarios.advice)."""
    model = wm.fit(sand)
    with caplog.at_level(logging.DEBUG, logger="granular"):
        deep = model.points([[-0.5, 0.0], [model.d_min, 0.0]])
        tilted = model.points([[-0.05, 1.56], [-0.05, 1.5]])
    said = [r for r in caplog.records if "outside the 'sand' data" in r.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.DEBUG
    np.testing.assert_allclose(deep[0], deep[1] * (-0.5 / model.d_min), atol=1e-12 * np.abs(deep).max())
    np.testing.assert_allclose(tilted[0], tilted[1])


@pytest.mark.parametrize("target", wm.TARGETS)
def test_directions_whose_data_stop_shallower_are_scaled_in_depth_past_their_own_data(sand, target, caplog):
    """A group of directions acquired to a shallower depth and tilt than the rest (the Beads ring,
    issue 16) is not extrapolated by its spline: past its own deepest data it follows the depth law
    (per unit depth held; the wrench target scaled by d / d_group) and its tilt is clamped to its own,
    while the other directions keep their deeper data; no note while θ lies within all the data."""
    ring, rest = np.r_[9:17], np.r_[0:9, 17:26]  # the horizontal ring: its mirror images are its own
    valid = sand.valid.copy()
    valid[(sand.configs[:, 0] < -0.07) | (sand.configs[:, 1] > 0.9), 9:17] = False
    model = wm.fit(replace(sand, valid=valid), target=target)
    thetas = [[-0.12, 0.4], [-0.07, 0.4], [-0.05, 1.2], [-0.05, 0.9], [0.01, 0.3], [np.nan, 0.3], [-0.2, 0.4]]
    with caplog.at_level(logging.DEBUG, logger="granular.learning.model"):
        deep, edge, tilted, ring_edge, above, nan = fast = model.points(thetas[:6])
        assert not [r for r in caplog.records if "outside" in r.getMessage()]
        deepest = model.points(thetas[6:])[0]
    tol = 1e-9 * np.abs(edge).max()
    np.testing.assert_allclose(deep[ring], edge[ring] * 0.12 / 0.07, atol=tol)
    np.testing.assert_allclose(tilted[ring], ring_edge[ring], atol=tol)
    np.testing.assert_allclose(deepest[rest], model.points([[-0.13, 0.4]])[0, rest] * 0.2 / 0.13, atol=tol)
    np.testing.assert_allclose(deepest[ring], edge[ring] * 0.2 / 0.07, atol=tol)
    assert not above.any() and not nan.any()
    at_data = model.points(sand.configs[sand.configs[:, 0] == -0.1])
    assert np.abs(at_data[:, rest] - sand.wrenches[sand.configs[:, 0] == -0.1][:, rest]).max() < 1e-6 * np.abs(
        sand.wrenches).max()
    A = model.fixed_normals(16)
    b, W = model.offsets_and_points(A, thetas[:6])  # the compiled path the simulation takes
    np.testing.assert_allclose(W, fast, atol=tol)
    np.testing.assert_allclose(b, ws.support_offsets(A, fast), atol=tol)
    model._linear = None  # the regressors' own, group by group: the groups' RBFs joined into one form equal them
    np.testing.assert_allclose(model.points(thetas[:6]), fast, atol=tol)


def test_training_respects_the_valid_mask(sand):
    valid = sand.valid.copy()
    wrenches = sand.wrenches.copy()
    j = int(np.flatnonzero(np.all(sand.configs == [-0.03, 0.3], axis=1))[0])  # a configuration in the medium
    valid[j, 4] = False
    wrenches[j, 4] = [1e6, np.nan, -1e6]  # garbage where masked
    model = wm.fit(replace(sand, valid=valid, wrenches=wrenches))
    pred = model.points(sand.configs[j:j + 1])[0]
    assert np.all(np.isfinite(pred))
    assert np.abs(pred[4] - sand.wrenches[j, 4]).max() < 0.2 * np.abs(sand.wrenches[j]).max()
    np.testing.assert_allclose(pred[5], sand.wrenches[j, 5], atol=1e-6)


def test_dataset_without_depth_is_rejected(sand):
    surface = sand.subset(sand.configs[:, 0] == 0)
    with pytest.raises(GranularError, match="no configuration below the surface"):
        wm.fit(surface)


def test_batched_prediction_matches_single(sand_model, rng):
    thetas = np.column_stack([rng.uniform(-0.07, 0.01, 6), rng.uniform(-0.9, 0.9, 6)])
    batch = sand_model.points(thetas)
    for t, p in zip(thetas, batch):
        np.testing.assert_allclose(sand_model.points([t])[0], p, atol=1e-10)


def test_rbf_matches_scipy(sand, rng):
    """Our RBF interpolant is scipy's RBFInterpolator (thin-plate spline, degree 1; and smoothed)."""
    from scipy.interpolate import RBFInterpolator

    from granular.learning.regressors import RBF

    X = rng.uniform(-1, 1, (30, 2))
    Y = rng.normal(size=(30, 5))
    ours = RBF().fit(X, Y)
    ref = RBFInterpolator(X, Y, kernel="thin_plate_spline", degree=1)
    Xq = rng.uniform(-1.2, 1.2, (50, 2))
    np.testing.assert_allclose(ours.predict(Xq), ref(Xq), rtol=1e-8, atol=1e-8)
    smooth = RBF(kernel="linear", smoothing=0.1).fit(X, Y)  # and smoothed, as scipy smooths
    ref = RBFInterpolator(X, Y, kernel="linear", degree=1, smoothing=0.1)
    np.testing.assert_allclose(smooth.predict(Xq), ref(Xq), rtol=1e-8, atol=1e-8)
    assert not np.allclose(smooth.predict(X), Y, atol=1e-3), "smoothed, it no longer interpolates"


def test_generic_and_linear_prediction_paths_agree(sand):
    """The folded-coefficient fast path equals the generic mirror average."""
    model = wm.fit(sand)
    thetas = np.array([[-0.02, 0.3], [-0.06, -1.1], [-0.045, 0.0]])
    fast = model.points(thetas)
    model._linear = None
    np.testing.assert_allclose(model.points(thetas), fast, atol=1e-9 * np.abs(fast).max())


def test_model_knows_every_regressor_by_name():
    from granular.learning import regressors

    assert set(wm.REGRESSOR_NAMES) == set(regressors.REGRESSORS)


def test_a_per_depth_model_learns_w_over_depth_and_scales_it_back(sand, tmp_path, caplog):
    """target 'per-depth': the regressors learn w / |d| (Li et al.'s linear growth with depth), so the
    model still passes through the data, is linear in depth from the surface to the shallowest row
    and below the deepest, and says so only below the deepest."""
    model = wm.fit(sand, target="per-depth")
    below = sand.configs[:, 0] < 0
    np.testing.assert_allclose(model.points(sand.configs), np.where(below[:, None, None], sand.wrenches, 0.0),
                               atol=1e-8 * np.abs(sand.wrenches).max())
    top, bottom = sand.configs[below, 0].max(), sand.configs[:, 0].min()
    with caplog.at_level(logging.DEBUG, logger="granular.learning.model"):
        shallow = model.points([[0.4 * top, 0.3], [top, 0.3]])
        assert not [r for r in caplog.records if "outside" in r.getMessage()]
        deep = model.points([[1.5 * bottom, -0.3], [bottom, -0.3]])
    assert len([r for r in caplog.records if "outside" in r.getMessage()]) == 1
    np.testing.assert_allclose(shallow[0], 0.4 * shallow[1], atol=1e-9 * np.abs(shallow).max())
    np.testing.assert_allclose(deep[0], 1.5 * deep[1], atol=1e-9 * np.abs(deep).max())
    thetas = np.array([[-0.02, 0.3], [-0.06, -1.1], [0.4 * top, 0.0], [1.5 * bottom, 0.2]])
    b, points = model.offsets_and_points(model.fixed_normals(32), thetas)  # the compiled path
    np.testing.assert_allclose(points, model.points(thetas), atol=1e-9 * np.abs(points).max())
    np.testing.assert_allclose(b, ws.support_offsets(model.fixed_normals(32), points), atol=1e-9 * b.max())
    wm.save(model, tmp_path / "m.h5")
    again = wm.load(tmp_path / "m.h5")
    assert again.target == "per-depth"
    np.testing.assert_array_equal(again.points(thetas), model.points(thetas))
    generic = wm.fit(sand, "gp", target="per-depth")  # the same law around another regressor
    np.testing.assert_allclose(generic.points([[0.4 * top, 0.3]]), 0.4 * generic.points([[top, 0.3]]), rtol=1e-9)
    with pytest.raises(GranularError, match="unknown model target 'log'"):
        wm.fit(sand, target="log")
    with pytest.raises(GranularError, match="two depths or more"):  # w / |d| over one depth: nothing to fit in d
        wm.fit(sand.subset(np.flatnonzero(sand.configs[:, 0] >= top)), target="per-depth")


def test_a_model_file_says_what_its_regressors_learned(sand, tmp_path):
    """Files carry version 3 and their target (a reader that knew no target would take w / |d| for w);
    version 2 files, without one, load as the wrenches; a target that is not a name is refused."""
    import h5py

    path = tmp_path / "m.h5"
    wm.save(wm.fit(sand), path)
    with h5py.File(path, "a") as f:
        assert f.attrs["version"] == 3 and f.attrs["target"] == "wrench"
        f.attrs["version"] = 2
        del f.attrs["target"]
    assert wm.load(path).target == "wrench"
    with h5py.File(path, "a") as f:
        f.attrs["target"] = np.arange(3)
    with pytest.raises(GranularError, match="unknown model target"):
        wm.load(path)
