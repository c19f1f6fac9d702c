"""The transfer set's preparation (issue 49, data/validation/transfer/): a bed of spread radii, deposited
at another friction, levelled lower and approached slower; the default bed, and runs recorded before
these options, unchanged. None of these tests runs YADE."""
import json
from pathlib import Path

import numpy as np
import pytest

from granular.data import dem
from granular.errors import GranularError
from granular.foot import Foot

ROOT = Path(__file__).resolve().parents[1]
VALIDATION = ROOT / "data" / "validation"
TRANSFER = VALIDATION / "transfer"
#: A bed's parameters as they were before the size, deposit and rain options (the keys of a run's
#: ``bed_info`` before the measured ones, and of ``bed.params.json`` but ``depth``).
OLD_KEYS = {"particles", "box", "young", "poisson", "density", "friction", "radius", "packing", "settled", "seed",
            "periodic", "wall_friction"}


def _fake_bed(folder: Path, bed: dem.Bed, params: dict | None = None, **measured):
    """A bed folder as :func:`dem.prepare_bed` leaves it, without running YADE."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bed.yade.gz").write_text("")
    info = {"surface_z": 0.2, "spheres": 2800, "seconds": 400.0, **measured}
    (folder / "bed.yade.gz.json").write_text(json.dumps(info))
    (folder / "bed.params.json").write_text(json.dumps(params if params is not None else dem._bed_params(bed)))


def test_the_default_bed_is_described_as_before_the_options():
    bed = dem.Bed(seed=1)
    assert (bed.size_spread, bed.deposit_friction, bed.rain) == (0.0, None, 2.0)
    assert bed.depth == pytest.approx(3400 * 4 / 3 * np.pi * 0.01 ** 3 / (0.6 * 0.5 * 0.22), rel=1e-15)
    params = dem._bed_params(bed)
    assert set(params) == OLD_KEYS | {"depth", "size_spread", "deposit_friction", "rain"}
    # the script reads the new keys with the old behaviour as fallback: equal spheres, a cloud of 2 depths
    assert 'rRelFuzz=P.get("size_spread") or 0.0' in dem.BED_SCRIPT
    assert 'top = P.get("rain", 2.0) * P["depth"] + 4 * P["radius"]' in dem.BED_SCRIPT
    assert 'deposit = P.get("deposit_friction")\nif deposit is not None:' in dem.BED_SCRIPT


def test_a_bed_folder_made_before_the_options_is_still_the_default_bed(tmp_path):
    bed = dem.Bed(seed=1)
    old = {k: v for k, v in dem._bed_params(bed).items() if k not in ("size_spread", "deposit_friction", "rain")}
    _fake_bed(tmp_path, bed, old)
    assert dem.prepare_bed(bed, tmp_path) == tmp_path / "bed.yade.gz"
    with pytest.raises(GranularError, match="another bed"):   # the transfer bed of the same seed is another bed
        dem.prepare_bed(dem.transfer_bed(1), tmp_path)


def test_a_run_recorded_before_the_options_is_still_done(tmp_path):
    """A held-out run's parameters, as the code before the options wrote them, equal today's: resumed, not redone."""
    bed, foot = dem.Bed(seed=1), Foot()
    _fake_bed(tmp_path, bed)
    summary = dem._bed_summary(bed, tmp_path)
    assert set(summary) == (OLD_KEYS - {"wall_friction"}) | {"spheres", "surface_z", "packing_measured", "seconds"}
    assert summary["packing_measured"] == pytest.approx(2800 * 4 / 3 * np.pi * 1e-6 / (0.11 * 0.2), abs=1e-4)
    waypoints = dem.check_path(bed, dem.VALIDATION_PATHS["arc"], foot, "arc").tolist()
    params = dem.path_params("arc_s1", "arc", bed, tmp_path, summary, waypoints, foot)
    old = json.loads(json.dumps(params))
    assert set(old["bed_info"]) == set(summary) and old["insert_speed"] == 1.0
    for suffix in (".csv", ".json"):
        (tmp_path / f"arc_s1{suffix}").write_text("recorded")
    (tmp_path / "arc_s1.params.json").write_text(json.dumps(old))
    assert dem.is_done(params, tmp_path)
    transfer = dem.transfer_bed(1)
    moved = dem.path_params("arc_s1", "arc", transfer, tmp_path, dem._bed_summary(transfer, tmp_path), waypoints, foot,
                            insert_speed=dem.TRANSFER_INSERT_SPEED)
    assert not dem.is_done(moved, tmp_path)


def test_the_transfer_bed_is_prepared_another_way():
    beds = [dem.transfer_bed(s) for s in dem.TRANSFER_SEEDS]
    assert len(beds) >= 3 and not {b.seed for b in beds} & {0, 1, 2, 3}   # not the training or held-out beds
    bed, default = beds[0], dem.Bed()
    assert bed.size_spread == 0.1 and bed.deposit_friction == 0.1 and bed.packing != default.packing
    assert (bed.particles, bed.box, bed.young, bed.friction, bed.radius) == \
        (default.particles, default.box, default.young, default.friction, default.radius)   # the same Beads
    assert dem.TRANSFER_INSERT_SPEED == dem.BEADS_VELOCITY_SCALE[1] == 0.2   # the paper's protocol speed
    # radii uniform in r·[0.9, 1.1]: the mean sphere is (1 + 0.1²) times the equal spheres'
    assert bed.sphere_volume == pytest.approx(4 / 3 * np.pi * 0.01 ** 3 * 1.01)
    assert bed.depth == pytest.approx(3400 * bed.sphere_volume / (0.65 * 0.5 * 0.22))
    for name, w in dem.VALIDATION_PATHS.items():   # the held-out paths fit the transfer beds too
        dem.check_path(bed, w, Foot(), name)


def test_the_bed_script_is_given_the_spread_and_the_deposit(tmp_path, monkeypatch):
    seen = {}

    def fake_yade(sfile, name, timeout, threads=1, report=None, progress=None):
        seen["script"] = Path(sfile).read_text()
        seen["threads"] = threads
        (Path(sfile).parent / "bed.yade.gz").write_text("")
        (Path(sfile).parent / "bed.yade.gz.json").write_text(json.dumps(
            {"surface_z": 0.19, "spheres": 3000, "seconds": 1.0, "volume": 3000 * 4.2e-6}))
        return 0, ""

    monkeypatch.setattr(dem, "_yade", fake_yade)
    bed = dem.transfer_bed(101)
    dem.prepare_bed(bed, tmp_path, threads=1)
    params = json.loads((tmp_path / "bed.params.json").read_text())
    assert params["size_spread"] == 0.1 and params["deposit_friction"] == 0.1 and params["rain"] == 3.0
    assert params["packing"] == 0.65 and params["depth"] == pytest.approx(bed.depth)
    assert f"PARAMS = {str(tmp_path / 'bed.params.json')!r}" in seen["script"] and seen["threads"] == 1
    assert 'rRelFuzz=P.get("size_spread")' in seen["script"]
    assert 'O.materials["beads"].frictionAngle = math.atan(P["friction"])' in seen["script"]   # restored
    summary = dem._bed_summary(bed, tmp_path)
    assert summary["size_spread"] == 0.1 and summary["deposit_friction"] == 0.1 and summary["rain"] == 3.0
    # the solid fraction of spheres of spread radii is their own measured volume's
    assert summary["packing_measured"] == pytest.approx(3000 * 4.2e-6 / (0.11 * 0.19), abs=1e-4)


def test_acquire_transfer_runs_the_held_out_paths_slower_on_one_core(monkeypatch, tmp_path):
    seen = {}
    monkeypatch.setattr(dem, "acquire_paths",
                        lambda workdir, beds, paths, **kw: seen.update(beds=beds, paths=paths, **kw))
    dem.acquire_transfer(tmp_path, out=tmp_path / "out")
    assert [b.seed for b in seen["beds"]] == list(dem.TRANSFER_SEEDS) and seen["paths"] is None   # VALIDATION_PATHS
    assert seen["insert_speed"] == 0.2 and seen["workers"] == 1 and seen["threads"] == 1
    assert seen["out"] == tmp_path / "out"


def test_bad_bed_options_are_refused():
    for bad, word in ((dict(size_spread=-0.1), "size_spread"), (dict(size_spread=1.0), "size_spread"),
                      (dict(deposit_friction=-1.0), "deposit_friction"), (dict(rain=0.5), "rain")):
        with pytest.raises(GranularError, match=word):
            dem.Bed(**bad)


def test_the_held_out_globs_do_not_reach_the_transfer_set(tmp_path):
    """The transfer set lies in a subfolder, its runs named by seeds 101–103: the held-out set's globs
    (``granular validate``'s documented ``data/validation/*.csv``, the tests' ``*_s1.csv``, ``*_s[23].csv``)
    still find the 15 runs of seeds 1–3 and nothing of it, and no training file names it."""
    held = sorted(VALIDATION.glob("*.csv"))
    assert len(held) == 15 and all(p.parent == VALIDATION for p in held)
    for pattern, n in (("*.csv", 15), ("*_s1.csv", 5), ("*_s[23].csv", 10)):
        assert len(list(VALIDATION.glob(pattern))) == n, pattern
        assert not [p for p in VALIDATION.glob(pattern) if "transfer" in p.parts]
    # the same globs in a copy holding a transfer run beside them, as data/validation/transfer/ does
    (tmp_path / "transfer").mkdir()
    (tmp_path / "arc_s1.csv").write_text("")
    for seed in dem.TRANSFER_SEEDS:
        (tmp_path / "transfer" / f"arc_s{seed}.csv").write_text("")
    assert [p.name for p in tmp_path.glob("*.csv")] == ["arc_s1.csv"]
    assert [p.name for p in tmp_path.glob("*_s1.csv")] == ["arc_s1.csv"] and not list(tmp_path.glob("*_s[23].csv"))
    for toml in (ROOT / "training").glob("*.toml"):
        assert "validation/" not in toml.read_text(), f"{toml.name} reads held-out data"
    if TRANSFER.is_dir():
        assert not [p for p in TRANSFER.glob("*.csv") if not any(p.stem.endswith(f"_s{s}") for s in dem.TRANSFER_SEEDS)]
