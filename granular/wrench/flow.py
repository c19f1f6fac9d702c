"""The data's flow rule: which wrench the medium exerts for a direction of motion.

The data record, at each configuration, the wrench w_j for each of m sampled twist directions
u_j (unit vectors in the velocity-scaled space, Zhu et al. 2019 §IV-A). Maximum dissipation
(the paper's eq. 2) replaces that map by the support point of their convex hull, which is the
recorded wrench only if the medium obeys associated flow; granular media do not (their dilatancy
angle is below their friction angle, and RFT is not associated either). Between the sampled
directions the hull's support point jumps from vertex to vertex, and denser data give it more
wrong vertices to jump to.

This module interpolates the map itself over the direction sphere: w(u) = Σ_j φ(|u − U_j|) c_j +
Σ_k p_k(u; θ) e_k with a cubic radial basis φ(r) = r³ on the chord distance and a tail p, solved
so that the recorded directions are hit exactly and anything in the tail's span is reproduced
exactly. The tail is [1, u] or [1, u, s, s u, g, g u]: affine in u, and affine in
u times each of the foot's two leading fractions (:func:`leading_fractions`), the share of its
bottom plate and of a side wall that moves into the medium. A granular medium resists where the
foot's surface advances into it (Li et al. 2013: RFT integrates over the leading surface only), so
the wrench changes fast where a face of the foot switches between leading and trailing: for a
translating upright foot, across v_z = 0, where a recorded direction holds only the switch's
midpoint. A smooth radial basis alone smears that switch over the ~45° between sampled
directions (NRMSE 0.15 against RFT on a curved path, m = 26); with the fractions in the tail it
scores 0.05, and 0.033 over all held-out paths (README, "How accurate is it"). The fractions depend on the tilt and depth, so the
coefficients are solved per configuration. Twelve functions need directions enough to carry them:
each dataset takes the tail, affine or leading, that predicts its own left-out directions better
(:func:`choose_tail`).
"""
from __future__ import annotations

import numpy as np
from granular.compiled import kernel

#: The interpolant's tails: their functions ([1, u], or [1, u, s, s u, g, g u]) and how many.
TAILS = {"affine": 4, "leading": 12}
#: Width of a face's leading/trailing switch for a translating foot, relative to the speed: a
#: foot that does not rotate would switch a face at once, a jump Newton's method in the step
#: cannot cross; a tenth of the speed costs nothing against RFT (0.033 with and without).
SWITCH_WIDTH = 0.1


