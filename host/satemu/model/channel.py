# SPDX-License-Identifier: BSD-2-Clause
"""Cycle-exact reference model of one link channel (loss, bottleneck queue, shaper, delay line).

The model and the gateware (``satemu_gw.channel.Channel``) share the timing semantics written down
in docs/architecture.md; the cocotb benches assert that both agree on every frame, exactly. The
model works on register values (:class:`ChannelRegs`), the same numbers the gateware sees;
``satemu.link.registers`` turns physical units into them for a given system clock.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from satemu.model.bod import Bod
from satemu.model.corrupt import Corrupt
from satemu.model.duplicate import Duplicate
from satemu.model.jitter import Jitter
from satemu.base.records import BodRecord
from satemu.base.params import (FATE_COUNTER, TERMINAL_COUNTERS, ChannelParams, ChannelRegs,
    Fate, frame_words)
from satemu.base.prng import Xoshiro128pp
from satemu.base.regmap import LOSS_BERNOULLI, LOSS_GILBERT_ELLIOTT, COUNTERS, LAYOUT_FIELDS
from satemu.base.terminals import TerminalTable, terminal_share
from satemu.base.validate import require_registers, require_terminals

__all__ = ["FrameResult", "ModelResult", "Commit", "Channel", "simulate"]

TIME48 = (1 << 48) - 1


@dataclass(frozen=True)
class Commit:
    """A COMMIT strobe at ``cycle``: frames whose last beat arrives at a later cycle see ``regs``
    (and ``table``, the channel's terminals, where not None)."""

    cycle: int
    regs: ChannelRegs
    reseed: bool = False
    table: TerminalTable | None = None


@dataclass
class FrameResult:
    fate: Fate
    departure: int | None = None   # cycle the shaper finishes serialising it (BoD: the end of
                                   # the slot that carries its last byte)
    egress: int | None = None      # cycle of the first egress beat
    length: int = 0                # BoD: bytes (used while the frame waits for its slots)
    terminal: int | None = 0       # whose frame it is (a table's index; None: no terminal's)
    flip: int | None = None        # the bit corruption flipped (satemu.model.corrupt.flipped)
    copy: bool = False             # duplication's copy of the frame decided before it
    ce: bool = False               # ECN marking set its ECN field to CE (satemu.model.ecn)


@dataclass
class ModelResult:
    frames: list[FrameResult]
    counters: dict[str, int]
    gauges: dict[str, int] = field(default_factory=dict)
    bod: list[BodRecord] = field(default_factory=list)   # per-superframe records (BoD only)
    # With a terminal table: each terminal's counters (TERMINAL_COUNTERS), by its index, and
    # under None the frames of no terminal.
    terminals: dict[int | None, dict[str, int]] = field(default_factory=dict)

    def egress_cycles(self) -> np.ndarray:
        """Egress start cycle per frame, -1 where the frame was dropped."""
        return np.array([-1 if r.egress is None else r.egress for r in self.frames], dtype=np.int64)

    def fates(self) -> np.ndarray:
        return np.array([int(r.fate) for r in self.frames], dtype=np.int8)

    def offered(self) -> list[int]:
        """For each decision in ``frames``, the index of the frame offered that it is (a copy:
        its original's)."""
        out, n = [], -1
        for r in self.frames:
            n += not r.copy
            out.append(n)
        return out


class _Shaper:
    """Virtual finish time V = vi + vf/den, kept as an exact mixed number."""

    def __init__(self):
        self.vi = 0
        self.vf = 0

    def round_up(self):
        """A commit that changes rate_den rounds V up to a whole cycle."""
        self.vi += self.vf != 0
        self.vf = 0

    def depart(self, arrival: int, nbytes: int, regs: ChannelRegs) -> int:
        den = regs.rate_den
        if arrival > self.vi or (arrival == self.vi and self.vf == 0):
            si, sf = arrival, 0
        else:
            si, sf = self.vi, self.vf
        m = nbytes + regs.overhead
        ti, tf = m * regs.rate_q + (m * regs.rate_num) // den, (m * regs.rate_num) % den
        vf = sf + tf
        self.vi = si + ti + (vf >= den)
        self.vf = vf - den if vf >= den else vf
        return self.vi + (self.vf != 0)


class _Loss:
    """The loss draws of a channel: one xoshiro128++ stream, drawn in arrival order, and a
    Gilbert-Elliott state per terminal (its index; 0 without a table)."""

    def __init__(self, seed: int):
        self.reseed(seed)

    def reseed(self, seed: int):
        self.prng = Xoshiro128pp(seed)
        self.bad: dict[int, bool] = {}

    def lost(self, regs, who: int = 0) -> bool:
        """Whether a frame is lost under ``regs``' loss settings (a channel's or a terminal's
        registers)."""
        if regs.loss_mode == LOSS_BERNOULLI:
            return self.prng.next() < regs.loss_p
        if regs.loss_mode == LOSS_GILBERT_ELLIOTT:
            bad = self.bad.get(who, False)
            lost = self.prng.next() < (regs.ge_loss_bad if bad else regs.ge_loss_good)
            u = self.prng.next()
            self.bad[who] = not (u < regs.ge_r) if bad else u < regs.ge_p
            return lost
        return False


class Channel:
    """One channel, driven in cycle order: :meth:`arrive` for each frame (arrival cycles strictly
    increasing), :meth:`advance` to let a BoD channel's slot scheduler run up to a cycle,
    :meth:`finish` at the end. ``commits`` are the later commits (a timeline's steps): each
    applies to the frames that arrive after its cycle and, with BoD, to the slots that start
    after it. :func:`simulate` is this, run over a list of frames; the board model
    (``satemu.model.board``) drives it as frames come.

    ``table`` (``satemu.base.terminals.TerminalTable``) gives the channel terminals: each frame's
    is the one its key names (``arrive``'s ``key``, ``satemu.base.terminals.frame_key``). On the
    return channel (BoD) each terminal has its own queue, loss and share of the delay line, and
    its own requests and slots; on a ``shared`` table (the forward channel) the table only says
    whose each frame is. Either way each terminal's frames are counted apart
    (``ModelResult.terminals``; docs/bod.md, "Terminals")."""

    def __init__(self, regs: ChannelRegs, params: ChannelParams = ChannelParams(),
                 bod_start: int = 0, commits: Sequence[Commit] = (),
                 table: TerminalTable | None = None,
                 jitter: Sequence[Sequence[int]] | None = None):
        require_registers(regs, params)
        if table is not None and not table.terminals:
            table = None
        if table is not None:
            require_terminals(table, regs, params)
        self.regs, self.params, self.table = regs, params, table
        self.pending = deque(sorted(commits, key=lambda c: c.cycle))
        self._check_commits(regs)
        self.loss = _Loss(regs.seed)
        self.jitter = Jitter(regs.seed, jitter)
        self.corrupt = Corrupt(regs.seed)
        self.duplicate = Duplicate(regs.seed)
        self.shaper = _Shaper()
        self.queue: deque[tuple[int, int, int]] = deque()   # (departure, length, terminal)
        self.n = 1 if table is None or table.shared else len(table.framed)
        self.inflight = [deque() for _ in range(self.n)]    # per terminal: (egress start, words)
        self.q_frames = [0] * self.n
        self.q_bytes = [0] * self.n
        self.mem_words = [0] * self.n
        self.cnt = dict.fromkeys(COUNTERS, params.counter_init)   # 0 but in the wrap test
        self.tcnt: dict[int | None, dict[str, int]] = {}
        if table is not None:
            self.tcnt = {i: dict.fromkeys(TERMINAL_COUNTERS, 0)
                         for i in [*range(len(table.framed)), None]}
        self.gauges = dict.fromkeys(["queue_frames_hwm", "queue_bytes_hwm", "mem_words_hwm"], 0)
        self.egress_free = 0
        self.pace_free = 0             # the last frame's release after the memory's pace
        self.last_arrival = -1
        self.frames: list[FrameResult] = []
        self.bod = (Bod(regs, bod_start, params,
                        [(c.cycle, c.regs, self._bod_table(c.table)) for c in self.pending],
                        self._bod_table(table))
                    if regs.bod else None)
        self.released: deque[tuple[int, int, int]] = deque()   # BoD: (release, length, terminal)
        self.taken = 0                                    # BoD: entries of bod.released seen
        self.timed: list[int] = []     # frames whose egress cycle became known, not yet taken

    @staticmethod
    def _bod_table(table: TerminalTable | None) -> TerminalTable | None:
        """The terminals the BoD block serves: a return channel's table (a shared one only
        counts)."""
        return None if table is None or table.shared else table

    @property
    def separate(self) -> bool:
        """Whether the terminals have queues, loss and memory of their own."""
        return self.n > 1 or (self.table is not None and not self.table.shared)

    def take_timed(self) -> list[int]:
        """Indices of the frames whose egress cycle became known since the last call."""
        out, self.timed = self.timed, []
        return out

    def next_slot(self) -> int | None:
        """BoD: the start cycle of the next slot the scheduler will run (None without BoD)."""
        return None if self.bod is None else self.bod.t

    def advance(self, cycle: int) -> None:
        """BoD: run every slot that starts at or before ``cycle``; frames released there get
        their departure and egress cycles (see :meth:`take_timed`)."""
        if self.bod is None:
            return
        self.bod.advance(cycle)
        self._collect()

    def _collect(self) -> None:
        for index, release, egress in self.bod.released[self.taken:]:
            r = self.frames[index]
            r.departure, r.egress = release, egress
            who = self._slot_of(r.terminal)
            self.released.append((release, r.length, who))
            self.inflight[who].append((egress, frame_words(r.length)))
            self.timed.append(index)
        self.taken = len(self.bod.released)

    def _slot_of(self, terminal: int | None) -> int:
        """The queue and memory share a frame of ``terminal`` uses: its own where the terminals
        have their own, else the channel's one."""
        return terminal if self.separate else 0

    def _check_commits(self, regs: ChannelRegs) -> None:
        """The later commits change no layout field (those need an empty delay line: the
        firmware commits them only between runs), nor a BoD channel's overhead (its queued
        frames' sizes), nor how frames are told apart (the table's match, keys and
        terminals)."""
        for c in self.pending:
            for name in sorted(LAYOUT_FIELDS):
                if getattr(c.regs, name) != getattr(regs, name):
                    raise ValueError(f"a commit at cycle {c.cycle} changes {name}, which takes "
                                     f"an empty delay line")
            if regs.bod and c.regs.overhead != regs.overhead:
                raise ValueError(f"a commit at cycle {c.cycle} changes the overhead of a BoD "
                                 f"channel")
            require_registers(c.regs, self.params)
            if c.table is not None:
                old = self.table
                same = old is not None and (old.match, old.unclassified, old.shared) == (
                    c.table.match, c.table.unclassified, c.table.shared) and [
                    (t.key, t.synthetic) for t in old.terminals] == [
                    (t.key, t.synthetic) for t in c.table.terminals]
                if not same:
                    raise ValueError(f"a commit at cycle {c.cycle} changes the terminals or how "
                                     f"frames are told apart, which takes an empty delay line")
                require_terminals(c.table, c.regs, self.params)

    def _commit(self, c: Commit) -> None:
        """A later commit, applied before the first arrival after its cycle."""
        regs = self.regs
        if c.regs.rate_den != regs.rate_den:
            self.shaper.round_up()
        self.regs = c.regs
        if c.table is not None:
            self.table = c.table
        if c.reseed:
            self.loss.reseed(c.regs.seed)
            self.jitter.reseed(c.regs.seed)
            self.corrupt.reseed(c.regs.seed)
            self.duplicate.reseed(c.regs.seed)

    def _peak(self) -> None:
        g = self.gauges
        g["queue_frames_hwm"] = max(g["queue_frames_hwm"], sum(self.q_frames))
        g["queue_bytes_hwm"] = max(g["queue_bytes_hwm"], sum(self.q_bytes))
        g["mem_words_hwm"] = max(g["mem_words_hwm"], sum(self.mem_words))

    def _settle(self, cycle: int) -> None:
        """Take out of the queues the frames that departed before ``cycle``, and out of memory
        those whose egress started before it (items 5 and 6 of the timing semantics)."""
        for queue in (self.queue, self.released):
            while queue and queue[0][0] < cycle:
                _, length, who = queue.popleft()
                self.q_frames[who] -= 1
                self.q_bytes[who] -= length
        for who, inflight in enumerate(self.inflight):
            while inflight and inflight[0][0] < cycle:
                self.mem_words[who] -= inflight.popleft()[1]

    def levels(self, cycle: int) -> dict[str, int]:
        """The queue and memory gauges (``queue_frames_now``, ``queue_bytes_now``,
        ``mem_words_now``) as a frame arriving in ``cycle`` would find them; ``cycle`` is later
        than every arrival so far. Once every frame has departed and started egress they are 0."""
        if cycle <= self.last_arrival:
            raise ValueError("levels are asked for after the last arrival")
        self._settle(cycle)
        return {"queue_frames_now": sum(self.q_frames), "queue_bytes_now": sum(self.q_bytes),
                "mem_words_now": sum(self.mem_words)}

    def _count(self, terminal: int | None, name: str, n: int = 1) -> None:
        if self.tcnt:
            self.tcnt[terminal][name] += n

    def arrive(self, arrival: int, length: int, err: bool, key: int | None = None,
               ecn: int = 0) -> FrameResult:
        """A frame whose last beat is accepted in cycle ``arrival``: its fate, and (unless BoD
        holds it for its slots) its departure and egress cycles. ``key``: what the frame is
        classified by, with a terminal table (``satemu.base.terminals.frame_key``); ``ecn``: how
        ECN marking may mark it (``satemu.model.ecn.ecn_kind``).

        Where duplication copies the frame, the copy is decided right after it, a frame of its
        own with the same arrival, bytes and terminal (``FrameResult.copy``): it is in
        ``frames`` after the original, whose result this returns."""
        if arrival <= self.last_arrival:
            raise ValueError("arrivals must be strictly increasing")
        self.last_arrival = arrival
        while self.pending and self.pending[0].cycle < arrival:
            self._commit(self.pending.popleft())
        if self.bod is not None:
            self.advance(arrival)
        cnt, table = self.cnt, self.table
        length = min(length, 0xFFFF)              # the length counter saturates at 16 bits
        terminal = 0 if table is None else table.classify(key)
        who = self._slot_of(terminal) if terminal is not None else 0
        cnt["rx_frames"] += 1
        cnt["rx_bytes"] += length
        self._settle(arrival)
        r, copied = self._decide(arrival, length, err, terminal, who, ecn, copy=False)
        if copied:
            cnt["duplicated"] += 1
            self._decide(arrival, length, err, terminal, who, ecn, copy=True)
        return r

    def _decide(self, arrival: int, length: int, err: bool, terminal: int | None, who: int,
                ecn: int, copy: bool) -> tuple[FrameResult, bool]:
        """A frame's (or its copy's) fate and schedule, and whether it is to be copied."""
        regs, params, cnt, table = self.regs, self.params, self.cnt, self.table
        self._count(terminal, "rx_frames")           # (a terminal counts its copies too)
        self._count(terminal, "rx_bytes", length)
        own = table.framed[terminal] if self.separate and terminal is not None else regs
        cap = params.queue_cap(regs.bod)
        if self.separate:
            cap = params.terminal_cap(regs.bod, self.n)
        if length < regs.min_len:
            fate = Fate.RUNT
        elif length > regs.max_len:
            fate = Fate.OVERSIZE
        elif err:
            fate = Fate.ERROR
        elif terminal is None and self.separate:
            fate = Fate.UNCLASSIFIED
        else:
            fate = None
        # A frame that passes these checks draws its duplication (its copy draws none).
        copied = fate is None and not copy and bool(regs.dup_p) and self.duplicate.draw(regs)
        if fate is None:
            if self.loss.lost(own, who):
                fate = Fate.LOSS
            elif (self.q_frames[who] + 1 > min(own.queue_frames, cap)
                  or self.q_bytes[who] + length > own.queue_bytes):
                fate = Fate.QUEUE
            elif self.mem_words[who] + frame_words(length) > self.region(regs):
                fate = Fate.MEM
            else:
                fate = Fate.DELIVERED
        if fate is not Fate.DELIVERED:
            cnt[FATE_COUNTER[fate]] += 1
            self._count(terminal, FATE_COUNTER[fate])
            self.frames.append(r := FrameResult(fate, terminal=terminal, copy=copy))
            return r, copied
        queued = self.q_frames[who]               # (ECN marking's queue: the frames ahead)
        self.q_frames[who] += 1
        self.q_bytes[who] += length
        self.mem_words[who] += frame_words(length)
        self._peak()
        cnt["tx_frames"] += 1
        cnt["tx_bytes"] += length
        self._count(terminal, "tx_frames")
        self._count(terminal, "tx_bytes", length)
        flip = self.corrupt.draw(regs, length) if regs.cor_p else None
        cnt["corrupted"] += flip is not None
        if self.bod is not None:
            # Queued in memory now; released, and given its egress cycle, by the slot scheduler.
            self.bod.push(len(self.frames), length, regs.overhead, who)
            self.frames.append(r := FrameResult(fate, length=length, terminal=terminal,
                                                flip=flip, copy=copy))
            return r, copied
        departure = self.shaper.depart(arrival, length, regs)
        latency = regs.delay + (self.jitter.draw(regs) if regs.jit_sigma else 0)
        release = params.paced(departure + max(latency, params.latency_floor),
                               self.pace_free, length)
        self.pace_free = release
        ce = bool(ecn) and bool(regs.ecn_sojourn and departure - arrival >= regs.ecn_sojourn
                                or regs.ecn_queue and queued >= regs.ecn_queue)
        cnt["ce_marked"] += ce
        egress = max(release, self.egress_free)
        self.egress_free = egress + params.port_cycles(length)
        self.queue.append((departure, length, who))
        self.inflight[who].append((egress, frame_words(length)))
        self.timed.append(len(self.frames))
        self.frames.append(r := FrameResult(fate, departure, egress, terminal=terminal, flip=flip,
                                            copy=copy, ce=ce))
        return r, copied

    def region(self, regs: ChannelRegs) -> int:
        """Delay-line words each terminal's frames may hold: the region, or where the terminals
        have their own shares, its part (``terminal_share``)."""
        return terminal_share(regs.mem_size, self.n)

    def finish(self, until: int | None = None) -> ModelResult:
        """The result: a BoD channel first runs its superframes up to cycle ``until`` (by
        default until its queue is empty); a frame still queued then has no egress, and is not
        counted as sent."""
        records = []
        cnt = dict(self.cnt)
        tcnt = {who: dict(c) for who, c in self.tcnt.items()}
        if self.bod is not None:
            regs = self.regs
            if until is None:
                self.bod.drain(self.last_arrival
                               + 10_000 * max(1, regs.bod_slots * regs.bod_slot_cycles))
            else:
                self.bod.advance(until)
            self._collect()
            records = self.bod.records
            unsent = [r for r in self.frames if r.fate is Fate.DELIVERED and r.egress is None]
            cnt["tx_frames"] -= len(unsent)
            cnt["tx_bytes"] -= sum(r.length for r in unsent)
            for r in unsent:
                if tcnt:
                    tcnt[r.terminal]["tx_frames"] -= 1
                    tcnt[r.terminal]["tx_bytes"] -= r.length
        return ModelResult(self.frames, cnt, dict(self.gauges), records, tcnt)


def simulate(frames: Iterable[tuple], regs: ChannelRegs,
             params: ChannelParams = ChannelParams(), commits: Sequence[Commit] = (),
             bod_start: int = 0, until: int | None = None,
             table: TerminalTable | None = None,
             jitter: Sequence[Sequence[int]] | None = None) -> ModelResult:
    """Predict every frame's fate and egress cycle, and the final counters.

    ``frames`` holds (arrival cycle, length in bytes, error flag) in arrival order, and with a
    terminal ``table`` the frame's key (``satemu.base.terminals.frame_key``) fourth, and with ECN
    marking its kind (``satemu.model.ecn.ecn_kind``) fifth; the arrival
    cycle is the cycle the frame's last beat is accepted. ``regs`` is the profile in force from
    reset (or from an initial commit before the first arrival); ``commits`` lists later commits.
    The model assumes the egress sink is always ready and that memory keeps up, which makes the
    ``late`` counter zero; the benches check that the gateware agrees.

    With BoD on (``regs.bod``), superframe 0 starts at ``bod_start`` (the cycle after the commit
    that set the BoD fields), and the model runs the superframes up to cycle ``until`` (by default
    until the queue is empty); ``bod`` of the result holds one record per finished superframe
    and terminal. A frame still queued at ``until`` has departure and egress None.
    """
    channel = Channel(regs, params, bod_start, commits, table, jitter)
    for frame in frames:
        channel.arrive(*frame)
    return channel.finish(until)
