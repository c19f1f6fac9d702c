"""DEM acquisition with YADE (the paper's §III-B2, §IV-A), scaled out with Dask.

YADE is an external program with its own Python: this module writes YADE
scripts, runs them as ``yade -n -x script.py``, and ingests what they record
through the rig path (:mod:`granular.data.ingest`): one code path for rig and DEM
data. Protocol: a bed of spheres is rained into a box, settled, levelled and
saved once; every run reloads it, lowers the foot (a cylinder of facets) from
above the surface straight down to θ_des − 0.8·t_total·v_des, moves it
kinematically at v_des for t_total and records its pose and the force and
torque the grains exert on it. Held-out validation runs (:func:`acquire_paths`)
drive the foot instead along prescribed piecewise-linear paths, in beds of
other seeds. A bed may be periodic in x and y (``Bed.periodic``) and softer than
the paper's beads (``Bed.young``); several runs may share one YADE process
(:func:`run_batch`). What each of these does to the wrench is measured by
:mod:`granular.data.dem_study` (docs/beads-studies.md).

The world is YADE's x (forward), z (up); the plane of the paper is x–z and
the foot's tilt turns about −y (counter-clockwise as drawn, frames.py).
"""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from granular.errors import GranularError
from granular.frames import center_height

log = logging.getLogger(__name__)

BEADS = dict(young=3e8, poisson=0.3, density=1631.0, friction=0.577, radius=0.01)  # paper §IV-A
#: The velocity scale (m/s, m/s, rad/s) of the paper's Beads experiments, §IV-A.
BEADS_VELOCITY_SCALE = (0.2, 0.2, 0.6)


@dataclass(frozen=True)
class Bed:
    """The box and the particles (SI units); the paper used 58,500 spheres of 0.01 m.

    ``particles`` spheres rain into a box ``box`` (x, y, z) wide and settle;
    the heap is levelled by removing the spheres whose centre lies above the
    height the particles fill at ``packing``, so the bed is flat. ``seed`` picks the bed's
    realisation (the random cloud it rains from); 0 seeds from the clock, as the training bed was made.
    ``periodic`` makes the cell periodic in x and y (YADE's ``O.periodic``): the bed is an infinite
    slab of period box x × box y on a floor, without side or end walls; the foot meets its own
    periodic images instead, one period away. The cell is :data:`PERIODIC_HEADROOM` taller than
    ``box`` z, so that the foot held above the bed stays inside it.
    ``size_spread`` is the relative half-width of a uniform distribution of radii (YADE makeCloud's
    ``rRelFuzz``): radii in [radius·(1 − s), radius·(1 + s)]; 0, equal spheres. ``deposit_friction``
    is the beads' friction coefficient while they rain and settle (a lower one packs them denser);
    the beads' own ``friction`` is restored, in the contacts already made too, before the bed is
    levelled and settles again. None: the beads' own throughout. ``rain`` sets the height of the
    random cloud the spheres rain from: its top is ``rain`` × ``depth`` plus two diameters above the
    floor (a denser cloud than the default's 2 leaves makeCloud short of spheres with spread radii).
    All three at their defaults, a bed and its runs are described exactly as before the options
    existed (old runs are still done).
    """

    particles: int = 3400
    box: tuple = (0.5, 0.22, 0.4)         # x, y, z (m); z is the walls' height, not the bed's
    young: float = BEADS["young"]
    poisson: float = BEADS["poisson"]
    density: float = BEADS["density"]
    friction: float = BEADS["friction"]
    radius: float = BEADS["radius"]
    packing: float = 0.6                  # solid fraction of a loose bed of equal spheres
    settled: float = 0.05                 # YADE's unbalanced-force ratio below which the bed is at rest
    seed: int = 0
    periodic: bool = False                # x, y periodic (no side or end walls), a flat floor only
    wall_friction: float | None = None    # the walls' friction coefficient; None: the beads' own
    size_spread: float = 0.0              # radii uniform in radius·[1 − s, 1 + s] (makeCloud's rRelFuzz)
    deposit_friction: float | None = None  # the beads' friction while raining and settling; None: their own
    rain: float = 2.0                     # the cloud's top: this many bed depths (+ two diameters) above the floor

    def __post_init__(self):
        if not 0.0 <= self.size_spread < 1.0:
            raise GranularError(f"size_spread {self.size_spread}: the radii's relative half-width is in [0, 1)")
        if self.deposit_friction is not None and self.deposit_friction < 0:
            raise GranularError(f"deposit_friction {self.deposit_friction}: a friction coefficient is ≥ 0")
        if not self.rain >= 1.0:
            raise GranularError(f"rain {self.rain}: the cloud starts at least one bed depth up")

    @property
    def sphere_volume(self) -> float:
        """The mean volume of a sphere (m³): for radii uniform in r·[1 − s, 1 + s], 4/3·π·r³·(1 + s²)."""
        return 4 / 3 * np.pi * self.radius ** 3 * (1 + self.size_spread ** 2)

    @property
    def depth(self) -> float:
        """Height the levelled bed fills (m)."""
        return self.particles * self.sphere_volume / (self.packing * self.box[0] * self.box[1])


#: Bed options whose default leaves a bed's description (its parameter file, a run's ``bed_info``) as
#: it was before the option existed, so that beds and runs made before it are recognised as done.
_NEW_BED_OPTIONS = {"seed": 0, "periodic": False, "wall_friction": None, "size_spread": 0.0,
                    "deposit_friction": None, "rain": 2.0}


#: Room (m) above ``box`` z in a periodic cell: YADE's collider may only let a body larger than half
#: the period (the floor, the foot) work while it stays inside the cell, and the foot (0.3 m) is held
#: above the bed before it goes in.
PERIODIC_HEADROOM = 1.0


def yade_command():
    exe = shutil.which("yade")
    if exe is None:
        raise GranularError("YADE is not installed: apt-get install yade (Debian) provides `yade`")
    return exe


