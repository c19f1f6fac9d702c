"""Bad input, as a new user gives it: one line on stderr, exit status 2, no file written or changed.

The campaign of the reliability issue (destroyed inputs, tracebacks, silent acceptances) as cases,
plus property-based fuzzing (Hypothesis) of the file schemas, the HDF5 formats and CLI options.
The commands run in-process (``granular.apps.cli.main``) so that the many cases stay fast.
"""
import json
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from granular.apps.cli import main
from granular.errors import GranularError
from granular.io.resources import shipped

from test_ingest import DIRS, make_run

SAND_MODEL = shipped("training") / "models" / "sand.h5"
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def snapshot(folder: Path):
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()}


def refused(capsys, folder, *args, message=""):
    """Run ``granular ARGS``; it must refuse with one error line naming ``message`` and touch nothing."""
    before = snapshot(folder)
    try:
        code = main([str(a) for a in args])
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (args, err)
    assert len(lines) == 1 and lines[0].startswith("granular: error:"), (args, err)
    assert message in lines[0], (args, lines[0])
    assert snapshot(folder) == before, f"{args} wrote or changed a file"
    return lines[0]


@pytest.fixture
def lab(tmp_path):
    """A folder with one of every input: dataset, model, scenario, runs with sidecars."""
    shutil.copy(shipped("data") / "sand.h5", tmp_path / "s.h5")
    shutil.copy(SAND_MODEL, tmp_path / "m.h5")
    make_run(tmp_path, "r0", (-0.03, 0.3), DIRS[25])
    (tmp_path / "dir").mkdir()
    (tmp_path / "fig.png").write_bytes(b"not a png")
    return tmp_path


# --- the campaign: each case once ------------------------------------------------------------

def test_no_input_is_ever_an_output(lab, capsys):
    refused(capsys, lab, "train", lab / "s.h5", "--out", lab / "s.h5", message="is also an input")
    refused(capsys, lab, "sim", "drop-upright", "--medium", lab / "m.h5", "--out", lab / "m.h5",
            message="is also an input")
    refused(capsys, lab, "ingest", lab / "r0.csv", "--out", lab / "r0.csv", message="is also an input")
    refused(capsys, lab, "ingest", lab / "r0.csv", "--out", lab / "r0.json", message="is also an input")
    (lab / "link.h5").symlink_to(lab / "s.h5")
    refused(capsys, lab, "train", lab / "s.h5", "--out", lab / "link.h5", message="is also an input")
    refused(capsys, lab, "inspect", lab / "r0.csv", "--plot", lab / "r0.json", message="is also an input")


@pytest.mark.parametrize("args,message", [
    (["sim", "drop-upright", "--out", "/proc/x.h5"], "cannot write in /proc"),
    (["sim", "drop-upright", "--out", "/sys/x.h5"], "cannot write in /sys"),
    (["sim", "drop-upright", "--out", "{lab}/dir"], "is a directory"),
    (["sim", "drop-upright", "--plot", "{lab}/fig.png"], "is a file"),
    (["sim", "drop-upright", "--video", "/proc/v.gif"], "cannot write"),
    (["synth", "--medium", "sand", "--out", "/proc/x.h5"], "cannot write"),
    (["train", "{lab}/s.h5", "--cv", "5", "--out", "/proc/x.h5"], "cannot write"),
    (["train", "{lab}/s.h5", "--cv", "1", "--out", "{lab}/new.h5"], "K ≥ 2"),
    (["view", "--port", "99999", "--no-browser"], "--port: 99999 is out of range"),
    (["sim", "drop-upright", "--dt", "0"], "--dt: 0 is out of range"),
    (["sim", "drop-upright", "--dt", "1e-9"], "--dt: 1e-9 is out of range"),
    (["sim", "drop-upright", "--duration", "inf"], "--duration: inf is out of range"),
    (["sim", "drop-upright", "--duration", "nan"], "--duration: nan is out of range"),
    (["sim", "drop-upright", "--duration", "9000", "--dt", "0.0005"], "at most 2,000,000"),
    (["inspect", "{lab}/m.h5", "--theta", "nan", "nan", "--json"], "--theta: nan is out of range"),
    (["inspect", "{lab}/r0.csv", "--cutoff", "-5"], "--cutoff: -5 is out of range"),
    (["ingest", "{lab}/r0.csv", "--out", "{lab}/new.h5", "--directions", "30"], "2 + 8k"),
    (["synth", "--medium", "sand", "--depths", "0,abc", "--out", "{lab}/x.h5"], "expected a number"),
    (["inspect", "{lab}/nothing.h5"], "no such file"),
])
def test_options_are_checked_before_any_work(lab, capsys, args, message):
    refused(capsys, lab, *[a.format(lab=lab) for a in args], message=message)


