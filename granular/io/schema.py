"""One typed-schema layer for the project's TOML and JSON files (msgspec).

Each file kind declares its schema as :class:`Schema` structs next to the code that uses it
(scenarios, robot specs, training jobs, column mappings, run sidecars). :func:`parse` checks a
parsed document against it: wrong types, out-of-range or non-finite numbers, unknown keys and
missing keys all become one :class:`~granular.errors.GranularError` naming the file and the key
path (``sim/x.toml: robot.mass: expected a number > 0``).
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated

import msgspec

from granular.errors import GranularError

LIMIT = 1e12  # bounds that also reject inf and nan (a comparison with nan is false)
#: A finite number; a positive one; a non-negative one; a whole number ≥ 1.
Finite = Annotated[float, msgspec.Meta(ge=-LIMIT, le=LIMIT)]
Positive = Annotated[float, msgspec.Meta(gt=0.0, le=LIMIT)]
NonNegative = Annotated[float, msgspec.Meta(ge=0.0, le=LIMIT)]
Count = Annotated[int, msgspec.Meta(ge=1, le=10**9)]


class Schema(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Base of every file schema: unknown keys are errors; parsed values are immutable."""


def _plain(text: str) -> str:
    """msgspec's wording, for a user: 'Expected `float` > 0.0' → 'expected a number > 0'."""
    text = re.sub(r"`(\w+) \| null`", r"`\1`", text)  # an optional value: say what it should be
    text = re.sub(rf"(>=|<=) -?{LIMIT:.1f}", "finite", text)
    text = text.replace("`float` finite", "a finite number").replace("`float`", "a number")
    text = text.replace("`int`", "a whole number").replace("`str`", "a string").replace("`array`", "a list")
    text = text.replace("`object`", "a table").replace("`bool`", "true or false")
    text = re.sub(r"(\d+)\.0\b", r"\1", text)
    return text[:1].lower() + text[1:]


def error_text(exc: msgspec.ValidationError, choices: dict | None = None) -> str:
    """'key.path: what was wrong' from a msgspec error; ``choices`` maps key paths to their options."""
    text = str(exc)
    what, _, at = text.partition(" - at ")
    at = at.strip("`")
    key = re.search(r"`\$([^`]*)`", text)
    if at.startswith("key"):  # a bad key of a table: '`key` in `$.units`'
        where = key.group(1).lstrip(".") if key else ""
        what = f"{_plain(what)} as a key"
    else:
        where = at.lstrip("$").lstrip(".")
        what = _plain(what)
    options = (choices or {}).get(re.sub(r"\[\d+\]", "[]", where))
    if options:
        what += f"; choose {', '.join(options)}"
    text = f"{where}: {what}" if where else what
    return re.sub(r"[\x00-\x1f\x7f]", lambda m: repr(m.group())[1:-1], text)  # keys may hold newlines


def parse(raw, schema: type, where, choices: dict | None = None):
    """``raw`` (a parsed TOML/JSON document) as ``schema``, or one clear error naming ``where``."""
    try:
        return msgspec.convert(raw, schema)
    except msgspec.ValidationError as exc:
        raise GranularError(f"{where}: {error_text(exc, choices)}") from None


def read_document(path, what: str) -> dict:
    """A TOML or JSON file (by suffix) as plain data, with one clear error for a missing,
    undecodable or malformed file."""
    import tomllib

    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise GranularError(f"{path}: no such {what}") from None
    except IsADirectoryError:
        raise GranularError(f"{path}: is a directory, not a {what}") from None
    except UnicodeDecodeError as exc:
        raise GranularError(f"{path}: not UTF-8 text (byte {exc.start}); save the {what} as UTF-8") from None
    try:
        return json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise GranularError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'TOML'} ({exc})") from None


def load(path, schema: type, what: str, choices: dict | None = None):
    """Read a TOML/JSON file and check it against ``schema``."""
    return parse(read_document(path, what), schema, path, choices)