BED_SCRIPT = r'''
import json, math, os
from yade import pack
P = json.load(open(PARAMS))
Lx, Ly, Lz = P["box"]
periodic = bool(P.get("periodic"))
O.materials.append(FrictMat(young=P["young"], poisson=P["poisson"], density=P["density"],
                            frictionAngle=math.atan(P["friction"]), label="beads"))
if periodic:
    # the floor only, a square layer of fixed beads with their tops at z = 0: in a periodic cell YADE's
    # collider misses many sphere-facet contacts with a facet spanning the period, and beads fell through
    nx, ny = max(1, round(Lx / (2 * P["radius"]))), max(1, round(Ly / (2 * P["radius"])))
    O.bodies.append([utils.sphere(((i + 0.5) * Lx / nx, (j + 0.5) * Ly / ny, -P["radius"]), P["radius"], fixed=True,
                                  material="beads") for i in range(nx) for j in range(ny)])
else:
    walls = "beads"
    if P.get("wall_friction") is not None:
        # a contact takes the smaller friction angle of its two materials (Ip2_FrictMat_FrictMat_FrictPhys)
        O.materials.append(FrictMat(young=P["young"], poisson=P["poisson"], density=P["density"],
                                    frictionAngle=math.atan(P["wall_friction"]), label="walls"))
        walls = "walls"
    O.bodies.append(geom.facetBox((Lx / 2, Ly / 2, Lz), (Lx / 2, Ly / 2, Lz), wallMask=31, material=walls))
sp = pack.SpherePack()
top = P.get("rain", 2.0) * P["depth"] + 4 * P["radius"]   # a loose cloud: under a third of the volume is spheres
# YADE seeds from the clock for seed < 0 (its default, how the training bed was made) and repeats any other seed
# a periodic cloud puts centres anywhere in the box, so it starts a radius up, clear of the floor
low = P["radius"] if periodic else 0.0
cloud = sp.makeCloud((0, 0, low), (Lx, Ly, low + top), rMean=P["radius"], rRelFuzz=P.get("size_spread") or 0.0,
                     num=P["particles"], seed=P.get("seed") or -1, periodic=periodic)
sp.toSimulation(material="beads")
deposit = P.get("deposit_friction")
if deposit is not None:   # rain and settle at another friction (the walls' too, when they are of the beads)
    O.materials["beads"].frictionAngle = math.atan(deposit)
if periodic:
    O.cell.setBox(Lx, Ly, max(Lz, top) + P["headroom"])
O.engines = [ForceResetter(), InsertionSortCollider([Bo1_Sphere_Aabb(), Bo1_Facet_Aabb()], allowBiggerThanPeriod=periodic),
             InteractionLoop([Ig2_Sphere_Sphere_ScGeom(), Ig2_Facet_Sphere_ScGeom()],
                             [Ip2_FrictMat_FrictMat_FrictPhys()], [Law2_ScGeom_FrictPhys_CundallStrack()]),
             NewtonIntegrator(gravity=(0, 0, -9.81), damping=0.4)]
O.dt = 0.7 * PWaveTimeStep()
def report(phase, until):   # read by the caller for its progress bar (granular.data.dem._run_yade)
    with open(OUT + ".progress.tmp", "w") as fh:
        json.dump({"phase": phase, "t": O.time, "until": until, "unbalanced": unbalancedForce(),
                   "settled": P["settled"]}, fh)
    os.replace(OUT + ".progress.tmp", OUT + ".progress")
fall = math.sqrt(2 * top / 9.81) + 0.1     # time for the highest sphere to land
while O.time < fall or (unbalancedForce() > P["settled"] and O.time < fall + 2.0):
    O.run(1000, True)
    report("rain" if O.time < fall else "settle", fall + 2.0)
if deposit is not None:
    # the beads' own friction from here on, in the contacts made at the deposit's too (a contact takes the
    # smaller friction angle of its two materials, as Ip2_FrictMat_FrictMat_FrictPhys does)
    O.materials["beads"].frictionAngle = math.atan(P["friction"])
    for i in O.interactions:
        if i.isReal:
            i.phys.tangensOfFrictionAngle = math.tan(min(O.bodies[i.id1].material.frictionAngle,
                                                         O.bodies[i.id2].material.frictionAngle))
level = P["depth"] - P["radius"]
for b in list(O.bodies):
    if isinstance(b.shape, Sphere) and b.dynamic and b.state.pos[2] > level:
        O.bodies.erase(b.id)
t_level = O.time
report("level", t_level + 1.0)
while unbalancedForce() > P["settled"] and O.time < t_level + 1.0:   # the levelled surface comes to rest
    O.run(1000, True)
    report("level", t_level + 1.0)
beads = [b for b in O.bodies if isinstance(b.shape, Sphere) and b.dynamic]
tops = sorted(b.state.pos[2] + b.shape.radius for b in beads)
layer = [z for z in tops if z > tops[-1] - 2 * P["radius"]]
lost = sum(1 for b in beads if b.state.pos[2] < 0)   # fell through the floor
overlap = [i.geom.penetrationDepth for i in O.interactions if i.isReal]
# how much of the friction the walls can give the bed uses: 0 for smooth walls
on_walls = [i.phys for i in O.interactions if i.isReal and isinstance(O.bodies[i.id1].shape, Facet)]
wall_shear = max([f.shearForce.norm() / f.normalForce.norm() for f in on_walls if f.normalForce.norm() > 0] or [0.0])
O.save(OUT)
json.dump({"surface_z": sum(layer) / len(layer), "spheres": len(tops), "dt": O.dt, "seconds": O.realtime,
           "cloud": cloud, "volume": sum(4 / 3 * math.pi * b.shape.radius ** 3 for b in beads),
           "unbalanced": unbalancedForce(), "settle_s": O.time, "below_floor": lost,
           "overlap_max": max(overlap) / P["radius"], "overlap_mean": sum(overlap) / len(overlap) / P["radius"],
           "wall_shear": wall_shear},
          open(OUT + ".json", "w"))
'''

#: Both run scripts' optional ``young`` (Pa): the bed run at another stiffness than it was made with.
_RESTIFFEN = r'''
if P.get("young"):
    # the bed at another stiffness: contacts made anew with it, the time step for it, at rest again
    for m in O.materials:
        m.young = P["young"]
    O.interactions.clear()
    O.dt = 0.7 * PWaveTimeStep()
    O.run(200, True)
    while unbalancedForce() > 0.05 and O.iter < 20000:
        O.run(200, True)
'''

