"""Figures: wrench spaces as in the paper's Fig. 3, and the training report.

Functions take plain arrays and write PNG files atomically.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from mpl_toolkits.mplot3d.art3d import Poly3DCollection  # noqa: E402
from scipy.spatial import ConvexHull, QhullError  # noqa: E402

from granular.io.files import atomic_path  # noqa: E402


def save(fig, path) -> Path:
    """Save ``fig`` to ``path`` atomically and close it."""
    path = Path(path)
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=120, bbox_inches="tight")
    finally:
        plt.close(fig)
    return path


def _outline_2d(ax, pts2, **style):
    """The convex outline of 2-D points (with the origin), closed."""
    pts2 = np.vstack([pts2, [0.0, 0.0]])
    try:
        ring = pts2[ConvexHull(pts2).vertices]
    except QhullError:
        ring = pts2
    ring = np.vstack([ring, ring[:1]])
    return ax.plot(ring[:, 0], ring[:, 1], **style)[0]


def wrench_spaces(points_list, labels, path, title=""):
    """Fig. 3 views: (a) 3-D polytope of the first θ, (b) its F_x–F_z view, (c) all θ compared in F_x–F_z."""
    fig = plt.figure(figsize=(16, 5))
    # the 3-D panel's τ label sits outside its box; the gap keeps it off panel (b)'s F_z label
    fig.subplots_adjust(left=0.02, right=0.98, wspace=0.35)
    ax3 = fig.add_subplot(1, 3, 1, projection="3d")
    first = np.vstack([points_list[0], np.zeros(3)])
    try:
        hull = ConvexHull(first)
        faces = Poly3DCollection(first[hull.simplices], alpha=0.25, facecolor="tab:orange", edgecolor="k",
                                 linewidths=0.3)
        ax3.add_collection3d(faces)
    except QhullError:
        pass
    ax3.scatter(*first[:-1].T, color="tab:blue", s=10)
    ax3.set_xlabel("F_x (N)")
    ax3.set_ylabel("F_z (N)")
    ax3.set_zlabel("τ (N·m)")
    ax3.set_title(f"(a) W at {labels[0]}")

    ax = fig.add_subplot(1, 3, 2)
    ax.scatter(points_list[0][:, 0], points_list[0][:, 1], s=12, c=points_list[0][:, 2], cmap="coolwarm")
    _outline_2d(ax, points_list[0][:, :2], color="k", lw=1)
    ax.set_xlabel("F_x (N)")
    ax.set_ylabel("F_z (N)")
    ax.set_title("(b) F_x–F_z view (colour: τ)")
    ax.axhline(0, color="0.8", lw=0.5)
    ax.axvline(0, color="0.8", lw=0.5)

    ax = fig.add_subplot(1, 3, 3)
    for pts, label in zip(points_list, labels):
        line = _outline_2d(ax, pts[:, :2], lw=1.5, label=label)
        ax.scatter(pts[:, 0], pts[:, 1], s=6, color=line.get_color())
    ax.set_xlabel("F_x (N)")
    ax.set_ylabel("F_z (N)")
    ax.set_title("(c) tilted vs deeper")
    ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    return save(fig, path)


def training_report(cv: dict, repeated: dict | None, fixed: dict, concavity: dict, path, title=""):
    """CV errors per regressor (the bars: one draw of the folds; ``repeated``, the RBF over several
    draws: their pooled figure and range), fixed-normal approximation error against K, concavity per
    configuration."""
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    ax = axes[0]
    if cv:
        names = list(cv)
        keys = ["rel_rmse", "rel_rmse_fx", "rel_rmse_fz", "rel_rmse_tau"]
        width = 0.8 / len(keys)
        for i, key in enumerate(keys):
            ax.bar(np.arange(len(names)) + i * width, [cv[n][key] for n in names], width,
                   label=key.replace("rel_rmse_", "").replace("rel_rmse", "all"))
        ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2, names)
        draws = (repeated or {}).get("rel_rmse_repeats", [])
        if len(draws) > 1 and "rbf" in names:
            v = repeated["rel_rmse"]
            ax.errorbar(names.index("rbf"), v, yerr=[[v - min(draws)], [max(draws) - v]], fmt="kD", ms=4,
                        capsize=3, label=f"rbf all, {len(draws)} draws of the folds")
        ax.legend(fontsize=8)
    ax.set_ylabel("relative RMS error (held-out)")
    ax.set_title("cross-validation")

    ax = axes[1]
    Ks = [int(k) for k in fixed]
    for kind, colour in (("fitted", "tab:blue"), ("sphere", "tab:gray")):
        ax.plot(Ks, [fixed[str(k)][kind]["max_rel_distance"] for k in Ks], "o-", color=colour,
                label=f"{kind}: largest")
        ax.plot(Ks, [fixed[str(k)][kind]["mean_rel_distance"] for k in Ks], "s--", color=colour,
                label=f"{kind}: mean")
    ax.set_xlabel("K fixed normals")
    ax.set_ylabel("distance outside hull / largest wrench")
    ax.set_title("fixed-normal outer approximation")
    ax.legend(fontsize=8)

    ax = axes[2]
    ax.bar(np.arange(len(concavity["per_config"])), concavity["per_config"])
    ax.set_xlabel("configuration (below surface)")
    ax.set_ylabel("concavity")
    ax.set_title(f"concavity: mean {concavity['average']:.4f}, worst {concavity['worst']:.4f}")
    if "paper" in concavity:
        for key, style in (("average", "--"), ("worst", ":")):
            ax.axhline(concavity["paper"][key], color="k", ls=style, lw=1, label=f"paper Table II {key}")
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    return save(fig, path)


def acquisition_run(run, smooth, t_pass, path, title=""):
    """One raw acquisition run: measured and filtered wrench, the foot's depth, the pass through θ_des."""
    fig, axes = plt.subplots(4, 1, figsize=(7, 8), sharex=True)
    t = run.t - run.t[0]
    names = ("f_x (N)", "f_z (N)", "τ (N·m)")
    for k, ax in enumerate(axes[:3]):
        ax.plot(t, run.wrench[:, k], color="0.75", lw=0.7, label="measured")
        ax.plot(t, smooth[:, k], color="C0", lw=1.5, label="filtered")
        ax.set_ylabel(names[k] + "\nsensor frame")
        lo, hi = np.percentile(run.wrench[:, k], [1, 99])
        pad = 0.2 * (hi - lo) + 1e-9
        ax.set_ylim(lo - pad, hi + pad)  # the insertion transient would flatten the rest
    axes[3].plot(t, run.pose[:, 1], color="C2")
    axes[3].axhline(run.theta_des[0], color="k", ls=":", lw=1)
    axes[3].set_ylabel("depth d (m)")
    axes[3].set_xlabel("time since the start of the constant-velocity trajectory (s)")
    for ax in axes:
        ax.axvline(t_pass, color="C3", lw=1, label="passes θ_des")
    axes[0].legend(fontsize=8, loc="upper right")
    fig.suptitle(title or f"θ_des = {np.round(run.theta_des, 3).tolist()}, v_des = {np.round(run.v_des, 3).tolist()}")
    return save(fig, path)


