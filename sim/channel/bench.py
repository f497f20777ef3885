# SPDX-License-Identifier: BSD-2-Clause
"""cocotb bench for the channel: drives a scenario, plays the memory, checks against the model.

The scenario (JSON, path in SATEMU_SCENARIO) names the registers, the frames to offer and how
hostile the memory and the egress sink are. The bench records the cycle each frame's last beat
was accepted, feeds those arrivals to ``satemu.model.channel.simulate`` and asserts, exactly:
each frame's fate (from the channel's fate trace) and egress cycle, the payload bytes, every counter and high-water mark, and
conservation. A summary is written to SATEMU_RESULT for the pytest side and the benchmarks.
"""

from __future__ import annotations

import json
import os
import random
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, First, RisingEdge, Timer

from satemu.base.records import unpack_record
from satemu.model.channel import Commit, simulate
from satemu.model.corrupt import flipped
from satemu.model.ecn import ce_marked, ecn_kind
from sim.traffic import overlay_ip
from satemu.model.framelog import expected as log_expected, join as log_join, read_ring
from satemu.base.params import FATE_COPY, ChannelParams, ChannelRegs, Fate
from satemu.base.params import TERMINAL_COUNTERS
from satemu.base.regmap import (CFG_FIELDS, COUNTERS, GAUGES, REGMAP, COMMIT_APPLY, COMMIT_AT,
    COMMIT_RESEED, COMMIT_LAYOUT, STATS_SNAPSHOT, STATUS_COPYING, TERM_OFFSETS, TERM_WINDOW)
from satemu.base.terminals import (MATCH_MAC, TERM_SYNTHETIC, TERMINAL_FIELDS, TerminalRegs,
    TerminalTable, frame_key)

# Where the frame log's ring lies in the bench's memory, unless a scenario says ("log"): far
# above every delay-line region, 2^16 records.
LOG_BASE, LOG_BITS = 1 << 26, 16

PERIOD_NS = 10          # the bench's clock period
MASK64 = (1 << 64) - 1
MASK32 = (1 << 32) - 1


def frame_bytes(seed: int, index: int, length: int, sc: dict | None = None) -> bytes:
    """Deterministic payload; the first bytes carry the frame index. In a scenario with
    terminals (``sc["table"]``) a frame's fourth element names whose it is (the index of a
    terminal with frames, or -1: no terminal's): its source MAC address (bytes 6 to 11; on a
    channel without BoD, port B's, its destination's, bytes 0 to 5), or its 802.1Q tag (bytes
    12 to 15), is that terminal's key, where the frame is long enough."""
    rng = random.Random(seed * 1_000_003 + index)
    body = bytearray(rng.randbytes(length))
    tag = index.to_bytes(4, "little")
    body[:min(4, length)] = tag[:min(4, length)]
    if sc and sc.get("ip"):
        overlay_ip(body, rng)           # IPv4 and IPv6 headers for ECN marking to tell apart
    table = sc and sc.get("table")
    if table:
        who = sc["frames"][index][3]
        keys = [t["key"] for t in table["terminals"] if not t["flags"] & TERM_SYNTHETIC]
        key = keys[who] if who >= 0 else 0x02FFFFFF0000 + index   # no terminal's
        if table["match"] == MATCH_MAC:
            at = 6 if sc["params"]["bod"] else 0      # port A's source, port B's destination
            body[at:at + 6] = key.to_bytes(6, "big")[:max(0, length - at)]
        else:
            tci = (key & 0xFFF if who >= 0 else 0).to_bytes(2, "big")
            body[12:16] = (b"\x81\x00" + tci)[:max(0, length - 12)]
        body = body[:length]
    return bytes(body)


def table_of(d: dict | None) -> TerminalTable | None:
    """A scenario's terminal table (``asdict`` of one), or None."""
    if not d:
        return None
    return TerminalTable(d["match"], tuple(TerminalRegs(**t) for t in d["terminals"]),
                         d["unclassified"], tuple(tuple(x) for x in d["levels"]), d["shared"])


