"""Presets for the synthetic media: sampling grids (Zhu et al. 2019, Table I) and RFT scaling.

ζ scales Li et al.'s generic RFT coefficients (α_z(0, π/2) = ζ N/cm³). The
values are chosen, not measured: within the range reported for dry granular
media (about 0.25 N/cm³ for loose poppy seeds up to ~1–2 N/cm³ for dense,
angular grains), with pebbles stiffer than sand as in the paper, and stiff
enough that a RoboSimian-sized robot (≈123 kg on 0.05 m feet) stands within a
few centimetres. The depth grids extend Table I's (sand to 0.07 m, pebbles to
0.045 m) so that a trotting robot, two feet carrying it, stays inside the data.

Pebbles also differ from sand in shape, not only in size: their horizontal
stresses α_x are κ times the generic ones at the same α_z
(:func:`granular.data.rft.with_drag`). The paper's pebbles are pond stones of
0.8–1.0 cm (Zhu et al. 2019, §IV-A); coarse grains resist shearing more than
fine sand does, and a robot sliding with locked joints stops higher on them
(Fig. 10c). With ζ alone (κ = 1) it did the opposite: its feet, shallower on
the stiffer medium, lose more drag (∝ depth², from the foot's side walls) than
lift (∝ depth), so it slid 0.6 m further than on sand.

κ = tan ϕ_pebbles / tan ϕ_sand: drag taken to scale with the medium's friction
coefficient tan ϕ, lift not. That rule is our choice, not a measurement, and so
are the two angles, picked inside the ranges of the typical drained friction
angles tabulated in Das, *Principles of Geotechnical Engineering* (table
"Typical values of drained angle of friction for sands and silts"; its number
varies by edition): sand with rounded grains, medium dense, 30–35° → ϕ_sand =
33°; gravel with some sand, 34–48° → ϕ_pebbles = 40°. κ = 1.292. The window is
narrow, and we measured it (quad-slide, ζ = 2.0, with θ's d at the lowest point,
issue 49; ``python3 docs/pebbles_drag.py 35 38 39 40 41 42``, and ``--dense 35 37``): ϕ_pebbles 35–38° (κ 1.08–1.20) slides at 1.5–1.6 m/s and pitches
over at the slope's break; 39–40° (κ 1.25–1.29) slides ~0.93 m, accelerating
for ~2 s, and stops 0.01–0.02 m above sand; ≥ 41° no longer accelerates after
landing, ≥ 42° slides < 0.5 m. (Before issue 49, with d at p_center, the window
was κ 1.06–1.15, ϕ 34.5–37°, and 35° was taken.) Friction near the slope's tan 0.3 decides between
sliding on and stopping, so the outcome is sensitive to κ; it is not a robust
property of the data alone: with a denser grid (0.05 rad tilts, 5 mm rows), whose
W is closer to RFT's, sand too slides at 1.4 m/s and pitches over.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from granular.errors import GranularError


@dataclass(frozen=True)
class Medium:
    name: str
    zeta: float               # RFT scale, N/cm³ per unit generic α
    depths: tuple             # sampled d (m), Table I
    tilts: tuple              # sampled φ (rad), Table I
    velocity_scale: tuple     # (m/s, m/s, rad/s), §IV-A
    drag: float = 1.0         # κ: α_x relative to Li et al.'s generic shape (1: generic)

    @property
    def coeffs(self) -> dict:
        """The RFT coefficient set (Li et al. 2013 eq. 2) of this medium, before ζ."""
        from granular.data import rft

        return rft.GENERIC if self.drag == 1.0 else rft.with_drag(rft.GENERIC, self.drag)


#: Table I's tilts, extended to 1.5 rad so that a foot lying down stays inside the data, and with
#: 0.1 and 0.2 rad: with d at the lowest point (issue 49), a shallow foot's W changes fastest near
#: upright, where its plate's far rim leaves the medium (at 3 cm, between 0 and 0.3 rad, the RBF
#: missed RFT by 12 % without them, and quad-slide's robot on sand crept instead of sliding and stopping).
_TILTS = (0.0, 0.1, 0.2, 0.3, 0.6, 0.9, 1.2, 1.5)

#: Friction angles (rad) chosen inside Das's tabulated ranges (see the module docstring).
FRICTION_ANGLE = {"sand": np.radians(33.0), "pebbles": np.radians(40.0)}

#: κ of pebbles: tan ϕ_pebbles / tan ϕ_sand ≈ 1.292.
PEBBLES_DRAG = float(np.tan(FRICTION_ANGLE["pebbles"]) / np.tan(FRICTION_ANGLE["sand"]))

MEDIA = {
    "sand": Medium("sand", 1.2, (0.0, -0.01, -0.03, -0.05, -0.07, -0.10, -0.13), _TILTS, (0.02, 0.02, 0.3)),
    "pebbles": Medium("pebbles", 2.0, (0.0, -0.015, -0.03, -0.045, -0.06, -0.08), _TILTS, (0.02, 0.02, 0.3),
                      drag=PEBBLES_DRAG),
}

#: Grid and velocity scale for terramechanics soils (no Table I entry: use sand's).
SOIL_GRID = Medium("soil", 0.0, MEDIA["sand"].depths, MEDIA["sand"].tilts, MEDIA["sand"].velocity_scale)


def medium(name: str) -> Medium:
    try:
        return MEDIA[name]
    except KeyError:
        raise GranularError(f"unknown medium {name!r}; choose one of {', '.join(MEDIA)}") from None
