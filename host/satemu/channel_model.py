# SPDX-License-Identifier: BSD-2-Clause
"""Cycle-exact reference model of one link channel (loss, bottleneck queue, shaper, delay line).

The model and the gateware (``satemu_gw.channel.Channel``) share the timing semantics written down
in docs/architecture.md; the cocotb benches assert that both agree on every frame, exactly. The
model works on register values (:class:`ChannelRegs`), the same numbers the gateware sees;
:func:`channel_registers` turns physical units into them for a given system clock.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Iterable, Sequence

import numpy as np

from .prng import Xoshiro128pp
from .bod_model import Bod, BodRecord, check_bod
from .regmap import (LOSS_NONE, LOSS_BERNOULLI, LOSS_GILBERT_ELLIOTT, COUNTERS, REGMAP, BOD_ENABLE,
                     BOD_FIELDS)

__all__ = ["ChannelParams", "ChannelRegs", "Fate", "FrameResult", "ModelResult", "Commit",
           "simulate", "channel_registers", "rate_registers", "probability_register",
           "frame_beats", "frame_words", "ConfigError", "delay_line_budget"]

TIME48 = (1 << 48) - 1


class ConfigError(ValueError):
    """A physical setting that the channel registers cannot hold; the message names the field."""


@dataclass(frozen=True)
class ChannelParams:
    """Elaboration-time parameters of the channel gateware, shared by the model and the RTL."""

    max_frame: int = 2048        # bytes stored per frame; the longest max_len can be
    ingress_beats: int = 512     # on-chip ingress FIFO, 64-bit beats (holds frames until decided)
    queue_depth: int = 1024      # departure-time FIFO entries: a hard cap on the queue in frames
    playout_beats: int = 512     # on-chip playout FIFO between memory and egress
    latency_floor: int = 2048    # L: departure-to-egress latency never falls below this (cycles)
    addr_width: int = 28         # memory word address width (64-bit words)
    queue_limit_bits: int = 16   # width of the queue_frames register
    # The egress port's cost per frame, so back-to-back frames never wait for it: a frame of L
    # bytes occupies ceil((max(L, port_pad) + port_fcs) / 8) + port_gap cycles of the source
    # (0, 0, 0: one cycle per beat; a LiteEth MAC adds padding to 60 bytes, the FCS, a
    # preamble beat and the inter-frame gap, see docs/architecture.md, "Ports").
    port_pad: int = 0
    port_fcs: int = 0
    port_gap: int = 0
    bod: bool = False            # Bandwidth-on-Demand block (the return channel's)
    bod_ring: int = 1024         # superframe records the BoD statistics ring holds
    # Width of the statistics counters' registers: they read the count modulo 2**bits (the
    # firmware folds narrower ones into 64-bit counts, satemu_fold_counters); the model counts
    # in full.
    counter_bits: int = 64

    def __post_init__(self):
        if self.max_frame % 8 or self.ingress_beats < 2 * self.max_frame // 8:
            raise ValueError("ingress FIFO must hold two longest frames")
        if self.playout_beats < self.max_frame // 8:
            raise ValueError("playout FIFO must hold the longest frame")
        if not 32 <= self.counter_bits <= 64:
            raise ValueError("statistics counters must be 32 to 64 bits wide")

    @property
    def max_beats(self) -> int:
        return self.max_frame // 8

    def port_cycles(self, length: int) -> int:
        """Cycles a frame of ``length`` bytes keeps the egress port busy."""
        return (max(length, self.port_pad) + self.port_fcs + 7) // 8 + self.port_gap


@dataclass(frozen=True)
class ChannelRegs:
    """Register values of one channel profile; defaults are the gateware's reset values."""

    loss_mode: int = LOSS_NONE
    loss_p: int = 0
    ge_p: int = 0
    ge_r: int = 0
    ge_loss_good: int = 0
    ge_loss_bad: int = 0
    seed: int = 1
    rate_q: int = 0
    rate_num: int = 0
    rate_den: int = 1
    overhead: int = 0
    delay: int = 0
    queue_frames: int = 1024
    queue_bytes: int = 0xFFFF_FFFF
    min_len: int = 60
    max_len: int = 1518
    mem_base: int = 0
    mem_size: int = 0
    # Bandwidth-on-Demand (satemu.bod_model); off by default.
    bod_flags: int = 0
    bod_slot_cycles: int = 1024
    bod_slots: int = 1
    bod_slot_bytes: int = 1
    bod_cra: int = 0
    bod_rbdc_max: int = 0
    bod_rbdc_timeout: int = 0
    bod_vbdc_max: int = 0
    bod_req_period: int = 1
    bod_latency: int = 1
    bod_bg_count: int = 1
    bod_bg0: int = 1 << 16
    bod_bg1: int = 0
    bod_bg2: int = 0
    bod_bg3: int = 0
    bod_bg4: int = 0
    bod_bg5: int = 0
    bod_bg6: int = 0
    bod_bg7: int = 0

    @property
    def bod(self) -> bool:
        return bool(self.bod_flags & BOD_ENABLE)

    def bod_fields(self) -> tuple:
        return tuple(getattr(self, f.name) for f in BOD_FIELDS)

    def check(self, params: ChannelParams = ChannelParams()) -> None:
        """Raise ConfigError unless every field fits its register and the hardware's bounds."""
        for name, value in vars(self).items():
            width = REGMAP[name].width
            if not 0 <= value < (1 << width):
                raise ConfigError(f"{name}={value} does not fit its {width}-bit register")
        if self.rate_den == 0 or self.rate_num >= self.rate_den:
            raise ConfigError("rate_num must be < rate_den and rate_den >= 1")
        if (self.rate_q or self.rate_num) and Fraction(self.rate_q) + Fraction(self.rate_num, self.rate_den) < Fraction(1, 8):
            raise ConfigError("rate exceeds 8 bytes per cycle (the datapath width)")
        if not 1 <= self.min_len <= self.max_len <= params.max_frame:
            raise ConfigError(f"need 1 <= min_len <= max_len <= {params.max_frame}")
        if self.queue_frames > params.queue_depth:
            raise ConfigError(f"queue_frames={self.queue_frames} exceeds the hardware queue depth "
                              f"of {params.queue_depth} frames")
        if self.mem_base + self.mem_size > (1 << params.addr_width):
            raise ConfigError("memory region exceeds the address space")
        if self.loss_mode not in (LOSS_NONE, LOSS_BERNOULLI, LOSS_GILBERT_ELLIOTT):
            raise ConfigError(f"loss_mode={self.loss_mode} is not a loss model")
        if self.bod:
            if not params.bod:
                raise ConfigError("this channel has no Bandwidth-on-Demand hardware")
            why = check_bod(self)
            if why:
                raise ConfigError(why)