class DirectionMap:
    """Interpolation over the sampled directions U (m, 3) of a dataset, in the velocity-scaled space
    of ``velocity_scale`` (m/s, m/s, rad/s), for a foot of radius ``radius`` (m), with the tail
    ``tail`` (:data:`TAILS`; :func:`choose_tail` picks one for a dataset).

    The interpolant of values P (m, p) at the directions, at configuration θ, has coefficients
    Q (m + q, p) (:func:`coefficients`): w(u) = Σ_j |u − U_j|³ Q_j + Σ_k p_k(u; θ) Q_{m+k}.
    """

    TAILS = TAILS

    def __init__(self, directions, velocity_scale, radius: float, tail: str = "leading"):
        if tail not in TAILS:
            raise ValueError(f"unknown interpolant tail {tail!r}; choose one of {', '.join(TAILS)}")
        U = np.asarray(directions, dtype=float)
        U = np.ascontiguousarray(U / np.linalg.norm(U, axis=1, keepdims=True))
        self.directions, self.tail = U, tail
        self.kernel, self.kernel_inverse = kernel_inverse(U)
        self.geometry = np.array([*np.asarray(velocity_scale, dtype=float), float(radius)])

    def coefficients(self, points, thetas):
        """Q (k, m + q, p) of the interpolants of values (k, m, p) at configurations θ (k, 2)."""
        return coefficients(self.kernel_inverse, self.directions, self.geometry, TAILS[self.tail], _rows(thetas),
                            np.asarray(points, dtype=float))

    def weights(self, x, theta):
        """λ (k, m) for directions x (k, 3), normalised here, at one configuration θ (2,): the
        interpolant is Σ_j λ_j w_j; a zero row where x is zero (no motion)."""
        Q = self.coefficients(np.eye(len(self.directions))[None], theta)[0]
        return np.array([interpolate(self.directions, Q, row, *theta, self.geometry)[0] for row in _rows(x, 3)])

    def wrenches(self, points, thetas, x):
        """Interpolated wrenches (k, 3) from the extreme wrenches (k, m, 3) at configurations θ (k, 2)
        for directions x (k, 3)."""
        thetas = _rows(thetas)
        Q = self.coefficients(points, thetas)
        return np.array([interpolate(self.directions, q, row, th[0], th[1], self.geometry)[0]
                         for q, th, row in zip(Q, thetas, _rows(x, 3))])

    def tail_at(self, theta) -> np.ndarray:
        """T (m, q): the tail at the directions, at configuration θ = (d, φ)."""
        return tail_matrix(self.directions, float(theta[0]), float(theta[1]), self.geometry, TAILS[self.tail])

    def leave_one_out(self, configs, wrenches, scale):
        """RMS error, in units of ``scale`` (p,), of each recorded wrench predicted from the other
        directions of its configuration (configurations (n, 2) below the surface, wrenches (n, m, p)),
        by Rippa's formula: for an interpolant, the error at a left-out sample is its coefficient
        over the diagonal of the inverted system (Rippa 1999). The 3D map (``flow3d.SphereMap``)
        shares it, through its own ``tail_at``."""
        m, errors = len(self.directions), []
        for theta, w in zip(_rows(configs), wrenches):
            T = self.tail_at(theta)
            q = T.shape[1]
            try:
                inverse = np.linalg.inv(np.block([[self.kernel, T], [T.T, np.zeros((q, q))]]))[:m, :m]
            except np.linalg.LinAlgError:  # too few directions for this tail: it cannot interpolate them
                return np.inf
            errors.append((inverse @ w) / np.diag(inverse)[:, None] / scale)
        return float(np.sqrt(np.mean(np.square(errors)))) if errors else np.inf


