# SPDX-License-Identifier: BSD-2-Clause
"""What the lab console keeps in its data folder, and the names a client gives it: saved
profiles (``profiles/NAME.toml``), the files they name (``files/NAME``: traces, jitter tables,
demand traces) and saved scenarios (``scenarios/NAME.toml``). A client names each by a bare
name (``NAME``), never a path."""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path

from satemu.base.distributions import NAMES as DISTRIBUTIONS

# A name a client gives a saved profile, scenario or file: no path in it.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# Keys of a profile that name a file, found anywhere in its tables.
FILE_KEYS = ("trace", "file", "jitter_distribution")


def named_files(text: str) -> list[tuple[str, str]]:
    """(field, value) of every file profile ``text`` names (FILE_KEYS, a jitter distribution's
    built-in name left out); none where the text is not TOML (its parser says why)."""
    try:
        doc = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError, RecursionError):
        return []
    out = []

    def walk(node, path):
        if isinstance(node, dict):
            for k, v in node.items():
                where = f"{path}.{k}" if path else k
                if k in FILE_KEYS and isinstance(v, str) and v not in DISTRIBUTIONS:
                    out.append((where, v))
                else:
                    walk(v, where)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{path}[{i}]")
    walk(doc, "")
    return out


def saved_file(folder: Path, name: str, suffix: str = "") -> Path | None:
    """``folder/name`` + ``suffix`` (a saved profile's or scenario's ``.toml``) if ``name`` is
    a bare name (NAME, as a client gives it) and that is a file there, else None."""
    if not isinstance(name, str) or not NAME.fullmatch(name) or name.endswith(".tmp"):
        return None
    path = folder / f"{name}{suffix}"
    return path if path.is_file() else None


def copy_profile(profiles: Path, files: Path, name: str, into: Path) -> Path:
    """Saved profile ``name`` copied into folder ``into`` with the files it names beside it,
    as a profile file finds them (``satemu.link.profile.load_profile``); its copy's path."""
    src = saved_file(profiles, name, ".toml")
    if src is None:
        raise FileNotFoundError(name)
    into.mkdir(parents=True, exist_ok=True)
    text = src.read_text(errors="replace")
    for _, ref in named_files(text):
        found = saved_file(files, ref)
        if found is not None:
            shutil.copyfile(found, into / ref)
    dst = into / f"{name}.toml"
    dst.write_text(text)
    return dst


def write_atomic(path: Path, data: bytes | str) -> None:
    """``data`` into file ``path``, whole or not at all: written aside (``.NAME.tmp``, a name
    no client can give), then renamed over the old one; its folder made if need be."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    if isinstance(data, str):
        tmp.write_text(data)
    else:
        tmp.write_bytes(data)
    tmp.replace(path)


def save_toml(folder: Path, name: str, text: str) -> None:
    """``text`` saved as ``folder/name.toml`` (``write_atomic``)."""
    write_atomic(folder / f"{name}.toml", text)
