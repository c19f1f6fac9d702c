"""The media a user can name: shipped datasets and their models, and trained-on-first-use models.

A medium name resolves to, in order: the shipped model ``training/models/NAME.h5``; a model the
user cache holds from an earlier first use; a model trained now on the shipped dataset
``data/NAME.h5`` or, for the RFT presets, on freshly synthesised data, then cached
(:mod:`granular.io.resources`). A path to a model file is loaded as it is.
"""
from __future__ import annotations

import logging
from pathlib import Path

from granular.errors import GranularError
from granular.io.resources import cache_dir, shipped
from granular.learning import model as wm

log = logging.getLogger(__name__)


def media() -> list:
    """Names with a default model: the RFT presets and every shipped dataset."""
    from granular.data.media import MEDIA

    return sorted(set(MEDIA) | {p.stem for p in shipped("data").glob("*.h5")})


def load_model(medium: str) -> wm.WrenchSpaceModel:
    """A medium name or a model file (.h5)."""
    if medium.endswith(".h5") or Path(medium).is_file():
        return wm.load(medium)
    if medium not in media():
        raise GranularError(f"unknown medium {medium!r}; choose one of {', '.join(media())} or a model file")
    for path in (shipped("training") / "models" / f"{medium}.h5", cache_dir() / "models" / f"{medium}.h5"):
        if path.is_file():
            return wm.load(path)
    return _train_and_cache(medium, cache_dir() / "models" / f"{medium}.h5")


def _train_and_cache(medium: str, cache: Path) -> wm.WrenchSpaceModel:
    from granular.data import dataset as wd
    from granular.data.synth import synthesize

    data = shipped("data") / f"{medium}.h5"
    log.warning("no trained model for %r; training one on %s and caching it in %s", medium,
                data if data.is_file() else "RFT data", cache)
    model = wm.fit(wd.read(data) if data.is_file() else synthesize("rft", medium))
    wm.save(model, cache)
    return model
