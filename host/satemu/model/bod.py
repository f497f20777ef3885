# SPDX-License-Identifier: BSD-2-Clause
"""Reference model of the Bandwidth-on-Demand return link: capacity requests, the allocator and
the timeslot scheduler (gateware: ``satemu_gw.bod_alloc.BodAllocator`` and
``satemu_gw.bod_slots.SlotScheduler``).

The algorithm, in DVB-RCS2 terms, is written down in docs/bod.md. In short, at the start of
superframe k (cycle ``start + k * bod_slots * bod_slot_cycles``):

1. the allocator takes the requests sent in superframe k - latency, and grants the superframe's
   slots: CRA first, then the background demand of the other terminals, then RBDC, VBDC and FCA,
   each limited by the slots left;
2. the terminal, every ``bod_req_period`` superframes, requests RBDC from the bytes that arrived
   since its last request and VBDC for the backlog not covered by VBDC still pending or by the
   CRA and RBDC expected over the latency;
3. the terminal's granted slots are spread over the superframe (slot i is granted when
   ``floor((i + 1) g / N) > floor(i g / N)``); at the start of each one, up to ``bod_slot_bytes``
   bytes of the queue (frame length + ``overhead`` each, fragmented at any byte) go into the
   slot, and every frame whose last byte is in it is released at the slot's end.

A slot starting at t runs with the profile in force at t (every commit named for a cycle before
t applied). A superframe keeps the shape in force at its first slot (``bod_slots``,
``bod_slot_cycles``, ``bod_slot_bytes``), and its allocation reads the other BoD fields then.

Every quantity is an integer and every decision a function of cycles, so the gateware equals
this model exactly.
"""

from __future__ import annotations

from collections import deque

from satemu.base.records import BodRecord, pack_record, unpack_record
from satemu.base.regmap import BOD_BG_REPEAT, BOD_FCA, BOD_RATE_ONE

__all__ = ["BodRecord", "Bod", "bg_levels", "pack_record", "unpack_record", "superframe_cycles"]


def superframe_cycles(regs) -> int:
    return regs.bod_slots * regs.bod_slot_cycles


def bg_levels(regs) -> list[tuple[int, int]]:
    """The background schedule as (slots, superframes) pairs."""
    return [(w & 0xFFFF, w >> 16) for w in
            (getattr(regs, f"bod_bg{i}") for i in range(regs.bod_bg_count))]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


