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
from satemu.base.records import BodRecord
from satemu.base.params import FATE_COUNTER, ChannelParams, ChannelRegs, Fate, frame_words
from satemu.base.prng import Xoshiro128pp
from satemu.base.regmap import LOSS_BERNOULLI, LOSS_GILBERT_ELLIOTT, COUNTERS, LAYOUT_FIELDS
from satemu.base.validate import require_registers

__all__ = ["FrameResult", "ModelResult", "Commit", "Channel", "simulate"]

TIME48 = (1 << 48) - 1


@dataclass(frozen=True)
class Commit:
    """A COMMIT strobe at ``cycle``: frames whose last beat arrives at a later cycle see ``regs``."""

    cycle: int
    regs: ChannelRegs
    reseed: bool = False


@dataclass
class FrameResult:
    fate: Fate
    departure: int | None = None   # cycle the shaper finishes serialising it (BoD: the end of
                                   # the slot that carries its last byte)
    egress: int | None = None      # cycle of the first egress beat
    length: int = 0                # BoD: bytes (used while the frame waits for its slots)


@dataclass
class ModelResult:
    frames: list[FrameResult]
    counters: dict[str, int]
    gauges: dict[str, int] = field(default_factory=dict)
    bod: list[BodRecord] = field(default_factory=list)   # per-superframe records (BoD only)

    def egress_cycles(self) -> np.ndarray:
        """Egress start cycle per frame, -1 where the frame was dropped."""
        return np.array([-1 if r.egress is None else r.egress for r in self.frames], dtype=np.int64)

    def fates(self) -> np.ndarray:
        return np.array([int(r.fate) for r in self.frames], dtype=np.int8)


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
    def __init__(self, seed: int):
        self.prng = Xoshiro128pp(seed)
        self.bad = False

    def reseed(self, seed: int):
        self.prng = Xoshiro128pp(seed)
        self.bad = False

    def lost(self, regs: ChannelRegs) -> bool:
        if regs.loss_mode == LOSS_BERNOULLI:
            return self.prng.next() < regs.loss_p
        if regs.loss_mode == LOSS_GILBERT_ELLIOTT:
            lost = self.prng.next() < (regs.ge_loss_bad if self.bad else regs.ge_loss_good)
            u = self.prng.next()
            if self.bad:
                self.bad = not (u < regs.ge_r)
            else:
                self.bad = u < regs.ge_p
            return lost
        return False


