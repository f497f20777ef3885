#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Benchmark: the channels' data path at a board's clocks and memory.

Runs a board variant of the simulated board, built without its channels' memory pace (which
would hold the reads to the guarantee measured here): ``--board versa-ecp5`` (the default,
``sim.board.launch(board="versa-ecp5", paced=False)``: the board's system clock, LiteDRAM
with the board's MT41K64M16 on an SDRAM model set up like its ECP5DDRPHY, each channel through
the port widener onto a 128-bit native port as on the board) or ``--board colorlight-5a-75b``
(40 MHz, the M12L64322A SDR SDRAM on a model set up like its GENSDRPHY, a 32-bit native port
that LiteDRAM's converters give each channel as 64 bits), and offers GbE-paced frames of one
length on one channel, then on both at once (``sim.datapath.run_point``), through a delay line
(10 ms on the Versa; 2 ms on the Colorlight, whose 2 MiB lines would not hold 10 ms at its
maxima).
For each case it finds the highest offered line rate at which every frame is delivered at the
model's cycle (none dropped, none late): a coarse sweep upwards, then bisection, then a run three
times as long at the rate found (lowered until that passes too). An experiment staggers the two
channels' traffic to show what DRAM row conflicts between them cost. Writes
bench/results/datapath-<board>.json with every run, the maxima in Mbit/s of line rate, of
frame bytes and of DRAM traffic, their share of the DRAM's theoretical bandwidth, the memory
traffic the probes counted, and the longest delay the delay line holds at each rate.

    python bench/bench_datapath.py                  # the full benchmark (about 15-20 min)
    python bench/bench_datapath.py --board colorlight-5a-75b
    python bench/bench_datapath.py --split          # rates split between the channels (~8 min)
    python bench/bench_datapath.py --point 1500 200 both --traffic-ms 2 --delay-ms 1
    # a delay cut from 3 to 0.5 ms, 2 ms into 4 ms of shaped traffic, with the board's pace
    python bench/bench_datapath.py --point 1500 200 both --traffic-ms 4 --delay-ms 3 \
        --shaped --cut-ms 2 0.5 --paced
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "host"), str(ROOT / "gateware")]

from sim.datapath import (FORWARD, RETURN, frame_words, run_point,  # noqa: E402
                          wire_bytes)

# The boards whose variant of the simulated board it runs, and the delay it runs through.
VARIANTS = {"versa-ecp5": 10.0, "colorlight-5a-75b": 2.0}
F_CLK = 0                     # the board's system clock, set by main()
PARTIAL = ROOT / "build" / "datapath" / "points.jsonl"
CASES = {"one": (FORWARD,), "both": (FORWARD, RETURN)}
COARSE_MBPS = (50, 100, 150, 200, 300, 400, 600, 800, 1000)
# --split: 60-byte frames (9 words, the costliest per byte) at forward and return line rates in
# Mbit/s, the forward queue held past the chip's 1024 departure times (4 ms shaped at half the
# rate: about 2,000 frames, so each frame's departure time goes through the ring) or not.
SPLIT_POINTS = [(350, 350, True), (365, 365, True), (380, 380, True), (400, 400, True),
                (445, 208, True), (440, 231, True), (465, 231, True), (465, 245, True),
                (490, 230, True), (565, 230, False)]
SPLIT_TRAFFIC_MS, SPLIT_DELAY_MS, SPLIT_FILL = 20.0, 3.0, (4.0, Fraction(1, 2))


def dram_theory(settings, burst_bits: int) -> dict:
    """The DRAM's theoretical bandwidth from the PHY settings: the DFI carries ``dfi_databits``
    per phase and ``nphases`` phases per system cycle (DDR: ``databits`` twice per memory
    clock, the memory clock ``nphases`` times the system clock; SDR: ``databits`` once per
    cycle). ``burst_bits``: the native port's width, what one read or write command moves."""
    bus_bits = settings.dfi_databits * settings.nphases
    bps = bus_bits * F_CLK
    ddr = settings.memtype != "SDR"
    formula = (f"databits x 2 (double data rate) x nphases x f_sys = {settings.databits} x 2 x "
               f"{settings.nphases}" if ddr else
               f"databits x f_sys (single data rate, one phase) = {settings.databits}")
    return {"bps": bps, "bus_bits_per_cycle": bus_bits, "burst_bits": burst_bits,
            "burst_cycles": burst_bits // bus_bits,
            "formula": f"{formula} x {F_CLK / 1e6:g} MHz = {bps / 1e9:g} Gbit/s",
            "same_as": (f"one BL8 burst of {burst_bits} bits (the native port's width) every "
                        f"tCCD = 4 memory clocks = {burst_bits // bus_bits} system cycles" if ddr
                        else f"one {burst_bits}-bit word (the native port's width) a cycle")}