def choose_tail(dataset, kind=None) -> tuple[str, dict]:
    """The tail whose interpolant best predicts each recorded wrench from its configuration's other
    directions (leave one direction out), and each tail's score: the leading fractions help where the
    data resolve a face's switch (RFT sand 0.037 against 0.045) and hurt where few noisy directions
    cannot carry twelve functions (DEM Beads, m = 18: 0.142 against 0.050). ``kind``: the map's class,
    :class:`DirectionMap` (default) or the 3D ``flow3d.SphereMap``, each with its ``TAILS``."""
    kind = DirectionMap if kind is None else kind
    rows = (dataset.configs[:, 0] < 0) & dataset.valid.all(axis=1)
    scale = np.abs(dataset.wrenches[dataset.valid]).max(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    scores = {tail: kind(dataset.directions, dataset.velocity_scale, dataset.foot.radius, tail)
              .leave_one_out(dataset.configs[rows], dataset.wrenches[rows], scale) for tail in kind.TAILS}
    return min(scores, key=scores.get), scores


def _rows(a, width: int = 2):
    return np.ascontiguousarray(np.asarray(a, dtype=float).reshape(-1, width))


@kernel(inline=True)
def foot_pose(d, phi, radius):
    """(a_x, a_z, ℓ_b): the foot axis a(φ) (:func:`granular.frames.foot_axis`) and the buried length
    of its walls along the axis, ℓ_b = −h / cos φ, at configuration (d, φ) of a foot of ``radius``:
    h = d + R |sin φ| is p_center's height (:func:`granular.frames.center_height`)."""
    az = np.cos(phi)
    return -np.sin(phi), az, max(-(d + radius * abs(np.sin(phi))) / max(az, 1e-3), 1e-6)


@kernel(inline=True)
def leading_fractions(u0, u1, u2, pose, geometry):
    """(s, ds/du₀, ds/du₁, ds/du₂, g, dg/du₀, dg/du₁, dg/du₂) for a unit direction u = (u0, u1, u2)
    (scaled space) of the foot at θ = (d, φ): the leading fractions and their derivatives. The foot
    (planar: a bottom plate of half-width R, two side walls)
    moves with the twist v = S u of p_center (F_c: v_x, v_z, ω). A plate element at s' along the
    plate has normal velocity v·a + ω s' (a the foot axis), so the share of the plate that
    advances (v·a + ω s' < 0) is s = ½ − v·a / (2|ω|R), clipped to [0, 1]; a wall element ℓ up the
    axis has v·t − ω ℓ along the wall's normal t, so the share of the +t wall's buried length
    ℓ_b = −h / cos φ (h p_center's height) that advances is g = ½ + (v·t − ω ℓ_b/2) / (|ω| ℓ_b), clipped. Each ramp's
    half-width (|ω|R, |ω|ℓ_b/2) gains SWITCH_WIDTH × |v_x, v_z| (see there). ``pose`` is
    :func:`foot_pose` at θ. Scalars in, scalars out: the step's Newton loop evaluates it per foot,
    direction and iterate, and an array passed into an inlined kernel costs two atomic reference
    counts, more than this function."""
    Sx, Sz, Sw = geometry[0], geometry[1], geometry[2]
    vx, vz, w = Sx * u0, Sz * u1, Sw * u2
    ax, az, buried = pose  # t = (a_z, −a_x)
    speed = np.sqrt(vx * vx + vz * vz)
    e0 = SWITCH_WIDTH * Sx * vx / speed if speed > 0.0 else 0.0  # d(SWITCH_WIDTH |v|)/du
    e1 = SWITCH_WIDTH * Sz * vz / speed if speed > 0.0 else 0.0
    sw = Sw if w >= 0.0 else -Sw  # d|ω|/du_ω
    R = geometry[3]
    s, s0, s1, s2 = _ramp(-(vx * ax + vz * az), -Sx * ax, -Sz * az, 0.0,
                          abs(w) * R + SWITCH_WIDTH * speed, e0, e1, sw * R)
    g, g0, g1, g2 = _ramp(vx * az - vz * ax - 0.5 * w * buried, Sx * az, -Sz * ax, -0.5 * Sw * buried,
                          0.5 * abs(w) * buried + SWITCH_WIDTH * speed, e0, e1, 0.5 * sw * buried)
    return s, s0, s1, s2, g, g0, g1, g2


@kernel(inline=True)
def _ramp(num, n0, n1, n2, h, h0, h1, h2):
    """(½ + num / (2h) clipped to [0, 1] (½ where h = 0: at the switch itself), and its derivative,
    three components, from those of num and h)."""
    if h <= 0.0:
        return 0.5, 0.0, 0.0, 0.0
    z = 0.5 + num / (2.0 * h)
    if z <= 0.0:
        return 0.0, 0.0, 0.0, 0.0
    if z >= 1.0:
        return 1.0, 0.0, 0.0, 0.0
    scale = 0.5 / (h * h)
    return z, (n0 * h - num * h0) * scale, (n1 * h - num * h1) * scale, (n2 * h - num * h2) * scale


@kernel("f8[:, ::1], f8, f8, f8[::1], i8")
def tail_matrix(U, d, phi, geometry, size):
    """T (m, size): the tail, [1, u] (4 functions) or [1, u, s, s u, g, g u] (12), at each direction
    U_j, at configuration (d, φ)."""
    T = np.empty((U.shape[0], size))
    pose = foot_pose(d, phi, geometry[3])
    for j in range(U.shape[0]):
        u0, u1, u2 = U[j, 0], U[j, 1], U[j, 2]
        T[j, 0], T[j, 1], T[j, 2], T[j, 3] = 1.0, u0, u1, u2
        if size == 4:
            continue
        s, _, _, _, g, _, _, _ = leading_fractions(u0, u1, u2, pose, geometry)
        T[j, 4], T[j, 5], T[j, 6], T[j, 7] = s, s * u0, s * u1, s * u2
        T[j, 8], T[j, 9], T[j, 10], T[j, 11] = g, g * u0, g * u1, g * u2
    return T


@kernel("f8[:, ::1], f8[:, ::1], f8[::1], i8, f8[:, ::1], f8[:, :, ::1]")
def coefficients(Kinv, U, geometry, size, thetas, points):
    """Q (k, m + size, p) per configuration θ (k, 2) of the values P (k, m, p) at the directions U:
    the solution [c; e] of K c + T e = P, Tᵀ c = 0, with K the cubic kernel between the directions
    (``Kinv`` its inverse) and T (m, size) the tail at them for that θ; by the Schur complement,
    e = (Tᵀ K⁻¹ T)⁻¹ Tᵀ K⁻¹ P and c = K⁻¹ (P − T e), since only T changes with θ.
    The feet's K⁻¹ [T P] are one matrix product (BLAS calls on matrices this small cost more in
    calling than in arithmetic; numba's loops here were slower still), as rows: [T P]ᵀ K⁻¹
    (:func:`tail_solve`)."""
    tails = np.empty((points.shape[0], U.shape[0], size))
    for f in range(points.shape[0]):
        tails[f] = tail_matrix(U, thetas[f, 0], thetas[f, 1], geometry, size)
    return tail_solve(Kinv, tails, points)


@kernel()
def tail_solve(Kinv, tails, points):
    """Q (k, m + size, n) of :func:`coefficients` from each configuration's tail at the directions
    T (k, m, size) and values P (k, m, n). The 3D map (:mod:`granular.wrench.flow3d`) solves its
    interpolants so too. ``Kinv`` is symmetric (as :func:`kernel_inverse` makes it): the products
    keep contiguous operands, which BLAS takes twice as fast as a transposed view."""
    k, m, size, n = tails.shape[0], Kinv.shape[0], tails.shape[2], points.shape[2]
    w = size + n
    rows = np.empty((k * w, m))  # per foot, Tᵀ then Pᵀ
    for f in range(k):
        for j in range(m):
            for c in range(size):
                rows[f * w + c, j] = tails[f, j, c]
            for c in range(n):
                rows[f * w + size + c, j] = points[f, j, c]
    solved = rows @ Kinv  # per foot, Bᵀ = (K⁻¹ T)ᵀ then Yᵀ = (K⁻¹ P)ᵀ
    Q = np.empty((k, m + size, n))
    SR, S, e, top = np.empty((size, w)), np.empty((size, size)), np.empty((size, n)), np.empty((n, m))
    for f in range(k):
        o = f * w
        np.dot(rows[o:o + size], np.ascontiguousarray(solved[o:o + w].T), SR)  # [Tᵀ K⁻¹ T, Tᵀ K⁻¹ P]
        for r in range(size):
            for c in range(size):
                S[r, c] = SR[r, c]
            for c in range(n):
                e[r, c] = SR[r, size + c]
        solve_into(S, e)
        for c in range(n):  # c = Y − B e, along the directions (contiguous rows)
            for i in range(m):
                top[c, i] = solved[o + size + c, i]
        for r in range(size):
            for c in range(n):
                x = e[r, c]
                for i in range(m):
                    top[c, i] -= solved[o + r, i] * x
        for i in range(m):
            for c in range(n):
                Q[f, i, c] = top[c, i]
        Q[f, m:] = e
    return Q


def kernel_inverse(U) -> tuple[np.ndarray, np.ndarray]:
    """(K, K⁻¹) of the cubic kernel K_ij = |U_i − U_j|³ between unit directions U (m, p), K⁻¹
    made exactly symmetric (:func:`tail_solve` relies on it). K is invertible for distinct
    directions (condition 2e3 at m = 26 in the plane)."""
    r2 = np.maximum(2.0 - 2.0 * U @ U.T, 0.0)
    K = r2 * np.sqrt(r2)
    inverse = np.linalg.inv(K)
    return K, np.ascontiguousarray(0.5 * (inverse + inverse.T))


@kernel("f8[:, ::1], f8[:, ::1], f8[::1], f8, f8, f8[::1]")
def interpolate(U, Q, x, d, phi, geometry):
    """w (p,) and dw/dx (p, 3) at x (3,), any length, of the interpolant with coefficients Q
    (m + q, p) at configuration (d, φ): the cubic kernel φ(r) = r³ of the chord distance
    r = |u − U_j| between unit vectors, u = x / |x|, and the tail. Zero at x = 0 (no motion, no
    flow wrench)."""
    p = Q.shape[1]
    w, dw = np.zeros(p), np.zeros((p, 3))
    interpolate_into(U, Q.reshape((1,) + Q.shape), 0, x, d, phi, geometry, w, 0, dw)
    return w, dw


@kernel(inline=True)
def interpolate_into(U, Q, f, x, d, phi, geometry, w, o, dw):
    """:func:`interpolate` of foot f's coefficients Q[f] (Q: k, m + q, p) written into w[o:o + p]
    and dw (p, 3), which are zero on entry: the step's Newton loop calls it per foot and per
    iterate, so it takes indices, not views, and writes the tail out (:func:`leading_fractions`)."""
    m, p, size = U.shape[0], Q.shape[2], Q.shape[1] - U.shape[0]
    n = np.sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2])
    if n == 0.0:
        return
    u0, u1, u2 = x[0] / n, x[1] / n, x[2] / n
    s = s0 = s1 = s2 = g = g0 = g1 = g2 = 0.0
    if size == 12:
        s, s0, s1, s2, g, g0, g1, g2 = leading_fractions(u0, u1, u2, foot_pose(d, phi, geometry[3]), geometry)
    for i in range(p):  # the tail: dw holds dw/du until the projection below
        q1, q2, q3 = Q[f, m + 1, i], Q[f, m + 2, i], Q[f, m + 3, i]
        w[o + i] += Q[f, m, i] + u0 * q1 + u1 * q2 + u2 * q3
        dw[i, 0] += q1
        dw[i, 1] += q2
        dw[i, 2] += q3
        if size == 12:  # s (c + u·e) + g (c' + u·e'): d/du_a = ds_a (c + u·e) + s e_a, alike for g
            e0, e1, e2 = Q[f, m + 5, i], Q[f, m + 6, i], Q[f, m + 7, i]
            f0, f1, f2 = Q[f, m + 9, i], Q[f, m + 10, i], Q[f, m + 11, i]
            side = Q[f, m + 4, i] + u0 * e0 + u1 * e1 + u2 * e2
            wall = Q[f, m + 8, i] + u0 * f0 + u1 * f1 + u2 * f2
            w[o + i] += s * side + g * wall
            dw[i, 0] += s0 * side + s * e0 + g0 * wall + g * f0
            dw[i, 1] += s1 * side + s * e1 + g1 * wall + g * f1
            dw[i, 2] += s2 * side + s * e2 + g2 * wall + g * f2
    for j in range(m):
        r = np.sqrt(max(2.0 - 2.0 * (u0 * U[j, 0] + u1 * U[j, 1] + u2 * U[j, 2]), 0.0))
        value, slope = r * r * r, -3.0 * r  # d(r³)/du = −3 r U_j
        for i in range(p):
            q = Q[f, j, i]
            w[o + i] += value * q
            for a in range(3):
                dw[i, a] += slope * U[j, a] * q
    for i in range(p):  # du/dx = (I − u uᵀ) / n
        along = dw[i, 0] * u0 + dw[i, 1] * u1 + dw[i, 2] * u2
        dw[i, 0] = (dw[i, 0] - along * u0) / n
        dw[i, 1] = (dw[i, 1] - along * u1) / n
        dw[i, 2] = (dw[i, 2] - along * u2) / n


