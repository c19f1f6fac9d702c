"""Presets for the synthetic media: sampling grids (Zhu et al. 2019, Table I) and RFT scaling.

ζ scales Li et al.'s generic RFT coefficients (α_z(0, π/2) = ζ N/cm³). The
values are chosen, not measured: within the range reported for dry granular
media (about 0.25 N/cm³ for loose poppy seeds up to ~1–2 N/cm³ for dense,
angular grains), with pebbles stiffer than sand as in the paper, and stiff
enough that a RoboSimian-sized robot (≈123 kg on 0.05 m feet) stands within a
few centimetres. The depth grids extend Table I's (sand to 0.07 m, pebbles to
0.045 m) so that a trotting robot, two feet carrying it, stays inside the data.
"""
from __future__ import annotations

from dataclasses import dataclass

from granular.errors import GranularError


@dataclass(frozen=True)
class Medium:
    name: str
    zeta: float               # RFT scale, N/cm³ per unit generic α
    depths: tuple             # sampled d (m), Table I
    tilts: tuple              # sampled φ (rad), Table I
    velocity_scale: tuple     # (m/s, m/s, rad/s), §IV-A


#: Table I's tilts, extended to 1.5 rad so that a foot lying down stays inside the data.
_TILTS = (0.0, 0.3, 0.6, 0.9, 1.2, 1.5)

MEDIA = {
    "sand": Medium("sand", 1.2, (0.0, -0.01, -0.03, -0.05, -0.07, -0.10, -0.13), _TILTS, (0.02, 0.02, 0.3)),
    "pebbles": Medium("pebbles", 2.0, (0.0, -0.015, -0.03, -0.045, -0.06, -0.08), _TILTS, (0.02, 0.02, 0.3)),
}

#: Grid and velocity scale for terramechanics soils (no Table I entry: use sand's).
SOIL_GRID = Medium("soil", 0.0, MEDIA["sand"].depths, MEDIA["sand"].tilts, MEDIA["sand"].velocity_scale)


def medium(name: str) -> Medium:
    try:
        return MEDIA[name]
    except KeyError:
        raise GranularError(f"unknown medium {name!r}; choose one of {', '.join(MEDIA)}") from None