RUN_SCRIPT = r'''
import json, math, time
started = time.time()
P = json.load(open(PARAMS))
try:
    load_bed   # BATCH_SCRIPT's: the bed from memory after its first run
except NameError:
    load_bed = O.load
load_bed(P["bed"])
bed = json.load(open(P["bed"] + ".json"))
''' + _RESTIFFEN + r'''Lx, Ly, Lz = P["box"]
d, phi0 = P["theta_des"]
vx, vz, w = P["v_des"]
T, R, L = P["t_total"], P["foot_radius"], P["foot_length"]
surface = bed["surface_z"]
# start of the trajectory (paper step 2), the buried part of a tilted foot centred in the box
centre = Lx / 2 + 0.5 * math.copysign(min(L * abs(math.sin(phi0)), abs(d) * abs(math.tan(phi0))), phi0)
start = Vector3(centre - 0.8 * T * vx, Ly / 2, surface + d - 0.8 * T * vz)
phi = phi0 - 0.8 * T * w
lowest = start[2] - R * abs(math.sin(phi)) + min(0.0, L * math.cos(phi))
lift = max(0.0, surface + P["clearance"] - lowest)
axis = Vector3(-math.sin(phi), 0, math.cos(phi))
orient = Quaternion(Vector3(0, -1, 0), phi)
ids = O.bodies.append(geom.facetCylinder(start + Vector3(0, 0, lift) + axis * (L / 2), R, L, orientation=orient,
                                         segmentsNumber=16, wallMask=7, material="beads"))
newton = O.engines[-1]
newton.damping = P.get("damping", newton.damping)  # a study's run without the bed's numerical damping
base = O.engines[:-1]
# step 2: straight down from above the surface to the start point
if lift > 0:
    O.engines = base + [TranslationEngine(ids=ids, translationAxis=(0, 0, -1), velocity=P["insert_speed"]), newton]
    O.run(max(1, int(round(lift / P["insert_speed"] / O.dt))), True)
# step 3: constant twist v_des for t_total, rotation about the moving p_center
speed = math.hypot(vx, vz)
move = TranslationEngine(ids=ids, translationAxis=(vx / speed, 0, vz / speed) if speed else (1, 0, 0), velocity=speed)
spin = RotationEngine(ids=ids, rotationAxis=(0, -1, 0), angularVelocity=w, rotateAroundZero=True, zeroPoint=start)
t0 = O.time
def follow():
    spin.zeroPoint = start + Vector3(vx, 0, vz) * (O.time - t0)
rows = []
def record():
    t = O.time - t0
    pc = start + Vector3(vx, 0, vz) * t
    f, tau = Vector3.Zero, 0.0
    for i in ids:
        fi, ti = O.forces.f(i), O.forces.t(i)
        f = f + fi
        tau += -(ti[1] + ((O.bodies[i].state.pos - pc).cross(fi))[1])   # about -y: counter-clockwise in x-z
    p = phi + w * t
    c, s = math.cos(p), math.sin(p)
    rows.append((t, pc[0] - centre, pc[2] - surface, p, c * f[0] + s * f[2], -s * f[0] + c * f[2], tau))
    if t >= 0.8 * T and not overlap:   # how soft the contacts are where θ_des is passed (stiffness scaling)
        depth = [i.geom.penetrationDepth for i in O.interactions if i.isReal]
        overlap.extend([max(depth) / bed_radius, sum(depth) / len(depth) / bed_radius])
overlap, bed_radius = [], min(b.shape.radius for b in O.bodies if isinstance(b.shape, Sphere))
every = max(1, int(P["record_period"] / O.dt))
# a foot that does not turn needs no moving centre of rotation: no Python call on every step
O.engines = base + [move + spin, newton] + ([PyRunner(command="follow()", iterPeriod=1)] if w else []) + [
    PyRunner(command="record()", iterPeriod=every)]
O.run(int(T / O.dt) + 1, True)
import csv, os
with open(OUT + ".tmp", "w", newline="") as fh:
    wr = csv.writer(fh)
    wr.writerow(["t", "x", "z", "phi", "fx", "fz", "tau"])
    wr.writerows(rows)
json.dump({"theta_des": P["theta_des"], "v_des": P["v_des"], "t_total": T, "medium": P["medium"],
           "sensor_offset": [0.0, 0.0], "sensor_angle": 0.0, "velocity_scale": P["velocity_scale"],
           "insertion_m": lift, "seconds": time.time() - started},
          open(OUT[:-4] + ".json", "w"))
json.dump({"overlap_at_pass": overlap}, open(OUT[:-4] + ".contacts.json", "w"))   # beside: the sidecar's keys are fixed
os.replace(OUT + ".tmp", OUT)
'''


#: Several runs in one YADE process: the bed is read from its file once, kept in memory
#: (``O.saveTmp``) and restored before each later run (``O.loadTmp``), so a run no longer pays for
#: starting YADE and decompressing the bed. Each run is RUN_SCRIPT unchanged; one failing does not stop
#: the others. JOBS, the (params file, output) pairs, and RUN are prepended by :func:`run_batch`.
BATCH_SCRIPT = r'''
import sys, traceback
kept = None
def load_bed(path):
    global kept
    if kept == path:
        O.loadTmp("bed")
    else:
        O.load(path)
        O.saveTmp("bed")
        kept = path
for PARAMS, OUT in JOBS:
    try:
        exec(RUN, globals())
    except Exception:
        print("run failed:", PARAMS, file=sys.stderr)
        traceback.print_exc()
'''


PATH_SCRIPT = r'''
import json, math
P = json.load(open(PARAMS))
O.load(P["bed"])
bed = json.load(open(P["bed"] + ".json"))
''' + _RESTIFFEN + r'''Lx, Ly, Lz = P["box"]
R, L = P["foot_radius"], P["foot_length"]
W = P["waypoints"]   # rows (t, x, z, phi): p_center from the box centre and the surface, tilt; t from 0
surface = bed["surface_z"]
def segment(t):
    """The pose (x, z, phi) at t on the piecewise-linear path, and the velocity of its segment."""
    k = max([0] + [i for i in range(len(W) - 1) if W[i][0] <= t])
    a, b = W[k], W[k + 1]
    v = [(b[j] - a[j]) / (b[0] - a[0]) for j in (1, 2, 3)]
    return [a[j + 1] + v[j] * (t - a[0]) for j in range(3)], v
def world(p):
    return Vector3(Lx / 2 + p[0], Ly / 2, surface + p[1])
(x0, z0, phi0), _ = segment(0.0)
start = world((x0, z0))
lift = max(0.0, surface + P["clearance"] - (start[2] - R * abs(math.sin(phi0))))
axis = Vector3(-math.sin(phi0), 0, math.cos(phi0))
ids = O.bodies.append(geom.facetCylinder(start + Vector3(0, 0, lift) + axis * (L / 2), R, L,
                                         orientation=Quaternion(Vector3(0, -1, 0), phi0),
                                         segmentsNumber=16, wallMask=7, material="beads"))
newton = O.engines[-1]
newton.damping = P.get("damping", newton.damping)  # a study's run without the bed's numerical damping
base = O.engines[:-1]
# straight down from above the surface to the first waypoint, unrecorded (as in RUN_SCRIPT)
if lift > 0:
    O.engines = base + [TranslationEngine(ids=ids, translationAxis=(0, 0, -1), velocity=P["insert_speed"]), newton]
    O.run(max(1, int(round(lift / P["insert_speed"] / O.dt))), True)
move = TranslationEngine(ids=ids, translationAxis=(1, 0, 0), velocity=0.0)
spin = RotationEngine(ids=ids, rotationAxis=(0, -1, 0), angularVelocity=0.0, rotateAroundZero=True, zeroPoint=start)
t0 = O.time
def follow():
    # runs first in each step, while the foot is where the path puts it at O.time: the step's twist
    p, v = segment(O.time - t0)
    speed = math.hypot(v[0], v[1])
    move.translationAxis = Vector3(v[0] / speed, 0, v[1] / speed) if speed > 0 else Vector3(1, 0, 0)
    move.velocity = speed
    spin.angularVelocity = v[2]
    spin.zeroPoint = world(p)
rows = []
def record():
    t = O.time - t0
    (x, z, p), _ = segment(t)
    pc = world((x, z))
    f, tau = Vector3.Zero, 0.0
    for i in ids:
        fi, ti = O.forces.f(i), O.forces.t(i)
        f = f + fi
        tau += -(ti[1] + ((O.bodies[i].state.pos - pc).cross(fi))[1])   # about -y: counter-clockwise in x-z
    c, s = math.cos(p), math.sin(p)
    rows.append((t, x, z, p, c * f[0] + s * f[2], -s * f[0] + c * f[2], tau))
follow()
every = max(1, int(round(P["record_period"] / O.dt)))
O.engines = [PyRunner(command="follow()", iterPeriod=1)] + base + [move + spin, newton,
                                                                   PyRunner(command="record()", iterPeriod=every)]
O.run(int(W[-1][0] / O.dt) + every + 1, True)   # a record at or after the last waypoint
import csv, os
with open(OUT + ".tmp", "w", newline="") as fh:
    wr = csv.writer(fh)
    wr.writerow(["t", "x", "z", "phi", "fx", "fz", "tau"])
    wr.writerows(rows)
json.dump({"insertion_m": lift, "seconds": O.realtime}, open(OUT + ".json", "w"))
os.replace(OUT + ".tmp", OUT)
'''


