# SPDX-License-Identifier: BSD-2-Clause
"""The departure queues' formats, which the gateware, the validators and the models share: the
delta-coded queue's entries (``satemu_gw.depdelta``, ``satemu.model.depdelta``) and the ring in
memory's bursts (``satemu_gw.depqueue``, ``satemu.model.depqueue``).

A delta-coded entry is a frame's departure as its distance from the departure before it
(``DELTA_BITS``) and its length (``LENGTH_BITS``, ``max_frame`` written as 0). The validators
keep a frame's serialisation under ``FRAME_SPAN`` cycles and a BoD slot under ``SLOT_SPAN``, so
that every distance fits (``satemu.model.depdelta`` says why).
"""

from __future__ import annotations

__all__ = ["DELTA_BITS", "LENGTH_BITS", "WORD_BITS", "FRAME_SPAN", "SLOT_SPAN", "length_bits",
           "BURST", "STAGE"]

DELTA_BITS = 23
LENGTH_BITS = 11
WORD_BITS = DELTA_BITS + LENGTH_BITS
# On a channel whose queue is delta-coded, a frame's serialisation, (max_len + overhead) x
# (rate_q + (rate_num > 0)) cycles, is under FRAME_SPAN (152 ms at the Versa-5G's 55 MHz: a
# 1542-byte frame at 100 kbit/s takes 123 ms), and a BoD slot under SLOT_SPAN (76 ms).
FRAME_SPAN = (1 << DELTA_BITS) - 1
SLOT_SPAN = 1 << (DELTA_BITS - 1)


def length_bits(max_frame: int) -> bool:
    """Whether lengths up to ``max_frame`` fit an entry (``max_frame`` itself written as 0)."""
    return 1 <= max_frame <= 1 << LENGTH_BITS


# The ring in memory (satemu_gw.depqueue).
BURST = 8     # reads of one burst, at most; one burst at a time
STAGE = 4     # entries waiting for the writer, at most