class Bod:
    """The BoD block of one channel, driven in event order by ``satemu.model.channel.simulate``:
    :meth:`advance` processes every slot that starts at or before a cycle, :meth:`push` queues a
    frame that arrived after all of them. ``commits`` holds (cycle, regs) of the later commits,
    in cycle order: each applies to the slots starting after its cycle."""

    def __init__(self, regs, start: int, params, commits=()):
        self.r = regs
        self.commits = deque(commits)
        self.shape = (regs.bod_slots, regs.bod_slot_cycles, regs.bod_slot_bytes)
        self.params = params
        self.floor = params.latency_floor
        self.t = start                 # start cycle of the next slot to process
        self.k = 0                     # its superframe
        self.i = 0                     # its index within the superframe
        self.queue: deque[list[int]] = deque()   # [frame index, length, bytes still to send]
        self.backlog = 0
        self.arrived = 0               # bytes queued since the last request
        self.pipeline: dict[int, tuple[int, int]] = {}   # superframe sent -> (rbdc, vbdc)
        self.rbdc_active = self.rbdc_left = self.vbdc_out = self.vbdc_pending = 0
        self.cra_frac = self.rbdc_frac = 0
        self.req_wait = 0              # superframes until the next request
        self.bg_idx = self.bg_used = 0     # level, and superframes of it gone
        self.granted = self.acc = 0
        self.records: list[BodRecord] = []
        self.cur: BodRecord | None = None
        self.egress_free = 0
        self.pace_free = 0             # the last frame's release after the memory's pace
        self.released: list[tuple[int, int, int]] = []   # (frame index, release, egress) in order

    def push(self, index: int, length: int, overhead: int):
        size = length + overhead
        self.queue.append([index, length, size])
        self.backlog += size
        self.arrived += size

    def advance(self, until: int):
        """Process every slot that starts at or before ``until``."""
        while self.t <= until:
            self._slot()

    def drain(self, limit: int):
        """Process slots until the queue is empty, the current superframe is recorded, and no
        later than cycle ``limit``."""
        while (self.queue or self.i) and self.t <= limit:
            self._slot()

    def record(self, superframes: int):
        """Process slots until at least ``superframes`` superframes are recorded."""
        while len(self.records) < superframes:
            self._slot()

    # ---- one slot ----------------------------------------------------------------------------
    def _slot(self):
        while self.commits and self.commits[0][0] < self.t:
            self.r = self.commits.popleft()[1]
        r = self.r
        if self.i == 0:
            self.shape = (r.bod_slots, r.bod_slot_cycles, r.bod_slot_bytes)
            self._superframe()
        slots, slot_cycles, _ = self.shape
        self.acc += self.granted
        if self.acc >= slots:
            self.acc -= slots
            self._serve()
        self.t += slot_cycles
        self.i += 1
        if self.i == slots:
            self.records.append(self.cur)
            self.i = 0
            self.k += 1

    def _serve(self):
        _, slot_cycles, cap = self.shape
        end = self.t + slot_cycles
        used = False
        while cap and self.queue:
            f = self.queue[0]
            used = True
            if f[2] <= cap:
                cap -= f[2]
                self.backlog -= f[2]
                self.queue.popleft()
                self._release(f[0], f[1], end)
            else:
                f[2] -= cap
                self.backlog -= cap
                cap = 0
        self.cur.used += used

    def _release(self, index: int, length: int, at: int):
        self.pace_free = self.params.paced(at + max(self.r.delay, self.floor), self.pace_free,
                                           length)
        egress = max(self.pace_free, self.egress_free)
        self.egress_free = egress + self.params.port_cycles(length)
        self.released.append((index, at, egress))

    # ---- superframe start: allocator, then terminal ------------------------------------------
    def _superframe(self):
        r, k = self.r, self.k
        n = r.bod_slots
        rec = self.cur = BodRecord(sf=k, backlog=self.backlog)
        # Allocator (NCC side).
        levels = bg_levels(r)
        bg = levels[self.bg_idx][0]
        req = self.pipeline.pop(k - r.bod_latency, None)
        if req is not None:
            self.rbdc_active = req[0]
            self.rbdc_left = r.bod_rbdc_timeout
            self.vbdc_out += req[1]
        if r.bod_rbdc_timeout:
            if self.rbdc_left == 0:
                self.rbdc_active = 0
            else:
                self.rbdc_left -= 1
        c = self.cra_frac + r.bod_cra
        rec.g_cra = c >> 8
        self.cra_frac = c & 0xFF
        free = n - rec.g_cra
        rec.bg = min(bg, free)
        free -= rec.bg
        c = self.rbdc_frac + self.rbdc_active
        rec.g_rbdc = min(c >> 8, free)
        self.rbdc_frac = c & 0xFF
        free -= rec.g_rbdc
        rec.g_vbdc = min(self.vbdc_out, free)
        self.vbdc_out -= rec.g_vbdc
        free -= rec.g_vbdc
        rec.g_fca = free if r.bod_flags & BOD_FCA else 0
        self.granted = rec.granted
        self.acc = 0
        # Background schedule: the next superframe's level.
        if self.bg_used + 1 < levels[self.bg_idx][1]:
            self.bg_used += 1
        elif self.bg_idx + 1 < len(levels):
            self.bg_idx, self.bg_used = self.bg_idx + 1, 0
        elif r.bod_flags & BOD_BG_REPEAT:
            self.bg_idx, self.bg_used = 0, 0
        # Terminal (capacity requests).
        self.vbdc_pending -= rec.g_vbdc
        if self.req_wait == 0:
            self.req_wait = r.bod_req_period - 1
            if r.bod_rbdc_max:
                rate = _ceil_div(self.arrived * BOD_RATE_ONE, r.bod_req_period * r.bod_slot_bytes)
                rec.rbdc_req = min(rate, r.bod_rbdc_max)
            self.arrived = 0
            if r.bod_vbdc_max:
                need = _ceil_div(self.backlog, r.bod_slot_bytes)
                cover = self.vbdc_pending + (((r.bod_cra + rec.rbdc_req) * r.bod_latency) >> 8)
                rec.vbdc_req = min(max(need - cover, 0), r.bod_vbdc_max - self.vbdc_pending)
                self.vbdc_pending += rec.vbdc_req
            self.pipeline[k] = (rec.rbdc_req, rec.vbdc_req)
        else:
            self.req_wait -= 1