def trajectory(tr, path, title=""):
    """One validation run: the foot's depth and tilt, and the filtered wrench in F_r, over time."""
    fig, axes = plt.subplots(4, 1, figsize=(8, 8), sharex=True, constrained_layout=True)
    axes[0].plot(tr.t, tr.pose[:, 0], label="x of p_center (m)")
    axes[0].plot(tr.t, tr.pose[:, 1], label="z of p_center (m)")
    axes[0].plot(tr.t, tr.pose[:, 2] / 10, label="tilt φ / 10 (rad)")
    axes[0].legend(fontsize=8, loc="lower left")
    for ax, k, label in zip(axes[1:], range(3), ["f_x (N)", "f_z (N)", "τ about p_r (N·m)"]):
        ax.plot(tr.t, tr.wrench[:, k], color="C0", lw=1.2)
        ax.set_ylabel(label)
    axes[-1].set_xlabel("t (s)")
    fig.suptitle(title)
    return save(fig, path)


def scene_frames(geometry, q):
    """Body frames (angle, origin) of a recorded state, from the run's geometry."""
    from granular.dynamics.multibody import Body, MultiBody

    parent = geometry["parent"]
    bodies = tuple(Body(str(i), 1.0, 1.0, tuple(geometry["com"][i]), None if parent[i] < 0 else str(parent[i]),
                        tuple(geometry["joint"][i]), float(geometry["offset"][i])) for i in range(len(parent)))
    return MultiBody(bodies).frames(q)