def write(path: Path, text, binary=False):
    path.write_bytes(text) if binary else path.write_text(text)
    return path


@pytest.mark.parametrize("text,message", [
    ('duration = 1.0\n[robot]\nkind = "foot"\ngrain_mass = "abc"\n', "robot.grain_mass: expected a list"),
    ('duration = 1.0\n[robot]\nkind = "foot"\ngrain_mass = [1, 2]\n', "robot.grain_mass"),
    ('duration = 1.0\n[robot]\nkind = "foot"\nwheels = 4\n', "unknown field `wheels`"),
    ('duration = 1.0\n[robot]\nkind = "quadruped"\nspec = "robots/robosimian.toml"\n[control]\nkind = "trot"\n'
     'period = 0.0\n', "control.period"),
    ('duration = 1.0\n[robot]\nkind = "foot"\n[control]\nkind = "track"\n[control.path]\nkind = "spiral"\n'
     'duration = 1.0\n', "control.path.kind: invalid value 'spiral'; choose line, arc"),
    (b'duration = 1.0 # \xff\n[robot]\nkind = "foot"\n', "not UTF-8"),
    ('duration = \n', "not valid TOML"),
    ('duration = 1.0\ncontact = "flores"\n[robot]\nkind = "foot"\n[compliant]\nrestitution = 2.0\n',
     "compliant.restitution"),
    ('duration = 1.0\ncontact = "flores"\n[robot]\nkind = "foot"\n[compliant]\nstiffnes = 1e5\n',
     "unknown field `stiffnes`"),
    ('duration = 1.0\nkinetic_friction = 0.5\n[robot]\nkind = "foot"\n', "kinetic_friction needs a rigid floor"),
    ('duration = 1.0\ncontact = "flores"\n[robot]\nkind = "foot"\n[compliant]\nfriction = 0.5\nstatic_friction = 0.3\n',
     "must be at least friction"),
    ('duration = 1.0\nmedium = "wheel-dry-sand"\ncontact = "data-flow"\n[robot]\nkind = "wheel"\n[control]\n'
     'kind = "testbed"\nslip = 0.3\ntorque = 5.0\n', "the slip or the torque, not both"),
])
def test_scenario_files(lab, capsys, text, message):
    scenario = write(lab / "bad.toml", text, binary=isinstance(text, bytes))
    refused(capsys, lab, "sim", scenario, "--duration", "0.01", message=message)


def test_robot_spec_types_and_unknown_keys(lab, capsys):
    spec = (shipped("sim") / "robots" / "robosimian.toml").read_text()
    (lab / "robots").mkdir()
    scenario = write(lab / "q.toml", 'duration = 0.01\n[robot]\nkind = "quadruped"\nspec = "robots/bad.toml"\n'
                                     '[control]\nkind = "trot"\n')
    write(lab / "robots" / "bad.toml", spec.replace("factor = 2.0", 'factor = "two"'))
    refused(capsys, lab, "sim", scenario, message="grains.factor: expected a number, got a string")
    write(lab / "robots" / "bad.toml", spec.replace("[torso]", "[torso]\ncolour = 'red'"))
    refused(capsys, lab, "sim", scenario, message="torso: object contains unknown field `colour`")


def test_training_job_types(lab, capsys):
    job = write(lab / "job.toml", "dataset = 's.h5'\nout = 'new.h5'\nplot_thetas = 'abc'\n")
    refused(capsys, lab, "train", job, message="plot_thetas: expected a list")


