"""Presets for the synthetic media: sampling grids (Zhu et al. 2019, Table I) and RFT scaling.

ζ scales Li et al.'s generic RFT coefficients (α_z(0, π/2) = ζ N/cm³). The
values are chosen, not measured: within the range reported for dry granular
media (about 0.25 N/cm³ for loose poppy seeds up to ~1–2 N/cm³ for dense,
angular grains), with pebbles stiffer than sand as in the paper, and stiff
enough that a RoboSimian-sized robot (≈123 kg on 0.05 m feet) stands inside
the depth range the paper sampled for each medium.
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import GranularError


@dataclass(frozen=True)
class Medium:
    name: str
    zeta: float               # RFT scale, N/cm³ per unit generic α
    depths: tuple             # sampled d (m), Table I
    tilts: tuple              # sampled φ (rad), Table I
    velocity_scale: tuple     # (m/s, m/s, rad/s), §IV-A


MEDIA = {
    "sand": Medium("sand", 1.2, (0.0, -0.01, -0.03, -0.05, -0.07), (0.0, 0.3, 0.6, 0.9, 1.2, 1.5), (0.02, 0.02, 0.3)),
    "pebbles": Medium("pebbles", 2.0, (0.0, -0.015, -0.03, -0.045), (0.0, 0.3, 0.6, 0.9, 1.2, 1.5), (0.02, 0.02, 0.3)),
}

#: Grid and velocity scale for terramechanics soils (no Table I entry: use sand's).
SOIL_GRID = Medium("soil", 0.0, MEDIA["sand"].depths, MEDIA["sand"].tilts, MEDIA["sand"].velocity_scale)


def medium(name: str) -> Medium:
    try:
        return MEDIA[name]
    except KeyError:
        raise GranularError(f"unknown medium {name!r}; choose one of {', '.join(MEDIA)}") from None