def _run_yade(script: str, params: dict, workdir: Path, name: str, out: Path, timeout: float | None,
              threads: int = 1, progress=None):
    """Run ``script`` with ``params`` in YADE on ``threads``, expecting it to write ``out``. ``progress``:
    as :func:`_yade`'s, for what the script writes to ``out.progress``."""
    workdir.mkdir(parents=True, exist_ok=True)
    pfile = workdir / f"{name}.params.json"
    pfile.write_text(json.dumps(params))
    sfile = workdir / f"{name}.py"
    sfile.write_text(f"PARAMS = {str(pfile)!r}\nOUT = {str(out)!r}\n" + script)
    code, tail = _yade(sfile, name, timeout, threads, Path(f"{out}.progress"), progress)
    if code != 0 or not out.exists():
        raise GranularError(f"YADE failed on {name} (exit {code}; {workdir / name}.log): {tail}")
    return out


def _yade(sfile: Path, name: str, timeout: float | None, threads: int = 1, report: Path | None = None,
          progress=None) -> tuple[int, str]:
    """Run the YADE script ``sfile`` on ``threads``, its output in ``NAME.log`` beside it; return its exit
    code and its output's last lines. Past ``timeout`` s (None: no limit) it is stopped with a
    GranularError. ``progress``, if given, is called about every second with what the script last
    wrote to ``report`` (the bed script: its simulated time and unbalanced force)."""
    logfile = sfile.with_name(f"{name}.log")
    if report is not None:
        report.unlink(missing_ok=True)   # an interrupted bed's last report is not this one's
    with open(logfile, "w") as sink:
        proc = subprocess.Popen([yade_command(), "-j", str(threads), "-n", "-x", str(sfile)], stdout=sink,
                                stderr=subprocess.STDOUT, text=True)
        try:
            _wait(proc, timeout, report, progress)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise GranularError(f"YADE ran past its {timeout:g} s on {name} and was stopped (its output: "
                                f"{logfile})") from None
        except BaseException:   # interrupted: YADE must not run on, writing into the workdir
            proc.kill()
            proc.wait()
            raise
    lines = re.sub(r"\x1b\[[0-9;]*m", "", logfile.read_text(errors="replace")).strip().splitlines()
    return proc.returncode, " | ".join(lines[-5:])


def _wait(proc, timeout, report: Path | None, progress, poll: float = 1.0):
    """Wait for ``proc``, raising TimeoutExpired past ``timeout`` s, passing ``report``'s contents to
    ``progress`` as they change. The script replaces ``report`` whole (``os.replace``), so a read
    never sees half of it."""
    start, seen = time.monotonic(), None
    while True:
        try:
            proc.wait(timeout=poll)
            done = True
        except subprocess.TimeoutExpired:
            if timeout is not None and time.monotonic() - start > timeout:
                raise
            done = False
        if progress is not None and report is not None and report.exists():
            text = report.read_text()
            if text and text != seen:
                seen = text
                try:
                    progress(json.loads(text))
                except Exception as exc:   # a display must not stop a bed hours in
                    log.warning("progress display stopped: %s", exc)
                    progress = None
        if done:
            return


def _bed_params(bed: Bed) -> dict:
    """What the bed script is given."""
    params = {**asdict(bed), "depth": bed.depth}
    if bed.periodic:
        params["headroom"] = PERIODIC_HEADROOM
    return params


def prepare_bed(bed: Bed, workdir, timeout: float | None = None, threads: int | None = None,
                progress: bool = False) -> Path:
    """Rain, settle, level and save the bed once (reused if it is already there); YADE on ``threads``
    (default: all cores). No time limit by default: the script stops settling after a few simulated
    seconds of its own, and a large bed takes hours. ``progress``: a bar over the simulated time."""
    out = bed_file(workdir)
    params = _bed_params(bed)
    if not (out.exists() and _bed_info(workdir).exists()):
        with _BedBar(progress) as bar:
            _run_yade(BED_SCRIPT, params, Path(workdir), "bed", out, timeout,
                      threads=threads or os.cpu_count() or 1, progress=bar.show if progress else None)
    # beds made before beds had seeds, or before the periodic, wall, size or deposit options, were seeded from
    # the clock, walled, their walls as rough as the beads, of equal spheres deposited at the beads' friction
    kept = {**_NEW_BED_OPTIONS, **json.loads((Path(workdir) / "bed.params.json").read_text())}
    if kept != json.loads(json.dumps(params)):
        raise GranularError(f"{workdir} holds runs on another bed ({kept['particles']} spheres in a box "
                            f"{kept['box']}, seed {kept['seed']}): give another --workdir, or delete it to start over")
    return out


class _BedBar:
    """The bed's progress: simulated seconds against the script's limit for its phase (it stops sooner
    once the unbalanced force falls to ``settled``). Without a terminal (a job in the background) the
    same line is logged once a minute instead."""

    EVERY = 60.0   # s between log lines without a terminal

    def __init__(self, enabled: bool):
        from tqdm import tqdm

        self.bar = tqdm(total=1.0, desc="bed", unit="sim s", disable=None if enabled else True,
                        bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.2f}/{total:.2f} sim s [{elapsed}]{postfix}")
        self.logged = time.monotonic() if enabled and self.bar.disable else None

    def show(self, report: dict):
        state = (f"{report['phase']}, unbalanced force {report['unbalanced']:.3f} "
                 f"(at rest below {report['settled']})")
        self.bar.total = max(report["until"], report["t"])
        self.bar.n = report["t"]
        self.bar.set_postfix_str(state)
        if self.logged is not None and time.monotonic() - self.logged >= self.EVERY:
            self.logged = time.monotonic()
            log.info("bed: %.2f of at most %.2f s simulated, %s", report["t"], self.bar.total, state)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.bar.close()