@pytest.mark.parametrize("mapping,message", [
    ('sign = "abc"\n', "sign: expected a number"),
    ('sign = 2\n', "sign"),
    ('columns = "abc"\n', "columns: expected a table"),
    ('units = 5\n', "units: expected a table"),
    ('[units]\nFx_kgf = "kgf"\n', "as a key; choose t, x, z, phi, fx, fz, tau"),
    ('[units]\nphi = "mm"\n', "units.phi = 'mm' is a unit of length"),
    ('[units]\nfx = "furlong"\n', "invalid enum value 'furlong'; choose s, ms, m"),
    ('[topics]\nimu = "/imu"\n', "choose wrench, pose"),
])
def test_mapping_files(lab, capsys, mapping, message):
    path = write(lab / "map.toml", mapping)
    refused(capsys, lab, "ingest", lab / "r0.csv", "--mapping", path, "--out", lab / "new.h5", message=message)


@pytest.mark.parametrize("edit,message", [
    ({"theta_des": [-0.03]}, "theta_des: expected a list of length 2"),
    ({"sensor_offset": None, "sensor_angle": None}, "no sensor mount"),
    ({"sign": -1, "colour": "red"}, "unknown field `colour`"),
    ({"t_total": "long"}, "t_total: expected a number"),
])
def test_sidecars_say_what_is_wrong(lab, capsys, edit, message):
    meta = json.loads((lab / "r0.json").read_text())
    meta.update(edit)
    meta = {k: v for k, v in meta.items() if v is not None}
    (lab / "r0.json").write_text(json.dumps(meta))
    with pytest.raises(GranularError, match="no good runs"):
        from granular.data import ingest
        ingest.assemble([lab / "r0.csv"])
    from granular.data import ingest
    with pytest.raises(GranularError) as info:
        ingest.read_run(lab / "r0.csv")
    assert message in str(info.value) and "r0" in str(info.value)


def test_ingest_assumes_nothing_silently(tmp_path):
    from granular.data import ingest

    path, truth = make_run(tmp_path, "r", (-0.03, 0.3), DIRS[25])
    meta = json.loads(path.with_suffix(".json").read_text())
    for key in ("sensor_offset", "sensor_angle"):
        meta.pop(key)
    path.with_suffix(".json").write_text(json.dumps(meta))
    assert ingest.read_run(path, ingest.Mapping.load(assume_sensor_at_p_center=True)).sensor_angle == 0.0
    other, _ = make_run(tmp_path, "q", (-0.03, 0.3), DIRS[5])
    meta = json.loads(other.with_suffix(".json").read_text())
    meta["velocity_scale"] = [1.0, 1.0, 1.0]
    other.with_suffix(".json").write_text(json.dumps(meta))
    good, _ = make_run(tmp_path, "g", (-0.03, 0.3), DIRS[13])
    with pytest.raises(GranularError, match="runs disagree on velocity_scale"):
        ingest.assemble([good, other])


def test_repeated_trials_are_averaged_with_their_spread(tmp_path):
    from granular.data import ingest

    a, truth = make_run(tmp_path, "a", (-0.03, 0.3), DIRS[25], seed=1)
    b, _ = make_run(tmp_path, "b", (-0.03, 0.3), DIRS[25], seed=2)
    ds = ingest.assemble([a, b])
    j = int(np.flatnonzero(ds.configs[:, 1] == 0.3)[0])  # θ_des's d is p_center's; the dataset's, the lowest point's
    assert ds.provenance["trials"][j, 25] == 2
    assert np.all(ds.provenance["trial_spread"][j, 25] > 0)
    one = [ingest.extract(ingest.read_run(p), ingest.Foot())[0] for p in (a, b)]
    np.testing.assert_allclose(ds.wrenches[j, 25], np.mean(one, axis=0))


def test_bom_and_spaces_in_headers_are_fine(tmp_path):
    from granular.data import ingest

    path, truth = make_run(tmp_path, "r", (-0.03, 0.3), DIRS[25])
    lines = path.read_text().splitlines()
    lines[0] = "\ufeff" + ", ".join(name.strip() for name in lines[0].split(","))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    w, _ = ingest.extract(ingest.read_run(path), ingest.Foot())
    assert np.abs(w - truth).max() <= 0.02 * np.abs(truth).max()


def test_huge_wrenches_are_refused_by_inspect(lab, capsys):
    with h5py.File(lab / "s.h5", "a") as f:
        f["wrenches"][1, 3, 0] = 1e300
    refused(capsys, lab, "inspect", lab / "s.h5", message="exceed")


