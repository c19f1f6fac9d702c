"""DEM acquisition with YADE (the paper's §III-B2, §IV-A), scaled out with Dask.

YADE is an external program with its own Python: this module writes YADE
scripts, runs them as ``yade -n -x script.py``, and ingests what they record
through the rig path (:mod:`granular.ingest`): one code path for rig and DEM
data. Protocol: a bed of spheres is rained into a box, settled, levelled and
saved once; every run reloads it, places the foot (a cylinder of facets) at
θ_des − 0.8·t_total·v_des, moves it kinematically at v_des for t_total and
records its pose and the force and torque the grains exert on it.

The world is YADE's x (forward), z (up); the plane of the paper is x–z and
the foot's tilt turns about −y (counter-clockwise as drawn, frames.py).
"""
from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .errors import GranularError

BEADS = dict(young=3e8, poisson=0.3, density=1631.0, friction=0.577, radius=0.01)  # paper §IV-A


@dataclass(frozen=True)
class Bed:
    """The box and the particles (SI units); the paper used 58,500 spheres of 0.01 m."""

    particles: int = 2000
    box: tuple = (0.6, 0.3, 0.3)          # x, y, z (m)
    young: float = BEADS["young"]
    poisson: float = BEADS["poisson"]
    density: float = BEADS["density"]
    friction: float = BEADS["friction"]
    radius: float = BEADS["radius"]
    fill: float = 0.6                     # fraction of the box height kept after levelling


def yade_command():
    exe = shutil.which("yade")
    if exe is None:
        raise GranularError("YADE is not installed: apt-get install yade (Debian) provides `yade`")
    return exe


BED_SCRIPT = r'''
import json, math
from yade import pack
P = json.load(open(PARAMS))
Lx, Ly, Lz = P["box"]
O.materials.append(FrictMat(young=P["young"], poisson=P["poisson"], density=P["density"],
                            frictionAngle=math.atan(P["friction"]), label="beads"))
O.bodies.append(geom.facetBox((Lx / 2, Ly / 2, Lz), (Lx / 2, Ly / 2, Lz), wallMask=31, material="beads"))
sp = pack.SpherePack()
sp.makeCloud((0, 0, 0), (Lx, Ly, 2 * Lz), rMean=P["radius"], rRelFuzz=0.0, num=P["particles"])
sp.toSimulation(material="beads")
O.engines = [ForceResetter(), InsertionSortCollider([Bo1_Sphere_Aabb(), Bo1_Facet_Aabb()]),
             InteractionLoop([Ig2_Sphere_Sphere_ScGeom(), Ig2_Facet_Sphere_ScGeom()],
                             [Ip2_FrictMat_FrictMat_FrictPhys()], [Law2_ScGeom_FrictPhys_CundallStrack()]),
             NewtonIntegrator(gravity=(0, 0, -9.81), damping=0.4)]
O.dt = 0.5 * PWaveTimeStep()
fall = math.sqrt(2 * 2 * Lz / 9.81) + 0.1  # time for the highest sphere to land
while O.time < fall or (unbalancedForce() > 0.02 and O.iter < 400000):
    O.run(1000, True)
level = P["fill"] * Lz
for b in list(O.bodies):
    if isinstance(b.shape, Sphere) and b.state.pos[2] > level:
        O.bodies.erase(b.id)
O.run(500, True)
tops = [b.state.pos[2] + b.shape.radius for b in O.bodies if isinstance(b.shape, Sphere)]
O.save(OUT)
json.dump({"surface_z": max(tops), "spheres": len(tops), "dt": O.dt}, open(OUT + ".json", "w"))
'''

RUN_SCRIPT = r'''
import json, math
P = json.load(open(PARAMS))
O.load(P["bed"])
bed = json.load(open(P["bed"] + ".json"))
Lx, Ly, Lz = P["box"]
d, phi0 = P["theta_des"]
vx, vz, w = P["v_des"]
T = P["t_total"]
R, L = P["foot_radius"], P["foot_length"]
pc0 = Vector3(Lx / 2 - 0.8 * T * vx, Ly / 2, bed["surface_z"] + d - 0.8 * T * vz)
phi = phi0 - 0.8 * T * w
axis = Vector3(-math.sin(phi), 0, math.cos(phi))
orient = Quaternion(Vector3(0, -1, 0), phi)
ids = O.bodies.append(geom.facetCylinder(pc0 + axis * (L / 2), R, L, orientation=orient, segmentsNumber=12,
                                         wallMask=7, material="beads"))
speed = math.hypot(vx, vz)
engine = (TranslationEngine(ids=ids, translationAxis=(vx / speed if speed else 1, 0, vz / speed if speed else 0),
                            velocity=speed)
          + RotationEngine(ids=ids, rotationAxis=(0, -1, 0), angularVelocity=w, rotateAroundZero=True,
                           zeroPoint=pc0, label="spin"))
O.engines = O.engines[:-1] + [engine, O.engines[-1]]
t0 = O.time
rows = []
def record():
    t = O.time - t0
    pc = pc0 + Vector3(vx, 0, vz) * t
    spin.zeroPoint = pc
    f, tau = Vector3.Zero, 0.0
    for i in ids:
        fi, ti = O.forces.f(i), O.forces.t(i)
        r = O.bodies[i].state.pos - pc
        f = f + fi
        tau += -(ti[1] + (r.cross(fi))[1])   # about -y: counter-clockwise in x-z
    p = phi + w * t
    c, s = math.cos(p), math.sin(p)
    rows.append((t, pc[0] - Lx / 2, pc[2] - bed["surface_z"], p, c * f[0] + s * f[2], -s * f[0] + c * f[2], tau))
O.engines = O.engines + [PyRunner(command="record()", iterPeriod=1)]
O.run(int(T / O.dt), True)
import csv
with open(OUT + ".tmp", "w", newline="") as fh:
    wr = csv.writer(fh)
    wr.writerow(["t", "x", "z", "phi", "fx", "fz", "tau"])
    wr.writerows(rows[::max(1, len(rows) // 2000)])
json.dump({"theta_des": P["theta_des"], "v_des": P["v_des"], "t_total": T, "medium": P["medium"],
           "sensor_offset": [0.0, 0.0], "sensor_angle": 0.0, "velocity_scale": P["velocity_scale"]},
          open(OUT[:-4] + ".json", "w"))
import os
os.replace(OUT + ".tmp", OUT)
'''