def table_writes(d: dict | None) -> list[tuple[int, int]]:
    """Bus writes that load a terminal table's every field into the shadow table: each
    terminal's through the terminal window, then the level table."""
    out = []
    if not d:
        return out
    for i, t in enumerate(d["terminals"]):
        out.append((REGMAP["term_sel"].offset, i))
        for name, width, _ in TERMINAL_FIELDS:
            for k in range((width + 31) // 32):
                out.append((TERM_WINDOW + TERM_OFFSETS[name] + k, (t[name] >> (32 * k)) & MASK32))
    for i, (rate, length) in enumerate(d["levels"]):
        out += [(REGMAP["level_sel"].offset, i), (REGMAP["level_rate"].offset, rate),
                (REGMAP["level_length"].offset, length)]
    return out


def jitter_writes(banks: list | None) -> list[tuple[int, int]]:
    """Bus writes that load both jitter table banks (``scenario``'s ``jitter``), entry by entry
    from bank 0's first (each jit_val write advances jit_sel)."""
    if not banks:
        return []
    return [(REGMAP["jit_sel"].offset, 0)] + [(REGMAP["jit_val"].offset, v & 0xFFFF)
                                              for bank in banks for v in bank]


def reg_writes(regs: dict) -> list[tuple[int, int]]:
    """Bus writes (word address, value) that load every profile field into the shadow copy."""
    out = []
    for f in CFG_FIELDS:
        value = regs[f.name]
        for k in range(f.words):
            out.append((f.offset + k, (value >> (32 * k)) & 0xFFFF_FFFF))
    return out


class Pins:
    """The DUT's ports as the bench uses them: each handle looked up once, and each input written
    only when its value changes (a cocotb write costs far more than the comparison). Every write
    goes through here, so the values it remembers are the ones the DUT holds."""

    def __init__(self, dut):
        self.dut = dut
        self.handles: dict = {}
        self.last: dict = {}

    def handle(self, name: str):
        h = self.handles.get(name)
        if h is None:
            h = self.handles[name] = getattr(self.dut, name)
        return h

    def __getitem__(self, name: str) -> int:
        return int(self.handle(name).value)

    def __setitem__(self, name: str, value: int):
        if self.last.get(name) != value:
            self.handle(name).value = value
            self.last[name] = value


class Memory:
    """A LiteDRAM-native-like port model: in-order commands, write data after its command, read
    data after a random latency, random backpressure on cmd and wdata."""

    def __init__(self, pins, rng, cmd_ready, wdata_ready, lat_min, lat_max, depth=8):
        self.pins, self.rng = pins, rng
        self.rdata_ready = pins.handle("mem__rdata__ready")
        self.p_cmd, self.p_wdata = cmd_ready, wdata_ready
        self.lat = (lat_min, lat_max)
        self.depth = depth
        self.words: dict[int, int] = {}
        self.queue: deque = deque()          # accepted commands: (we, addr)
        self.responses: deque = deque()      # (ready cycle, data)
        self.last_resp = -1
        self.writes = self.reads = 0
        self.cmd_ready = self.wdata_ready = False
        self.rvalid = False

    def busy(self) -> bool:
        return bool(self.queue or self.responses or self.rvalid)

    def cycle(self, t: int, cmd_valid: int, cmd_payload: int, wdata_valid: int, wdata_payload: int):
        pins = self.pins
        # Handshakes of the cycle that just ended.
        if self.rvalid:                      # rdata.ready is sampled below; the core holds it high
            if int(self.rdata_ready.value):
                self.responses.popleft()
        if cmd_valid and self.cmd_ready:
            self.queue.append((cmd_payload & 1, cmd_payload >> 1))
        if wdata_valid and self.wdata_ready:
            we, addr = self.queue.popleft()
            assert we == 1, "write data without a write command"
            self.words[addr] = wdata_payload & MASK64
            self.writes += 1
        # Execute reads at the head of the command queue (in order after earlier writes).
        while self.queue and self.queue[0][0] == 0:
            _, addr = self.queue.popleft()
            ready = max(t + self.rng.randint(*self.lat), self.last_resp + 1)
            self.last_resp = ready
            self.responses.append((ready, self.words.get(addr, 0xDEAD_BEEF_0BAD_F00D)))
            self.reads += 1
        # Drive the next cycle.
        self.cmd_ready = len(self.queue) < self.depth and self.rng.random() < self.p_cmd
        self.wdata_ready = bool(self.queue) and self.queue[0][0] == 1 and self.rng.random() < self.p_wdata
        pins["mem__cmd__ready"] = int(self.cmd_ready)
        pins["mem__wdata__ready"] = int(self.wdata_ready)
        self.rvalid = bool(self.responses) and self.responses[0][0] <= t + 1
        pins["mem__rdata__valid"] = int(self.rvalid)
        if self.rvalid:
            pins["mem__rdata__payload"] = self.responses[0][1]


class Bench:
    def __init__(self, dut, sc):
        self.dut, self.sc = dut, sc
        self.pins = Pins(dut)
        self.rng = random.Random(sc.get("tb_seed", 1))
        m = sc.get("mem", {})
        self.mem = Memory(self.pins, self.rng, m.get("cmd_ready", 1.0), m.get("wdata_ready", 1.0),
                          m.get("lat_min", 1), m.get("lat_max", 1))
        self.params = ChannelParams(**sc.get("params", {}))
        self.frames = sc["frames"]            # [at, length, err] (and whose, with a table)
        self.arrivals: list[int] = []
        self.egress: list[tuple[int, bytes]] = []
        self.fates: list[int] = []
        self.bus_ops: deque = deque()
        self.commits: list[Commit] = []
        self.commit_cycles: list[int] = []
        self.bod_start = 0          # superframe 0 of the BoD timeline: the cycle after the commit
        self.end = 0

    async def reset(self):
        dut, pins = self.dut, self.pins
        for name in ("sink__valid", "source__ready", "mem__cmd__ready", "mem__wdata__ready",
                     "mem__rdata__valid", "bus__w_en", "bus__addr", "bus__w_data"):
            pins[name] = 0
        pins["rst"] = 1
        await ClockCycles(dut.clk, 4)
        pins["rst"] = 0

    async def bus_read(self, addr: int) -> int:
        self.pins["bus__addr"] = addr
        await RisingEdge(self.dut.clk)
        await RisingEdge(self.dut.clk)
        return self.pins["bus__r_data"]

    async def bus_write(self, addr: int, value: int):
        """One register write: a cycle with the bus's write enable high."""
        pins = self.pins
        pins["bus__addr"], pins["bus__w_data"], pins["bus__w_en"] = addr, value, 1
        await RisingEdge(self.dut.clk)
        pins["bus__w_en"] = 0

    async def read_stat(self, name: str) -> int:
        f = REGMAP[name]
        value = 0
        for k in range(f.words):
            value |= await self.bus_read(f.offset + k) << (32 * k)
        return value

    async def configure(self, regs: dict, flags: int):
        dut, pins = self.dut, self.pins
        log = []
        if self.params.frame_log:
            ring = self.sc.get("log", {})
            log = [(REGMAP["log_base"].offset, ring.get("base", LOG_BASE)),
                   (REGMAP["log_ctl"].offset, ring.get("bits", LOG_BITS))]
        writes = (log + jitter_writes(self.sc.get("jitter")) + reg_writes(regs)
                  + table_writes(self.sc.get("table")))
        for addr, value in writes + [(REGMAP["commit"].offset, flags)]:
            pins["bus__addr"], pins["bus__w_data"], pins["bus__w_en"] = addr, value, 1
            await RisingEdge(dut.clk)
        self.bod_start = pins["now"] + 1
        pins["bus__w_en"] = 0
        while (await self.read_stat("status")) & (1 | STATUS_COPYING):
            pass

    async def run(self):
        dut, sc, pins = self.dut, self.sc, self.pins
        # The ports read every cycle, looked up once.
        clk, sink_ready_h, fate_valid_h, fate_h, copy_h, src_valid_h, src_payload_h = (
            pins.handle(n) for n in ("clk", "sink__ready", "fate_valid", "fate", "fate_copy",
                                     "source__valid", "source__payload"))
        cmd_valid_h, cmd_payload_h, wdata_valid_h, wdata_payload_h = (
            pins.handle(n) for n in ("mem__cmd__valid", "mem__cmd__payload", "mem__wdata__valid",
                                     "mem__wdata__payload"))
        seed = sc.get("tb_seed", 1)
        p_gap = sc.get("beat_gap", 0.0)
        p_sink = sc.get("sink_ready", 1.0)
        # Scheduled commits: bus writes queued at their cycle, commit cycle recorded on the strobe.
        commit_plan = deque(sorted(sc.get("commits", []), key=lambda c: c["at"]))

        pending = deque(enumerate(self.frames))
        beats: deque = deque()             # beats of the frame being driven: (payload, last)
        driving = False
        rx = bytearray()
        in_frame_out = False
        out_start = None
        sink_valid = False
        sink_payload = 0
        src_ready = True
        expect_end = None
        t = pins["now"]
        skip_to = None

        while True:
            # t: the cycle just ended (whose values are read below), counted here and read from
            # the channel's own counter only after a jump.
            if skip_to is not None and skip_to - t > 1:
                # To the middle of the cycle before skip_to (one timer, not a callback a
                # cycle), or until the channel starts something; then to the next edge.
                await First(Timer(PERIOD_NS * (skip_to - t - 1) + PERIOD_NS // 2, unit="ns"),
                            RisingEdge(cmd_valid_h), RisingEdge(src_valid_h),
                            RisingEdge(fate_valid_h))
                await RisingEdge(clk)
                t = pins["now"]
            else:
                await RisingEdge(clk)
                t += 1
            skip_to = None

            # --- ingress handshake of cycle t
            if sink_valid and int(sink_ready_h.value):
                beats.popleft()
                if sink_payload >> 64 & 1:
                    self.arrivals.append(t)
                    driving = False
            if int(fate_valid_h.value):
                self.fates.append(int(fate_h.value) | FATE_COPY * int(copy_h.value))
            # --- egress
            src_valid = int(src_valid_h.value)
            if src_valid:
                if not in_frame_out:
                    in_frame_out, out_start = True, t
                    rx = bytearray()
                if src_ready:
                    word = int(src_payload_h.value)
                    last = word >> 64 & 1
                    nbytes = word >> 65 & 0xF
                    rx += (word & MASK64).to_bytes(8, "little")[:nbytes if last else 8]
                    if last:
                        self.egress.append((out_start, bytes(rx)))
                        in_frame_out = False
            # --- memory
            cmd_valid = int(cmd_valid_h.value)
            wdata_valid = int(wdata_valid_h.value)
            self.mem.cycle(t, cmd_valid, int(cmd_payload_h.value) if cmd_valid else 0,
                           wdata_valid, int(wdata_payload_h.value) if wdata_valid else 0)
            # --- bus: commits
            pins["bus__w_en"] = 0
            if self.bus_ops:
                addr, value, commit = self.bus_ops.popleft()
                pins["bus__addr"], pins["bus__w_data"], pins["bus__w_en"] = addr, value, 1
                if commit is not None:
                    # Written in cycle t + 1; one named ahead (AT) takes effect at its cycle.
                    self.commits.append(Commit(max(t + 1, commit.get("cycle", 0)),
                                               ChannelRegs(**commit["regs"]),
                                               bool(commit.get("reseed")),
                                               table_of(commit.get("table"))))
            elif commit_plan and t + 1 >= commit_plan[0]["at"]:
                c = commit_plan.popleft()
                ops = [(a, v, None) for a, v in reg_writes(c["regs"])
                       + table_writes(c.get("table"))]
                flags = COMMIT_APPLY | (COMMIT_RESEED if c.get("reseed") else 0)
                if "cycle" in c:        # a commit named ahead, as the firmware runs a timeline
                    cycle = REGMAP["commit_cycle"].offset
                    ops += [(cycle, c["cycle"] & MASK32, None), (cycle + 1, c["cycle"] >> 32, None)]
                    flags |= COMMIT_AT
                ops.append((REGMAP["commit"].offset, flags, c))
                self.bus_ops.extend(ops)
            # --- ingress: next beat
            if not driving and not beats and pending and t + 1 >= pending[0][1][0]:
                idx, (at, length, err, *_) = pending.popleft()
                data = frame_bytes(seed, idx, length, sc)
                nb = max(1, (length + 7) // 8)
                for k in range(nb):
                    chunk = data[8 * k:8 * k + 8]
                    last = k == nb - 1
                    n = len(chunk) if last else 8
                    word = int.from_bytes(chunk.ljust(8, b"\0"), "little")
                    # err 1: bad FCS; err 2: a malformed byte count (0) on the last beat.
                    nbytes = 0 if (last and err == 2) else (n if last else 8)
                    beats.append(word | (last << 64) | (nbytes << 65)
                                 | ((err == 1 and last) << 69))
                driving = True
            if beats and (p_gap == 0 or self.rng.random() >= p_gap):
                sink_valid, sink_payload = True, beats[0]
            else:
                sink_valid = False
            pins["sink__valid"] = int(sink_valid)
            if sink_valid:
                pins["sink__payload"] = sink_payload
            src_ready = p_sink >= 1.0 or self.rng.random() < p_sink
            pins["source__ready"] = int(src_ready)

            # --- end of stimulus: predict, then run until the last expected egress
            if expect_end is None and not pending and not beats and not self.bus_ops and not commit_plan:
                self.model = simulate(self.model_frames(),
                                      ChannelRegs(**sc["regs"]), self.params, self.commits,
                                      bod_start=self.bod_start, table=self.table,
                                      jitter=self.sc.get("jitter"))
                ends = [r.egress for r in self.model.frames if r.egress is not None]
                expect_end = (max(ends) if ends else t) + self.params.max_beats + 64
                expect_end = max(expect_end, t + sc.get("run_after", 0))
            if expect_end is not None and t >= expect_end and not in_frame_out:
                break
            # --- idle: jump ahead to the next event
            if (not beats and not self.bus_ops and not in_frame_out and not src_valid
                    and not cmd_valid and not wdata_valid and not self.mem.busy()):
                nxt = [expect_end] if expect_end is not None else []
                if pending:
                    nxt.append(pending[0][1][0])
                if commit_plan:
                    nxt.append(commit_plan[0]["at"])
                if nxt and min(nxt) - t > 4:
                    skip_to = min(nxt) - 1
        pins["sink__valid"] = 0
        now = pins["now"]
        assert now == t, f"the bench counted cycle {t}, the channel's counter says {now}"
        self.end = t

    @property
    def table(self) -> TerminalTable | None:
        return table_of(self.sc.get("table"))

    def model_frames(self) -> list[tuple]:
        """The frames as the model takes them: arrival, length, error, and with a table the
        key each frame's bytes carry."""
        out = []
        table = self.table
        for i, (a, f) in enumerate(zip(self.arrivals, self.frames)):
            frame = (a, f[1], f[2])
            data = frame_bytes(self.sc.get("tb_seed", 1), i, f[1], self.sc)
            if table is not None:
                length = f[1] if f[2] != 2 else len(data)
                frame += (frame_key(data[:length], table.match, source=self.params.bod),)
            if self.sc.get("ip"):
                frame = (frame + (None,))[:4] + (ecn_kind(data),)
            out.append(frame)
        return out

    async def terminal_stats(self) -> dict:
        """Each terminal's counters (satemu_gw.termstats), and under None no one's."""
        out = {}
        framed = len(self.table.framed)
        for who in [*range(framed), None]:
            index = 15 if who is None else who
            out[who] = {}
            for k, name in enumerate(TERMINAL_COUNTERS):
                await self.bus_write(REGMAP["tstat_sel"].offset, index << 4 | k)
                await RisingEdge(self.dut.clk)
                out[who][name] = await self.read_stat("tstat")
        return out

    async def stats(self) -> dict:
        await self.bus_write(REGMAP["stats"].offset, STATS_SNAPSHOT)
        return {name: await self.read_stat(name) for name in COUNTERS + GAUGES}

    async def bod_ring(self) -> tuple[int, list]:
        """The BoD statistics ring: the superframe count and the records still held (a terminal
        each a superframe, superframe x terminals + terminal)."""
        count = await self.read_stat("bod_count")
        self.end = self.pins["now"]
        per = len(self.table.terminals) if self.table else 1
        records = []
        for rec in range(max(0, count * per - self.params.bod_ring), count * per):
            await self.bus_write(REGMAP["bod_sel"].offset, rec)
            records.append(unpack_record(await self.read_stat("bod_rec")))
        return count, records


def check_log(bench: Bench, count: int, lost: int) -> tuple[list, dict]:
    """The frame log's ring, read from the bench's memory, against the model: every record the
    ring still holds is of this lap, and joined into one entry per frame they equal the model's
    (its arrival, length, fate, and a delivered frame's egress: exactly, or no earlier with a
    late flag where the sink stalls). No record is lost unless counted, and none is missing
    from a ring that did not wrap."""
    ring = bench.sc.get("log", {})
    base, bits = ring.get("base", LOG_BASE), ring.get("bits", LOG_BITS)
    records, info = read_ring(bench.mem.words, base, bits, count)
    entries, joined = log_join(records)
    model = bench.model
    offered = model.offered()
    want = log_expected([bench.arrivals[i] for i in offered],
                        [bench.frames[i][1] for i in offered], model.frames)
    delivered = sum(r.fate == Fate.DELIVERED for r in model.frames)
    exact = bench.sc.get("sink_ready", 1.0) >= 1.0
    errors = []
    if count + lost != len(model.frames) + delivered:
        errors.append(f"frame log: {count} records written and {lost} lost, but "
                      f"{len(model.frames)} frames decided and {delivered} sent")
    if info["stale"]:
        errors.append(f"frame log: {info['stale']} slots hold a record of another lap")
    if not info["wrapped"] and not lost:
        if len(entries) != len(model.frames) or joined["unsent"] or joined["orphans"]:
            errors.append(f"frame log: {len(entries)} frames decided, {joined} unjoined, "
                          f"for {len(model.frames)} frames")
    if not lost and joined["unsent"]:
        errors.append(f"frame log: {joined['unsent']} delivered frames without a sent record")
    for e in entries:
        w = want[e.index] if e.index < len(want) else None
        ok = w is not None and (e.index, e.arrival, e.length, e.fate) == \
            (w.index, w.arrival, w.length, w.fate)
        if ok and w.egress is not None and e.egress is not None:
            ok = e.egress == w.egress and not e.late if exact else \
                (e.egress - w.egress) % (1 << 48) < 1 << 47 and e.late == (e.egress != w.egress)
        if not ok:
            errors.append(f"frame log: frame {e.index}: {e}, model {w}")
        if len(errors) > 20:
            break
    summary = {"count": count, "lost": lost, "entries": len(entries), **info, **joined,
               "bits": bits}
    return errors, summary


def check_bod(bench: Bench, count: int, records: list, end: int) -> tuple[list, dict]:
    """The ring against the model run to the bench's last cycle: every record equal."""
    sc = bench.sc
    model = simulate(bench.model_frames(), ChannelRegs(**sc["regs"]), bench.params,
                     bench.commits, bod_start=bench.bod_start, until=end, table=bench.table,
                     jitter=sc.get("jitter"))
    errors = []
    want = model.bod
    per = len(bench.table.terminals) if bench.table else 1
    # The scheduler trails the clock by a few cycles: at most one superframe may be pending.
    if not len(want) // per - 1 <= count <= len(want) // per:
        errors.append(f"BoD ring holds {count} superframes, the model finished "
                      f"{len(want) // per}")
    first = count * per - len(records)
    for n, rec in enumerate(records, start=first):
        exp = want[n] if n < len(want) else None
        if exp is None or rec != exp:
            errors.append(f"record {n} (superframe {rec.sf}, terminal {rec.terminal}): "
                          f"gateware {rec}, model {exp}")
            if len(errors) > 20:
                break
    granted = sum(r.granted for r in want)
    summary = {"superframes": count, "granted": granted, "used": sum(r.used for r in want),
               "requests": sum(1 for r in want if r.rbdc_req or r.vbdc_req),
               "vbdc_max_req": max((r.vbdc_req for r in want), default=0),
               "bg": [r.bg for r in want], "backlog_max": max((r.backlog for r in want), default=0),
               "records": [dict(vars(r), granted=r.granted) for r in want],
               "ring": [vars(r) for r in records]}
    return errors, summary


def check(bench: Bench, hw: dict) -> dict:
    """Compare gateware and model; returns the summary, raises AssertionError on any difference."""
    model, sc = bench.model, bench.sc
    seed = sc.get("tb_seed", 1)
    # In the order they leave: arrival order but where terminals' slots release frames out of
    # it (docs/bod.md, "Terminals"); frames still queued at the end have no egress.
    # (by the offered frame each is, a copy by its original's)
    delivered = sorted(((i, r) for i, r in zip(model.offered(), model.frames)
                        if r.fate == Fate.DELIVERED and r.egress is not None),
                       key=lambda x: x[1].egress)
    errors = []
    if len(delivered) != len(bench.egress):
        errors.append(f"{len(bench.egress)} frames left the channel, the model delivers {len(delivered)}")
    exact = sc.get("sink_ready", 1.0) >= 1.0
    late = 0
    for k, ((i, r), (cycle, payload)) in enumerate(zip(delivered, bench.egress)):
        length = bench.frames[i][1]
        sent = frame_bytes(seed, i, length, sc)
        if payload != flipped(ce_marked(sent, ecn_kind(sent)) if r.ce else sent, r.flip):
            got = int.from_bytes(payload[:4].ljust(4, b"\0"), "little")
            errors.append(f"egress #{k}: payload differs from frame {i} (tag {got}, {len(payload)} bytes)")
        late += cycle > r.egress
        if not exact:
            # A stalling sink may only delay frames, and every delayed start is counted.
            if cycle < r.egress:
                errors.append(f"frame {i}: egress at {cycle}, before its scheduled {r.egress}")
        elif cycle != r.egress:
            errors.append(f"frame {i}: egress at cycle {cycle}, model says {r.egress} "
                          f"(arrival {bench.arrivals[i]}, departure {r.departure})")
        if len(errors) > 20:
            break
    if len(bench.fates) != len(model.frames):
        errors.append(f"{len(bench.fates)} frames decided, {len(model.frames)} offered")
    for i, (got, r) in enumerate(zip(bench.fates, model.frames)):
        if got != int(r.fate) | FATE_COPY * r.copy:
            errors.append(f"decision {i}: fate {Fate(got & ~FATE_COPY).name}"
                          f"{' (copy)' * bool(got & FATE_COPY)}, model says {r.fate.name}"
                          f"{' (copy)' * r.copy}")
            if len(errors) > 40:
                break
    # A counter's register reads its count modulo 2**counter_bits; the model counts in full, and
    # both start at counter_init (0 but in the wrap test), so counts are taken modulo the width.
    wrap = (1 << bench.params.counter_bits) - 1
    count = {n: (hw[n] - bench.params.counter_init) & wrap for n in COUNTERS}
    for name in COUNTERS:
        if name == "late" and not exact:
            continue
        if hw[name] != model.counters[name] & wrap:
            errors.append(f"counter {name}: gateware {hw[name]}, model {model.counters[name]}"
                          f" (mod 2^{bench.params.counter_bits})")
    for name, value in model.gauges.items():
        if hw[name] != value:
            errors.append(f"gauge {name}: gateware {hw[name]}, model {value}")
    if bench.table is not None:
        for who, counters in model.terminals.items():
            for name, value in counters.items():
                if name == "late" and not exact:
                    continue
                got = hw["terminals"][who][name]
                if got != value & wrap:
                    errors.append(f"terminal {who} counter {name}: gateware {got}, model {value}")
    drops = sum(count[n] for n in COUNTERS if n.startswith("drop_"))
    if (count["rx_frames"] + count["duplicated"] != count["tx_frames"] + drops
            or count["rx_frames"] != len(bench.frames)):
        errors.append(f"conservation: rx {count['rx_frames']} + copies {count['duplicated']} != "
                      f"tx {count['tx_frames']} + drops {drops} (offered {len(bench.frames)})")
    if exact and count["late"]:
        errors.append(f"{count['late']} frames left later than scheduled")
    if not exact and count["late"] != late:
        errors.append(f"late counter {count['late']}, but {late} frames started after their"
                      " schedule")
    summary = {
        "frames": len(bench.frames), "delivered": len(bench.egress),
        "counters": {n: hw[n] for n in COUNTERS + GAUGES},
        "arrivals": bench.arrivals, "egress": [c for c, _ in bench.egress],
        "commit_cycles": [c.cycle for c in bench.commits],
        "fates": bench.fates,
        "late_observed": late, "mem_reads": bench.mem.reads, "mem_writes": bench.mem.writes,
        "errors": errors,
    }
    return summary


@cocotb.test()
async def channel_matches_model(dut):
    with open(os.environ["SATEMU_SCENARIO"]) as f:
        sc = json.load(f)
    cocotb.start_soon(Clock(dut.clk, PERIOD_NS, unit="ns").start())
    bench = Bench(dut, sc)
    await bench.reset()
    await bench.configure(sc["regs"], COMMIT_APPLY | COMMIT_RESEED | COMMIT_LAYOUT)
    await bench.run()
    hw = await bench.stats()
    if bench.table is not None:
        hw["terminals"] = await bench.terminal_stats()
    summary = check(bench, hw)
    if bench.table is not None:
        summary["terminals"] = {str(k): v for k, v in hw["terminals"].items()}
    if bench.params.frame_log:
        errors, summary["frame_log"] = check_log(bench, await bench.read_stat("log_count"),
                                           await bench.read_stat("log_lost"))
        summary["errors"] += errors
    if ChannelRegs(**sc["regs"]).bod:
        count, records = await bench.bod_ring()
        errors, bod = check_bod(bench, count, records, bench.end)
        summary["errors"] += errors
        summary["bod"] = bod
        summary["bod_start"] = bench.bod_start
    out = os.environ.get("SATEMU_RESULT")
    if out:
        with open(out, "w") as f:
            json.dump(summary, f)
    assert not summary["errors"], "\n".join(summary["errors"])