def rates(length: int, line_bps: float, nch: int, theory_bps: int) -> dict:
    """What an offered line rate per channel means: frames/s, frame bytes, DRAM traffic."""
    fps = line_bps / (wire_bytes(length) * 8)
    dram = nch * fps * frame_words(length) * 64 * 2        # each word written once, read once
    return {"line_mbps_per_channel": round(line_bps / 1e6, 2),
            "frames_per_s_per_channel": round(fps),
            "frame_mbps_per_channel": round(fps * length * 8 / 1e6, 2),
            "frame_mbps_total": round(nch * fps * length * 8 / 1e6, 2),
            "dram_mbps": round(dram / 1e6, 2),
            "dram_share": round(dram / theory_bps, 4)}


def summarise_probe(probe: dict | None, nch: int, theory: dict) -> dict | None:
    """The probe's counts as rates and per-command costs (``theory``: ``dram_theory``'s, for
    the bus's width and a burst's length)."""
    if not probe:
        return None
    r = probe["per_cycle"]
    out = {"window_cycles": probe["cycles"]}
    for pre in ("fwd", "ret")[:nch]:
        cmds = r[f"{pre}_cmd_w"] + r[f"{pre}_cmd_r"]
        out[pre] = {
            "port64_writes_per_cycle": round(r[f"{pre}_cmd_w"], 4),
            "port64_reads_per_cycle": round(r[f"{pre}_cmd_r"], 4),
            "port64_cmd_waiting_share": round(r[f"{pre}_cmd_wait"], 4),
            "cycles_per_port64_command": round(1 / cmds, 2) if cmds else None,
            "read_outstanding_share": round(r[f"{pre}_rd_busy"], 4),
            "cycles_per_read_outstanding": round(r[f"{pre}_rd_busy"] / r[f"{pre}_cmd_r"], 2)
            if r[f"{pre}_cmd_r"] else None,
            # the native port behind the 64-bit one: the Versa's 128-bit port behind the
            # widener; on the Colorlight the same 64-bit crossbar port (LiteDRAM narrows it)
            "native_writes_per_cycle": round(r[f"{pre}_nat_w"], 4),
            "native_reads_per_cycle": round(r[f"{pre}_nat_r"], 4),
            "native_cmd_waiting_share": round(r[f"{pre}_nat_wait"], 4),
        }
    bursts = r["dfi_rd"] + r["dfi_wr"]
    words = sum(r[f"{pre}_cmd_w"] + r[f"{pre}_cmd_r"] for pre in ("fwd", "ret")[:nch])
    out["dram"] = {"reads_per_cycle": round(r["dfi_rd"], 4),
                   "writes_per_cycle": round(r["dfi_wr"], 4),
                   "activates_per_cycle": round(r["dfi_act"], 4),
                   "precharges_per_cycle": round(r["dfi_pre"], 4),
                   "refreshes_per_cycle": round(r["dfi_ref"], 5),
                   # a burst holds the data bus for burst_cycles (Versa: a BL8 burst on the
                   # x16 bus, 4 memory clocks, 2 system cycles; Colorlight: one cycle)
                   "data_bus_busy_share": round(theory["burst_cycles"] * bursts, 4),
                   # the channels' 64-bit words against what the bus carries a cycle
                   "useful_data_share": round(words * 64 / theory["bus_bits_per_cycle"], 4),
                   # 64-bit words per burst: on the Versa 2 when every burst carries a merged
                   # pair, 1 when none does; on the Colorlight 0.5 (32-bit words)
                   "words_per_burst": round(words / bursts, 3) if bursts else None}
    if "mux_read" in r:
        rtw = 1 - r["mux_read"] - r["mux_write"] - r["mux_wtr"] - r["mux_refresh"]
        switches = r["mux_rtw_switches"]
        out["controller"] = {
            "read_state_share": round(r["mux_read"], 4),
            "write_state_share": round(r["mux_write"], 4),
            "write_to_read_turnaround_share": round(r["mux_wtr"], 4),
            "read_to_write_turnaround_share": round(rtw, 4),
            "refresh_share": round(r["mux_refresh"], 4),
            "read_to_write_switches_per_cycle": round(switches, 4),
            "cycles_per_read_to_write_switch": round(rtw / switches, 2) if switches else None,
        }
    return out


