# SPDX-License-Identifier: BSD-2-Clause
"""The TOML tables of link profiles and timelines, read with errors that name the key's path in
one line (``ProfileError``)."""

from __future__ import annotations

import re
from fractions import Fraction

from satemu.base.units import UnitError, check_magnitude, parse_size, shown

__all__ = ["ProfileError", "Table", "toml_key"]


class ProfileError(ValueError):
    """A profile that cannot be loaded: the message starts with the field's path."""


def toml_value(v) -> str:
    """``v`` (a value TOML reads back as it is: bool, int, float, str, list, dict) as TOML
    text, a dict as an inline table; ProfileError for anything else."""
    import json
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)            # a TOML basic string: JSON's escapes are TOML's
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{toml_key_bare(k)} = {toml_value(x)}" for k, x in v.items()) \
            + "}"
    raise ProfileError(f"{v!r}: a value a profile cannot hold")


def toml_key_bare(k: str) -> str:
    """``k`` as a TOML key: bare if it may be, else quoted."""
    import json
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)


def toml_key(key: str) -> str:
    """A TOML key for a message's path: as written if a bare key, else quoted (one line)."""
    return key if re.fullmatch(r"[A-Za-z0-9_-]{1,40}", key) else shown(key)


class Table:
    """One TOML table of a profile, read with errors that name the key's path."""

    def __init__(self, path: str, table, known: set[str], what: str):
        if not isinstance(table, dict):
            raise ProfileError(f"{path}: expected a table of {what}")
        unknown = set(table) - known
        if unknown:
            raise ProfileError(f"{path}.{toml_key(sorted(unknown)[0])}: unknown setting; "
                               f"known ones are {', '.join(sorted(known))}")
        self.path, self.table = path, table

    def get(self, key, parse, default):
        if key not in self.table:
            return default
        try:
            return parse(self.table[key])
        except UnitError as e:
            raise ProfileError(f"{self.path}.{key}: {e}") from None

    def whole(self, key, default):
        value = self.table.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ProfileError(f"{self.path}.{key}: expected a whole number, got "
                               f"{shown(value)}")
        return self.number(key, value)

    def number(self, key, value):
        """``value`` of ``key`` if ``satemu.base.units.check_magnitude`` takes it."""
        try:
            return check_magnitude(value)
        except UnitError as e:
            raise ProfileError(f"{self.path}.{key}: {e}") from None

    def flag(self, key, default: bool) -> bool:
        value = self.table.get(key, default)
        if not isinstance(value, bool):
            raise ProfileError(f"{self.path}.{key}: expected true or false, got {shown(value)}")
        return value

    def bytes(self, key, default, bare: bool = False):
        """A size in whole bytes; with ``bare``, a plain whole number is bytes too."""
        if bare and isinstance(self.table.get(key), int) and not isinstance(self.table[key], bool):
            return self.number(key, self.table[key])
        value = self.get(key, parse_size, default)
        if value is not None and Fraction(value).denominator != 1:
            raise ProfileError(f"{self.path}.{key}: must be a whole number of bytes")
        return value if value is None else int(value)
