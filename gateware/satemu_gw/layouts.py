# SPDX-License-Identifier: BSD-2-Clause
"""Payload layouts and interface signatures shared by the channel's components."""

from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from satemu.base.params import BEAT
from satemu.base.terminals import NO_TERMINAL, TERMINAL_BITS
from satemu.base.regmap import ADDR_BITS, CFG_FIELDS

# One 64-bit beat of a frame (satemu.base.params.BEAT, where its fields are described).
Beat = data.StructLayout(dict(BEAT))

# Every profile field, as the channel consumes it after COMMIT.
Config = data.StructLayout({f.name: f.width for f in CFG_FIELDS})

# A frame's terminal in the descriptors, headers and queue entries: TERMINAL_BITS, a table's
# index or NO_TERMINAL (satemu.base.terminals); 0 on a channel without terminals.

# A frame as the ingress saw it, when its last beat was accepted.
IngressDesc = data.StructLayout({
    "arrival": 64,   # cycle of the last beat
    "length": 16,    # bytes, saturating
    "err": 1,        # bad FCS or malformed byte count
    "stored": 9,     # beats held in the ingress FIFO (longer frames are truncated there)
    "freed": 32,     # memory words freed by egress before the arrival cycle (mod 2^32), of
                     # the frame's terminal's share where the terminals have their own
    "freed_all": 32,  # ... of the whole region
    "terminal": TERMINAL_BITS,   # whose frame it is (satemu_gw.classify), if ``known``
    "known": 1,
    "ecn": 3,        # how ECN marking may mark it (satemu_gw.ecnparse; 0: it may not)
})

# The admission engine's verdict on a frame, for the memory writer.
Decision = data.StructLayout({
    "keep": 1,
    "bod": 1,        # BoD: store the beats now, the header when the slot scheduler releases it
    "stored": 9,     # beats to take from the ingress FIFO (written if keep, else discarded)
    "egress": 48,    # scheduled egress start cycle, mod 2^48
    "length": 16,
    "offset": 32,    # header word offset within the memory region
    "terminal": TERMINAL_BITS,   # for its header (NO_TERMINAL: no one's)
    "flip": 1,       # corruption (satemu_gw.corrupt): the writer flips bit ``flip_bit``
    "flip_bit": 15,  # ... of the frame (bit b % 8 of byte b // 8)
    "dup": 1,        # duplication (satemu_gw.duplicate): the next decision is this frame's copy,
                     # so the writer keeps its beats
    "copy": 1,       # ... this is the copy: its beats come from the writer's, not the ingress
    "mark": 1,       # ECN marking (satemu_gw.ecnmark): the writer marks the frame CE
    "ecn": 3,        # ... a frame of this kind (satemu.model.ecn.ecn_kind)
})

# A frame in the bottleneck queue: its departure cycle (mod 2^48) and length, one memory word
# where it spills (satemu_gw.depqueue).
QueueEntry = data.StructLayout({"departure": 48, "length": 12, "terminal": TERMINAL_BITS})


def SpillWrite(addr_width):
    """A departure time on its way to memory: the word and its address."""
    return data.StructLayout({"addr": addr_width, "data": 64})


def SpillRead(addr_width):
    """A read of a departure time from memory."""
    return data.StructLayout({"addr": addr_width})


def frame_beats(length):
    """``satemu.base.params.frame_beats`` in gateware: the 64-bit beats of a frame of ``length``
    bytes."""
    return (length + 7) >> 3


def frame_words(length):
    """``satemu.base.params.frame_words`` in gateware: the memory words a stored frame occupies."""
    return frame_beats(length) + 1


# Memory header word: the first word of every stored frame (lengths up to 2048, max_frame).
Header = data.StructLayout({"length": 12, "terminal": TERMINAL_BITS, "egress": 48})

# The playout descriptor of a frame waiting for egress: its header word.
PlayoutDesc = Header

# A released frame's words in the region (a channel whose terminals have shares of their own):
# its header word's offset, its words, and whose share it lies in (satemu_gw.writer, reader).
Span = data.StructLayout({"offset": 32, "words": 9, "terminal": TERMINAL_BITS})


def mem_cmd_layout(addr_width):
    return data.StructLayout({"we": 1, "addr": addr_width})


WData = data.StructLayout({"data": 64, "we": 8})


def MemPortSignature(addr_width):
    """A memory port shaped like a LiteDRAM native port (64-bit words, in-order read data)."""
    return wiring.Signature({
        "cmd": Out(stream.Signature(mem_cmd_layout(addr_width))),
        "wdata": Out(stream.Signature(WData)),
        "rdata": In(stream.Signature(64)),
    })


# A 32-bit word-addressed register bus (master's view). Reads return data one cycle after addr.
RegBusSignature = wiring.Signature({
    "addr": Out(ADDR_BITS),
    "w_en": Out(1),
    "w_data": Out(32),
    "r_data": In(32),
})


WideWData = data.StructLayout({"data": 128, "we": 16})


def WideMemPortSignature(addr_width):
    """A 128-bit LiteDRAM native port (the DDR3 controller's own width on the boards): commands,
    write data in command order when the controller asks for it, read data in command order
    with no backpressure."""
    return wiring.Signature({
        "cmd": Out(stream.Signature(mem_cmd_layout(addr_width))),
        "wdata": Out(stream.Signature(WideWData)),
        "rdata": In(stream.Signature(128)),
    })
