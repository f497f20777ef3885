# SPDX-License-Identifier: BSD-2-Clause
"""The satemu source checkout, for ``flash`` without ``--bitstream``, which builds from it.

The host package works wherever it is installed for everything a real board needs (profiles,
``show``, ``load``, ``stats``, ``bod-trace``, ``flash`` of a given bitstream, ``quic
--realtime``). The simulated board comes with a checkout's ``sim`` distribution, which registers
the ``board`` engine (``satemu.quic.engine``); a bitstream is built from the checkout this package
was installed from in editable mode (``make`` does that), or the one ``SATEMU_REPO`` names.
Without one each stops with a one-line error that says so.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CheckoutError", "checkout"]

# What makes a directory a satemu checkout: the parts the simulated board is built from.
MARKERS = ("hw/satemu_soc.py", "sim/board.py", "firmware/Makefile", "gateware/satemu_gw")


class CheckoutError(RuntimeError):
    """A verb that builds from the repository found none; the message says what to do."""


def _is_checkout(path: Path) -> bool:
    return all((path / marker).exists() for marker in MARKERS)


BUILDS_THE_BOARD = "it builds the simulated board from its gateware, hw/, firmware/ and sim/"


def checkout(what: str, why: str = BUILDS_THE_BOARD) -> Path:
    """The checkout's root: ``SATEMU_REPO`` if set, else the one this package lies in. ``what``
    names the verb and ``why`` what it takes from the checkout, for the error when there is
    none."""
    named = os.environ.get("SATEMU_REPO")
    root = Path(named) if named else Path(__file__).resolve().parents[3]
    if _is_checkout(root):
        return root
    where = (f"SATEMU_REPO={named} is not one" if named
             else "this satemu is installed without one; set SATEMU_REPO to a checkout")
    raise CheckoutError(f"{what} needs a satemu source checkout ({why}), and {where}")
