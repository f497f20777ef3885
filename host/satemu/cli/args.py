# SPDX-License-Identifier: BSD-2-Clause
"""The command line's value types and checks: numbers in range, text not empty, and the files
and directories a command writes, each refused in one line before anything runs."""

from __future__ import annotations

import argparse
import math
import os
import re
import tempfile
from pathlib import Path

from satemu.cli.errors import UsageError

U32_MAX, U64_MAX = (1 << 32) - 1, (1 << 64) - 1
DAY = 86400.0


def whole(lo: int, hi: int, what: str):
    """An argparse ``type``: a whole number in ``lo .. hi``, else ArgumentTypeError (argparse's
    one-line usage error, exit status 2) saying what and which range. Digits beyond 30 are
    refused unread (never in range)."""
    def read(text: str) -> int:
        t = text.strip()
        value = int(t) if re.fullmatch(r"[+-]?[0-9]{1,30}", t) else None
        if value is None or not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{text[:40]!r}: {what}, a whole number in "
                                             f"{lo} .. {hi}")
        return value
    read.__name__ = what
    return read


def seconds(lo: float, hi: float, what: str):
    """An argparse ``type``: a finite number of seconds above ``lo`` and at most ``hi``, else
    ArgumentTypeError (one line, exit status 2) saying what and which range."""
    def read(text: str) -> float:
        try:
            value = float(text) if len(text) <= 40 else math.nan
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and lo < value <= hi):
            raise argparse.ArgumentTypeError(f"{text[:40]!r}: {what}, seconds above {lo:.10g} and "
                                             f"at most {hi:.10g}")
        return value
    read.__name__ = what
    return read


def given(what: str):
    """An argparse ``type``: text that is not empty (nor only blanks), else ArgumentTypeError (one
    line, exit status 2) saying what: an empty value would otherwise pass for the option left
    out (``--out ""`` for the default directory, ``--seeds ""`` for ``--seed``'s one)."""
    def read(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"{text!r}: {what}, not empty")
        return text
    read.__name__ = what
    return read


def output_dir(path: Path, option: str) -> Path:
    """``path`` as the directory a run writes into, made (with its parents) and shown writable by
    creating a file in it, before anything runs whose results would go there; UsageError (one
    line) if it is not a directory or cannot be written."""
    try:
        if path.exists() and not path.is_dir():
            raise UsageError(f"{option} {path}: exists and is not a directory; name a directory "
                             f"for the results")
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".satemu-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise UsageError(f"{option} {path}: cannot write there ({e.strerror or e})") from None
    return path


def output_file(path: Path, option: str) -> Path:
    """``path`` as a file a command writes at its end, checked first: not a directory, its
    directory made if need be, and the file opened for writing (an existing one is left as it is
    until the command replaces it; a new one is removed again); UsageError (one line) if not."""
    try:
        if path.is_dir():
            raise UsageError(f"{option} {path}: a directory; name a file")
        path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_NONBLOCK        # NONBLOCK: a FIFO without a reader refuses
        if os.path.lexists(path):
            os.close(os.open(path, flags | os.O_APPEND | os.O_CREAT))
        else:
            os.close(os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o666))
            os.unlink(path)
    except OSError as e:
        raise UsageError(f"{option} {path}: cannot write there ({e.strerror or e})") from None
    return path