def max_delay_table(rows: list[tuple[str, float]], lengths, mem_words: int, params) -> list:
    """The longest delay the delay line holds for frames of one length at a shaped line rate:
    ``delay_line_budget`` (the firmware's bound) with min_len the frame's length and a queue of
    one frame, searched for the largest delay that fits ``mem_words``."""
    from satemu.base.validate import delay_line_budget
    from satemu.link.registers import rate_registers
    from satemu.base.params import ChannelRegs
    table = []
    for label, rate in rows:
        q, num, den = rate_registers(Fraction(rate), F_CLK)
        entry = {"rate": label, "line_mbps": round(rate / 1e6, 2)}
        for length in lengths:
            def need(delay):
                regs = ChannelRegs(rate_q=q, rate_num=num, rate_den=den, overhead=24,
                                   delay=delay, queue_frames=1, min_len=length, max_len=1518,
                                   mem_size=mem_words)
                return delay_line_budget(regs, params, F_CLK, 1_000_000_000)
            lo, hi = 0, 1 << 40
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if need(mid) <= mem_words else (lo, mid)
            entry[f"max_delay_ms_{length}B"] = round(lo / F_CLK * 1e3, 1)
        table.append(entry)
    return table


class Search:
    """Runs points of one case and finds the highest rate that passes."""

    def __init__(self, state, length, chans, traffic_cycles, delay, theory, log,
                 stagger_bytes: int = 0):
        self.state, self.length, self.chans = state, length, chans
        self.traffic_cycles, self.delay, self.theory = traffic_cycles, delay, theory
        self.stagger_bytes = stagger_bytes
        self.points: dict[int, dict] = {}
        self.log = log

    def stagger(self, mbps: float) -> int:
        """Cycles by which the return channel starts later so that its delay line's head runs
        ``stagger_bytes`` of stored data behind the forward channel's."""
        if not self.stagger_bytes:
            return 0
        per_frame = frame_words(self.length) * 8
        return round(self.stagger_bytes / per_frame * wire_bytes(self.length) * 8 * F_CLK
                     / (mbps * 1e6))

    def ok(self, mbps: float, traffic_cycles: int | None = None) -> bool:
        traffic_cycles = traffic_cycles or self.traffic_cycles
        key = (round(mbps * 1000), traffic_cycles)
        if key not in self.points:
            r = run_point(self.state, self.length, int(mbps * 1e6), self.chans,
                          traffic_cycles, self.delay, work_dir=ROOT / "build" / "datapath",
                          stagger_cycles=self.stagger(mbps))
            r["rates"] = rates(self.length, mbps * 1e6, len(self.chans), self.theory["bps"])
            r["probe_summary"] = summarise_probe(r.pop("probe"), len(self.chans), self.theory)
            self.points[key] = r
            PARTIAL.parent.mkdir(parents=True, exist_ok=True)
            with PARTIAL.open("a") as f:          # every run as it ends, should the bench stop
                f.write(json.dumps(r) + "\n")
            pc = r["per_channel"]
            self.log(f"  {self.length:5d} B {len(self.chans)} ch {mbps:7.2f} Mbit/s "
                     f"{traffic_cycles / F_CLK * 1e3:g} ms"
                     + (f" stagger {self.stagger_bytes} B" if self.stagger_bytes else "") + ": "
                     f"{'ok ' if r['ok'] else 'BAD'} "
                     + "; ".join(f"{n}: overrun {c['overrun']} late {c['counters']['late']} "
                                 f"max late {c['max_lateness_cycles']}" for n, c in pc.items())
                     + f" ({r['wall_s']} s)")
        return self.points[key]["ok"]

    def point(self, mbps: float, traffic_cycles: int | None = None) -> dict:
        return self.points[(round(mbps * 1000), traffic_cycles or self.traffic_cycles)]

    def confirm(self, good: float, resolution: float, factor: int, tries: int = 4) -> float | None:
        """The highest rate, from ``good`` down in steps of ``resolution``, that also passes a
        run ``factor`` times as long."""
        for _ in range(tries):
            if self.ok(good, factor * self.traffic_cycles):
                return good
            good = round(good * (1 - resolution), 2)
        return None

    def climb(self, first: float, step: float, most: int = 8) -> tuple[float | None, float | None]:
        """Rates from ``first`` up in steps of ``step`` (a share) to the first failure."""
        good, mbps = None, first
        for _ in range(most):
            if not self.ok(mbps):
                return good, mbps
            good, mbps = mbps, round(mbps * (1 + step), 2)
        return good, None

    def run(self, resolution: float) -> tuple[float | None, float | None]:
        good = bad = None
        for mbps in COARSE_MBPS:
            if self.ok(mbps):
                good = mbps
            else:
                bad = mbps
                break
        if good is None or bad is None:
            return good, bad
        while bad - good > max(resolution * good, 1.0):
            mid = round((good + bad) / 2, 2)
            if self.ok(mid):
                good = mid
            else:
                bad = mid
        return good, bad


