# SPDX-License-Identifier: BSD-2-Clause
"""The data path at a board's clocks: GbE-paced traffic through a board variant of the
simulated board (``sim.board.launch(board="versa-ecp5")``, or ``"colorlight-5a-75b"``), every frame checked
against the model.

One run (``run_point``) loads a profile through the firmware over the UART as ``satemu load``
does (both channels: a fixed delay, no shaping, no loss, a queue of the hardware's depth),
clears the counters, then offers frames of one length at one line rate on one port or both:
a frame of L bytes holds a GbE wire for (max(L, 60) + 24) bytes of 8 ns (preamble and SFD 8,
FCS 4, gap 12), 8 ns a byte (0.44 cycles of the Versa's 55 MHz clock), so at line rate R frame
k starts on the wire in cycle ``start + ceil(k * (max(L, 60) + 24) * 8 * f_clk / R)``. The simulated wire itself would
carry a beat per cycle; this pacing keeps the offered load to what a GbE port can bring. The
board runs in lock-step with the host, a chunk of cycles at a time, so every frame starts
exactly at its cycle however slowly the host keeps up.

Afterwards each frame's fate is checked: taken or discarded at ingress (overrun), and for
those taken the model's (``satemu.model.channel.simulate``) fate and egress cycle against the
cycle the frame started to leave its channel, with its bytes and FCS on the wire; then the
firmware's counters. The probe counters the variant logs every 2^16 cycles (``probe.log``,
``hw.satemu_soc.PROBES``) give the memory traffic over the steady state: the window from one
delay (plus the latency floor) after the first frame, when reads and writes interleave, to the
last frame.
"""

from __future__ import annotations

import contextlib
import io
import math
import time
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

from satemu.base.boards import BOARDS
from satemu.base.params import frame_words
from sim.frames import (FORWARD, INGRESS_PORT, RETURN, TX_LATENCY, EthPorts,
                        arrival_from_wire)

F_CLK = BOARDS["versa-ecp5"].f_clk     # the default board variant's system clock
GBE_BPS = 1_000_000_000
WIRE_EXTRA = 24               # bytes a frame adds on the wire: preamble and SFD 8, FCS 4, gap 12
MIN_FRAME = 60                # frames are padded to 60 bytes (64 with the FCS)
CHUNK = 50_000                # lock-step: cycles the board runs between two batches of frames
NAMES = {FORWARD: "forward", RETURN: "return"}
# How long the host waits for the firmware's answer (the CLI's --timeout), in wall seconds. The
# Colorlight's CPU (SERV, bit-serial) takes about 4 M cycles to check a profile (SET_PROFILE;
# 0.1 s on the board), 11 s of this simulation at its 0.38 M cycles a wall second, more than
# the host's default 5 s.
FW_TIMEOUT = 60.0
# A cut's timeline starts this many seconds of board time after it is armed (``--start-in``):
# more than the board runs freely before the traffic's lock-step begins, which on the real
# boards' CPU (SERV) is the load's COMMIT and the four requests after it: on the Versa-5G's
# variant the four took up to 8.3 M cycles, 0.15 s (0.03 s sufficed with VexRiscv's minimal
# variant).
CUT_START_IN = "0.25"


def wire_bytes(length: int) -> int:
    """Bytes of wire time a frame of ``length`` bytes (no FCS) takes on Ethernet."""
    return max(length, MIN_FRAME) + WIRE_EXTRA


def spacing(length: int, rate_bps: int | Fraction, f_clk: int = F_CLK) -> Fraction:
    """Cycles between frame starts at line rate ``rate_bps`` (GbE at 55 MHz: 0.44 cycles a
    byte)."""
    return Fraction(wire_bytes(length) * 8 * f_clk) / Fraction(rate_bps)


def _us(seconds: Fraction) -> int:
    us = Fraction(seconds) * 10**6
    if us.denominator != 1:
        raise ValueError("give the delay in whole microseconds")
    return us.numerator