def _run_yade(script: str, params: dict, workdir: Path, name: str, out: Path, timeout: float):
    workdir.mkdir(parents=True, exist_ok=True)
    pfile = workdir / f"{name}.params.json"
    pfile.write_text(json.dumps(params))
    sfile = workdir / f"{name}.py"
    sfile.write_text(f"PARAMS = {str(pfile)!r}\nOUT = {str(out)!r}\n" + script)
    proc = subprocess.run([yade_command(), "-n", "-x", str(sfile)], capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0 or not out.exists():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        raise GranularError(f"YADE failed on {name} (exit {proc.returncode}): {' | '.join(tail)}")
    return out


def prepare_bed(bed: Bed, workdir, timeout: float = 3600) -> Path:
    """Rain, settle, level and save the bed once (reused if it is already there)."""
    workdir = Path(workdir)
    out = workdir / "bed.yade.gz"
    if not (out.exists() and Path(str(out) + ".json").exists()):
        _run_yade(BED_SCRIPT, asdict(bed), workdir, "bed", out, timeout)
    return out


def run_one(params: dict, workdir: str, timeout: float = 3600) -> str:
    """One acquisition run (a Dask task): the CSV of its record, skipped if already done."""
    workdir = Path(workdir)
    out = workdir / f"{params['name']}.csv"
    if out.exists() and out.with_suffix(".json").exists():
        return str(out)
    return str(_run_yade(RUN_SCRIPT, params, workdir, params["name"], out, timeout))


def plan(bed_path, bed: Bed, configs, directions, velocity_scale, t_total, foot, medium):
    """The runs' parameters: every configuration × direction."""
    runs = []
    for j, theta in enumerate(configs):
        if theta[0] >= 0:
            continue
        for i, u in enumerate(directions):
            runs.append({"name": f"run_c{j:03d}_d{i:02d}", "bed": str(bed_path), "box": list(bed.box),
                         "theta_des": [float(theta[0]), float(theta[1])],
                         "v_des": (np.asarray(u) * velocity_scale).tolist(), "t_total": t_total,
                         "foot_radius": foot.radius, "foot_length": foot.length, "medium": medium,
                         "velocity_scale": list(map(float, velocity_scale))})
    return runs


def acquire(workdir, bed: Bed, configs, directions, velocity_scale, t_total, foot, medium="beads",
            workers: int = 2, scheduler=None, say=print, progress=True):
    """Run every acquisition on a Dask cluster (local unless ``scheduler``); return the CSV paths."""
    from distributed import Client, LocalCluster, as_completed
    from tqdm import tqdm

    workdir = Path(workdir).resolve()
    say(f"preparing the bed ({bed.particles} spheres) in {workdir}")
    bed_path = prepare_bed(bed, workdir)
    runs = plan(bed_path, bed, configs, directions, velocity_scale, t_total, foot, medium)
    done = [r for r in runs if (workdir / f"{r['name']}.csv").exists()]
    say(f"{len(runs)} runs, {len(done)} already done")
    cluster = None if scheduler else LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                                  dashboard_address=None)
    paths, failed = [], []
    with Client(scheduler or cluster) as client:
        futures = [client.submit(run_one, r, str(workdir), key=r["name"], pure=False) for r in runs]
        for future in tqdm(as_completed(futures), total=len(futures), desc="DEM runs",
                           disable=None if progress else True):
            try:
                paths.append(future.result())
            except Exception as exc:  # a failed run is reported and skipped, never fatal
                failed.append(str(exc))
                say(f"run failed: {exc}")
    if cluster is not None:
        cluster.close()
    say(f"{len(paths)} runs recorded, {len(failed)} failed")
    return sorted(paths)