def foot_pose(geometry, angle, origin, f):
    """World p_center (2,) and unit axis (2,) of foot f, given the body frames."""
    b = geometry["foot_body"][f]
    c, s = np.cos(angle[b]), np.sin(angle[b])
    R = np.array([[c, -s], [s, c]])
    return origin[b] + R @ geometry["foot_points"][f], R @ geometry["foot_axis"][f]


def contact_point(geometry, f, pc, axis):
    """Where foot f's wrench acts: its plate, or its far end once tipped past lying flat, when that end
    is the lower one (contact.detection takes the deeper end; the lower end stands for it in drawings)."""
    if wheel_radius(geometry, f) > 0:
        return pc
    far = pc + geometry["foot_size"][f][1] * axis
    return far if far[1] < pc[1] else pc


def wheel_radius(geometry, f) -> float:
    """A wheel's radius (a foot whose data were recorded for a wheel: drawn round), else 0."""
    roll = geometry.get("foot_roll")
    return float(roll[f]) if roll is not None and roll[f] > 0 and np.isclose(roll[f], geometry["foot_size"][f][0]) else 0.0


def foot_outline(geometry, f, pc, axis):
    """A foot's closed outline in the world (k, 2): its cylinder's side view, or a wheel's rim."""
    r = wheel_radius(geometry, f)
    if r > 0:
        a = np.linspace(0.0, 2 * np.pi, 41)
        return pc + r * np.column_stack([np.cos(a), np.sin(a)])
    side = np.array([axis[1], -axis[0]])
    radius, length = geometry["foot_size"][f]
    return np.array([pc - radius * side, pc + radius * side, pc + radius * side + length * axis,
                     pc - radius * side + length * axis, pc - radius * side])


#: The contact forces' arrows: a colour no foot trace takes (front red, rear green, others blue).
FORCE_COLOUR = "tab:purple"


def draw_scene(ax, run, i, wrench_scale=None, alpha=1.0):
    """Terrain, bodies (links between joints), feet as rectangles and contact wrench arrows at step i."""
    g = run["geometry"]
    angle, origin = scene_frames(g, run["q"][i])
    for b, p in enumerate(g["parent"]):
        if p >= 0:
            ax.plot(*np.stack([origin[p], origin[b]]).T, color="0.3", lw=2, alpha=alpha)
    N = len(g["foot_body"])
    for f in range(N):
        pc, axis = foot_pose(g, angle, origin, f)
        # the link from the foot's body frame to the foot (a walker's leg: hip to foot)
        ax.plot(*np.stack([origin[g["foot_body"][f]], pc]).T, color="0.3", lw=2, alpha=alpha)
        outline = foot_outline(g, f, pc, axis)
        ax.fill(outline[:, 0], outline[:, 1], color="tab:blue", alpha=0.35 * alpha, lw=0)
        ax.plot(outline[:, 0], outline[:, 1], color="tab:blue", lw=1, alpha=alpha)
        if wheel_radius(g, f) > 0:  # a spoke shows the wheel turn
            ax.plot(*np.stack([pc, pc + wheel_radius(g, f) * axis]).T, color="tab:blue", lw=1, alpha=alpha)
        step = min(i, len(run["wrench"]) - 1)
        if wrench_scale and step >= 0 and run["active"][step, f]:
            w, at = run["wrench"][step, f], contact_point(g, f, pc, axis)
            ax.arrow(at[0], at[1], w[0] * wrench_scale, w[1] * wrench_scale, color=FORCE_COLOUR,
                     width=0.002, alpha=alpha, length_includes_head=True)


def _terrain(ax, run, xlim):
    pts = run["geometry"]["terrain"]
    xs = np.linspace(*xlim, 200)
    zs = np.interp(xs, pts[:, 0], pts[:, 1])
    ax.fill_between(xs, zs, zs.min() - 1, color="tan", alpha=0.5, lw=0)
    ax.plot(xs, zs, color="saddlebrown", lw=1)


