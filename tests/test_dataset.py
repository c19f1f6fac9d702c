from dataclasses import replace
import h5py
import numpy as np
import pytest

from granular.data import dataset as wd
from granular.errors import GranularError


def test_round_trip(sand, tmp_path):
    path = wd.write(sand, tmp_path / "s.h5")
    back = wd.read(path)
    for name in ("configs", "directions", "velocity_scale", "wrenches", "valid"):
        np.testing.assert_array_equal(getattr(back, name), getattr(sand, name))
    assert (back.medium, back.source, back.foot) == (sand.medium, sand.source, sand.foot)
    assert back.provenance["zeta"] == sand.provenance["zeta"]
    assert not list(tmp_path.glob("*.tmp")), "temporary file left behind"


def corrupt(path, how):
    with h5py.File(path, "a") as f:
        how(f)


def nan_at(f):
    w = f["wrenches"][()]
    w[3, 2, 1] = np.nan
    f["wrenches"][...] = w


def masked_nan(f):
    nan_at(f)
    v = f["valid"][()]
    v[3, 2] = False
    f["valid"][...] = v


CASES = {
    "missing array": (lambda f: f.__delitem__("wrenches"), "missing array 'wrenches'"),
    "wrong shape": (lambda f: (f.__delitem__("configs"), f.create_dataset("configs", data=np.zeros((20, 3)))),
                    "'configs' has shape \\(20, 3\\)"),
    "nan": (nan_at, "NaN or inf at config 3"),
    "unknown version": (lambda f: f.attrs.__setitem__("version", 99), "unknown granular-wrench-dataset version 99"),
    "bad format": (lambda f: f.attrs.__setitem__("format", "something-else"), "format is 'something-else'"),
    "bad units": (lambda f: f.attrs.__setitem__("units_wrenches", "kgf, kgf, N*mm"), "units_wrenches"),
    "inf scale": (lambda f: f["velocity_scale"].__setitem__(0, np.inf), "velocity_scale holds NaN or inf"),
    "non-unit directions": (lambda f: f["directions"].__setitem__(0, [0, 2.0, 0]), "unit vectors"),
    "above surface": (lambda f: f["configs"].__setitem__(0, [0.05, 0.0]), "depth d must be ≤ 0"),
    "bad source": (lambda f: f.attrs.__setitem__("source", "guess"), "source is 'guess'"),
    "missing foot": (lambda f: f.attrs.__delitem__("foot_radius"), "foot"),
    "bad valid dtype": (lambda f: (f.__delitem__("valid"),
                                   f.create_dataset("valid", data=np.ones((len(f["configs"]), 26)))),
                        "'valid' should be boolean"),
    "group for array": (lambda f: (f.__delitem__("directions"), f.create_group("directions")), "found a group"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rejects_malformed_file(sand, tmp_path, case):
    how, message = CASES[case]
    path = wd.write(sand, tmp_path / "bad.h5")
    corrupt(path, how)
    with pytest.raises(GranularError, match=message) as info:
        wd.read(path)
    assert str(path) in str(info.value)


def test_masked_nan_is_accepted(sand, tmp_path):
    path = wd.write(sand, tmp_path / "masked.h5")
    corrupt(path, masked_nan)
    ds = wd.read(path)
    assert not ds.valid[3, 2] and ds.valid.sum() == ds.valid.size - 1


def test_not_hdf5_and_missing(tmp_path):
    junk = tmp_path / "junk.h5"
    junk.write_text("hello")
    with pytest.raises(GranularError, match="not a readable HDF5 file"):
        wd.read(junk)
    with pytest.raises(GranularError, match="no such file"):
        wd.read(tmp_path / "absent.h5")


def test_failed_write_keeps_previous_file(sand, tmp_path):
    path = wd.write(sand, tmp_path / "keep.h5")
    before = path.read_bytes()
    bad = wd.WrenchDataset(configs=sand.configs, directions=sand.directions, velocity_scale=sand.velocity_scale,
                           wrenches=sand.wrenches[:, :, :2], medium="sand", source="rft")
    with pytest.raises(GranularError, match="wrenches must have shape"):
        wd.write(bad, path)
    assert path.read_bytes() == before
    assert not list(tmp_path.glob("*.tmp"))


def test_merge_joins_grids_and_refuses_what_does_not_belong_together(tmp_path):
    from granular.data.synth import synthesize

    a = synthesize("rft", "sand", [0.0, -0.02, -0.04], [0.0, 0.5], 10)
    b = synthesize("rft", "sand", [0.0, -0.06], [0.0, 0.5], 10)  # the surface rows again: kept once
    both = synthesize("rft", "sand", [0.0, -0.02, -0.04, -0.06], [0.0, 0.5], 10)
    merged = wd.merge([a, b])
    order = np.lexsort(merged.configs.T)
    ref = np.lexsort(both.configs.T)
    np.testing.assert_allclose(merged.configs[order], both.configs[ref])
    np.testing.assert_allclose(merged.wrenches[order], both.wrenches[ref])
    wd.write(merged, tmp_path / "m.h5")
    assert wd.read(tmp_path / "m.h5").n == both.n
    with pytest.raises(GranularError, match="more than one input"):
        wd.merge([a, a])
    with pytest.raises(GranularError, match="medium"):
        wd.merge([a, synthesize("rft", "pebbles", [-0.06], [0.0], 10)])



def test_merge_joins_direction_sets_and_learns_from_the_union(tmp_path):
    """A later acquisition adds directions (m = 10: the equator ring) to a grid of m = 18: the union
    holds both, each sample from the input that has it, the poles (in both) averaged when asked; the
    samples no input holds are invalid, and the model still learns every direction."""
    from granular.data.synth import synthesize
    from granular.learning import model as wm

    a = synthesize("rft", "sand", [0.0, -0.03, -0.06], [0.0, 0.5], 18)
    b = synthesize("rft", "sand", [0.0, -0.03], [0.0, 0.5], 10)
    with pytest.raises(GranularError, match="more than one input"):
        wd.merge([a, b])  # the poles, twice
    merged = wd.merge([a, b], average=True)
    assert merged.m == 26 and merged.n == a.n
    np.testing.assert_allclose(merged.directions[:18], a.directions)
    full = synthesize("rft", "sand", [0.0, -0.03, -0.06], [0.0, 0.5], 18)
    for j, theta in enumerate(merged.configs):
        for i, u in enumerate(merged.directions):
            ref = synthesize("rft", "sand", [theta[0]], [theta[1]], 10) if i >= 18 else full
            if i >= 18 and theta[0] == -0.06:
                assert not merged.valid[j, i]  # b stops at 3 cm
                continue
            k = int(np.argmin(np.linalg.norm(ref.directions - u, axis=1)))
            row = 0 if i >= 18 else j
            np.testing.assert_allclose(merged.wrenches[j, i], ref.wrenches[row, k], atol=1e-9)
    assert (merged.provenance["realisations"][merged.configs[:, 0] == -0.03][:, [0, 17]] == 2).all()
    wd.write(merged, tmp_path / "u.h5")
    model = wm.fit(wd.read(tmp_path / "u.h5"))
    assert np.isfinite(model.points(np.array([[-0.05, 0.3]]))).all()


def test_merge_averages_realisations_and_keeps_their_spread(tmp_path):
    """Two realisations of one grid, one with a sample missing, and a third input with one more
    configuration: the mean where both hold a sample, the one where one does, the spread."""
    from granular.data.synth import synthesize

    a = synthesize("rft", "sand", [0.0, -0.02, -0.04], [0.0, 0.5], 10)
    b = replace(a, wrenches=a.wrenches * 1.2, valid=a.valid.copy())
    b.valid[2, 3] = False
    c = synthesize("rft", "sand", [0.0, -0.06], [0.0], 10)
    merged = wd.merge([a, b, c], average=True)
    assert merged.n == a.n + 1 and merged.valid.all()
    np.testing.assert_allclose(merged.wrenches[:a.n][a.valid & b.valid], 1.1 * a.wrenches[a.valid & b.valid])
    np.testing.assert_allclose(merged.wrenches[2, 3], a.wrenches[2, 3])
    count, spread = merged.provenance["realisations"], merged.provenance["realisation_spread"]
    assert count[2, 3] == 1 and count[3, 0] == 2 and count[-1, 0] == 1 and count[0, 0] == 1  # the surface once
    np.testing.assert_allclose(spread[3, 0], np.abs(0.2 * a.wrenches[3, 0]) / np.sqrt(2), rtol=1e-12)
    wd.write(merged, tmp_path / "avg.h5")
    assert wd.read(tmp_path / "avg.h5").provenance["realisations"].shape == (merged.n, merged.m)


def test_averaging_a_new_realisation_into_averaged_data_equals_averaging_all_at_once():
    """Beds 1 and 2 averaged, then bed 3 averaged in: each sample weighs as the realisations behind
    it (not ½ and ½), and the spread is the three beds' standard deviation."""
    from granular.data.synth import synthesize

    a = synthesize("rft", "sand", [0.0, -0.02, -0.04], [0.0, 0.5], 10)
    beds = [replace(a, wrenches=a.wrenches * f, valid=a.valid.copy()) for f in (1.0, 1.3, 0.7)]
    beds[1].valid[2, 3] = False  # one sample of bed 2 missing: 2 realisations there, not 3
    at_once = wd.merge(beds, average=True)
    stepwise = wd.merge([wd.merge(beds[:2], average=True), beds[2]], average=True)
    np.testing.assert_allclose(stepwise.wrenches, at_once.wrenches, rtol=1e-12)
    for key in ("realisations", "realisation_spread"):
        np.testing.assert_allclose(stepwise.provenance[key], at_once.provenance[key], rtol=1e-12, atol=1e-12)
    assert stepwise.provenance["realisations"][3, 0] == 3 and stepwise.provenance["realisations"][2, 3] == 2
    np.testing.assert_allclose(stepwise.wrenches[3, 0], a.wrenches[3, 0])  # (1 + 1.3 + 0.7) / 3


def test_merging_a_new_row_into_averaged_data_keeps_the_counts():
    """A plain merge of an averaged grid and a new acquisition keeps each sample's realisations and
    spread: the averaged ones as they were, one and 0 for the new row (an acquisition is one bed)."""
    from granular.data.synth import synthesize

    a = synthesize("rft", "sand", [0.0, -0.02], [0.0, 0.5], 10)
    averaged = wd.merge([a, replace(a, wrenches=a.wrenches * 1.2)], average=True)
    new = synthesize("rft", "sand", [0.0, -0.04], [0.0], 10)
    merged = wd.merge([averaged, new])
    count, spread = merged.provenance["realisations"], merged.provenance["realisation_spread"]
    np.testing.assert_array_equal(count[:averaged.n], averaged.provenance["realisations"])
    np.testing.assert_array_equal(spread[:averaged.n], averaged.provenance["realisation_spread"])
    assert (count[-1] == 1).all() and (spread[-1] == 0).all()


def test_merge_replaces_a_reacquired_cell_and_averages_the_rest(tmp_path):
    """A cell re-acquired in a better bed, in two parts (directions split between acquisitions),
    replaces the base's cell wholly; another cell of the new bed averages in as a realisation."""
    from granular.data.synth import synthesize

    base = synthesize("rft", "sand", [0.0, -0.02, -0.04], [0.0, 0.5], 10)
    row = {tuple(c): j for j, c in enumerate(base.configs.round(9).tolist())}
    bed = replace(base, wrenches=base.wrenches * 0.5, valid=base.valid.copy())
    keep = [row[(0.0, 0.0)], row[(-0.02, 0.0)], row[(-0.04, 0.0)]]
    part1, part2 = bed.subset(keep), bed.subset(keep)
    part1.valid[2, 5:], part2.valid[2, :5] = False, False  # 4 cm: half the directions each
    part2.valid[1] = False                                  # 2 cm only in part 1
    merged = wd.merge([base, part1, part2], average=True, replace_configs=[(-0.04, 0.0)])
    at = {tuple(c): j for j, c in enumerate(merged.configs.round(9).tolist())}
    count = merged.provenance["realisations"]
    np.testing.assert_allclose(merged.wrenches[at[(-0.04, 0.0)]], 0.5 * base.wrenches[row[(-0.04, 0.0)]])
    assert (count[at[(-0.04, 0.0)]] == 1).all()  # the new bed's only
    np.testing.assert_allclose(merged.wrenches[at[(-0.02, 0.0)]], 0.75 * base.wrenches[row[(-0.02, 0.0)]])
    assert (count[at[(-0.02, 0.0)]] == 2).all()  # averaged
    np.testing.assert_allclose(merged.wrenches[at[(-0.04, 0.5)]], base.wrenches[row[(-0.04, 0.5)]])
    assert merged.n == base.n
    assert "replaced_configs" in merged.provenance
    with pytest.raises(GranularError, match=r"replace d = -0.06 m.*does not hold it"):
        wd.merge([base, part1], average=True, replace_configs=[(-0.06, 0.0)])
    with pytest.raises(GranularError, match=r"replace d = -0.04 m, φ = 0.5 rad: no input after .* valid"):
        wd.merge([base, part1], average=True, replace_configs=[(-0.04, 0.5)])
    failed = replace(part1, valid=part1.valid.copy())
    failed.valid[2] = False  # the re-acquisition failed: the base's cell stays unless told otherwise
    with pytest.raises(GranularError, match="valid"):
        wd.merge([base, failed], average=True, replace_configs=[(-0.04, 0.0)])
    with pytest.raises(GranularError, match="below the surface"):
        wd.merge([base, part1], replace_configs=[(0.0, 0.0)])
    with pytest.raises(GranularError, match="does not hold it"):  # not the surface row, 1e-10 m from it
        wd.merge([base, part1], replace_configs=[(-1e-10, 0.0)])


def test_cli_merge_replace(tmp_path):
    from granular.apps.cli import main
    from granular.data.synth import synthesize

    base = synthesize("rft", "sand", [0.0, -0.02], [0.0], 10)
    new = replace(base, wrenches=base.wrenches * 2)
    wd.write(base, tmp_path / "a.h5"), wd.write(new, tmp_path / "b.h5")
    assert main(["merge", str(tmp_path / "a.h5"), str(tmp_path / "b.h5"), "--replace", "-0.02", "0",
                 "--out", str(tmp_path / "m.h5")]) == 0
    np.testing.assert_allclose(wd.read(tmp_path / "m.h5").wrenches[1], 2 * base.wrenches[1])
    assert main(["merge", str(tmp_path / "a.h5"), str(tmp_path / "b.h5"), "--replace", "-0.05", "0",
                 "--out", str(tmp_path / "x.h5")]) == 2
    assert not (tmp_path / "x.h5").exists()
    with pytest.raises(SystemExit):
        main(["merge", str(tmp_path / "a.h5"), str(tmp_path / "b.h5"), "--replace", "-0.02", "--out", str(tmp_path / "y.h5")])


def test_merge_history_nests_as_data_not_as_ever_more_escaped_strings():
    """Each merge keeps its inputs' own merge history: decoded, so that merging again does not escape
    it again (it grew 1.9x per merge, to 0.7 MB in data/beads.h5)."""
    import json
    from granular.data.synth import synthesize

    a = synthesize("rft", "sand", [0.0, -0.02], [0.0], 10)
    merged, sizes = a, []
    for k in range(4):
        merged = wd.merge([merged, replace(a, wrenches=a.wrenches * (1 + 0.1 * k))], average=True)
        sizes.append(len(merged.provenance["merged_from"]))
    history = json.loads(merged.provenance["merged_from"])
    assert isinstance(history[0]["merged_from"], list) and isinstance(history[0]["merged_from"][0]["merged_from"], list)
    steps = np.diff(sizes)
    assert steps.max() < 1.5 * steps.min(), sizes  # linear growth