def test_inspect_accepts_every_file_the_project_writes(lab, capsys, tmp_path):
    assert main(["sim", "drop-upright", "--duration", "0.05", "--out", str(tmp_path / "run.h5")]) == 0
    for path in (tmp_path / "run.h5", lab / "s.h5", lab / "m.h5", lab / "r0.csv"):
        capsys.readouterr()
        assert main(["inspect", str(path), "--json"]) == 0, path
        assert json.loads(capsys.readouterr().out)["kind"]


# --- property-based fuzzing -----------------------------------------------------------------------

junk = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=True, allow_infinity=True),
                 st.text(max_size=8), st.lists(st.floats(allow_nan=True), max_size=4),
                 st.dictionaries(st.text(max_size=5), st.integers(), max_size=3))


@FUZZ
@given(section=st.sampled_from(["robot", "initial", "terrain", "control", None]), key=st.text(min_size=1, max_size=12),
       value=junk, known=st.booleans())
def test_fuzzed_scenarios_build_or_give_one_clear_error(section, key, value, known):
    from granular.scenarios import scenario as scenarios

    spec = scenarios.load("drop-upright")
    if section is None:
        fields = {"dt": value} if known else {}
        spec = spec.with_(**fields)
    else:
        table = dict(getattr(spec, section))
        table[list(table)[len(key) % len(table)] if known else key] = value
        spec = spec.with_(**{section: table})
    try:
        scenarios.checked(spec)
    except GranularError as exc:
        assert str(spec.path) in str(exc) and "\n" not in str(exc)


@FUZZ
@given(keys=st.dictionaries(st.sampled_from(["theta_des", "v_des", "t_total", "medium", "sensor_offset", "sensor_angle",
                                             "velocity_scale", "sign", "extra"]), junk, max_size=5))
def test_fuzzed_sidecars_are_read_or_refused(tmp_path, keys):
    from granular.data import ingest

    path = tmp_path / "fz.csv"
    if not path.exists():
        make_run(tmp_path, "fz", (-0.03, 0.3), DIRS[25])
    meta = {"theta_des": [-0.03, 0.3], "v_des": [0.1, 0.0, 0.0], "t_total": 2.0, "sensor_offset": [0, 0],
            "sensor_angle": 0.0, **keys}
    path.with_suffix(".json").write_text(json.dumps(meta))
    try:
        ingest.read_run(path)
    except GranularError as exc:
        assert "fz" in str(exc)


@FUZZ
@given(kind=st.sampled_from(["dataset", "model"]), victim=st.integers(0, 50), action=st.sampled_from(
    ["delete", "string", "shape", "nan", "attr"]))
def test_fuzzed_hdf5_files_are_read_or_refused(tmp_path, kind, victim, action):
    from granular.data import dataset as wd
    from granular.learning import model as wm

    path = tmp_path / f"{kind}.h5"
    shutil.copy(shipped("data") / "sand.h5" if kind == "dataset" else SAND_MODEL, path)
    with h5py.File(path, "a") as f:
        names = []
        f.visit(names.append)
        attrs = [(n, a) for n in [""] + names for a in (f[n] if n else f).attrs]
        if action == "attr" and attrs:
            node, name = attrs[victim % len(attrs)]
            del (f[node] if node else f).attrs[name]
        elif names:
            name = names[victim % len(names)]
            if isinstance(f[name], h5py.Dataset):
                data = f[name][()]
                del f[name]
                if action == "string":
                    f[name] = "junk"
                elif action == "shape":
                    f[name] = np.zeros((3, 7))
                elif action == "nan" and np.asarray(data).dtype.kind == "f":
                    f[name] = np.full_like(data, np.nan)
    try:
        (wd.read if kind == "dataset" else wm.load)(path)
    except GranularError as exc:
        assert str(path) in str(exc)


@FUZZ
@given(option=st.sampled_from(["--duration", "--dt"]), value=st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr), st.text(max_size=6)))
def test_fuzzed_sim_options_are_refused_or_run(tmp_path, capsys, option, value):
    if value.startswith("-") and not value.lstrip("-").replace(".", "").replace("e", "").isdigit():
        return  # argparse reads "-x" as another option: its own one-line error, covered above
    try:
        number = float(value)
    except ValueError:
        number = None
    ok = number is not None and np.isfinite(number) and (
        0 < number <= 1e4 if option == "--duration" else 1e-5 <= number <= 0.05)
    if ok:
        return  # a valid value: running it is not the point here
    refused(capsys, tmp_path, "sim", "drop-upright", option, value, "--out", tmp_path / "run.h5")
