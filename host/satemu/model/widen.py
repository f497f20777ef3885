# SPDX-License-Identifier: BSD-2-Clause
"""Reference model of the port widener (gateware ``MemWiden``): which 128-bit commands a run of
64-bit commands becomes, and what a 64-bit port over a 128-bit memory must read back.

``merge`` gives the pairing, which depends only on the commands' order. How long the widener's
write batch holds a write, and which reads it answers itself, depend on the memory's pace; the
tests check those by their effect: every read returns what ``NarrowMemory`` says, and the wide
memory ends up holding what was written."""

from dataclasses import dataclass


@dataclass(frozen=True)
class WideCmd:
    we: bool
    addr: int            # wide word address: narrow address // 2
    sel: int             # halves: bit 0 the even (low) word, bit 1 the odd (high) word


def merge(cmds: list[tuple[bool, int]]) -> list[WideCmd]:
    """The wide commands for narrow commands ``(we, addr)`` queued back to back: an even word
    followed by the odd word after it, both reads or both writes, share one command; every
    other command is alone, with its half selected."""
    out: list[WideCmd] = []
    i = 0
    while i < len(cmds):
        we, addr = cmds[i]
        if addr % 2 == 0 and i + 1 < len(cmds) and cmds[i + 1] == (we, addr + 1):
            out.append(WideCmd(we, addr // 2, 0b11))
            i += 2
        else:
            out.append(WideCmd(we, addr // 2, 0b10 if addr % 2 else 0b01))
            i += 1
    return out


class NarrowMemory:
    """What a 64-bit port must see: each read returns the last word written to its address
    before it, in command order (0 if never written), whatever the widening did."""

    def __init__(self):
        self.words: dict[int, int] = {}

    def write(self, addr: int, data: int, mask: int = 0xFF):
        old = self.words.get(addr, 0)
        bytes_ = [((data if mask >> b & 1 else old) >> (8 * b)) & 0xFF for b in range(8)]
        self.words[addr] = sum(v << (8 * b) for b, v in enumerate(bytes_))

    def read(self, addr: int) -> int:
        return self.words.get(addr, 0)


class WideMemory:
    """A 128-bit memory with byte enables, as LiteDRAM's native port writes it."""

    def __init__(self):
        self.words: dict[int, int] = {}

    def write(self, addr: int, data: int, mask: int):
        old = self.words.get(addr, 0)
        for b in range(16):
            if mask >> b & 1:
                old = (old & ~(0xFF << (8 * b))) | (data & (0xFF << (8 * b)))
        self.words[addr] = old

    def read(self, addr: int) -> int:
        return self.words.get(addr, 0)