def bed_file(workdir) -> Path:
    return Path(workdir) / "bed.yade.gz"


def _bed_info(workdir) -> Path:
    """What the bed script measured: surface height, spheres kept, time step, wall time."""
    return Path(workdir) / "bed.yade.gz.json"


def run_one(params: dict, workdir: str, timeout: float = 3600) -> str:
    """One acquisition run (a Dask task): the CSV of its record, skipped if already done."""
    out = Path(workdir) / f"{params['name']}.csv"
    if is_done(params, workdir):
        return str(out)
    _forget(params, workdir)
    return str(_run_yade(RUN_SCRIPT, params, Path(workdir), params["name"], out, timeout))


def _forget(params: dict, workdir):
    """Remove a run's record of other parameters, which must not pass for this run's once its
    parameter file is rewritten."""
    for suffix in (".csv", ".json"):
        (Path(workdir) / f"{params['name']}{suffix}").unlink(missing_ok=True)


def run_batch(batch: list, workdir: str, timeout: float = 3600) -> list:
    """Several runs on one bed in one YADE process (a Dask task; BATCH_SCRIPT), those already done
    skipped. Returns a (name, CSV path or None, error or None) per run."""
    work = Path(workdir)
    todo = [p for p in batch if not is_done(p, work)]
    if todo:
        jobs = []
        for p in todo:
            _forget(p, work)
            pfile = work / f"{p['name']}.params.json"
            pfile.write_text(json.dumps(p))
            jobs.append((str(pfile), str(work / f"{p['name']}.csv")))
        name = f"batch_{todo[0]['name']}"
        sfile = work / f"{name}.py"
        sfile.write_text(f"JOBS = {jobs!r}\nRUN = {RUN_SCRIPT!r}\n" + BATCH_SCRIPT)
        code, tail = _yade(sfile, name, timeout * len(todo))
    results = []
    for p in batch:
        if is_done(p, work):
            results.append((p["name"], str(work / f"{p['name']}.csv"), None))
        else:
            error = f"YADE failed on {p['name']} (exit {code}; {work / name}.log): {tail}"
            results.append((p["name"], None, error))
    return results


def is_done(params: dict, workdir) -> bool:
    """Whether this very run (same parameters, not only the same name) has been recorded."""
    files = [Path(workdir) / f"{params['name']}{s}" for s in (".csv", ".json", ".params.json")]   # a name may hold dots
    return all(f.exists() for f in files) and json.loads(files[2].read_text()) == json.loads(json.dumps(params))


def check_fits(bed: Bed, configs, velocity_scale, t_total, foot):
    """Raise if a run's foot would come within two bead diameters of the floor or an end wall."""
    d, phi = np.asarray(configs, float).T  # d at the lowest point (frames)
    travel = 0.8 * t_total * np.asarray(velocity_scale, float)
    s, c = np.abs(np.sin(phi)), np.cos(phi)
    margin = 4 * bed.radius
    below = -d + travel[1] + margin
    deep = np.argmax(below)
    if below[deep] > bed.depth:
        raise GranularError(f"the bed is {bed.depth:.3f} m deep but θ = ({d[deep]}, {phi[deep]}) needs "
                            f"{below[deep]:.3f} m under the surface: raise --particles or shrink the box's x, y")
    sunk = np.maximum(-center_height(d, phi, foot.radius), 0.0)  # p_center's depth
    buried = np.minimum(foot.length * s, sunk * s / np.maximum(c, 1e-9)) + 2 * foot.radius
    wide = np.argmax(buried + 2 * travel[0] + 2 * margin)
    if buried[wide] + 2 * travel[0] + 2 * margin > bed.box[0]:
        raise GranularError(f"the box is {bed.box[0]} m long but θ = ({d[wide]}, {phi[wide]}) buries "
                            f"{buried[wide]:.3f} m of foot along x: lengthen the box")


def plan(bed_path, bed: Bed, configs, directions, velocity_scale, t_total, foot, medium, insert_speed=1.0,
         young=None, damping=None):
    """The runs' parameters: every configuration (d at the lowest point, :mod:`granular.frames`)
    in the medium × direction; ``young`` (Pa) runs the bed at another stiffness than it was made
    with, ``damping`` at another YADE local damping than the bed's 0.4 (data/README.md: it makes
    the wrench rate-dependent and stiffer). A run's ``theta_des`` is p_center's, as the run script places the foot (and as a rig
    records it)."""
    check_fits(bed, [c for c in configs if c[0] < 0], velocity_scale, t_total, foot)
    runs = []
    for j, theta in enumerate(configs):
        if theta[0] >= 0:
            continue
        for i, u in enumerate(directions):
            runs.append({"name": f"run_c{j:03d}_d{i:02d}", "bed": str(bed_path), "box": list(bed.box),
                         "theta_des": [float(center_height(theta[0], theta[1], foot.radius)), float(theta[1])],
                         "v_des": (np.asarray(u) * velocity_scale).tolist(), "t_total": t_total,
                         "foot_radius": foot.radius, "foot_length": foot.length, "medium": medium,
                         "clearance": 2 * bed.radius, "insert_speed": insert_speed, "record_period": 5e-4,
                         "velocity_scale": list(map(float, velocity_scale))})
            if young is not None:
                runs[-1]["young"] = float(young)
            if damping is not None:
                runs[-1]["damping"] = float(damping)
    return runs


