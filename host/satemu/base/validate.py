# SPDX-License-Identifier: BSD-2-Clause
"""The one register-level validator of a channel profile, and the hardware it is checked against.

The firmware (``firmware/app/validate.c``) gives the same verdict on every profile;
``tests/vectors/profiles.json`` pins both to this module. Every other check of a profile calls it:
``Profile.check`` (which only translates a verdict into physical units), ``require_registers``
(the models' entry) and ``Device.load`` through ``Profile.check``.

Checks run in a fixed order and the first failure is the verdict, with the field's index in
``protocol.PROFILE_FIELDS``, its value and the range it must lie in: each field's register
width, the loss mode, the rate fraction and its speed, the frame lengths, the queue, the BoD
fields when BoD is on; after the fields, the delay line's size (BUDGET), then its throughput
(THROUGHPUT).
"""

from __future__ import annotations

from dataclasses import dataclass

from satemu.base.hardware import Hardware
from satemu.base.params import ChannelParams, ChannelRegs, ConfigError, frame_words
from satemu.base.queues import FRAME_SPAN, SLOT_SPAN
from satemu.base.protocol import PROFILE_FIELDS, Status
from satemu.base.regmap import (BOD_BG_LEVELS, BOD_ENABLE, BOD_LATENCY_MAX, BOD_RATE_ONE,
    JITTER_ENTRY_MAX, JITTER_SHIFT, REGMAP)
from satemu.base.terminals import (DEMAND_LEVELS, DEMAND_ONOFF, LEVEL_RATE_BITS,
    LEVEL_SUPERFRAME_BITS, MATCH_MAC, MATCH_VLAN, TERMINAL_FIELDS, UNCLASSIFIED_DROP,
    TerminalTable, terminal_share)

__all__ = ["Verdict", "validate", "field_verdict", "check_registers",
           "check_throughput", "profile_fields", "INDEX", "TerminalVerdict", "terminal_verdict",
           "require_terminals"]

INDEX = {f.name: i for i, f in enumerate(PROFILE_FIELDS)}
U64_MAX = (1 << 64) - 1


def profile_fields(regs: ChannelRegs) -> dict[str, int]:
    """The register values of ``regs``' profile fields, in ``PROFILE_FIELDS`` order: what the
    validator checks and SET_PROFILE carries (the firmware owns the memory region)."""
    return {f.name: getattr(regs, f.name) for f in PROFILE_FIELDS}


@dataclass(frozen=True)
class Verdict:
    status: Status
    field: int = 0
    value: int = 0
    lo: int = 0
    hi: int = 0

    @property
    def name(self) -> str:
        """The profile field a BAD_FIELD verdict names."""
        return PROFILE_FIELDS[self.field].name

    def explain(self) -> str:
        if self.status == Status.BAD_FIELD:
            name = self.name
            if name in ("ecn_sojourn", "ecn_queue") and self.hi == 0:
                return (f"{name}={self.value}: the channel has no ECN marking, or BoD serves "
                        f"it, so ECN marking cannot be on (the range is 0 .. 0)")
            if name == "dup_p" and self.hi == 0:
                return (f"dup_p={self.value}: the channel has no duplication block, so frames "
                        f"cannot be duplicated (the range is 0 .. 0)")
            if name == "cor_p" and self.hi == 0:
                return (f"cor_p={self.value}: the channel has no corruption block, so frames "
                        f"cannot be corrupted (the range is 0 .. 0)")
            if name == "jit_sigma" and self.hi == 0:
                return (f"jit_sigma={self.value}: the channel has no jitter block, or BoD "
                        f"serves it, so jitter cannot be on (the range is 0 .. 0)")
            if name == "bod_flags" and self.hi == 0:
                return (f"bod_flags={self.value}: the channel has no Bandwidth-on-Demand block, "
                        f"so BoD cannot be on (the range is 0 .. 0)")
            if name.startswith("bod_bg") and name != "bod_bg_count":
                return (f"{name}={self.value:#x}: a background level is at most "
                        f"{self.hi & 0xFFFF} slots (bits 15..0) for at least 1 superframe "
                        f"(bits 31..16)")
            return f"{name}={self.value} is outside {self.lo} .. {self.hi}"
        if self.status == Status.BUDGET:
            return f"the delay line needs {self.value} words, the channel has {self.hi}"
        if self.status == Status.THROUGHPUT:
            return (f"the profile's rate needs up to {self.value} words per 65536 cycles of "
                    f"delay-line bandwidth, the board guarantees this channel {self.hi} (with "
                    f"the other channel busy): a lower rate fits (with BoD, a slower carrier; an "
                    f"unshaped channel counts at the port's line rate), and so may a longer "
                    f"minimum frame or a larger overhead")
        return self.status.name