class Fate(enum.IntEnum):
    DELIVERED = 0
    RUNT = 1
    OVERSIZE = 2
    ERROR = 3
    LOSS = 4
    QUEUE = 5
    MEM = 6


FATE_COUNTER = {Fate.RUNT: "drop_runt", Fate.OVERSIZE: "drop_oversize", Fate.ERROR: "drop_error",
                Fate.LOSS: "drop_loss", Fate.QUEUE: "drop_queue", Fate.MEM: "drop_mem"}


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


def frame_beats(length: int) -> int:
    """64-bit beats a frame of ``length`` bytes occupies."""
    return (length + 7) // 8


def frame_words(length: int) -> int:
    """Memory words a stored frame occupies: one header word, then its beats."""
    return 1 + frame_beats(length)


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
    regs.check(params)
    pending = sorted(commits, key=lambda c: c.cycle)
    loss = _Loss(regs.seed)
    shaper = _Shaper()
    queue: deque[tuple[int, int]] = deque()       # (departure, length) of frames in the queue
    inflight: deque[tuple[int, int]] = deque()    # (egress start, words) of frames in memory
    q_frames = q_bytes = mem_words = 0
    cnt = dict.fromkeys(COUNTERS, 0)
    gauges = dict.fromkeys(["queue_frames_hwm", "queue_bytes_hwm", "mem_words_hwm"], 0)
    egress_free = 0
    last_arrival = -1
    out: list[FrameResult] = []
    bod = Bod(regs, bod_start, params) if regs.bod else None
    released: deque[tuple[int, int]] = deque()    # BoD: (release, length) of frames released
    taken = 0                                     # BoD: entries of bod.released accounted

    def bod_catch_up(cycle):
        nonlocal taken
        bod.advance(cycle)
        for index, release, egress in bod.released[taken:]:
            out[index].departure, out[index].egress = release, egress
            released.append((release, out[index].length))
            inflight.append((egress, frame_words(out[index].length)))
        taken = len(bod.released)

    for arrival, length, err in frames:
        if arrival <= last_arrival:
            raise ValueError("arrivals must be strictly increasing")
        last_arrival = arrival
        if bod is not None:
            bod_catch_up(arrival)
        while pending and pending[0].cycle < arrival:
            c = pending.pop(0)
            if (c.regs.mem_base, c.regs.mem_size) != (regs.mem_base, regs.mem_size):
                raise ValueError("the model does not move the memory region mid-run")
            if c.regs.bod_fields() != regs.bod_fields():
                raise ValueError("the model does not change the BoD fields mid-run")
            c.regs.check(params)
            if c.regs.rate_den != regs.rate_den:
                shaper.round_up()
            regs = c.regs
            if c.reseed:
                loss.reseed(regs.seed)
        length = min(length, 0xFFFF)              # the length counter saturates at 16 bits
        cnt["rx_frames"] += 1
        cnt["rx_bytes"] += length
        while queue and queue[0][0] < arrival:
            q_frames -= 1
            q_bytes -= queue.popleft()[1]
        while released and released[0][0] < arrival:
            q_frames -= 1
            q_bytes -= released.popleft()[1]
        while inflight and inflight[0][0] < arrival:
            mem_words -= inflight.popleft()[1]

        if length < regs.min_len:
            fate = Fate.RUNT
        elif length > regs.max_len:
            fate = Fate.OVERSIZE
        elif err:
            fate = Fate.ERROR
        elif loss.lost(regs):
            fate = Fate.LOSS
        elif (q_frames + 1 > min(regs.queue_frames, params.queue_depth)
              or q_bytes + length > regs.queue_bytes):
            fate = Fate.QUEUE
        elif mem_words + frame_words(length) > regs.mem_size:
            fate = Fate.MEM
        else:
            fate = Fate.DELIVERED
        if fate is not Fate.DELIVERED:
            cnt[FATE_COUNTER[fate]] += 1
            out.append(FrameResult(fate))
            continue
        if bod is not None:
            # Queued in memory now; released, and given its egress cycle, by the slot scheduler.
            bod.push(len(out), length)
            q_frames += 1
            q_bytes += length
            mem_words += frame_words(length)
            gauges["queue_frames_hwm"] = max(gauges["queue_frames_hwm"], q_frames)
            gauges["queue_bytes_hwm"] = max(gauges["queue_bytes_hwm"], q_bytes)
            gauges["mem_words_hwm"] = max(gauges["mem_words_hwm"], mem_words)
            cnt["tx_frames"] += 1
            cnt["tx_bytes"] += length
            out.append(FrameResult(fate, length=length))
            continue

        departure = shaper.depart(arrival, length, regs)
        release = departure + max(regs.delay, params.latency_floor)
        egress = max(release, egress_free)
        egress_free = egress + params.port_cycles(length)
        queue.append((departure, length))
        q_frames += 1
        q_bytes += length
        inflight.append((egress, frame_words(length)))
        mem_words += frame_words(length)
        gauges["queue_frames_hwm"] = max(gauges["queue_frames_hwm"], q_frames)
        gauges["queue_bytes_hwm"] = max(gauges["queue_bytes_hwm"], q_bytes)
        gauges["mem_words_hwm"] = max(gauges["mem_words_hwm"], mem_words)
        cnt["tx_frames"] += 1
        cnt["tx_bytes"] += length
        out.append(FrameResult(fate, departure, egress))

    records = []
    if bod is not None:
        if until is None:
            bod.drain(last_arrival + 10_000 * max(1, regs.bod_slots * regs.bod_slot_cycles))
        else:
            bod_catch_up(until)
        bod_catch_up(-1)
        records = bod.records
        unsent = [r for r in out if r.fate is Fate.DELIVERED and r.egress is None]
        cnt["tx_frames"] -= len(unsent)
        cnt["tx_bytes"] -= sum(r.length for r in unsent)
    return ModelResult(out, cnt, gauges, records)