def acquire(workdir, bed: Bed, configs, directions, velocity_scale, t_total, foot, medium="beads",
            workers: int = 2, scheduler=None, insert_speed: float = 1.0, progress=True, threads: int | None = None,
            batch: int = 1, run_young: float | None = None, run_damping: float | None = None):
    """Run every acquisition on a Dask cluster (local unless ``scheduler``); return the CSV paths. The bed
    is prepared here on ``threads`` YADE threads (default: all cores); each run uses one. With
    ``batch`` > 1 a Dask task runs up to that many runs of one configuration in one YADE process
    (:func:`run_batch`). ``run_young`` (Pa): the runs' stiffness, when the bed was settled at another;
    ``run_damping``: the runs' local damping (None: the bed's 0.4)."""
    from distributed import Client, LocalCluster, as_completed
    from tqdm import tqdm

    workdir = Path(workdir).resolve()
    runs = plan(bed_file(workdir), bed, configs, directions, velocity_scale, t_total, foot, medium, insert_speed,
                run_young, run_damping)
    log.info("preparing the bed (%d spheres, %.3f m deep) in %s", bed.particles, bed.depth, workdir)
    prepare_bed(bed, workdir, threads=threads, progress=progress)
    done = [r for r in runs if is_done(r, workdir)]
    log.info("%d runs, %d already done", len(runs), len(done))
    cluster = None if scheduler else LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                                  dashboard_address=None)
    paths, failed = [], []
    groups = [[r] for r in runs] if batch <= 1 else _batches(runs, batch)
    with Client(scheduler or cluster) as client:
        if batch <= 1:
            futures = [client.submit(run_one, r, str(workdir), key=r["name"], pure=False) for r in runs]
        else:
            futures = [client.submit(run_batch, g, str(workdir), key=f"batch_{g[0]['name']}", pure=False)
                       for g in groups]
        size = {f.key: len(g) for f, g in zip(futures, groups)}
        bar = tqdm(total=len(runs), desc="DEM runs", disable=None if progress else True)
        k = 0
        for future in as_completed(futures):
            try:
                results = future.result()
                if batch <= 1:
                    results = [(future.key, results, None)]
            except Exception as exc:  # a failed run is reported and skipped, never fatal
                results = [(future.key, None, str(exc))] * size[future.key]
            for _, path, error in results:
                if path is not None:
                    paths.append(path)
                else:
                    failed.append(error)
                    log.warning("run failed: %s", error)
            bar.update(len(results))
            k += len(results)
            if bar.disable and progress and k * 10 // len(runs) > (k - len(results)) * 10 // len(runs):
                log.info("DEM runs: %d/%d", k, len(runs))  # a log file gets a line per tenth instead of a bar
        bar.close()
    if cluster is not None:
        cluster.close()
    log.info("%d runs recorded, %d failed", len(paths), len(failed))
    return sorted(paths)


def _batches(runs, size):
    """The runs in groups of at most ``size`` sharing a configuration (and so a start of the same bed)."""
    by = {}
    for r in runs:
        by.setdefault(tuple(r["theta_des"]), []).append(r)
    return [g[i:i + size] for g in by.values() for i in range(0, len(g), size)]


def cost(workdir, paths) -> dict:
    """What the bed and the recorded runs took: spheres, and YADE's wall time in seconds."""
    bed = json.loads(_bed_info(workdir).read_text())
    runs = [json.loads(Path(p).with_suffix(".json").read_text()).get("seconds", 0.0) for p in paths]
    return {"spheres": bed["spheres"], "bed_s": bed.get("seconds", 0.0), "runs": len(runs), "runs_s": sum(runs)}


def acquire_dataset(out, medium: str, bed: Bed, depths, tilts, m: int, t_total: float, cutoff: float,
                    workdir=None, workers: int = 2, scheduler=None, insert_speed: float = 1.0,
                    threads: int | None = None, batch: int = 1, run_young: float | None = None,
                    run_damping: float | None = None):
    """The whole DEM acquisition of a medium: bed, runs on Dask (resumable in ``workdir``), ingestion
    through the rig path; the dataset, its creator line saying how it was made. ``run_young`` (Pa): run
    at this stiffness a bed settled at ``bed.young`` (docs/beads-studies.md: a bed settled soft is ready sooner)."""
    from dataclasses import replace

    from granular.data import ingest
    from granular.data.sampling import config_grid, direction_set
    from granular.foot import Foot

    if medium != "beads":
        raise GranularError(f"unknown DEM medium {medium!r}; the DEM preset is 'beads' (paper §IV-A)")
    yade_command()  # says how to install YADE when it is missing
    workdir = workdir or str(Path(out).with_suffix("")) + "_runs"
    scale = np.array(BEADS_VELOCITY_SCALE)
    directions = direction_set(m)
    paths = acquire(workdir, bed, config_grid(depths, tilts), directions, scale, t_total, Foot(),
                    medium=medium, workers=workers, scheduler=scheduler, insert_speed=insert_speed, threads=threads,
                    batch=batch, run_young=run_young, run_damping=run_damping)
    ds = ingest.assemble(paths, out_medium=medium, cutoff=cutoff, m=directions, velocity_scale=scale, source="dem")
    c = cost(workdir, paths)
    cell = "periodic cell" if bed.periodic else "box" if bed.wall_friction is None else \
        f"box (walls' friction {bed.wall_friction:g})"
    stiffness = f"E {bed.young:.3g} Pa" if run_young is None else f"settled at E {bed.young:.3g}, run at {run_young:.3g} Pa"
    sizes = f"radii ±{bed.size_spread:g}, " if bed.size_spread else ""
    deposit = "" if bed.deposit_friction is None else f"deposited at friction {bed.deposit_friction:g}, "
    damped = "" if run_damping is None else f"runs at local damping {run_damping:g}, "
    made = (f"YADE, {c['spheres']} spheres in a {' x '.join(map(str, bed.box))} m {cell}, {stiffness}, "
            f"{sizes}{deposit}{damped}seed {bed.seed}, t_total {t_total} s, "
            f"insertion {insert_speed} m/s, cutoff {cutoff} Hz; bed {c['bed_s']:.0f} s, "
            f"{c['runs']} runs {c['runs_s'] / 60:.1f} min of YADE time")
    log.info("%s", made)
    return replace(ds, creator=f"{ds.creator} acquire dem: {made}")


# ---- Held-out trajectories: the foot driven along prescribed paths (issue 11) ----

#: Sampling of the raw record (s), and of the shipped files after the low-pass (Hz).
RECORD_PERIOD, PATH_CUTOFF_HZ, PATH_RATE_HZ = 5e-4, 50.0, 200.0
#: The deepest p_center of the training data (m below the surface) and its largest tilt (rad).
TRAINING_DEPTH, TRAINING_TILT = 0.06, 1.0


def _arc(radius=0.05, x0=-0.06, t_arc=0.35, drag=0.04, t_drag=0.2, k=7):
    """Down, then curving forward (the paper's Fig. 8): a quarter circle from (x0, 0), then a drag."""
    s = np.linspace(0, np.pi / 2, k)
    arc = np.column_stack([t_arc * s / s[-1], x0 + radius * (1 - np.cos(s)), -radius * np.sin(s) + 0.0, 0 * s])
    return np.vstack([arc, [t_arc + t_drag, x0 + radius + drag, -radius, 0.0]])