def profile_toml(delay_s: Fraction, rates: dict[str, int] | None, queues: dict[str, int],
                 cut_to_s: Fraction | None = None,
                 fill_to_bps: dict[str, int] | None = None) -> str:
    """Both channels: ``delay_s`` one way, each channel's queue of ``queues[name]`` frames, no
    loss; unshaped, or each shaped at ``rates[name]`` counting the 24 bytes of Ethernet
    overhead. A timeline of one step at its start sets both delays to ``cut_to_s`` and each
    channel's rate to ``fill_to_bps``'s, if given."""
    lines = ['name = "datapath"', 'description = "data path benchmark: fixed delay, no loss"']
    step = []
    for side in ("forward", "return"):
        lines += [f"[{side}]", f'delay = "{_us(delay_s)} us"', f'queue = "{queues[side]} packets"']
        if rates:
            lines += [f'rate = "{int(rates[side])} bit/s"', 'overhead = "24 B"']
        changes = [f'delay = "{_us(cut_to_s)} us"'] if cut_to_s is not None else []
        if fill_to_bps is not None:
            changes.append(f'rate = "{int(fill_to_bps[side])} bit/s"')
        if changes:
            step.append(f"{side} = {{ {', '.join(changes)} }}")
    if step:
        lines += ["[[timeline]]", 'at = "0 s"', *step]
    return "\n".join(lines) + "\n"


def make_frame(ch: int, index: int, length: int) -> bytes:
    """A frame of ``length`` bytes (no FCS) that says which channel and index it is."""
    head = (b"\x02\x00\x00\x00\x00\x0b" if ch == FORWARD else b"\x02\x00\x00\x00\x00\x0a")
    head += b"\x02\x00\x00\x00\x00\x01" + b"\x88\xb5" + bytes([ch]) + index.to_bytes(4, "little")
    body = bytes((index + i) & 0xFF for i in range(length - len(head)))
    return (head + body)[:length]


def load_profile_via_cli(url: str, text: str, path: Path, extra: tuple[str, ...] = ()) -> None:
    """``satemu load PATH --port URL --reseed --timeout FW_TIMEOUT [extra]``, its output
    kept."""
    from satemu.cli import main
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(["load", str(path), "--port", url, "--reseed", "--timeout", str(FW_TIMEOUT),
                     *extra])
    if code != 0:
        raise RuntimeError(f"satemu load failed: {out.getvalue()}")


def read_probe(run_dir: str | Path) -> list[list[int]]:
    """The probe log's lines: [cycle, *PROBES counts]; counts are those before the cycle."""
    rows = []
    path = Path(run_dir) / "probe.log"
    if path.exists():
        for line in path.read_text().splitlines():
            parts = line.split()
            if parts and all(p.isdigit() for p in parts):
                rows.append([int(p) for p in parts])
    return rows


def probe_window(rows: list[list[int]], first: int, last: int) -> dict | None:
    """Counts per cycle over the widest logged window inside [first, last]."""
    from hw.satemu_soc import PROBES
    inside = [r for r in rows if first <= r[0] <= last and len(r) == len(PROBES) + 1]
    if len(inside) < 2:
        return None
    a, b = inside[0], inside[-1]
    cycles = b[0] - a[0]
    rates = {name: (b[i + 1] - a[i + 1]) / cycles for i, name in enumerate(PROBES)}
    return {"from_cycle": a[0], "to_cycle": b[0], "cycles": cycles, "per_cycle": rates}