def run_figures(run: dict, directory) -> list:
    """state.png (body state and energy), wrench.png (per-foot θ, wrench, slipping), scene.png (snapshots)."""
    directory = Path(directory)
    t, q = run["t"], run["q"]
    ts = t[1:]
    fig, axes = plt.subplots(2, 2, figsize=(12, 7), sharex=True)
    for k, label in enumerate(["x (m)", "z (m)", "angle (rad)"]):
        ax = axes.flat[k]
        ax.plot(t, q[:, k])
        ax.set_ylabel(f"base {label}")
    axes.flat[3].plot(t, run["energy"])
    axes.flat[3].set_ylabel("mechanical energy (J)")
    for ax in axes[1]:
        ax.set_xlabel("t (s)")
    fig.suptitle(f"{run['scenario']} on {run['medium']}: state of {run['bodies'][0]}")
    paths = [save(fig, directory / "state.png")]

    N = len(run["feet"])
    fig, axes = plt.subplots(4, N, figsize=(5 * N + 2, 9), sharex=True, squeeze=False)
    for f, name in enumerate(run["feet"]):
        col = axes[:, f]
        col[0].plot(ts, run["theta"][:, f, 0], label="d (m)")
        col[0].plot(ts, run["theta"][:, f, 1] / 10, label="φ / 10 (rad)")
        col[0].legend(fontsize=8)
        col[0].set_title(name)
        for k, label in enumerate(["f_x (N)", "f_z (N)", "τ about p_r (N·m)"]):
            col[k + 1].plot(ts, run["wrench"][:, f, k], color="k", lw=1)
            col[k + 1].fill_between(ts, 0, 1, where=run["slipping"][:, f], transform=col[k + 1].get_xaxis_transform(),
                                    color="tab:orange", alpha=0.2, lw=0, label="slipping (on ∂W)")
            col[k + 1].set_ylabel(label)
        col[1].legend(fontsize=8)
        col[-1].set_xlabel("t (s)")
    fig.suptitle(f"{run['scenario']}: contact configuration and resistance wrench in F_r")
    paths.append(save(fig, directory / "wrench.png"))

    fig, ax = plt.subplots(figsize=(10, 5))
    frames = np.linspace(0, len(t) - 1, 6).astype(int)
    origins = [scene_frames(run["geometry"], q[i])[1] for i in frames]
    pcs = np.vstack([run["p_center"].reshape(-1, 2), q[:, :2], *origins])
    reach = run["geometry"]["foot_size"][:, 1].max() + 0.05
    xlim = (pcs[:, 0].min() - reach, pcs[:, 0].max() + reach)
    _terrain(ax, run, xlim)
    fmax = np.abs(run["wrench"][..., :2]).max() if run["wrench"].size else 0.0
    for j, i in enumerate(frames):
        draw_scene(ax, run, i, wrench_scale=0.1 / fmax if fmax > 0 else None, alpha=0.25 + 0.75 * j / (len(frames) - 1))
    for f, name in enumerate(run["feet"]):  # foot traces (paper Fig. 10c: front red, rear green)
        colour = "tab:red" if name.startswith("front") else "tab:green" if name.startswith("rear") else "tab:blue"
        ax.plot(run["p_center"][:, f, 0], run["p_center"][:, f, 1], color=colour, lw=1,
                label=f"{name} trace" if name.endswith("_1") or len(run["feet"]) == 1 else None)
    if fmax > 0:  # the arrows' key, in the legend beside the traces it must not be confused with
        ax.plot([], [], color=FORCE_COLOUR, lw=2, label="contact force")
    ax.legend(fontsize=8, loc="upper right")
    ax.set_aspect("equal")
    ax.set_xlim(*xlim)
    ax.set_ylim(pcs[:, 1].min() - 0.1, pcs[:, 1].max() + reach)
    ax.set_title(f"{run['scenario']}: snapshots at t = " + ", ".join(f"{t[i]:.2f}" for i in frames) + " s "
                 "(later = darker)")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("z (m)")
    paths.append(save(fig, directory / "scene.png"))
    if "gait" in run["summary"]:
        paths.append(gait(run, directory / "gait.png"))
    if any(wheel_radius(run["geometry"], f) > 0 for f in range(len(run["feet"]))):
        paths.append(drive(run, directory / "drive.png"))
    return [str(p) for p in paths]


def _smooth(x, n):
    return np.convolve(x, np.ones(n) / n, mode="same") if n > 1 and len(x) > n else x


