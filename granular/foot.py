"""Foot geometry (see :mod:`granular.frames` for the frames it defines)."""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from granular.errors import GranularError
from granular.frames import foot_axis


@dataclass(frozen=True)
class Foot:
    """A cylindrical foot with a flat bottom plate; p_center is the plate's centre.

    radius, length: cylinder size (m). r_offset: distance from p_center up the
    axis to p_r, the point torques are measured about (the paper uses 0.25 m).
    """

    radius: float = 0.05
    length: float = 0.30
    r_offset: float = 0.25

    def __post_init__(self):
        for name, value in asdict(self).items():
            if not (np.isfinite(value) and value > 0):
                raise GranularError(f"foot {name} must be a positive number of metres, got {value!r}")

    def p_r(self, phi):
        """Offset p_r − p_center in F_c for tilt ``phi``."""
        return self.r_offset * foot_axis(phi)

    def attrs(self) -> dict:
        """The geometry as HDF5 attributes (``foot_radius`` …)."""
        return {f"foot_{k}": float(v) for k, v in asdict(self).items()}

    @classmethod
    def from_attrs(cls, attrs) -> "Foot":
        return cls(**{k: float(attrs[f"foot_{k}"]) for k in ("radius", "length", "r_offset")})