def field_verdict(fields: dict[str, int], params: ChannelParams,
                  bod_allowed: bool) -> Verdict | None:
    """The first field of ``fields`` (register values, every name of ``PROFILE_FIELDS``) that a
    channel built with ``params`` cannot run, or None. ``bod_allowed``: the channel has the BoD
    block."""
    v = fields

    def bad(name, lo, hi):
        return Verdict(Status.BAD_FIELD, INDEX[name], v[name], lo, hi)

    for f in PROFILE_FIELDS:
        if not 0 <= v[f.name] < 1 << f.width:
            return bad(f.name, 0, (1 << f.width) - 1)
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
    if v["max_len"] > params.max_frame:
        return bad("max_len", v["min_len"], params.max_frame)
    bod = bool(v["bod_flags"] & BOD_ENABLE)
    cap = params.queue_cap(bod and bod_allowed)
    if not 1 <= v["queue_frames"] <= cap:
        return bad("queue_frames", 1, cap)
    if v["queue_bytes"] < v["min_len"]:
        return bad("queue_bytes", v["min_len"], (1 << 32) - 1)
    if v["term_match"] > MATCH_VLAN:
        return bad("term_match", 0, MATCH_VLAN)
    if v["term_match"]:
        if not 1 <= v["term_framed"] <= params.terminals:
            return bad("term_framed", 1, params.terminals)
        synthetic = params.synthetic if bod else 0
        if v["term_synthetic"] > synthetic:
            return bad("term_synthetic", 0, synthetic)
        if v["term_unclassified"] != UNCLASSIFIED_DROP \
                and v["term_unclassified"] >= v["term_framed"]:
            return bad("term_unclassified", 0, v["term_framed"] - 1)
    else:
        for name in ("term_framed", "term_synthetic"):
            if v[name]:
                return bad(name, 0, 0)
    if v["jit_sigma"] and (not params.jitter or (bod and bod_allowed)):
        return bad("jit_sigma", 0, 0)      # jitter only where the channel has it, not with BoD
    if v["cor_p"] and not params.corrupt:
        return bad("cor_p", 0, 0)          # corruption only where the channel has it
    if v["dup_p"] and not params.duplicate:
        return bad("dup_p", 0, 0)          # duplication only where the channel has it
    for name in ("ecn_sojourn", "ecn_queue"):
        if v[name] and (not params.ecn or (bod and bod_allowed)):
            return bad(name, 0, 0)         # ECN marking only where the channel has it, no BoD
    if params.delta_coded and not bod:
        # A frame's serialisation takes fewer than FRAME_SPAN cycles (satemu.model.depdelta).
        frame, frac = v["max_len"] + v["overhead"], int(v["rate_num"] > 0)
        if frame * (v["rate_q"] + frac) >= FRAME_SPAN:
            return bad("rate_q", 0, (FRAME_SPAN - 1) // frame - frac)
    if bod:
        return _bod_verdict(v, bod_allowed, bad, params)
    return None


def _bod_verdict(v: dict[str, int], bod_allowed: bool, bad,
                 params: ChannelParams) -> Verdict | None:
    """The BoD fields, when BoD is on: what the BoD block (``satemu.model.bod``) can run. Where
    the queue may hold more frames than the chip holds departure times, a slot carries fewer
    than ``slot_frames_max`` frames."""
    if not bod_allowed:
        return bad("bod_flags", 0, 0)
    # A slot takes fewer than SLOT_SPAN cycles where the queue is delta-coded.
    slot_max = SLOT_SPAN - 1 if params.delta_coded else (1 << 32) - 1
    if not 32 <= v["bod_slot_cycles"] <= slot_max:
        return bad("bod_slot_cycles", 32, slot_max)
    if v["bod_slots"] < 1:
        return bad("bod_slots", 1, 0xFFFF)
    if v["bod_slot_bytes"] < 1:
        return bad("bod_slot_bytes", 1, 0xFFFF)
    if v["queue_frames"] > params.queue_onchip:
        most = params.slot_frames_max() * (v["min_len"] + v["overhead"]) - 1
        if v["bod_slot_bytes"] > most:
            return bad("bod_slot_bytes", 1, most)
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


def validate(fields: dict[str, int], hw: Hardware, channel: int) -> Verdict:
    """Verdict on a profile for ``channel`` of the box ``hw``, given as register values (every
    name of PROFILE_FIELDS): the firmware's, exactly."""
    params = hw.channel_params(channel)
    verdict = field_verdict(fields, params, bool(hw.bod_mask >> channel & 1))
    if verdict:
        return verdict
    regs = ChannelRegs(**fields, mem_base=0, mem_size=hw.mem_words)
    need = delay_line_budget(regs, params, hw.f_clk, hw.port_bps)
    if need > hw.mem_words:
        return Verdict(Status.BUDGET, 0, need, 0, hw.mem_words)
    return (check_throughput(regs, hw.f_clk, hw.port_bps, hw.wpc(channel), params)
            or Verdict(Status.OK))


def check_registers(regs: ChannelRegs, params: ChannelParams) -> str | None:
    """Why the channel built with ``params`` cannot run ``regs``, or None: the field rules of
    ``field_verdict`` (BoD only where ``params.bod``), and a memory region that fits its
    registers and the address space (the firmware sets the region itself)."""
    verdict = field_verdict(profile_fields(regs), params, params.bod)
    if verdict:
        return verdict.explain()
    for name in ("mem_base", "mem_size"):
        width = REGMAP[name].width
        if not 0 <= getattr(regs, name) < 1 << width:
            return f"{name}={getattr(regs, name)} does not fit its {width}-bit register"
    if regs.mem_base + regs.mem_size > 1 << params.addr_width:
        return (f"memory region {regs.mem_base} + {regs.mem_size} words exceeds the address "
                f"space of 2^{params.addr_width} words")
    return None


def check_throughput(regs: ChannelRegs, f_clk: int, port_bps: int, mem_wpc: int,
                     params: ChannelParams) -> Verdict | None:
    """THROUGHPUT when the delay-line words per 65536 cycles the channel can demand
    (``delay_line_traffic``, num / den) exceed ``mem_wpc``, exactly: num > mem_wpc x den. The
    verdict's value is the demand rounded up (at most 2^64 - 1), its hi ``mem_wpc``. A
    ``mem_wpc`` of 0 means the board does not limit it."""
    if not mem_wpc:
        return None
    num, den = delay_line_traffic(regs, f_clk, port_bps, params)
    if num <= mem_wpc * den:
        return None
    need = min((num + den - 1) // den, U64_MAX) if den else U64_MAX
    return Verdict(Status.THROUGHPUT, 0, need, 0, mem_wpc)


@dataclass(frozen=True)
class TerminalVerdict:
    """Why a terminal table cannot run: terminal ``terminal``'s field ``field`` (a name of
    ``TERMINAL_FIELDS``, or of the table: ``match``, ``terminals``, ``synthetic``,
    ``unclassified``, ``levels``, ``level``) holds ``value``, outside ``lo`` .. ``hi``; or, for
    ``budget``, its delay line needs ``value`` words of the ``hi`` it has. ``terminal`` is -1
    for the table's own fields (and the level's index for ``level``)."""

    terminal: int
    field: str
    value: int
    lo: int = 0
    hi: int = 0

    def explain(self) -> str:
        who = "the terminal table" if self.terminal < 0 else f"terminal {self.terminal}"
        if self.field == "budget":
            return (f"{who}'s share of the delay line ({self.hi} words) is less than its "
                    f"frames can need ({self.value} words)")
        if self.field == "cra":
            return (f"the terminals' CRA adds up to {self.value} slots per superframe x 256, "
                    f"more than the pool's {self.hi}")
        if self.field == "key" and self.lo == self.hi:
            return f"{who}'s key {self.value:#x} is another terminal's too"
        if self.field == "capacity":
            return (f"{who} has no CRA, no VBDC and no FCA: the frames it holds when its "
                    f"arrivals stop would wait for good (docs/bod.md, \"A backlog\")")
        return f"{who}: {self.field}={self.value} is outside {self.lo} .. {self.hi}"


def terminal_verdict(table: TerminalTable, regs: ChannelRegs,
                     params: ChannelParams) -> TerminalVerdict | None:
    """The first rule ``table`` breaks on a channel built with ``params`` running ``regs``, or
    None (docs/bod.md, "Terminals"). The table's shape: at most ``params.terminals`` with
    frames and ``params.synthetic`` synthetic ones, those with frames first, matched by MAC or
    VLAN, each key once; a table that is not shared (the return channel's) needs BoD on. Each
    terminal's fields within their widths and ranges, its queue within its part of the
    hardware's, its CRA and RBDC within the pool, a schedule within the level table; all CRA
    together within the pool; each terminal with frames drained by CRA, VBDC or FCA."""
    terms = table.terminals
    framed = table.framed
    n_framed, n_synth = len(framed), len(terms) - len(framed)

    def table_bad(name, value, lo, hi):
        return TerminalVerdict(-1, name, value, lo, hi)

    if not terms:
        return None
    for name, value in table.registers().items():
        if getattr(regs, name) != value:        # the channel's registers say another table
            return table_bad(name, getattr(regs, name), value, value)
    if table.match not in (MATCH_MAC, MATCH_VLAN):
        return table_bad("match", table.match, MATCH_MAC, MATCH_VLAN)
    if not 1 <= n_framed <= params.terminals:
        return table_bad("terminals", n_framed, 1, params.terminals)
    if n_synth > params.synthetic:
        return table_bad("synthetic", n_synth, 0, params.synthetic)
    if tuple(terms[:n_framed]) != framed:
        return table_bad("terminals", n_framed, n_framed, n_framed)   # synthetic ones last
    if not (table.unclassified == UNCLASSIFIED_DROP or 0 <= table.unclassified < n_framed):
        return table_bad("unclassified", table.unclassified, 0, n_framed - 1)
    if len(table.levels) > params.demand_levels:
        return table_bad("levels", len(table.levels), 0, params.demand_levels)
    for i, (rate, superframes) in enumerate(table.levels):
        if not 0 <= rate < 1 << LEVEL_RATE_BITS \
                or not 1 <= superframes < 1 << LEVEL_SUPERFRAME_BITS:
            return TerminalVerdict(i, "level", superframes, 1, (1 << LEVEL_SUPERFRAME_BITS) - 1)
    if not table.shared and not regs.bod:
        return table_bad("terminals", n_framed, 0, 0)
    key_max = (1 << 48) - 1 if table.match == MATCH_MAC else 4094
    seen: dict[int, int] = {}
    cap = params.terminal_cap(regs.bod, n_framed)
    carrier = regs.bod_slots * BOD_RATE_ONE
    for i, t in enumerate(terms):
        def bad(name, lo, hi):
            return TerminalVerdict(i, name, getattr(t, name), lo, hi)

        for name, width, _ in TERMINAL_FIELDS:
            if not 0 <= getattr(t, name) < 1 << width:
                return bad(name, 0, (1 << width) - 1)
        if not t.synthetic:
            if not 1 <= t.key <= key_max:
                return bad("key", 1, key_max)
            if t.key in seen:
                return TerminalVerdict(i, "key", t.key, seen[t.key], seen[t.key])
            seen[t.key] = i
        if table.shared:
            continue
        if t.loss_mode > 2:
            return bad("loss_mode", 0, 2)
        if not t.synthetic:
            if not 1 <= t.queue_frames <= cap:
                return bad("queue_frames", 1, cap)
            if t.queue_bytes < regs.min_len:
                return bad("queue_bytes", regs.min_len, (1 << 32) - 1)
        for name in ("cra", "rbdc_max"):
            if getattr(t, name) > carrier:
                return bad(name, 0, carrier)
        if t.req_period < 1:
            return bad("req_period", 1, 0xFFFF)
        if t.synthetic:
            if t.demand_kind == DEMAND_LEVELS:
                left = max(len(table.levels) - t.demand_first, 0)
                if t.demand_count < 1 or t.demand_first + t.demand_count > len(table.levels):
                    return bad("demand_count", 1, left)
        elif t.demand_kind:
            return bad("demand_kind", 0, 0)
        elif not (t.cra or t.vbdc_max or t.fca):
            return TerminalVerdict(i, "capacity", 0)
    if table.shared:
        return None
    total_cra = sum(t.cra for t in terms)
    if total_cra > carrier:
        return TerminalVerdict(-1, "cra", total_cra, 0, carrier)
    return None


def terminal_budget(table: TerminalTable, regs: ChannelRegs, params: ChannelParams, f_clk: int,
                    port_bps: int) -> TerminalVerdict | None:
    """BUDGET of each terminal with frames: its share of the delay line (``regs.mem_size``
    split equally among them) holds what its frames can need at worst: the whole carrier's
    frames for the delay and the latency floor, as any BoD channel's, and its own full queue."""
    framed = table.framed
    if table.shared or not framed:
        return None
    share = terminal_share(regs.mem_size, len(framed))
    cap = params.terminal_cap(regs.bod, len(framed))
    for i, t in enumerate(framed):
        own = ChannelRegs(**{**profile_fields(regs), "queue_frames": min(t.queue_frames, cap),
                             "queue_bytes": t.queue_bytes}, mem_size=share)
        need = delay_line_budget(own, params, f_clk, port_bps)
        if need > share:
            return TerminalVerdict(i, "budget", need, 0, share)
    return None


def require_terminals(table: TerminalTable, regs: ChannelRegs, params: ChannelParams) -> None:
    """Raise ConfigError unless a channel built with ``params`` can run ``table`` with
    ``regs`` (``terminal_verdict``'s rules)."""
    verdict = terminal_verdict(table, regs, params)
    if verdict:
        raise ConfigError(verdict.explain())


def require_registers(regs: ChannelRegs, params: ChannelParams = ChannelParams()) -> None:
    """Raise ConfigError unless the register values can run on a channel built with
    ``params``: ``check_registers``'s rules (the firmware's)."""
    why = check_registers(regs, params)
    if why:
        raise ConfigError(why)


# Budget arithmetic: what the delay line and its memory must take at worst.

def byte_time(regs: ChannelRegs, f_clk: int, port_bps: int) -> tuple[int, int, int]:
    """(t_num, t_den, ovh): the fastest a channel's frames can come, a frame of L bytes at most
    every (L + ovh) x t_num / t_den cycles. With BoD, the whole carrier (``bod_slot_bytes`` of
    slot payload per ``bod_slot_cycles``, ovh = ``overhead``); shaped, the shaper's
    ``rate_q + rate_num / rate_den`` cycles a byte (ovh = ``overhead``); not shaped, the port's
    line rate, 8 f_clk / port_bps cycles a byte with 24 bytes of preamble, FCS and gap. The
    firmware has the same three cases (``byte_time`` in firmware/app/validate.c)."""
    if regs.bod:
        return regs.bod_slot_cycles, regs.bod_slot_bytes, regs.overhead
    if regs.rate_q or regs.rate_num:
        return regs.rate_q * regs.rate_den + regs.rate_num, regs.rate_den, regs.overhead
    return 8 * f_clk, port_bps, 24


def longest_delay(regs: ChannelRegs) -> int:
    """The longest a frame's delay can be, in cycles: with jitter, the delay plus the largest
    entry a jitter table can hold (JITTER_ENTRY_MAX) times ``jit_sigma``, as the gateware scales
    it (satemu.model.jitter); the firmware computes the same (``satemu_budget_words``)."""
    return regs.delay + ((JITTER_ENTRY_MAX * regs.jit_sigma) >> JITTER_SHIFT)


def delay_line_budget(regs: ChannelRegs, params: ChannelParams, f_clk: int,
                      port_bps: int = 1_000_000_000) -> int:
    """Memory words a channel can need at worst, in register units; the firmware computes the
    same integer (firmware/app/validate.c) before it accepts a profile.

    Minimum-size frames arrive back to back at the shaped rate (BoD: the whole carrier's rate) for
    the longest delay (``longest_delay``) plus the latency floor, each one serialisation time
    apart; when the channel is not shaped they arrive at the port's line rate, (min_len + 24)
    bytes on the wire each. A full queue of them comes on top.
    """
    window = max(longest_delay(regs), params.latency_floor) + params.latency_floor
    t_num, den, ovh = byte_time(regs, f_clk, port_bps)
    num = (regs.min_len + ovh) * t_num          # cycles per minimum-size frame, times den
    in_delay = window * den // num + 2
    queued = min(regs.queue_frames, params.queue_cap(regs.bod), regs.queue_bytes // regs.min_len)
    return (in_delay + queued) * frame_words(regs.min_len)


def delay_line_traffic(regs: ChannelRegs, f_clk: int, port_bps: int = 1_000_000_000,
                       params: ChannelParams = ChannelParams()) -> tuple[int, int]:
    """Delay-line words per 65536 cycles a channel can demand at worst, as an exact fraction
    (numerator, denominator) in the integers the firmware uses (firmware/app/validate.c).

    A frame of L bytes takes ``frame_words(L)`` = 1 + ceil(L/8) <= (L + 15) / 8 words and
    arrives at most every T x (L + ovh) cycles, T = t_num / t_den cycles per byte
    (``byte_time``: the BoD carrier, the shaper, or the port's line rate). Words per
    cycle are then at most (L + 15) / (8 T (L + ovh)), which is largest at L = min_len when
    ovh < 15 and at L = max_len otherwise. A queue that can outgrow the chip
    (``ChannelParams.spills``) costs each frame a word more, its departure time: (L + 23) / 8,
    largest at min_len when ovh < 23.
    """
    t_num, t_den, ovh = byte_time(regs, f_clk, port_bps)
    extra = 15 + 8 * params.spills(regs)
    length = regs.min_len if ovh < extra else regs.max_len
    return (length + extra) * 65536 * t_den, 8 * t_num * (length + ovh)