def drive(run: dict, path) -> Path:
    """Wheels at work: the base's path, each wheel's slip 1 − v_t / (−ω r) (v_t its centre's speed
    along the surface; smoothed over 0.1 s), and the soil's traction and load on each wheel."""
    g, t, dt = run["geometry"], run["t"][1:], run["dt"]
    angles = np.array([scene_frames(g, q)[0] for q in run["q"][1:]])
    pts = g["terrain"]
    # laid out by constraints, so the figure's title gets its own row above the panels' titles
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4), constrained_layout=True)
    axes[0].plot(run["t"], run["q"][:, 0], label="x (m)")
    axes[0].plot(run["t"], run["q"][:, 1], label="z (m)")
    axes[0].set_title("the base's frame")
    window = max(int(round(0.1 / dt)), 1)
    for f, name in enumerate(run["feet"]):
        r = wheel_radius(g, f)
        if r <= 0:
            continue
        pc = run["p_center"][:, f]
        seg = np.clip(np.searchsorted(pts[:, 0], pc[:, 0], side="right") - 1, 0, len(pts) - 2)
        tangent = pts[seg + 1] - pts[seg]
        tangent /= np.linalg.norm(tangent, axis=1, keepdims=True)
        along = np.sum(np.gradient(pc, dt, axis=0) * tangent, axis=1)
        rim = -np.gradient(angles[:, g["foot_body"][f]], dt) * r
        ok = run["active"][:, f] & (np.abs(rim) > 1e-3)
        slip = np.where(ok, 1.0 - along / np.where(ok, rim, 1.0), np.nan)
        axes[1].plot(t, _smooth(np.nan_to_num(slip), window), lw=1, label=name)
        axes[2].plot(t, run["wrench"][:, f, 0], lw=1, label=f"{name} traction f_x")
        axes[2].plot(t, run["wrench"][:, f, 1], lw=1, ls="--", label=f"{name} load f_z")
    axes[1].set_ylim(-0.2, 1.05)
    axes[1].set_title("slip")
    axes[2].set_title("the soil's force on each wheel (N)")
    for ax in axes:
        ax.set_xlabel("t (s)")
        ax.legend(fontsize=7)
    fig.suptitle(f"{run['scenario']} on {run['medium']}: drive")
    return save(fig, path)


