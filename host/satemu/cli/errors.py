# SPDX-License-Identifier: BSD-2-Clause
"""The command line's errors: the usage error, and every expected error as one line."""

from __future__ import annotations

import os
import sys

from satemu.base.checkout import CheckoutError
from satemu.quic.engine import EngineError
from satemu.sweep.errors import SweepError
from satemu.box.device import DeviceError
from satemu.box.flash import FlashError
from satemu.base.params import ConfigError
from satemu.link.profile import ProfileError
from satemu.base.units import UnitError


class UsageError(Exception):
    """A command line that cannot be carried out as given (an option missing, empty, out of range
    or contradicting another): ``main`` prints it as one line and exits with status 2, as
    argparse does for its own usage errors."""


# The errors a verb raises for what it was given (a bad option, profile, file or box): each is
# printed as one line, no traceback.
EXPECTED = (UsageError, ProfileError, UnitError, ConfigError, DeviceError, FlashError,
            CheckoutError, EngineError, SweepError)


def run(func, args) -> int:
    """``func(args)``'s status: 0 on success, 2 after a one-line error on stderr for anything
    expected (:data:`EXPECTED`, or a file or directory that cannot be read or written), 130 on
    Ctrl-C, 0 when the output's reader stopped reading."""
    try:
        return func(args)
    except EXPECTED as e:
        print(f"satemu: {one_line(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:            # output piped into a command that stopped reading
        sys.stdout = open(os.devnull, "w")
        return 0
    except OSError as e:               # a file or directory that cannot be read or written
        where = f"{e.filename}: " if e.filename else ""
        print(f"satemu: {where}{e.strerror or one_line(e)}", file=sys.stderr)
        return 2


def one_line(e: Exception) -> str:
    """An error's message on one line: its lines joined."""
    return "; ".join(line.strip() for line in str(e).splitlines() if line.strip()) or repr(e)
