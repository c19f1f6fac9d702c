"""The maximum-dissipation contact QP (Zhu et al. 2019, eq. 2): its assembly.

In reduced coordinates there are no joint impulses c_j, so eq. (2) reads

    min_c  v⁺ᵀ M v⁺ + Σ_i (J_p,i v⁺)ᵀ M_g,i (J_p,i v⁺)
    s.t.   A_i(θ_i) c_i ≤ h b_i(θ_i)      for every foot i in contact,
           v⁺ = v + M⁻¹ (J_tᵀ c + h (k + J_uᵀ u)),

with c_i the contact impulse (N·s) of foot i in F_r. The paper writes the
constraint h A c ≤ b; since W bounds forces and c is an impulse (force × h),
the consistent form is A c ≤ h b, which is what is solved here.

Substituting v⁺ gives the reduced QP over contact impulses only
(:mod:`granular.contact.reduction`):
min ½ cᵀ P c + gᵀ c with P = Bᵀ H B, g = Bᵀ H v_free, B = M⁻¹ J_tᵀ,
H = M + Σ J_pᵀ M_g J_p, v_free = v + M⁻¹ h (k + J_uᵀ u). The origin c = 0 is
always feasible (b ≥ 0), so a solver failure is a bug, reported with the step
and contact. The solvers are in :mod:`granular.contact.solvers`, the native one's
kernels in :mod:`granular.contact.active_set`.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from granular.compiled import kernel

from granular.contact.reduction import one_branch, reduce_qp
from granular.errors import GranularError


class SolverError(GranularError):
    """The contact QP was not solved (its origin is always feasible, so this is a bug)."""


@dataclass
class ContactQP:
    """One step's QP. Jt: (3N, n) stacked F_r Jacobians of the N feet in contact;
    Jp: (3N, n) p_center Jacobians; Mg: (3N,) grain masses; A: (ΣK_i, 3N) block-diagonal
    constraints, ub: (ΣK_i,) = h b_i stacked; rows: (N + 1,) where each foot's block starts."""

    M: np.ndarray
    v: np.ndarray
    impulse: np.ndarray      # h (k + J_uᵀ u)
    Jt: np.ndarray
    Jp: np.ndarray
    Mg: np.ndarray
    A: np.ndarray
    ub: np.ndarray
    rows: np.ndarray
    #: (dofs, starts) of the tree's branches (:attr:`MultiBody.branches`); None: M has no known structure
    branches: tuple | None = None

    @cached_property
    def _reduced(self):
        dofs, starts = self.branches if self.branches is not None else one_branch(len(self.v))
        return reduce_qp(self.M, self.Jt, self.Jp, self.Mg, self.v, self.impulse, dofs, starts)

    @property
    def reduced(self):
        """(P, g) of the reduced QP ½ cᵀ P c + gᵀ c."""
        return self._reduced[0], self._reduced[1]

    @property
    def B(self):
        """M⁻¹ J_tᵀ: the velocity change per unit contact impulse."""
        return self._reduced[2]

    @property
    def v_free(self):
        """v⁺ without contact impulses."""
        return self._reduced[3]

    @property
    def c_free(self):
        """The impulses if no constraint binds: the minimiser of ½ cᵀ P c + gᵀ c (P made strictly convex)."""
        return self._reduced[4]

    def velocity(self, c):
        """v⁺ for contact impulses c."""
        return self.v_free + self.B @ c

    def work(self, c) -> float:
        """Work (J) the impulses c do on the bodies at the velocity they produce."""
        return float(c @ (self.Jt @ self.velocity(c)))

    def stacked_constraints(self):
        """(A, ub): all feet's constraints A c ≤ ub."""
        return self.A, self.ub

    def excess(self, c):
        """A c − ub."""
        return block_excess(self.A, c, self.ub, self.rows)

    def slack_max(self, c):
        """Per foot: max over its facets of A_i c_i − ub_i (≥ 0 means on the boundary of W)."""
        return np.maximum.reduceat(self.excess(c), self.rows[:-1])


def stack_blocks(A_list, ub_list):
    """Block-diagonal (A, ub, rows) from per-foot constraints A_i (K_i, 3) and ub_i (K_i,)."""
    rows = np.concatenate([[0], np.cumsum([len(A) for A in A_list])]).astype(np.int64)
    A = np.zeros((rows[-1], 3 * len(A_list)))
    for i, block in enumerate(A_list):
        A[rows[i]:rows[i + 1], 3 * i:3 * i + 3] = block
    return A, np.concatenate(ub_list) if ub_list else np.zeros(0), rows


@kernel("f8[:, ::1], f8[::1], f8[::1], i8[::1]")
def block_excess(A, c, ub, rows):
    """A c − ub for a block-diagonal A, foot i's facets rows[i]:rows[i + 1] acting on c[3i:3i + 3]
    alone: O(facets), where the dense product is O(facets × 3N) (0.4 M flops at 64 feet)."""
    out = np.empty(len(ub))
    for f in range(len(rows) - 1):
        j = 3 * f
        for r in range(rows[f], rows[f + 1]):
            out[r] = A[r, j] * c[j] + A[r, j + 1] * c[j + 1] + A[r, j + 2] * c[j + 2] - ub[r]
    return out
