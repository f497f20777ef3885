# SPDX-License-Identifier: BSD-2-Clause
"""Reference model of the Bandwidth-on-Demand return link: the terminals' capacity requests, the
allocator that shares each superframe's slots among them, and the timeslot scheduler (gateware:
``satemu_gw.bod_alloc.BodAllocator`` and ``satemu_gw.bod_slots.SlotScheduler``).

The algorithm, in DVB-RCS2 terms, is written down in docs/bod.md. In short, at the start of
superframe k (cycle ``start + k * bod_slots * bod_slot_cycles``):

1. each terminal's requests sent in superframe k - latency arrive; a synthetic terminal's demand
   for superframe k joins its backlog;
2. the allocator shares the superframe's slots among the terminals, in turn from terminal
   k mod T: CRA first, then the background demand of terminals not modelled, then RBDC, VBDC
   (each shared in proportion when the slots left do not cover it) and FCA (shared equally);
3. each terminal, every ``req_period`` superframes, requests RBDC from the bytes that arrived
   since its last request and VBDC for the backlog not covered by VBDC still pending or by the
   CRA and RBDC expected over the latency;
4. the slots granted are spread over the superframe (slot i is granted when
   ``floor((i + 1) G / N) > floor(i G / N)``) and handed to the terminals in the same turn; at
   the start of each one, up to ``bod_slot_bytes`` bytes of its terminal's queue (frame length
   + ``overhead`` each, fragmented at any byte) go into the slot, and every frame whose last
   byte is in it is released at the slot's end. A synthetic terminal's slots carry its backlog.

Without a terminal table the channel is one terminal with frames, whose settings are the
channel's own ``bod_*`` registers; the algorithm then reduces to that of one terminal.

A slot starting at t runs with the profile in force at t (every commit named for a cycle before
t applied). A superframe keeps the shape in force at its first slot (``bod_slots``,
``bod_slot_cycles``, ``bod_slot_bytes``), and its allocation reads the other BoD fields then.

Every quantity is an integer and every decision a function of cycles, so the gateware equals
this model exactly.
"""

from __future__ import annotations

from collections import deque

from satemu.base.prng import Xoshiro128pp
from satemu.base.records import BodRecord, pack_record, unpack_record
from satemu.base.regmap import BOD_BG_REPEAT, BOD_FCA, BOD_RATE_ONE
from satemu.base.terminals import (DEMAND_CONSTANT, DEMAND_LEVELS, DEMAND_ONOFF, TERM_FCA,
    TerminalRegs, TerminalTable)

__all__ = ["BodRecord", "Bod", "bg_levels", "pack_record", "unpack_record", "superframe_cycles",
           "terminal_settings", "share", "SHARE_BITS"]

# The fair share's precision: a category the slots left do not cover gives each terminal
# floor(demand x q / 2^SHARE_BITS), q = floor(left x 2^SHARE_BITS / total demand).
SHARE_BITS = 16


def superframe_cycles(regs) -> int:
    return regs.bod_slots * regs.bod_slot_cycles


def bg_levels(regs) -> list[tuple[int, int]]:
    """The background schedule as (slots, superframes) pairs."""
    return [(w & 0xFFFF, w >> 16) for w in
            (getattr(regs, f"bod_bg{i}") for i in range(regs.bod_bg_count))]


def terminal_settings(regs, table: TerminalTable | None) -> tuple[TerminalRegs, ...]:
    """The terminals the allocator serves: the table's, or without one the channel itself, a
    terminal with frames whose BoD settings are its ``bod_*`` registers."""
    if table is not None and table.terminals:
        return table.terminals
    return (TerminalRegs(flags=TERM_FCA if regs.bod_flags & BOD_FCA else 0,
                         queue_frames=regs.queue_frames, queue_bytes=regs.queue_bytes,
                         cra=regs.bod_cra, rbdc_max=regs.bod_rbdc_max,
                         rbdc_timeout=regs.bod_rbdc_timeout, vbdc_max=regs.bod_vbdc_max,
                         req_period=regs.bod_req_period),)


def share(demand: list[int], left: int, first: int) -> list[int]:
    """One category's grants: every demand where their sum fits in ``left`` slots; else each
    terminal's demand x q / 2^SHARE_BITS, rounded down, q = left x 2^SHARE_BITS / the sum,
    rounded down, and the slots this leaves one at a time to the terminals still short, in turn
    from terminal ``first``, until none is left."""
    total = sum(demand)
    if total <= left:
        return list(demand)
    q = (left << SHARE_BITS) // total
    grant = [(d * q) >> SHARE_BITS for d in demand]
    rest = left - sum(grant)
    n = len(demand)
    while rest:
        for j in range(n):
            t = (first + j) % n
            if rest and grant[t] < demand[t]:
                grant[t] += 1
                rest -= 1
    return grant


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


