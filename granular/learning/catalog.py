"""The media a user can name: shipped datasets and their models, and trained-on-first-use models.

A medium name resolves to, in order: the shipped model ``training/models/NAME.h5``; a model the
user cache holds from an earlier first use; a model trained now on the shipped dataset
``data/NAME.h5`` or, for the RFT presets, on freshly synthesised data, then cached
(:mod:`granular.io.resources`). A path to a model file is loaded as it is.

Planar and 3D (6-axis) media are named apart: a 3D medium's name ends in ``3d`` (``sand3d``:
3D-RFT sand, :mod:`granular.data.rft3d`), and each kind's commands list and load only their own.
"""
from __future__ import annotations

import logging
from pathlib import Path

from granular.errors import GranularError
from granular.io.resources import cache_dir, shipped
from granular.learning import model as wm

log = logging.getLogger(__name__)
SUFFIX_3D = "3d"


def media(kind: str = "planar") -> list:
    """Names with a default model of the wrench space ``kind`` ('planar' or '3d'): the RFT presets
    (``sand``; ``sand3d``) and every shipped dataset of that kind."""
    from granular.data.media import MEDIA

    presets = {name + SUFFIX_3D for name in MEDIA} if kind == "3d" else set(MEDIA)
    from granular.io.kinds import wrench_space

    return sorted(presets | {p.stem for p in shipped("data").glob("*.h5") if wrench_space(p) == kind})


def load_model(medium: str, kind: str = "planar"):
    """A medium name or a model file (.h5) of the wrench space ``kind``: a planar
    :class:`~granular.learning.model.WrenchSpaceModel` or a 3D
    :class:`~granular.learning.model3d.WrenchSpaceModel3D`."""
    loader = _loader(kind)
    if medium.endswith(".h5") or Path(medium).is_file():
        return loader.load(medium)
    if medium not in media(kind):
        other = "3d" if kind == "planar" else "planar"
        hint = f" ({medium!r} is a {other} medium)" if medium in media(other) else ""
        raise GranularError(f"unknown {'3D ' if kind == '3d' else ''}medium {medium!r}{hint}; choose one of "
                            f"{', '.join(media(kind))} or a model file")
    for path in (shipped("training") / "models" / f"{medium}.h5", cache_dir() / "models" / f"{medium}.h5"):
        if path.is_file():
            return loader.load(path)
    return _train_and_cache(medium, kind, cache_dir() / "models" / f"{medium}.h5")


def _loader(kind: str):
    if kind == "3d":
        from granular.learning import model3d

        return model3d
    return wm


def _train_and_cache(medium: str, kind: str, cache: Path):
    from granular.data import dataset as wd
    from granular.data.synth import synthesize

    data = shipped("data") / f"{medium}.h5"
    log.warning("no trained model for %r; training one on %s and caching it in %s", medium,
                data if data.is_file() else "RFT data", cache)
    loader = _loader(kind)
    if data.is_file():
        ds = wd.read(data, kind=kind)
    else:
        ds = synthesize("rft3d", medium[:-len(SUFFIX_3D)]) if kind == "3d" else synthesize("rft", medium)
    model = loader.fit(ds)
    loader.save(model, cache)
    return model
