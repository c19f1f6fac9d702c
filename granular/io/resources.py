"""Where the shipped files are, and where generated files go.

Shipped: the repository's top-level ``data/`` (datasets), ``training/`` (jobs and trained models)
and ``sim/`` (scenarios and robots). A wheel carries them inside the package as
``granular/shipped/…`` (pyproject's force-include); an editable install reads them from the
checkout. Generated: models trained on first use go to the user cache (``$GRANULAR_CACHE``, else
``$XDG_CACHE_HOME/granular``, else ``~/.cache/granular``), never into the package or the checkout.
"""
from __future__ import annotations

import os
from importlib import resources
from pathlib import Path


def shipped(folder: str) -> Path:
    """The shipped folder ``data``, ``training`` or ``sim``."""
    inside = Path(str(resources.files("granular"))) / "shipped" / folder
    if inside.is_dir():
        return inside
    return Path(__file__).resolve().parents[2] / folder  # a checkout, installed editable


def cache_dir() -> Path:
    """The user cache of generated files (not created until something is written)."""
    if os.environ.get("GRANULAR_CACHE"):
        return Path(os.environ["GRANULAR_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "granular"