@kernel(inline=True)
def dissipative_into(v, S, w, dw, o):
    """The medium does no work on the foot: where the data's wrench w (3,) at the foot's twist v
    (3,) at p_r would (w·v > 0, which the interpolant can do between directions where the recorded
    wrenches are small, e.g. a turning foot's), w becomes the nearest wrench that does none,
    w − (w·v / vᵀS⁻²v) S⁻² v, nearest in the norm dual to the velocity scale S (S[:3]). dw (3, 3),
    dw/dv, follows, as Newton's method in the step needs it (pass zeros where it is not needed).
    v, w and dw are read at offset o (v[o:o + 3], w[o:o + 3], dw[o:o + 3, o:o + 3]): the step
    passes its feet's stacked arrays, not views. In place; True where w was changed."""
    m0, m1, m2 = v[o] / (S[0] * S[0]), v[o + 1] / (S[1] * S[1]), v[o + 2] / (S[2] * S[2])
    p = w[o] * v[o] + w[o + 1] * v[o + 1] + w[o + 2] * v[o + 2]
    q = v[o] * m0 + v[o + 1] * m1 + v[o + 2] * m2
    if p <= 0.0 or q == 0.0:
        return False
    ratio = p / q
    for b in range(3):  # d(p / q)/dv_b, p = w(v)·v and q = vᵀS⁻²v both varying with v
        dp = dw[o, o + b] * v[o] + dw[o + 1, o + b] * v[o + 1] + dw[o + 2, o + b] * v[o + 2] + w[o + b]
        dratio = (dp - 2.0 * ratio * v[o + b] / (S[b] * S[b])) / q
        dw[o, o + b] -= m0 * dratio
        dw[o + 1, o + b] -= m1 * dratio
        dw[o + 2, o + b] -= m2 * dratio
        dw[o + b, o + b] -= ratio / (S[b] * S[b])
    w[o] -= ratio * m0
    w[o + 1] -= ratio * m1
    w[o + 2] -= ratio * m2
    return True