def gait(run: dict, path) -> Path:
    """A walker's limit cycle: each leg's angle against its rate, and its steps' lengths and periods."""
    q, v, steps = run["q"], run["v"], run["summary"]["gait"]["steps"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for leg, (a, w) in enumerate([(q[:, 2], v[:, 2]), (q[:, 2] + q[:, 3], v[:, 2] + v[:, 3])]):
        axes[0].plot(a, w, lw=0.8, label=f"leg {leg + 1}")
    axes[0].set_xlabel("leg angle from the downward vertical (rad)")
    axes[0].set_ylabel("rate (rad/s)")
    axes[0].set_title("phase portrait: a closed orbit is the limit cycle")
    axes[0].legend(fontsize=8)
    if steps:
        n = np.arange(1, len(steps) + 1)
        axes[1].plot(n, [s["length"] for s in steps], "o-", label="step length (m)")
        axes[1].plot(n, [s["period"] for s in steps], "s-", label="period (s)")
        axes[1].legend(fontsize=8)
    axes[1].set_xlabel("step")
    axes[1].set_title("steps")
    fig.suptitle(f"{run['scenario']} on {run['medium']}: gait")
    return save(fig, path)


def scaling(results: dict, path, title="time per step against scene size"):
    """Log-log plot of µs per step against contacts, with a line of slope 1 for reference."""
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for solver, rows in results.items():
        n = np.array([r["contacts"] for r in rows.values()])
        us = np.array([r["us_per_step"] for r in rows.values()])
        ax.loglog(n, us, "o-", label=solver)
        ax.loglog(n, us[0] * n / n[0], ":", color="0.6", label="linear (from 1 contact)" if solver == list(results)[0] else None)
    ax.set_xlabel("contacts (legs of 3 bodies each)")
    ax.set_ylabel("median µs per step")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return save(fig, path)


def wheel(sweep: dict, path, title="", simulated=None, model="Wong–Reece"):
    """The single-wheel test bed's curves against slip: drawbar pull and torque, sinkage; the
    reference (``model``) as lines, the simulated test bed (if any) as markers."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    s = sweep["slip"]
    model = model.split(",")[0]
    a.plot(s, sweep["drawbar_pull_n"], "-", color="C0", label=f"drawbar pull (N), {model}")
    a.plot(s, sweep["torque_nm"], "-", color="C1", label=f"driving torque (N·m), {model}")
    b.plot(s, 1e3 * sweep["sinkage_m"], "-", color="C0", label=model)
    if simulated is not None:
        a.plot(simulated["slip"], simulated["drawbar_pull_n"], "o", color="C0", label="drawbar pull, simulated")
        a.plot(simulated["slip"], simulated["torque_nm"], "s", color="C1", label="torque, simulated")
        b.plot(simulated["slip"], 1e3 * simulated["sinkage_m"], "o", color="C0", label="simulated (learned W(θ))")
        b.legend(fontsize=8)
    a.axhline(0.0, color="0.6", lw=0.8)
    a.set_xlabel("slip")
    a.legend(fontsize=8)
    b.set_xlabel("slip")
    b.set_ylabel("sinkage (mm)")
    fig.suptitle(title)
    return save(fig, path)


def video(run: dict, path, fps: int = 25, width: float = 2.0):
    """Render a run to an animated GIF (Pillow) or MP4 (needs ffmpeg), drawn like scene.png,
    the view following the first body."""
    import shutil

    from matplotlib.animation import FFMpegWriter, FuncAnimation, PillowWriter

    from granular.errors import GranularError

    path = Path(path)
    if path.suffix.lower() == ".gif":
        writer = PillowWriter(fps=fps)
    elif path.suffix.lower() == ".mp4":
        if shutil.which("ffmpeg") is None:
            raise GranularError("writing .mp4 needs ffmpeg (apt-get install ffmpeg); .gif works without it")
        writer = FFMpegWriter(fps=fps)
    else:
        raise GranularError(f"{path}: video must end in .gif or .mp4")
    t, q = run["t"], run["q"]
    frames = np.arange(0, len(t), max(1, int(round(1.0 / (fps * run["dt"])))))
    reach = run["geometry"]["foot_size"][:, 1].max() + 0.05
    z_lo, z_hi = run["p_center"][..., 1].min() - 0.1, q[:, 1].max() + reach
    fmax = np.abs(run["wrench"][..., :2]).max() if run["wrench"].size else 0.0
    fig, ax = plt.subplots(figsize=(8, 8 * (z_hi - z_lo) / width))

    def draw(i):
        ax.clear()
        x0 = q[i, 0]
        _terrain(ax, run, (x0 - width / 2, x0 + width / 2))
        draw_scene(ax, run, i, wrench_scale=0.1 / fmax if fmax > 0 else None)
        ax.set_xlim(x0 - width / 2, x0 + width / 2)
        ax.set_ylim(z_lo, z_hi)
        ax.set_aspect("equal")
        ax.set_title(f"{run['scenario']} on {run['medium']}, t = {t[i]:.2f} s")

    try:
        with atomic_path(path) as tmp:
            FuncAnimation(fig, draw, frames=frames).save(tmp, writer=writer, dpi=80)
    finally:
        plt.close(fig)
    return path


def validation(medium: str, runs, curves: dict, folder) -> list:
    """Per validation path: the measured wrench of each realisation and the predicted ones
    (model replay, simulated foot, RFT) over time."""
    folder = Path(folder)
    styles = {"model": dict(color="C0", lw=1.2), "sim": dict(color="C2", lw=1.0), "rft": dict(color="C1", lw=1, ls="--")}
    written = []
    for path_name in sorted({r.path for r in runs}):
        group = [r for r in runs if r.path == path_name]
        fig, axes = plt.subplots(3, 1, figsize=(8, 7), sharex=True)
        for r in group:
            first = r is group[0]
            for i, (ax, label) in enumerate(zip(axes, ("f_x (N)", "f_z (N)", "τ (N·m)"))):
                ax.plot(r.t, r.wrench[:, i], color="0.5", lw=1, label="DEM" if first else None)
                for key, pred in curves[r.name].items():
                    ax.plot(r.t, pred[:, i], **styles[key], label=key if first else None)
                ax.set_ylabel(label)
        axes[0].legend(loc="upper left", fontsize=8)
        axes[-1].set_xlabel("t (s)")
        fig.suptitle(f"{path_name}: {medium} model vs {len(group)} DEM realisation(s)")
        written.append(str(save(fig, folder / f"validate_{path_name}.png")))
    return written