def run_point(state: dict, length: int, rate_bps: int, channels: tuple[int, ...],
              traffic_cycles: int, delay_s: Fraction = Fraction(1, 100),
              shaped: bool = False, work_dir: Path | None = None,
              check_bytes: bool = True, timeout: float = 600.0,
              stagger_cycles: int = 0, cut: tuple[int, Fraction] | None = None,
              fill: tuple[int, Fraction] | None = None, queue: int | None = None,
              return_rate_bps: int | None = None,
              fill_sides: tuple[str, ...] = ("forward",)) -> dict:
    """Offer frames of ``length`` bytes at line rate ``rate_bps`` for ``traffic_cycles`` on the
    ingress ports of ``channels`` of a running board variant (``state`` from
    ``sim.board.launch``, with its ``board``); return what happened, frame by frame summarised (see the module's
    docstring). ``shaped`` shapes each channel at the offered rate instead of not at all;
    ``stagger_cycles`` starts the return channel's frames that much later than the forward's.
    ``cut`` = (lead, delay): a timeline step, run by the firmware, sets both channels' delay to
    ``delay`` ``lead`` cycles after the first frame; the model applies it at the same cycle.
    ``fill`` = (lead, share): the channels of ``fill_sides`` (the forward one by default) start
    shaped at ``share`` of the offered rate (a fraction, or one per side: {"forward": ...}), so
    that their queues fill, and a timeline step ``lead`` cycles after the first frame shapes
    them at the offered rate (the other channel is shaped at it throughout). The frames
    admitted before the step keep their slower departures, so the queue grows until
    ``lead / share`` cycles and then holds ``lead x (1 / share - 1)`` cycles of frames.
    ``queue``: each channel's queue in frames, at most its cap (default: the departure times
    its chip holds).
    ``return_rate_bps``: the return channel's line rate, if not ``rate_bps``."""
    from satemu.base.boards import BOARDS
    from satemu.box.device import Device, hardware_of
    from satemu.base.ether import to_wire
    from satemu.link.profile import load_profile
    from satemu.link.timeline import compile_timeline
    from sim.board import variant

    wall0 = time.monotonic()
    work_dir = Path(work_dir or Path(state["run_dir"]))
    url = state["url"]
    board = BOARDS[state["board"]]
    # Nothing of an earlier run may still be in the channels: the last point's closing
    # counters said so (``left_empty``), or the board is asked until they do.
    if not state.pop("left_empty", False):
        wait_empty(url, timeout)
    f_clk = board.f_clk
    info = state.get("hello")             # the board's HELLO at its launch
    if info is None:
        with Device(url, timeout=FW_TIMEOUT) as dev:
            info = dev.hello()
    if info["f_clk"] != f_clk:
        raise RuntimeError(f"not the {board.name} variant: the board counts "
                           f"{info['f_clk']} Hz")
    hardware = hardware_of(info)
    base = board.channel
    step = cut or fill
    # The variant's channels, with its memory pace or without.
    record = variant(state["board"], state["paced"])
    params = {ch: record.channel_params(ch) for ch in channels}
    queues = {NAMES[ch]: min(queue or base.queue_onchip, record.channel_params(ch).queue_depth)
              for ch in (FORWARD, RETURN)}
    path = work_dir / "datapath-profile.toml"
    rates = {FORWARD: rate_bps, RETURN: return_rate_bps or rate_bps}
    offered = {NAMES[ch]: rate for ch, rate in rates.items()}
    shares = fill and (fill[1] if isinstance(fill[1], dict)
                       else {side: fill[1] for side in fill_sides})
    slow = fill and {side: int(bps * shares[side]) if side in shares else bps
                     for side, bps in offered.items()}
    load_profile_via_cli(url, profile_toml(delay_s, slow or (offered if shaped else None),
                                           queues, cut and cut[1], fill and offered), path,
                         ("--start-in", CUT_START_IN) if step else ())
    # The registers the load put in force, as the host computes them: the model runs on
    # these, so a box that held other values would fail the point (asking the box for them,
    # GET_PROFILE, costs the simulated SERV some 9 s a channel).
    profile = load_profile(str(path))
    in_force = profile.check(hardware)
    regs = {ch: in_force[NAMES[ch]] for ch in channels}
    commits = {ch: [] for ch in channels}
    with Device(url, timeout=FW_TIMEOUT) as dev:
        dev.reset_stats()
        if step:
            step_at = dev.timeline_status()["start"]
            compiled = compile_timeline(profile, hardware)
            commits = {ch: compiled.commits(step_at, NAMES[ch]) for ch in channels}
    delay_cycles = max(regs[channels[0]].delay, base.latency_floor)
    gaps = {ch: spacing(length, rates[ch], f_clk) for ch in channels}
    frames = {ch: [] for ch in channels}          # (cycle on the wire, frame) per channel
    with EthPorts(state["eth_port"], timeout=timeout) as eth:
        # Halt the board, then feed it a chunk of cycles at a time: each frame is sent before
        # the board reaches its cycle, so it starts on the wire exactly then.
        halted = eth.run(eth.now() + 2000, halt_on_egress=False)
        start = halted + 16
        if step:
            start = step_at - step[0]
            if start < halted + 16:
                raise RuntimeError(f"the timeline starts {step_at - halted} cycles after the "
                                   f"board halted, fewer than the step's lead of {step[0]}")
            halted = eth.run(start - 16, halt_on_egress=False)
        offset = {FORWARD: 0, RETURN: stagger_cycles}
        sched = sorted((start + offset[ch] + math.ceil(k * gaps[ch]), ch, k)
                       for ch in channels for k in range(math.ceil(traffic_cycles / gaps[ch])))
        last_at = sched[-1][0]
        i, t = 0, halted
        while i < len(sched):
            limit = t + CHUNK
            while i < len(sched) and sched[i][0] < limit:
                at, ch, k = sched[i]
                frame = make_frame(ch, k, length)
                frames[ch].append((at, frame))
                eth.send(INGRESS_PORT[ch], to_wire(frame), at)
                i += 1
            t = eth.run(limit, halt_on_egress=False)
        # Let every frame leave: its delay, the latency floor and some slack, in lock-step;
        # after a cut, also the frames' time at the memory's pace.
        end = last_at + delay_cycles + 2 * base.latency_floor + 20_000
        if cut:
            end += len(sched) * max(p.mem_pace for p in params.values()) * frame_words(length)
        if fill:            # and the backlog, at the offered rate
            end += math.ceil(step[0] * (1 / min(shares.values()) - 1)) + 20_000
        while t < end:
            t = eth.run(min(end, t + 4 * CHUNK), halt_on_egress=False)
        eth.release()
        traffic = eth.traffic
        taken = {ch: [k for k, (_, kind) in enumerate(traffic.events[ch]) if kind == "A"]
                 for ch in channels}
        # Frames still in memory (late ones) leave while the board runs freely: wait for them.
        late_wait = time.monotonic()
        try:
            eth.wait({ch: len(frames[ch]) for ch in channels},
                     {ch: len(taken[ch]) for ch in channels}, timeout=min(timeout, 120.0))
            complete = True
        except TimeoutError:
            complete = False
        late_wait = time.monotonic() - late_wait
    sim_wall = time.monotonic() - wall0

    with Device(url, timeout=FW_TIMEOUT) as dev:
        stats = {ch: dev.get_stats(ch) for ch in channels}
    state["left_empty"] = set(channels) == {FORWARD, RETURN} and all(
        s["mem_words_now"] == 0 and s["queue_frames_now"] == 0 for s in stats.values())
    with EthPorts(state["eth_port"], timeout=timeout) as eth:
        # Halt the board while the host checks (it would only burn the cores); closing the
        # connection lets it run again.
        eth.run(eth.now() + 100, halt_on_egress=False)
        result = _check(traffic, frames, taken, channels, regs, params, stats, length,
                        check_bytes, commits)
    result.update({"length": length, "rate_bps": int(rate_bps),
                   "return_rate_bps": int(rates[RETURN]),
                   "channels": [NAMES[ch] for ch in channels], "shaped": shaped or bool(fill),
                   "queues": queues,
                   "spacing_cycles": float(gaps[channels[0]]), "delay_cycles": delay_cycles,
                   "stagger_cycles": stagger_cycles,
                   "first_cycle": start, "last_cycle": last_at,
                   "traffic_cycles": last_at - start, "complete": complete})
    result["ok"] = result["ok"] and complete
    # Memory traffic over the steady state: reads and writes interleave from one delay (and
    # the latency floor) after the first frame until the last frame arrives.
    result["probe"] = probe_window(read_probe(state["run_dir"]), start + stagger_cycles
                                   + delay_cycles + 2 * base.latency_floor, last_at - stagger_cycles)
    result["wall_s"] = round(time.monotonic() - wall0, 1)
    result["wall_s_simulation"] = round(sim_wall, 1)
    result["wall_s_waiting_for_late_frames"] = round(late_wait, 1)
    return result