#: Waypoints (t s, x m, z m, φ rad) of p_center, x from the box centre, z from the surface; the foot
#: is lowered from above to the first one. Speeds near the training runs' scale (0.2, 0.2 m/s, 0.6 rad/s).
VALIDATION_PATHS = {
    "diagonal": np.array([[0.0, -0.04, 0.0, 0.0], [0.4, 0.04, -0.06, 0.0]]),
    "arc": _arc(),
    "plunge-drag": np.array([[0.0, -0.03, 0.0, 0.0], [0.2, -0.03, -0.04, 0.0], [0.5, 0.03, -0.04, 0.0]]),
    "tilted-plunge": np.array([[0.0, 0.02, 0.0, 0.5], [0.4, 0.02, -0.06, 0.5]]),
    "rotate": np.array([[0.0, -0.01, 0.0, 0.0], [0.1, -0.01, -0.03, 0.0], [0.6, 0.01, -0.03, 0.6]]),
}


#: The transfer set's beds (issue 49, data/validation/transfer/README.md): the same Beads and box as the
#: training and held-out beds, prepared another way. Radii spread ±10 % (uniform); the cloud rains and
#: settles at friction 0.1, which packs it denser, then the beads' own friction (0.577) is restored; the
#: bed is levelled lower, where its spheres would fill a solid fraction of 0.65 (not 0.6); the cloud rains
#: from 3 bed depths (not 2: makeCloud places every sphere of spread radii only in a looser cloud); and
#: the foot approaches the first waypoint at the paper's 0.2 m/s (not 1 m/s). Seeds 101–103: no other bed's.
TRANSFER_SEEDS = (101, 102, 103)
TRANSFER_PREPARATION = dict(size_spread=0.1, deposit_friction=0.1, packing=0.65, rain=3.0)
TRANSFER_INSERT_SPEED = 0.2


def transfer_bed(seed: int) -> Bed:
    """A bed of the transfer set: the default Beads and box, prepared as :data:`TRANSFER_PREPARATION` says."""
    return Bed(seed=seed, **TRANSFER_PREPARATION)


def acquire_transfer(workdir, out=None, seeds=TRANSFER_SEEDS, paths=None, workers: int = 1, threads: int = 1,
                     **options):
    """The transfer set: :data:`VALIDATION_PATHS` (or ``paths``) in a :func:`transfer_bed` per seed, the foot
    approaching at :data:`TRANSFER_INSERT_SPEED`; :func:`acquire_paths` otherwise (resumable, the shipped
    files copied into ``out``). One Dask worker and one YADE thread by default (a shared machine)."""
    return acquire_paths(workdir, [transfer_bed(s) for s in seeds], paths, workers=workers, threads=threads,
                         insert_speed=TRANSFER_INSERT_SPEED, out=out, **options)


def check_path(bed: Bed, waypoints, foot, name="path"):
    """The waypoints as a (k, 4) array; raise unless well-formed and the foot keeps two bead diameters
    from the floor and the end walls all along (:func:`check_fits`'s clearance)."""
    w = np.asarray(waypoints, float)
    if w.ndim != 2 or w.shape[0] < 2 or w.shape[1] != 4 or not np.all(np.isfinite(w)):
        raise GranularError(f"{name}: waypoints must be k ≥ 2 finite rows (t, x, z, φ), got shape {w.shape}")
    if w[0, 0] != 0 or np.any(np.diff(w[:, 0]) <= 0):
        raise GranularError(f"{name}: waypoint times must start at 0 and increase")
    t = np.linspace(0, w[-1, 0], 200)   # the checks are not linear in the pose: test along the path
    x, z, phi = (np.interp(t, w[:, 0], w[:, j]) for j in (1, 2, 3))
    s = np.sin(phi)
    margin = 4 * bed.radius
    below = -z + foot.radius * np.abs(s) + margin
    if below.max() > bed.depth:
        raise GranularError(f"{name}: the bed is {bed.depth:.3f} m deep but the foot needs {below.max():.3f} m "
                            "under the surface")
    # the buried part of the axis leans back from p_center (towards -x for φ > 0)
    lean = np.minimum(foot.length * np.abs(s), np.maximum(-z, 0) * np.abs(np.tan(phi))) * np.sign(s)
    lo, hi = np.minimum(x, x - lean) - foot.radius, np.maximum(x, x - lean) + foot.radius
    if lo.min() < margin - bed.box[0] / 2 or hi.max() > bed.box[0] / 2 - margin:
        raise GranularError(f"{name}: the foot spans x ∈ [{lo.min():.3f}, {hi.max():.3f}] m from the centre of a "
                            f"box {bed.box[0]} m long: shorten the path or lengthen the box")
    return w


def resample(t, y, cutoff=PATH_CUTOFF_HZ, rate=PATH_RATE_HZ):
    """(t', y'): ``y`` (k, …) through a zero-phase 2nd-order Butterworth low-pass at ``cutoff`` Hz (as
    ingestion filters), interpolated at ``rate`` Hz from t[0] (the raw record's period is not a multiple)."""
    from scipy.signal import butter, filtfilt

    t, y = np.asarray(t, float), np.asarray(y, float)
    b, a = butter(2, cutoff / (0.5 / np.median(np.diff(t))))
    smooth = filtfilt(b, a, y, axis=0)
    out = t[0] + np.arange(int(np.floor((t[-1] - t[0]) * rate + 1e-6)) + 1) / rate
    columns = smooth.reshape(len(t), -1).T
    return out, np.column_stack([np.interp(out, t, c) for c in columns]).reshape((len(out),) + y.shape[1:])


def path_twist(waypoints, t):
    """The commanded twist (v_x, v_z, ω) of p_center at times ``t``: its segment's, right-continuous."""
    w = np.asarray(waypoints, float)
    k = np.clip(np.searchsorted(w[:, 0], t, side="right") - 1, 0, len(w) - 2)
    return (w[k + 1, 1:] - w[k, 1:]) / (w[k + 1, 0] - w[k, 0])[:, None]


def run_path(params: dict, workdir: str, timeout: float = 3600) -> str:
    """One prescribed-path run (a Dask task): YADE records ``NAME.raw.csv`` at 2 kHz, :func:`ship_path`
    makes the shipped ``NAME.csv`` of it; skipped if already done."""
    work = Path(workdir)
    out, raw = work / f"{params['name']}.csv", work / f"{params['name']}.raw.csv"
    if is_done(params, work):
        return str(out)
    for stale in (out, raw):   # a record of other parameters must not pass for this run's
        stale.unlink(missing_ok=True)
    _run_yade(PATH_SCRIPT, params, work, params["name"], raw, timeout)
    return str(ship_path(params, work))