class Channel:
    """One channel, driven in cycle order: :meth:`arrive` for each frame (arrival cycles strictly
    increasing), :meth:`advance` to let a BoD channel's slot scheduler run up to a cycle,
    :meth:`finish` at the end. ``commits`` are the later commits (a timeline's steps): each
    applies to the frames that arrive after its cycle and, with BoD, to the slots that start
    after it. :func:`simulate` is this, run over a list of frames; the board model
    (``satemu.model.board``) drives it as frames come."""

    def __init__(self, regs: ChannelRegs, params: ChannelParams = ChannelParams(),
                 bod_start: int = 0, commits: Sequence[Commit] = ()):
        require_registers(regs, params)
        self.regs, self.params = regs, params
        self.pending = deque(sorted(commits, key=lambda c: c.cycle))
        self._check_commits(regs)
        self.loss = _Loss(regs.seed)
        self.shaper = _Shaper()
        self.queue: deque[tuple[int, int]] = deque()      # (departure, length) of frames queued
        self.inflight: deque[tuple[int, int]] = deque()   # (egress start, words) in memory
        self.q_frames = self.q_bytes = self.mem_words = 0
        self.cnt = dict.fromkeys(COUNTERS, params.counter_init)   # 0 but in the wrap test
        self.gauges = dict.fromkeys(["queue_frames_hwm", "queue_bytes_hwm", "mem_words_hwm"], 0)
        self.egress_free = 0
        self.pace_free = 0             # the last frame's release after the memory's pace
        self.last_arrival = -1
        self.frames: list[FrameResult] = []
        self.bod = (Bod(regs, bod_start, params, [(c.cycle, c.regs) for c in self.pending])
                    if regs.bod else None)
        self.released: deque[tuple[int, int]] = deque()   # BoD: (release, length), released
        self.taken = 0                                    # BoD: entries of bod.released seen
        self.timed: list[int] = []     # frames whose egress cycle became known, not yet taken

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
            self.released.append((release, r.length))
            self.inflight.append((egress, frame_words(r.length)))
            self.timed.append(index)
        self.taken = len(self.bod.released)

    def _check_commits(self, regs: ChannelRegs) -> None:
        """The later commits change no layout field (those need an empty delay line: the
        firmware commits them only between runs), nor a BoD channel's overhead (its queued
        frames' sizes)."""
        for c in self.pending:
            for name in sorted(LAYOUT_FIELDS):
                if getattr(c.regs, name) != getattr(regs, name):
                    raise ValueError(f"a commit at cycle {c.cycle} changes {name}, which takes "
                                     f"an empty delay line")
            if regs.bod and c.regs.overhead != regs.overhead:
                raise ValueError(f"a commit at cycle {c.cycle} changes the overhead of a BoD "
                                 f"channel")
            require_registers(c.regs, self.params)

    def _commit(self, c: Commit) -> None:
        """A later commit, applied before the first arrival after its cycle."""
        regs = self.regs
        if c.regs.rate_den != regs.rate_den:
            self.shaper.round_up()
        self.regs = c.regs
        if c.reseed:
            self.loss.reseed(c.regs.seed)

    def _peak(self) -> None:
        g = self.gauges
        g["queue_frames_hwm"] = max(g["queue_frames_hwm"], self.q_frames)
        g["queue_bytes_hwm"] = max(g["queue_bytes_hwm"], self.q_bytes)
        g["mem_words_hwm"] = max(g["mem_words_hwm"], self.mem_words)

    def _settle(self, cycle: int) -> None:
        """Take out of the queue the frames that departed before ``cycle``, and out of memory
        those whose egress started before it (items 5 and 6 of the timing semantics)."""
        while self.queue and self.queue[0][0] < cycle:
            self.q_frames -= 1
            self.q_bytes -= self.queue.popleft()[1]
        while self.released and self.released[0][0] < cycle:
            self.q_frames -= 1
            self.q_bytes -= self.released.popleft()[1]
        while self.inflight and self.inflight[0][0] < cycle:
            self.mem_words -= self.inflight.popleft()[1]

    def levels(self, cycle: int) -> dict[str, int]:
        """The queue and memory gauges (``queue_frames_now``, ``queue_bytes_now``,
        ``mem_words_now``) as a frame arriving in ``cycle`` would find them; ``cycle`` is later
        than every arrival so far. Once every frame has departed and started egress they are 0."""
        if cycle <= self.last_arrival:
            raise ValueError("levels are asked for after the last arrival")
        self._settle(cycle)
        return {"queue_frames_now": self.q_frames, "queue_bytes_now": self.q_bytes,
                "mem_words_now": self.mem_words}

    def arrive(self, arrival: int, length: int, err: bool) -> FrameResult:
        """A frame whose last beat is accepted in cycle ``arrival``: its fate, and (unless BoD
        holds it for its slots) its departure and egress cycles."""
        if arrival <= self.last_arrival:
            raise ValueError("arrivals must be strictly increasing")
        self.last_arrival = arrival
        while self.pending and self.pending[0].cycle < arrival:
            self._commit(self.pending.popleft())
        if self.bod is not None:
            self.advance(arrival)
        regs, params, cnt = self.regs, self.params, self.cnt
        length = min(length, 0xFFFF)              # the length counter saturates at 16 bits
        cnt["rx_frames"] += 1
        cnt["rx_bytes"] += length
        self._settle(arrival)

        if length < regs.min_len:
            fate = Fate.RUNT
        elif length > regs.max_len:
            fate = Fate.OVERSIZE
        elif err:
            fate = Fate.ERROR
        elif self.loss.lost(regs):
            fate = Fate.LOSS
        elif (self.q_frames + 1 > min(regs.queue_frames, params.queue_cap(regs.bod))
              or self.q_bytes + length > regs.queue_bytes):
            fate = Fate.QUEUE
        elif self.mem_words + frame_words(length) > regs.mem_size:
            fate = Fate.MEM
        else:
            fate = Fate.DELIVERED
        if fate is not Fate.DELIVERED:
            cnt[FATE_COUNTER[fate]] += 1
            self.frames.append(r := FrameResult(fate))
            return r
        self.q_frames += 1
        self.q_bytes += length
        self.mem_words += frame_words(length)
        self._peak()
        cnt["tx_frames"] += 1
        cnt["tx_bytes"] += length
        if self.bod is not None:
            # Queued in memory now; released, and given its egress cycle, by the slot scheduler.
            self.bod.push(len(self.frames), length, regs.overhead)
            self.frames.append(r := FrameResult(fate, length=length))
            return r
        departure = self.shaper.depart(arrival, length, regs)
        release = params.paced(departure + max(regs.delay, params.latency_floor),
                               self.pace_free, length)
        self.pace_free = release
        egress = max(release, self.egress_free)
        self.egress_free = egress + params.port_cycles(length)
        self.queue.append((departure, length))
        self.inflight.append((egress, frame_words(length)))
        self.timed.append(len(self.frames))
        self.frames.append(r := FrameResult(fate, departure, egress))
        return r

    def finish(self, until: int | None = None) -> ModelResult:
        """The result: a BoD channel first runs its superframes up to cycle ``until`` (by
        default until its queue is empty); a frame still queued then has no egress, and is not
        counted as sent."""
        records = []
        cnt = dict(self.cnt)
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
        return ModelResult(self.frames, cnt, dict(self.gauges), records)


def simulate(frames: Iterable[tuple[int, int, bool]], regs: ChannelRegs,
             params: ChannelParams = ChannelParams(), commits: Sequence[Commit] = (),
             bod_start: int = 0, until: int | None = None) -> ModelResult:
    """Predict every frame's fate and egress cycle, and the final counters.

    ``frames`` holds (arrival cycle, length in bytes, error flag) in arrival order; the arrival
    cycle is the cycle the frame's last beat is accepted. ``regs`` is the profile in force from
    reset (or from an initial commit before the first arrival); ``commits`` lists later commits.
    The model assumes the egress sink is always ready and that memory keeps up, which makes the
    ``late`` counter zero; the benches check that the gateware agrees.

    With BoD on (``regs.bod``), superframe 0 starts at ``bod_start`` (the cycle after the commit
    that set the BoD fields), and the model runs the superframes up to cycle ``until`` (by default
    until the queue is empty); ``bod`` of the result holds one record per finished superframe.
    A frame still queued at ``until`` has departure and egress None.
    """
    channel = Channel(regs, params, bod_start, commits)
    for arrival, length, err in frames:
        channel.arrive(arrival, length, err)
    return channel.finish(until)