def byte_time(regs: ChannelRegs, f_clk: int, port_bps: int) -> tuple[int, int, int]:
    """(t_num, t_den, ovh): the fastest a channel's frames can come, a frame of L bytes at most
    every (L + ovh) x t_num / t_den cycles. With BoD, the whole carrier (``bod_slot_bytes`` of
    slot payload per ``bod_slot_cycles``, ovh = ``overhead``); shaped, the shaper's
    ``rate_q + rate_num / rate_den`` cycles a byte (ovh = ``overhead``); not shaped, the port's
    line rate, 8 f_clk / port_bps cycles a byte with 24 bytes of preamble, FCS and gap. The
    firmware has the same three cases (``byte_time`` in firmware/app/fw.c)."""
    if regs.bod:
        return regs.bod_slot_cycles, regs.bod_slot_bytes, regs.overhead
    if regs.rate_q or regs.rate_num:
        return regs.rate_q * regs.rate_den + regs.rate_num, regs.rate_den, regs.overhead
    return 8 * f_clk, port_bps, 24


def delay_line_budget(regs: ChannelRegs, params: ChannelParams, f_clk: int,
                      port_bps: int = 1_000_000_000) -> int:
    """Memory words a channel can need at worst, in register units; the firmware computes the
    same integer (firmware/app/fw.c) before it accepts a profile.

    Minimum-size frames arrive back to back at the shaped rate (BoD: the whole carrier's rate) for
    the delay plus the latency floor, each one serialisation time apart; when the channel is not shaped they arrive at the
    port's line rate, (min_len + 24) bytes on the wire each. A full queue of them comes on top.
    """
    window = max(regs.delay, params.latency_floor) + params.latency_floor
    t_num, den, ovh = byte_time(regs, f_clk, port_bps)
    num = (regs.min_len + ovh) * t_num          # cycles per minimum-size frame, times den
    in_delay = window * den // num + 2
    queued = min(regs.queue_frames, params.queue_depth, regs.queue_bytes // regs.min_len)
    return (in_delay + queued) * frame_words(regs.min_len)


def delay_line_traffic(regs: ChannelRegs, f_clk: int,
                       port_bps: int = 1_000_000_000) -> tuple[int, int]:
    """Delay-line words per 65536 cycles a channel can demand at worst, as an exact fraction
    (numerator, denominator) in the integers the firmware uses (firmware/app/fw.c).

    A frame of L bytes takes ``frame_words(L)`` = 1 + ceil(L/8) <= (L + 15) / 8 words and
    arrives at most every T x (L + ovh) cycles, T = t_num / t_den cycles per byte
    (``byte_time``: the BoD carrier, the shaper, or the port's line rate). Words per
    cycle are then at most (L + 15) / (8 T (L + ovh)), which is largest at L = min_len when
    ovh < 15 and at L = max_len otherwise.
    """
    t_num, t_den, ovh = byte_time(regs, f_clk, port_bps)
    length = regs.min_len if ovh < 15 else regs.max_len
    return (length + 15) * 65536 * t_den, 8 * t_num * (length + ovh)


# ---------------------------------------------------------------------------------------------
# Physical units -> register values.

def rate_registers(rate_bps: int | Fraction | None, f_clk: int) -> tuple[int, int, int]:
    """(rate_q, rate_num, rate_den) for a shaped rate in bit/s; None or 0 means unshaped.

    Serialisation time per byte is exactly 8 * f_clk / rate cycles, held as q + num/den, so no
    rounding error exists to accumulate.
    """
    if not rate_bps:
        return 0, 0, 1
    per_byte = Fraction(8 * f_clk) / Fraction(rate_bps)
    if per_byte < Fraction(1, 8):
        raise ConfigError(f"rate {rate_bps} bit/s exceeds 64 bits per cycle at {f_clk} Hz")
    q = per_byte.numerator // per_byte.denominator
    if q >= 1 << 32 or per_byte.denominator >= 1 << 32:
        raise ConfigError(f"rate {rate_bps} bit/s is not representable at {f_clk} Hz")
    return q, per_byte.numerator % per_byte.denominator, per_byte.denominator


def probability_register(p: float | Fraction, name: str = "probability") -> int:
    """A probability as the 32-bit threshold the gateware compares draws against."""
    if not 0 <= p <= 1:
        raise ConfigError(f"{name}={p} is not in [0, 1]")
    return min(round(Fraction(p) * (1 << 32)), (1 << 32) - 1)


def channel_registers(*, f_clk: int, rate_bps=None, overhead: int = 0, delay_s=0,
                      queue_frames: int | None = None, queue_bytes: int | None = None,
                      loss: float = 0.0, gilbert_elliott: tuple[float, float, float, float] | None = None,
                      seed: int = 1, min_len: int = 60, max_len: int = 1518,
                      mem_base: int = 0, mem_size: int = 0,
                      params: ChannelParams = ChannelParams()) -> ChannelRegs:
    """Register values for a channel profile in physical units at system clock ``f_clk`` Hz.

    ``delay_s`` is rounded to the nearest cycle. ``gilbert_elliott`` is (p, r, loss in Good,
    loss in Bad), per frame. A delay below the latency floor is delivered as the floor.
    """
    q, num, den = rate_registers(rate_bps, f_clk)
    if not 0 <= overhead <= 255:
        raise ConfigError(f"overhead={overhead} bytes is outside 0..255")
    delay = round(Fraction(delay_s) * f_clk)
    regs = ChannelRegs(rate_q=q, rate_num=num, rate_den=den, overhead=overhead, delay=delay,
                       queue_frames=params.queue_depth if queue_frames is None else queue_frames,
                       queue_bytes=queue_bytes if queue_bytes is not None else 0xFFFF_FFFF,
                       seed=seed, min_len=min_len, max_len=max_len,
                       mem_base=mem_base, mem_size=mem_size)
    if gilbert_elliott is not None:
        gp, gr, kg, kb = gilbert_elliott
        regs = replace(regs, loss_mode=LOSS_GILBERT_ELLIOTT,
                       ge_p=probability_register(gp, "ge_p"), ge_r=probability_register(gr, "ge_r"),
                       ge_loss_good=probability_register(kg, "ge_loss_good"),
                       ge_loss_bad=probability_register(kb, "ge_loss_bad"))
    elif loss:
        regs = replace(regs, loss_mode=LOSS_BERNOULLI, loss_p=probability_register(loss, "loss"))
    regs.check(params)
    return regs