def ship_path(params: dict, workdir) -> Path:
    """``NAME.csv`` of a run's raw record: the pose and the commanded twist on the path, the wrench
    low-passed, at 200 Hz; and its sidecar ``NAME.json``."""
    import csv

    from granular.io.files import atomic_path

    work = Path(workdir)
    out, raw = work / f"{params['name']}.csv", work / f"{params['name']}.raw.csv"
    rec = np.loadtxt(raw, delimiter=",", skiprows=1, ndmin=2)
    t, wrench = resample(rec[:, 0], rec[:, 4:7], params["cutoff"], params["rate"])
    w = np.asarray(params["waypoints"])
    keep = t <= w[-1, 0] + 1e-9   # the record runs past the last waypoint by under a period
    t, wrench = t[keep], wrench[keep]
    pose = np.column_stack([np.interp(t, w[:, 0], w[:, j]) for j in (1, 2, 3)])   # exact: the path's own
    info = json.loads(Path(f"{raw}.json").read_text())
    with atomic_path(work / f"{params['name']}.json") as tmp:
        Path(tmp).write_text(json.dumps({"path": params["path"], "medium": params["medium"], "seed": params["seed"],
                                         "bed": params["bed_info"], "sensor_offset": [0.0, 0.0],
                                         "sensor_angle": 0.0, "seconds": info["seconds"]}, indent=1))
    with atomic_path(out) as tmp, open(tmp, "w", newline="") as fh:   # last: its presence marks the run done
        wr = csv.writer(fh)
        wr.writerow(["t", "x", "z", "phi", "fx", "fz", "tau", "vx", "vz", "omega"])
        wr.writerows(np.column_stack([t, pose, wrench, path_twist(w, t)]).round(7).tolist())
    return out


def _bed_summary(bed: Bed, workdir) -> dict:
    """The bed's parameters and what its preparation measured: spheres kept, surface, packing, wall time."""
    info = json.loads(_bed_info(workdir).read_text())
    # the kept spheres' own volume where their radii differ (the bed script measures it); equal spheres as before
    volume = info["volume"] if bed.size_spread and "volume" in info else \
        info["spheres"] * 4 / 3 * np.pi * bed.radius ** 3
    solid = volume / (bed.box[0] * bed.box[1] * info["surface_z"])
    # options added later are left out at their defaults, as runs recorded before them have them, so those are
    # still done (the periodic flag stays: the runs recorded since it came have it)
    late = ("wall_friction", "size_spread", "deposit_friction", "rain")
    fields = {k: v for k, v in asdict(bed).items() if not (k in late and v == _NEW_BED_OPTIONS[k])}
    return {**fields, "spheres": info["spheres"], "surface_z": round(info["surface_z"], 5),
            "packing_measured": round(float(solid), 4), "seconds": round(info.get("seconds", 0.0), 1)}


def path_params(name: str, path: str, bed: Bed, folder, summary: dict, waypoints, foot, medium="beads",
                insert_speed: float = 1.0, cutoff: float = PATH_CUTOFF_HZ, rate: float = PATH_RATE_HZ,
                run_young: float | None = None, run_damping: float | None = None) -> dict:
    """One prescribed-path run's parameters (what :func:`run_path` is given and :func:`is_done` compares):
    the run ``name`` drives ``foot`` along ``waypoints`` (checked rows) in the bed kept in ``folder``,
    described by ``summary`` (:func:`_bed_summary`); ``run_young`` (Pa) runs it at another stiffness,
    ``run_damping`` at another local damping."""
    params = {"name": name, "path": path, "seed": bed.seed, "bed": str(bed_file(folder)), "bed_info": summary,
              "box": list(bed.box), "waypoints": waypoints, "foot_radius": foot.radius, "foot_length": foot.length,
              "medium": medium, "clearance": 2 * bed.radius, "insert_speed": insert_speed,
              "record_period": RECORD_PERIOD, "cutoff": cutoff, "rate": rate}
    if run_young is not None:
        params["young"] = float(run_young)
    if run_damping is not None:
        params["damping"] = float(run_damping)
    return params


def acquire_paths(workdir, beds, paths=None, foot=None, medium="beads", workers: int = 2, scheduler=None,
                  insert_speed: float = 1.0, cutoff: float = PATH_CUTOFF_HZ, rate: float = PATH_RATE_HZ,
                  out=None, timeout: float = 3600, threads: int | None = None, progress: bool = True,
                  run_young: float | None = None, run_damping: float | None = None):
    """Every (bed, path) as a Dask task, each bed prepared once in ``workdir/s<seed>`` (on ``threads``
    YADE threads, default all cores); resumable, a failed run logged and skipped. Returns the CSV
    paths (``PATH_sSEED.csv``), also copied with their sidecars into ``out`` if given, each as its run
    ends. ``run_young`` (Pa): the runs' stiffness, when the beds were settled at another."""
    from distributed import Client, LocalCluster, as_completed

    from granular.foot import Foot
    from granular.io.files import atomic_path

    foot, paths = foot or Foot(), VALIDATION_PATHS if paths is None else paths
    workdir = Path(workdir).resolve()
    if len({b.seed for b in beds}) != len(beds):
        raise GranularError("each bed needs its own seed: a bed's folder and its runs are named by it")
    checked = [{name: check_path(b, w, foot, name).tolist() for name, w in paths.items()} for b in beds]
    runs = []
    for bed, waypoints in zip(beds, checked):
        folder = workdir / f"s{bed.seed}"
        log.info("preparing the bed of seed %d (%d spheres, %.3f m deep) in %s", bed.seed, bed.particles,
                 bed.depth, folder)
        prepare_bed(bed, folder, threads=threads, progress=progress)
        summary = _bed_summary(bed, folder)
        log.info("bed of seed %d: %d spheres kept, packing %.3f, %.0f s", bed.seed, summary["spheres"],
                 summary["packing_measured"], summary["seconds"])
        for name in paths:
            runs.append((folder, path_params(f"{name}_s{bed.seed}", name, bed, folder, summary, waypoints[name], foot,
                                             medium, insert_speed, cutoff, rate, run_young, run_damping)))
    log.info("%d runs, %d already done", len(runs), sum(is_done(p, f) for f, p in runs))
    cluster = None if scheduler else LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                                  dashboard_address=None)
    done, failed = [], 0
    with Client(scheduler or cluster) as client:
        futures = [client.submit(run_path, p, str(f), timeout, key=p["name"], pure=False) for f, p in runs]
        for future in as_completed(futures):
            try:
                done.append(future.result())
                if out is not None:   # as each run ends: a long acquisition stopped part-way has shipped its runs
                    for src in (Path(done[-1]).with_suffix(".json"), Path(done[-1])):   # the CSV last, as in ship_path
                        with atomic_path(Path(out) / src.name) as tmp:
                            shutil.copyfile(src, tmp)
                log.info("run %s recorded (%d/%d)", future.key, len(done) + failed, len(runs))
            except Exception as exc:  # a failed run is reported and skipped, never fatal
                failed += 1
                log.warning("run %s failed: %s", future.key, exc)
    if cluster is not None:
        cluster.close()
    log.info("%d runs recorded, %d failed", len(done), failed)
    return sorted(done)