@kernel()
def solve_into(A, X):
    """X (n, p) becomes A⁻¹ X by Gaussian elimination with partial pivoting, in place: A is
    overwritten (small systems: no LAPACK call from compiled code; Newton's loop, which rebuilds its
    matrix every iteration, allocates nothing)."""
    n = A.shape[0]
    for col in range(n):
        pivot = col  # the first largest |A[row, col]|, found in a loop: np.argmax of a slice allocates
        for row in range(col + 1, n):
            if abs(A[row, col]) > abs(A[pivot, col]):
                pivot = row
        if pivot != col:
            for j in range(n):
                A[col, j], A[pivot, j] = A[pivot, j], A[col, j]
            for j in range(X.shape[1]):
                X[col, j], X[pivot, j] = X[pivot, j], X[col, j]
        for row in range(col + 1, n):
            f = A[row, col] / A[col, col]
            for j in range(col, n):
                A[row, j] -= f * A[col, j]
            for j in range(X.shape[1]):
                X[row, j] -= f * X[col, j]
    for row in range(n - 1, -1, -1):
        for j in range(row + 1, n):
            for c in range(X.shape[1]):
                X[row, c] -= A[row, j] * X[j, c]
        for c in range(X.shape[1]):
            X[row, c] /= A[row, row]