def wait_empty(url: str, timeout: float = 600.0) -> None:
    """Wait until both channels hold no frame (every frame in has left or been dropped)."""
    from satemu.box.device import Device
    with Device(url, timeout=FW_TIMEOUT) as dev:
        if not dev.wait_empty(timeout):
            raise TimeoutError("the channels did not empty")


def _check(traffic, frames, taken, channels, regs, params, stats, length, check_bytes,
           commits) -> dict:
    """Every frame's fate and egress cycle against the model, and the counters."""
    from satemu.model.channel import simulate
    from satemu.base.params import Fate
    from satemu.base.ether import padded

    result = {"per_channel": {}}
    ok = True
    for ch in channels:
        sent = frames[ch]
        events = traffic.events[ch]
        wire_in = traffic.wire_in[INGRESS_PORT[ch]]
        on_time_wire = len(wire_in) == len(sent) and all(
            w == at for w, (at, _) in zip(wire_in, sent))
        arrivals_ok = all(c == arrival_from_wire(at, len(f)) for (c, kind), (at, f) in
                          zip(events, sent) if kind == "A")
        overrun = sum(kind == "O" for _, kind in events)
        arrivals = [(c, length, False) for c, kind in events if kind == "A"]
        model = simulate(arrivals, regs[ch], params[ch], commits[ch])
        # The frames the memory's pace holds back: those a model without it sends earlier.
        free = simulate(arrivals, regs[ch], replace(params[ch], mem_pace=0), commits[ch])
        paced = sum(a.egress != b.egress for a, b in zip(model.frames, free.frames))
        fates = {}
        for r in model.frames:
            fates[r.fate.name] = fates.get(r.fate.name, 0) + 1
        expected = [(r.egress, k) for k, r in zip(taken[ch], model.frames)
                    if r.fate == Fate.DELIVERED]
        out = traffic.egress[ch]
        lateness, wrong_bytes = [], 0
        for (egress, k), e in zip(expected, out):
            lateness.append(e.start - egress)
            if e.wire - e.start != TX_LATENCY or check_bytes and (
                    e.frame != padded(sent[k][1]) or not e.wire_ok):
                wrong_bytes += 1
        exact = (len(out) == len(expected) and all(d == 0 for d in lateness)
                 and wrong_bytes == 0)
        st = stats[ch]
        drops = {k: st[k] for k in ("drop_overrun", "drop_mem", "drop_queue", "drop_loss",
                                    "drop_runt", "drop_oversize", "drop_error")}
        late_frames = sum(d > 0 for d in lateness)
        ch_ok = (on_time_wire and arrivals_ok and overrun == 0 and not any(drops.values())
                 and st["late"] == 0 and exact and st["rx_frames"] == len(sent)
                 and st["tx_frames"] == len(sent) and fates == {"DELIVERED": len(sent)})
        ok = ok and ch_ok
        result["per_channel"][NAMES[ch]] = {
            "offered": len(sent), "wire_on_schedule": on_time_wire,
            "arrivals_as_the_mac_latency_says": arrivals_ok,
            "taken": len(taken[ch]), "overrun": overrun,
            # when the discarded frames came, in cycles after the first frame
            "overrun_at": [c - sent[0][0] for c, kind in events if kind == "O"][:20],
            "model_fates": fates,
            "delivered_seen": len(out), "late_seen": late_frames, "paced": paced,
            "max_lateness_cycles": max(lateness, default=0),
            "wrong_on_the_wire": wrong_bytes,
            "exact": exact, "ok": ch_ok,
            "counters": {"rx_frames": st["rx_frames"], "tx_frames": st["tx_frames"],
                         "delivered": st["tx_frames"], "late": st["late"], **drops,
                         "mem_words_hwm": st["mem_words_hwm"],
                         "queue_frames_hwm": st["queue_frames_hwm"]},
        }
    result["ok"] = ok
    return result