def run_split(state, log) -> dict:
    """SPLIT_POINTS on the running variant: each one's rates, cycles a frame, delay-line words
    per 65536 cycles (the ring's word counted) and verdict."""
    points = []
    lead = round(SPLIT_FILL[0] * F_CLK / 1000)
    for fwd, ret, ring in SPLIT_POINTS:
        r = run_point(state, 60, fwd * 1_000_000, CASES["both"],
                      int(SPLIT_TRAFFIC_MS * 1e-3 * F_CLK), Fraction(round(SPLIT_DELAY_MS), 1000),
                      shaped=True, work_dir=ROOT / "build" / "datapath",
                      fill=(lead, SPLIT_FILL[1]) if ring else None, queue=4096 if ring else None,
                      return_rate_bps=ret * 1_000_000)
        point = {"forward_mbps": fwd, "return_mbps": ret, "forward_ring": ring, "ok": r["ok"],
                 "queues": r["queues"]}
        for name, mbps in (("forward", fwd), ("return", ret)):
            cycles = wire_bytes(60) * 8 * F_CLK / (mbps * 1e6)
            words = frame_words(60) + (ring and name == "forward")
            c = r["per_channel"][name]
            point[name] = {"cycles_per_frame": round(cycles, 2),
                           "words_per_65536": round(words * 65536 / cycles),
                           "overrun": c["overrun"], "late": c["counters"]["late"],
                           "exact": c["exact"]}
        log(f"  forward {fwd} ({'ring' if ring else 'chip'}), return {ret} Mbit/s: "
            f"{'ok' if r['ok'] else 'FAIL'}")
        points.append(point)
    return {"what": "60-byte frames on both channels at different rates, shaped at them; "
                    "with forward_ring the forward channel is first shaped at half its rate "
                    f"for {SPLIT_FILL[0]:g} ms, so that about 2,000 frames stay queued and "
                    "each frame's departure time goes through the ring in memory",
            "traffic_ms": SPLIT_TRAFFIC_MS, "delay_ms": SPLIT_DELAY_MS,
            "command": "python bench/bench_datapath.py --split", "points": points}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--board", choices=sorted(VARIANTS), default="versa-ecp5")
    ap.add_argument("--lengths", type=int, nargs="+", default=[1500, 64])
    ap.add_argument("--delay-ms", type=float,
                    help="the delay line's delay (default: 10 ms on the Versa, 2 on the Colorlight)")
    ap.add_argument("--traffic-delays", type=float, default=3.0,
                    help="traffic lasts this many delays (steady state after the first)")
    ap.add_argument("--resolution", type=float, default=0.02,
                    help="bisect until the failing rate is within this share of the passing one")
    ap.add_argument("--point", nargs=3, metavar=("LENGTH", "MBPS", "one|both"),
                    help="run one point only and print it (no JSON written)")
    ap.add_argument("--traffic-ms", type=float, help="traffic length of --point (default: delays)")
    ap.add_argument("--stagger-bytes", type=int, default=0,
                    help="--point: start the return channel's traffic this much stored data later")
    ap.add_argument("--shaped", action="store_true",
                    help="--point: shape both channels at the offered rate")
    ap.add_argument("--cut-ms", type=float, nargs=2, metavar=("AFTER", "DELAY"),
                    help="--point: a timeline step sets both delays to DELAY ms, AFTER ms into "
                         "the traffic")
    ap.add_argument("--fill-ms", type=float, nargs=2, metavar=("FOR", "SHARE"),
                    help="--point: shape the forward channel at SHARE of the offered rate for "
                         "the traffic's first FOR ms, then (a timeline step) at the offered "
                         "rate, so that its queue holds FOR x (1/SHARE - 1) ms of frames")
    ap.add_argument("--return-mbps", type=float,
                    help="--point: the return channel's line rate (default: MBPS)")
    ap.add_argument("--queue", type=int,
                    help="--point: each channel's queue in frames, at most its cap (default: "
                         "the departure times the chip holds); past the chip's depth a "
                         "channel with the ring keeps departure times in memory")
    ap.add_argument("--paced", action="store_true",
                    help="--point: run the variant with its channels' memory pace, as the "
                         "board is built")
    ap.add_argument("--split", action="store_true",
                    help="run SPLIT_POINTS (forward and return at different rates, the forward "
                         "queue in the ring, on a board whose forward channel has it) and write "
                         "them into the JSON as 'split'")
    ap.add_argument("--out", type=Path, help="default: bench/results/datapath-<board>.json")
    args = ap.parse_args(argv)
    paced = bool(args.point and args.paced)

    global F_CLK
    from litedram import modules
    from sim import board
    from hw.satemu_soc import phy_settings
    from satemu.base.boards import BOARDS

    record, default_delay_ms = BOARDS[args.board], VARIANTS[args.board]
    F_CLK = record.f_clk
    args.delay_ms = args.delay_ms or default_delay_ms
    args.out = args.out or ROOT / "bench" / "results" / f"datapath-{args.board}.json"

    def log(msg):
        print(msg, flush=True)

    t0 = time.monotonic()
    # The variant without its memory pace (but a --paced point): the pace would hold reads to
    # the guarantee this benchmark is there to measure.
    if args.split and not ("forward" in record.spill_channels and record.channel.spill_words):
        ap.error(f"--split measures the departure-time ring in the forward channel, which "
                 f"{args.board} does not build")
    build_dir = board.build_dir(args.board, paced=paced)
    built_before = (build_dir / ".built").exists()
    board.build_board(verbose=True, board=args.board, paced=paced)
    build_s = time.monotonic() - t0
    geometry = getattr(modules, record.dram)
    real, model = phy_settings(record)
    versa = args.board == "versa-ecp5"
    if versa:
        burst_bits = 128              # the native port behind the widener: one BL8 burst
        module = f"MT41K64M16 (DDR3L x16, 128 MiB), LiteDRAM rate 1:2 at {F_CLK / 1e6:g} MHz"
    else:
        burst_bits = 32               # the native port: one 32-bit word a command
        module = f"M12L64322A (SDR, 32 bits, 8 MiB), LiteDRAM rate 1:1 at {F_CLK / 1e6:g} MHz"
    theory = dram_theory(real, burst_bits)
    delay = Fraction(round(args.delay_ms * 1000), 10**6)
    traffic_ms = args.traffic_ms if args.traffic_ms else args.delay_ms * args.traffic_delays
    traffic_cycles = int(traffic_ms * 1e-3 * F_CLK)

    state = board.launch(board=args.board, paced=paced)
    t_run = time.monotonic()
    try:
        if args.point:
            length, mbps, case = int(args.point[0]), float(args.point[1]), args.point[2]
            s = Search(state, length, CASES[case], traffic_cycles, delay, theory, log,
                       stagger_bytes=args.stagger_bytes)
            cut = args.cut_ms and (round(args.cut_ms[0] * F_CLK / 1000),
                                   Fraction(round(args.cut_ms[1] * 1000), 10**6))
            fill = args.fill_ms and (round(args.fill_ms[0] * F_CLK / 1000),
                                     Fraction(args.fill_ms[1]).limit_denominator(1000))
            r = run_point(state, length, int(mbps * 1e6), CASES[case], traffic_cycles, delay,
                          shaped=args.shaped, work_dir=ROOT / "build" / "datapath",
                          stagger_cycles=s.stagger(mbps), cut=cut or None, fill=fill or None,
                          queue=args.queue, return_rate_bps=args.return_mbps
                          and int(args.return_mbps * 1e6))
            r["rates"] = rates(length, mbps * 1e6, len(CASES[case]), theory["bps"])
            r["probe_summary"] = summarise_probe(r.pop("probe"), len(CASES[case]), theory)
            print(json.dumps(r, indent=1))
            return 0 if r["ok"] else 1
        if args.split:
            doc = json.loads(args.out.read_text())
            doc["split"] = run_split(state, log)
            args.out.write_text(json.dumps(doc, indent=1) + "\n")
            log(f"wrote the split points into {args.out}")
            return 0
        PARTIAL.unlink(missing_ok=True)
        results = {}
        for length in args.lengths:
            for case, chans in CASES.items():
                log(f"{length}-byte frames, {case} channel(s):")
                s = Search(state, length, chans, traffic_cycles, delay, theory, log)
                found, bad = s.run(args.resolution)
                # The rate found must hold over a run three times as long, too.
                good = s.confirm(found, args.resolution, 3) if found else None
                best = s.point(good, 3 * traffic_cycles) if good else None
                worst = s.point(bad) if bad else None
                results[f"{length}B-{case}"] = {
                    "length": length, "channels": len(chans),
                    "max_ok_line_mbps_per_channel": good,
                    "found_by_search_line_mbps_per_channel": found,
                    "lowest_failing_line_mbps_per_channel": bad,
                    "at_max": rates(length, good * 1e6, len(chans), theory["bps"]) if good else None,
                    "probe_at_max": best["probe_summary"] if best else None,
                    "probe_at_lowest_failing": worst["probe_summary"] if worst else None,
                    "points": [s.points[k] for k in sorted(s.points)],
                }
        # Both channels' delay lines start a multiple of the DRAM's bank period apart (Versa:
        # 32 MiB, the period 8 banks x 2 KiB rows; Colorlight: 2 MiB, 4 banks x 1 KiB rows), so
        # identical traffic on both keeps their heads in the same bank, on different rows.
        # Staggering the return channel by half a bank period of stored data shows what those
        # row conflicts cost.
        half_period = geometry.nbanks * geometry.ncols * real.databits // 8 // 2
        staggered = {}
        for length in args.lengths:
            both = results[f"{length}B-both"]["max_ok_line_mbps_per_channel"]
            if not both:
                continue
            log(f"{length}-byte frames, both channels, return staggered by {half_period} bytes:")
            s = Search(state, length, CASES["both"], traffic_cycles, delay, theory, log,
                       stagger_bytes=half_period)
            good, bad = s.climb(both, 0.1)
            staggered[f"{length}B-both-staggered"] = {
                "length": length, "stagger_bytes": half_period,
                "highest_ok_line_mbps_per_channel": good,
                "first_failing_line_mbps_per_channel": bad,
                "probe_at_highest_ok": s.point(good)["probe_summary"] if good else None,
                "points": [s.points[k] for k in sorted(s.points)],
            }
    finally:
        board.kill(state)
    run_s = time.monotonic() - t_run
    simulated = sum(p["last_cycle"] - p["first_cycle"] + p["delay_cycles"]
                    for r in list(results.values()) + list(staggered.values())
                    for p in r["points"])

    params = record.channel
    mem_words = record.mem_words
    rate_rows = [("10 Mbit/s", 10e6), ("50 Mbit/s", 50e6), ("100 Mbit/s", 100e6),
                 ("250 Mbit/s", 250e6)]
    for key, r in results.items():
        if r["max_ok_line_mbps_per_channel"] and key.endswith("-one"):
            rate_rows.append((f"measured max, {r['length']}-byte frames",
                              r["max_ok_line_mbps_per_channel"] * 1e6))
    rate_rows.append(("1 Gbit/s (GbE line rate)", 1e9))

    fields = ("memtype", "databits", "dfi_databits", "nphases", "rdphase", "wrphase", "cl",
              "cwl", "read_latency", "write_latency", "nranks", "strobes")
    doc = {
        "benchmark": f"datapath-{args.board}", "date": time.strftime("%Y-%m-%d"),
        "board": {
            "name": args.board, "variant": args.board,
            "f_clk_hz": F_CLK, "port_bps": 1_000_000_000, "mem_words_per_channel": mem_words,
            "cpu": f"{record.cpu.type} {record.cpu.variant}",
            "dram_module": module,
            "native_port_bits": burst_bits,
            "channel_port_bits": 64,
            f"phy_real_{real.phytype}": {f: getattr(real, f) for f in fields + ("phytype",
                                         "read_leveling", "bitslips", "delays")},
            "phy_model_SDRAMPHYModel": {f: getattr(model, f) for f in fields + ("phytype",
                                        "read_leveling", "bitslips", "delays")},
            "phy_matches": list(fields),
            "phy_differs": {
                "phytype": "SDRAMPHYModel, so the simulated firmware does not try to train it",
                "read_leveling/bitslips/delays": "none in the model: its read data are always "
                "aligned at read_latency; the board's firmware trains the real PHY",
                "electrical": "no DQ/DQS timing, no ECP5DDRPHYInit start-up (edge clock stop "
                "and reset); the controller, its timings and the crossbar are the board's",
                "model storage": "the model's banks index columns in steps of nphases x 2 "
                "(4), so half its storage is unused; no timing effect",
            } if versa else {
                "phytype": "SDRAMPHYModel instead of GENSDRPHY",
                "electrical": "no I/O registers, no clock shifted by 180 degrees, no DQ "
                "timing: the model returns read data exactly read_latency cycles after the "
                "command, as the real PHY's settings say; the controller, its timings and the "
                "crossbar are the board's",
            },
        },
        "dram_theoretical": theory,
        "method": {
            "profile": f"both channels: delay {args.delay_ms:g} ms, unshaped, no loss, "
                       f"queue {params.queue_onchip} frames (the departure times the chip "
                       "holds); loaded with "
                       "`satemu load --reseed` over the UART",
            "pacing": "frame k of L bytes on the wire in cycle start + ceil(k x (max(L,60)+24) "
                      f"x 8 x {F_CLK:g} / R), R the offered line rate per channel "
                      f"({8 * F_CLK / 1e9:g} cycles/byte at 1 Gbit/s); lock-step, so every "
                      "frame starts exactly then",
            "traffic_ms": traffic_ms,
            "pass": "every frame taken (no overrun), delivered at the model's egress cycle "
                    "with its bytes and FCS, counters: no drop_*, late = 0",
            "search": f"coarse sweep {list(COARSE_MBPS)} Mbit/s upwards to the first failure, "
                      f"then bisection to {args.resolution:.0%}; the rate found is then run "
                      f"for three times as long ({3 * traffic_ms:g} ms of traffic) and lowered "
                      f"by {args.resolution:.0%} steps until that passes too",
            "dram_traffic": "frames/s x (1 + ceil(L/8)) words x 64 bits x 2 (written once, "
                            "read once); the probes count the bursts that carried them "
                            "(words_per_burst: 2 when the widener merged every pair)",
        },
        "results": results,
        "row_conflict_experiment": staggered,
        "max_delay": {
            "what": f"longest delay a channel's {mem_words}-word delay line holds (delay_line_budget "
                    "with min_len = the frame length, shaped at the line rate with 24 bytes "
                    "of overhead, a one-frame queue)",
            "table": max_delay_table(rate_rows, args.lengths + [60], mem_words, params),
        },
        "wall": {"build_s": round(build_s, 1), "build_cached": built_before,
                 "runs_s": round(run_s, 1), "simulated_cycles": simulated,
                 "cycles_per_wall_second": round(simulated / run_s) if run_s else None,
                 "total_s": round(time.monotonic() - t0, 1)},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    log(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    for key, r in results.items():
        a = r["at_max"]
        if a:
            log(f"{key}: max {r['max_ok_line_mbps_per_channel']} Mbit/s line rate per channel, "
                f"{a['frame_mbps_total']} Mbit/s of frames, DRAM {a['dram_mbps']} Mbit/s = "
                f"{a['dram_share']:.1%} of {theory['bps'] / 1e9:g} Gbit/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