def dissipating(points, twist_r):
    """Per row, the point of conv(points ∪ 0) with the least power w·v_r (the maximum-dissipation
    wrench, paper eq. 2 for a heavy foot): (k, m, 3), (k, 3) → (k, 3)."""
    power = np.einsum("kmi,ki->km", points, twist_r)
    best = np.argmin(power, axis=1)
    rows = np.arange(len(points))
    return np.where((power[rows, best] < 0)[:, None], points[rows, best], 0.0)


def dissipating_polytope(A, b, twist_r):
    """Per row, the point of {w : A w ≤ b_k} with the least power w·v_r: the maximum-dissipation
    wrench of the fixed-normal polytope (an outer approximation of the hull), by linear programming.
    A (K, 3), b (k, K), twist_r (k, 3) → (k, 3)."""
    from scipy.optimize import linprog

    out = np.zeros((len(b), 3))
    for i, (offsets, v) in enumerate(zip(b, twist_r)):
        if np.any(v) and np.any(offsets > 0):
            result = linprog(v, A_ub=A, b_ub=offsets, bounds=[(None, None)] * 3, method="highs")
            if result.status == 0 and result.fun < 0:
                out[i] = result.x
    return out


def non_associativity(points, twists_r, valid, scale):
    """How far each recorded wrench is from the maximum-dissipation point of its own hull for its
    own twist: |w_ij − w*_ij| / max_j |w_ij| in the scaled wrench space (0 for associated data).

    points (n, m, 3): recorded wrenches at n configurations; twists_r (n, m, 3) their twists at p_r;
    valid (n, m); scale (3,). Returns the distances of the valid samples of configurations with
    ≥ 4 of them.
    """
    out = []
    for w, v, ok in zip(points, twists_r, valid):
        if ok.sum() < 4:
            continue
        w, v = w[ok] / scale, v[ok]
        size = np.abs(w).max()
        if size == 0:
            continue
        best = dissipating(np.broadcast_to(w, (len(v),) + w.shape), v * scale)
        out.append(np.linalg.norm(w - best, axis=1) / size)
    return np.concatenate(out) if out else np.zeros(0)