class _Terminal:
    """A terminal's state: its requests in flight and in force (the NCC's side), its requests to
    come and its backlog (its own side), and its frames (or synthetic demand)."""

    def __init__(self):
        self.pipeline: dict[int, tuple[int, int]] = {}   # superframe sent -> (rbdc, vbdc)
        self.rbdc_active = self.rbdc_left = self.vbdc_out = 0
        self.cra_owed = self.rbdc_frac = 0
        self.vbdc_pending = 0
        self.req_wait = 0              # superframes until the next request
        self.backlog = 0               # bytes queued (frame + overhead) and not yet sent
        self.arrived = 0               # bytes queued since the last request
        self.queue: deque[list[int]] = deque()   # [frame index, length, bytes still to send]
        self.demand_frac = 0           # a synthetic terminal's demand: the fraction of a byte
        self.on = True                 # on/off: on
        self.level = self.level_used = 0   # levels: the entry, and superframes of it gone


class Bod:
    """The BoD block of one channel, driven in event order by ``satemu.model.channel.simulate``:
    :meth:`advance` processes every slot that starts at or before a cycle, :meth:`push` queues a
    frame that arrived after all of them. ``commits`` holds (cycle, regs) or (cycle, regs,
    table) of the later commits, in cycle order: each applies to the slots starting after its
    cycle (a table of None keeps the one in force). ``table``: the channel's terminals (None:
    the channel is the one terminal)."""

    def __init__(self, regs, start: int, params, commits=(), table: TerminalTable | None = None):
        self.r = regs
        self.table = table
        self.terms = terminal_settings(regs, table)
        self.commits = deque(commits)
        self.shape = (regs.bod_slots, regs.bod_slot_cycles, regs.bod_slot_bytes)
        self.params = params
        self.floor = params.latency_floor
        self.t = start                 # start cycle of the next slot to process
        self.k = 0                     # its superframe
        self.i = 0                     # its index within the superframe
        self.state = [_Terminal() for _ in self.terms]
        self.prng = Xoshiro128pp(regs.seed)   # the synthetic terminals' on/off draws
        self.bg_idx = self.bg_used = 0     # background level, and superframes of it gone
        self.granted = self.acc = 0
        self.owners: list[int] = []    # the superframe's granted slots' terminals, in order
        self.slot = 0                  # granted slots handed out so far this superframe
        self.records: list[BodRecord] = []
        self.cur: list[BodRecord] = []
        self.egress_free = 0
        self.pace_free = 0             # the last frame's release after the memory's pace
        self.released: list[tuple[int, int, int]] = []   # (frame index, release, egress) in order

    @property
    def backlog(self) -> int:
        """Bytes queued on every terminal with frames, not yet sent."""
        return sum(s.backlog for s, t in zip(self.state, self.terms) if not t.synthetic)

    @property
    def queued(self) -> bool:
        return any(s.queue for s in self.state)

    def push(self, index: int, length: int, overhead: int, terminal: int = 0):
        size = length + overhead
        s = self.state[terminal]
        s.queue.append([index, length, size])
        s.backlog += size
        s.arrived += size

    def advance(self, until: int):
        """Process every slot that starts at or before ``until``."""
        while self.t <= until:
            self._slot()

    def drain(self, limit: int):
        """Process slots until the queues are empty, the current superframe is recorded, and no
        later than cycle ``limit``."""
        while (self.queued or self.i) and self.t <= limit:
            self._slot()

    def record(self, superframes: int):
        """Process slots until at least ``superframes`` superframes are recorded."""
        while len(self.records) < superframes * len(self.terms):
            self._slot()

    # ---- one slot ----------------------------------------------------------------------------
    def _slot(self):
        while self.commits and self.commits[0][0] < self.t:
            commit = self.commits.popleft()
            self.r = commit[1]
            table = commit[2] if len(commit) > 2 else None
            if table is not None:
                self.table = table
            self.terms = terminal_settings(self.r, self.table)
        r = self.r
        if self.i == 0:
            self.shape = (r.bod_slots, r.bod_slot_cycles, r.bod_slot_bytes)
            self._superframe()
        slots, slot_cycles, _ = self.shape
        self.acc += self.granted
        if self.acc >= slots:
            self.acc -= slots
            owner = self.owners[self.slot]
            self.slot += 1
            if not self.terms[owner].synthetic:
                self._serve(owner)
        self.t += slot_cycles
        self.i += 1
        if self.i == slots:
            self.records.extend(self.cur)
            self.i = 0
            self.k += 1

    def _serve(self, terminal: int):
        _, slot_cycles, cap = self.shape
        s = self.state[terminal]
        end = self.t + slot_cycles
        used = False
        while cap and s.queue:
            f = s.queue[0]
            used = True
            if f[2] <= cap:
                cap -= f[2]
                s.backlog -= f[2]
                s.queue.popleft()
                self._release(f[0], f[1], end)
            else:
                f[2] -= cap
                s.backlog -= cap
                cap = 0
        self.cur[terminal].used += used

    def _release(self, index: int, length: int, at: int):
        self.pace_free = self.params.paced(at + max(self.r.delay, self.floor), self.pace_free,
                                           length)
        egress = max(self.pace_free, self.egress_free)
        self.egress_free = egress + self.params.port_cycles(length)
        self.released.append((index, at, egress))

    # ---- superframe start: allocator, then terminals -----------------------------------------
    def _demand(self, t: TerminalRegs, s: _Terminal) -> int:
        """A synthetic terminal's bytes for this superframe, and its process moved on."""
        if t.demand_kind == DEMAND_LEVELS:
            levels = self.table.levels
            rate, length = levels[t.demand_first + s.level]
            if s.level_used + 1 < length:
                s.level_used += 1
            else:
                s.level = (s.level + 1) % t.demand_count
                s.level_used = 0
        elif t.demand_kind == DEMAND_CONSTANT:
            rate = t.demand_rate
        elif t.demand_kind == DEMAND_ONOFF:
            rate = t.demand_rate if s.on else 0
            u = self.prng.next()
            s.on = not (u < t.demand_off) if s.on else u < t.demand_on
        else:
            return 0
        c = s.demand_frac + rate
        s.demand_frac = c % BOD_RATE_ONE
        return c // BOD_RATE_ONE

    def _superframe(self):
        r, k, terms, state = self.r, self.k, self.terms, self.state
        n = len(terms)
        first = k % n
        order = [(first + j) % n for j in range(n)]
        # The network side: requests sent latency superframes ago arrive; then the timeouts.
        for t, s in zip(terms, state):
            req = s.pipeline.pop(k - r.bod_latency, None)
            if req is not None:
                s.rbdc_active = req[0]
                s.rbdc_left = t.rbdc_timeout
                s.vbdc_out += req[1]
            if t.rbdc_timeout:
                if s.rbdc_left == 0:
                    s.rbdc_active = 0
                else:
                    s.rbdc_left -= 1
        # Synthetic terminals: this superframe's demand joins the backlog.
        for t, s in zip(terms, state):
            if t.synthetic:
                got = self._demand(t, s)
                s.backlog += got
                s.arrived += got
        recs = self.cur = [BodRecord(sf=k, backlog=s.backlog, terminal=i)
                           for i, s in enumerate(state)]
        # CRA, owed until granted.
        free = r.bod_slots
        for i in order:
            s = state[i]
            s.cra_owed += terms[i].cra
            g = min(s.cra_owed // BOD_RATE_ONE, free)
            s.cra_owed -= g * BOD_RATE_ONE
            recs[i].g_cra = g
            free -= g
        # The background: terminals not modelled.
        levels = bg_levels(r)
        bg = min(levels[self.bg_idx][0], free)
        for rec in recs:
            rec.bg = bg
        free -= bg
        if self.bg_used + 1 < levels[self.bg_idx][1]:
            self.bg_used += 1
        elif self.bg_idx + 1 < len(levels):
            self.bg_idx, self.bg_used = self.bg_idx + 1, 0
        elif r.bod_flags & BOD_BG_REPEAT:
            self.bg_idx, self.bg_used = 0, 0
        # RBDC, then VBDC, each shared when the slots left do not cover it.
        want = []
        for s in state:
            c = s.rbdc_frac + s.rbdc_active
            want.append(c // BOD_RATE_ONE)
            s.rbdc_frac = c % BOD_RATE_ONE
        for i, g in enumerate(share(want, free, first)):
            recs[i].g_rbdc = g
            free -= g
        for i, g in enumerate(share([s.vbdc_out for s in state], free, first)):
            recs[i].g_vbdc = g
            state[i].vbdc_out -= g
            free -= g
        # FCA: the slots left, equally among the terminals that take it, the remainder one each
        # in turn.
        fca = [i for i in order if terms[i].fca]
        if fca:
            each, extra = divmod(free, len(fca))
            for j, i in enumerate(fca):
                recs[i].g_fca = each + (j < extra)
        self.granted = sum(rec.granted for rec in recs)
        self.acc = 0
        self.owners = [i for i in order for _ in range(recs[i].granted)]
        self.slot = 0
        # The terminals: grants learnt, then capacity requests.
        for i, (t, s) in enumerate(zip(terms, state)):
            rec = recs[i]
            s.vbdc_pending -= rec.g_vbdc
            if s.req_wait == 0:
                s.req_wait = t.req_period - 1
                if t.rbdc_max:
                    rate = _ceil_div(s.arrived * BOD_RATE_ONE, t.req_period * r.bod_slot_bytes)
                    rec.rbdc_req = min(rate, t.rbdc_max)
                s.arrived = 0
                if t.vbdc_max:
                    need = _ceil_div(s.backlog, r.bod_slot_bytes)
                    cover = s.vbdc_pending + (((t.cra + rec.rbdc_req) * r.bod_latency) >> 8)
                    # At most what the maximum leaves, none where a lower maximum leaves
                    # nothing (a commit may lower it below the VBDC still pending).
                    rec.vbdc_req = max(min(need - cover, t.vbdc_max - s.vbdc_pending), 0)
                    s.vbdc_pending += rec.vbdc_req
                s.pipeline[k] = (rec.rbdc_req, rec.vbdc_req)
            else:
                s.req_wait -= 1
            if t.synthetic:
                # Its slots carry its backlog, a slot's bytes each.
                carried = min(s.backlog, rec.granted * r.bod_slot_bytes)
                rec.used = _ceil_div(carried, r.bod_slot_bytes)
                s.backlog -= carried
