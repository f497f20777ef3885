# SPDX-License-Identifier: BSD-2-Clause
"""The firmware's profile checks, as a Python reference: the C firmware (firmware/app/fw.c) must
return the same verdict for every profile; tests/vectors/profiles.json pins both to it.

Checks run in a fixed order and the first failure is the verdict, with the field's index in
``protocol.PROFILE_FIELDS``, its value and the range it must lie in; after the fields, the
delay line's size (BUDGET), then its throughput (THROUGHPUT).
"""

from __future__ import annotations

from dataclasses import dataclass

from .channel_model import ChannelParams, ChannelRegs, delay_line_budget, delay_line_traffic
from .protocol import CHANNEL_RETURN, PROFILE_FIELDS, Status
from .regmap import BOD_BG_LEVELS, BOD_ENABLE, BOD_LATENCY_MAX, BOD_RATE_ONE

INDEX = {f.name: i for i, f in enumerate(PROFILE_FIELDS)}
U64_MAX = (1 << 64) - 1


@dataclass(frozen=True)
class Limits:
    """What the firmware knows about its hardware (reported by HELLO)."""
    f_clk: int
    mem_words: int
    port_bps: int = 1_000_000_000
    params: ChannelParams = ChannelParams()
    bod_mask: int = 1 << CHANNEL_RETURN     # channels with a BoD block (struct satemu_hw)
    mem_wpc: int = 0        # delay-line words per 65536 cycles a channel is guaranteed; 0: no limit


@dataclass(frozen=True)
class Verdict:
    status: Status
    field: int = 0
    value: int = 0
    lo: int = 0
    hi: int = 0

    def explain(self) -> str:
        if self.status == Status.BAD_FIELD:
            name = PROFILE_FIELDS[self.field].name
            if name.startswith("bod_bg") and name != "bod_bg_count":
                return (f"{name}={self.value:#x}: a background level is at most "
                        f"{self.hi & 0xFFFF} slots (bits 15..0) for at least 1 superframe "
                        f"(bits 31..16)")
            return f"{name}={self.value} is outside {self.lo} .. {self.hi}"
        if self.status == Status.BUDGET:
            return f"the delay line needs {self.value} words, the channel has {self.hi}"
        if self.status == Status.THROUGHPUT:
            return (f"the profile's rate needs up to {self.value} words per 65536 cycles of "
                    f"delay-line bandwidth, the board guarantees {self.hi} per channel (both "
                    f"channels busy): a lower rate fits (with BoD, a slower carrier; an "
                    f"unshaped channel counts at the port's line rate), and so may a longer "
                    f"minimum frame or a larger overhead")
        return self.status.name


def validate(fields: dict[str, int], lim: Limits, channel: int) -> Verdict:
    """Verdict on a profile for ``channel``, given as register values (every name of
    PROFILE_FIELDS)."""
    p = lim.params

    def bad(name, lo, hi):
        return Verdict(Status.BAD_FIELD, INDEX[name], fields[name], lo, hi)

    for f in PROFILE_FIELDS:
        if not 0 <= fields[f.name] < 1 << f.width:
            return bad(f.name, 0, (1 << f.width) - 1)
    v = fields
    if v["loss_mode"] > 2:
        return bad("loss_mode", 0, 2)
    if v["rate_den"] < 1:
        return bad("rate_den", 1, (1 << 32) - 1)
    if v["rate_num"] >= v["rate_den"]:
        return bad("rate_num", 0, v["rate_den"] - 1)
    if v["rate_q"] == 0 and v["rate_num"] and 8 * v["rate_num"] < v["rate_den"]:
        return bad("rate_num", (v["rate_den"] + 7) // 8, v["rate_den"] - 1)   # <= 8 bytes/cycle
    if not 1 <= v["min_len"] <= v["max_len"]:
        return bad("min_len", 1, v["max_len"])
    if v["max_len"] > p.max_frame:
        return bad("max_len", v["min_len"], p.max_frame)
    if not 1 <= v["queue_frames"] <= p.queue_depth:
        return bad("queue_frames", 1, p.queue_depth)
    if v["queue_bytes"] < v["min_len"]:
        return bad("queue_bytes", v["min_len"], (1 << 32) - 1)
    if v["bod_flags"] & BOD_ENABLE:
        verdict = _validate_bod(v, lim, channel, bad)
        if verdict:
            return verdict
    regs = ChannelRegs(**v, mem_base=0, mem_size=lim.mem_words)
    need = delay_line_budget(regs, p, lim.f_clk, lim.port_bps)
    if need > lim.mem_words:
        return Verdict(Status.BUDGET, 0, need, 0, lim.mem_words)
    return check_throughput(regs, lim.f_clk, lim.port_bps, lim.mem_wpc) or Verdict(Status.OK)


def check_throughput(regs: ChannelRegs, f_clk: int, port_bps: int,
                     mem_wpc: int) -> Verdict | None:
    """THROUGHPUT when the delay-line words per 65536 cycles the channel can demand
    (``delay_line_traffic``, num / den) exceed ``mem_wpc``, exactly: num > mem_wpc x den. The
    verdict's value is the demand rounded up (at most 2^64 - 1), its hi ``mem_wpc``. A
    ``mem_wpc`` of 0 means the board does not limit it."""
    if not mem_wpc:
        return None
    num, den = delay_line_traffic(regs, f_clk, port_bps)
    if num <= mem_wpc * den:
        return None
    need = min((num + den - 1) // den, U64_MAX) if den else U64_MAX
    return Verdict(Status.THROUGHPUT, 0, need, 0, mem_wpc)


def _validate_bod(v: dict[str, int], lim: Limits, channel: int, bad) -> Verdict | None:
    """The BoD fields: the rules of satemu.bod_model.check_bod, in its order."""
    if not lim.bod_mask >> channel & 1:
        return bad("bod_flags", 0, 0)
    if v["bod_slot_cycles"] < 32:
        return bad("bod_slot_cycles", 32, (1 << 32) - 1)
    if v["bod_slots"] < 1:
        return bad("bod_slots", 1, 0xFFFF)
    if v["bod_slot_bytes"] < 1:
        return bad("bod_slot_bytes", 1, 0xFFFF)
    carrier = v["bod_slots"] * BOD_RATE_ONE
    for name in ("bod_cra", "bod_rbdc_max"):
        if v[name] > carrier:
            return bad(name, 0, carrier)
    if v["bod_req_period"] < 1:
        return bad("bod_req_period", 1, 0xFFFF)
    if not 1 <= v["bod_latency"] <= BOD_LATENCY_MAX:
        return bad("bod_latency", 1, BOD_LATENCY_MAX)
    if not 1 <= v["bod_bg_count"] <= BOD_BG_LEVELS:
        return bad("bod_bg_count", 1, BOD_BG_LEVELS)
    for i in range(v["bod_bg_count"]):
        level = v[f"bod_bg{i}"]
        # slots (bits 15..0) at most bod_slots, for superframes (bits 31..16) at least 1
        if level & 0xFFFF > v["bod_slots"] or level >> 16 < 1:
            return bad(f"bod_bg{i}", 1 << 16, 0xFFFF_0000 | v["bod_slots"])
    return None
