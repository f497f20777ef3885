#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Write tests/vectors/profiles.json: profiles in register units with the verdict the firmware
must give (satemu.base.validate). Run only to change the checks on purpose."""

import json
import random
import sys
from dataclasses import asdict, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "host"))
from satemu.base.validate import delay_line_traffic  # noqa: E402
from satemu.base.queues import FRAME_SPAN, SLOT_SPAN  # noqa: E402
from satemu.base.params import ChannelParams, ChannelRegs  # noqa: E402
from satemu.link.profile import builtin_profiles  # noqa: E402
from satemu.base.protocol import (CHANNEL_FORWARD, CHANNEL_RETURN, PROFILE_FIELDS,  # noqa: E402
    Impairment)
from satemu.base.regmap import BOD_ENABLE, BOD_FCA, JITTER_TABLE  # noqa: E402
from satemu.base.hardware import Hardware  # noqa: E402
from satemu.base.validate import validate  # noqa: E402

NAMES = [f.name for f in PROFILE_FIELDS]
# The delay-line words per channel of the boxes the built-in profiles are converted for (and of
# most cases); each box has the default ChannelParams and a BoD block on the return channel,
# but one whose queue outgrows the chip into memory (SPILL), the simulated board's, and one like
# the Versa-5G's, whose BoD queue holds 16,384 frames and whose return channel 16,384 departure
# times as distances (DELTA).
MEM_WORDS = 6 << 20
SPILL = ChannelParams(queue_depth=65535, queue_fifo=1024, bod_queue=65535)
DELTA = replace(SPILL, bod_queue=16384, delta_queue=16384)


def case(fields, lim, why, channel):
    v = validate(fields, lim, channel)
    return {"why": why, "limits": {"f_clk": lim.f_clk, "mem_words": lim.mem_words,
                                   "port_bps": lim.port_bps, "bod_mask": lim.bod_mask,
                                   "mem_wpc_forward": lim.wpc(0),
                                   "mem_wpc_return": lim.wpc(1),
                                   "queue_depth": lim.params.queue_depth,
                                   "queue_fifo": lim.params.queue_onchip,
                                   "spill_mask": lim.spill_mask,
                                   "bod_queue": lim.params.bod_depth,
                                   "delta_queue": lim.params.delta_queue,
                                   "terminals": lim.params.terminals,
                                   "synthetic": lim.params.synthetic,
                                   "demand_levels": lim.params.demand_levels,
                                   "jitter_table": JITTER_TABLE if lim.params.jitter else 0,
                                   "impairments": (int(Impairment.CORRUPT) * lim.params.corrupt
                                                   | int(Impairment.DUPLICATE)
                                                   * lim.params.duplicate
                                                   | int(Impairment.ECN) * lim.params.ecn)},
            "channel": channel, "fields": [fields[n] for n in NAMES],
            "verdict": {"status": int(v.status), "field": v.field, "value": v.value,
                        "lo": v.lo, "hi": v.hi}}


def bod_cases(rng, bod_bases, plain_bases):
    """Every BoD rule broken (and just kept), BoD where the hardware has none, BoD budgets."""
    out = []
    for regs, lim, channel in rng.sample(bod_bases, 6):
        slots = regs["bod_slots"]
        edits = [
            ("bod_slot_cycles", 31), ("bod_slot_cycles", 32), ("bod_slot_cycles", 0),
            ("bod_slots", 0), ("bod_slot_bytes", 0), ("bod_slots", 1 << 16),
            ("bod_cra", slots * 256 + 1), ("bod_cra", slots * 256),
            ("bod_rbdc_max", slots * 256 + 1), ("bod_rbdc_max", 0), ("bod_rbdc_timeout", (1 << 16) - 1), ("bod_vbdc_max", 0),
            ("bod_req_period", 0), ("bod_latency", 0), ("bod_latency", 64), ("bod_latency", 65),
            ("bod_latency", 128), ("bod_bg_count", 0), ("bod_bg_count", 9), ("bod_bg_count", 2),
            ("bod_bg0", slots + 1 | 1 << 16), ("bod_bg0", slots | 1 << 16), ("bod_bg0", 5),
            ("bod_bg0", 0xFFFF << 16), ("bod_bg3", 0), ("bod_flags", 8),
            ("bod_flags", BOD_ENABLE | BOD_FCA), ("queue_frames", 1024),
            ("queue_frames", 1025), ("queue_frames", 16384), ("queue_frames", 16385),
            ("queue_frames", 65535),
        ]
        for name, value in edits:
            out.append(case(dict(regs, **{name: value}), lim, f"{name} edited (BoD)", channel))
        # A schedule of four levels, the last one broken, then whole.
        sched = dict(regs, bod_bg_count=4, bod_bg1=3 << 16, bod_bg2=slots | 9 << 16,
                     bod_bg3=slots + 1 | 1 << 16)
        out.append(case(sched, lim, "BoD schedule, level 3 too high", channel))
        out.append(case(dict(sched, bod_bg3=1 << 16), lim, "BoD schedule", channel))
        # A queue that may hold more frames than the chip holds departure times: a slot
        # carries fewer than a quarter of them, just kept and just broken.
        most = lim.params.slot_frames_max() * (regs["min_len"] + regs["overhead"]) - 1
        for value in (most, most + 1):
            out.append(case(dict(regs, queue_frames=1025, bod_slot_bytes=min(value, 0xFFFF)),
                            lim, "BoD slot of a deep queue", channel))
        # No BoD block on the channel: the forward channel, or a box without any.
        out.append(case(regs, lim, "BoD on the forward channel", CHANNEL_FORWARD))
        out.append(case(regs, Hardware(lim.f_clk, lim.mem_words, bod_channels=()),
                        "BoD, no block", channel))
        # Budgets: a small memory, and a fast carrier of short slots.
        out.append(case(regs, Hardware(lim.f_clk, rng.randint(1000, 100_000)),
                        "BoD, small memory", channel))
        fast = dict(regs, bod_slot_cycles=32, bod_slot_bytes=(1 << 16) - 1, bod_cra=0,
                    bod_rbdc_max=0)
        out.append(case(fast, lim, "BoD, fast carrier", channel))
    # BoD fields that do not count while BoD is off, on either channel.
    for regs, lim, channel in rng.sample(plain_bases, 6):
        junk = dict(regs, bod_flags=BOD_FCA, bod_slot_cycles=0, bod_latency=0, bod_bg_count=0)
        out.append(case(junk, lim, "BoD fields while BoD is off", channel))
    # Random BoD register sets.
    widths = {f.name: f.width for f in PROFILE_FIELDS}
    for _ in range(60):
        regs, lim, channel = rng.choice(bod_bases)
        r = dict(regs)
        for name in rng.sample([n for n in NAMES if n.startswith("bod_") and n != "bod_flags"], 3):
            r[name] = rng.choice([0, 1, rng.randrange(1 << widths[name]), (1 << widths[name]) - 1])
        out.append(case(r, lim, "random BoD fields", channel))
    return out


def traffic(regs, lim, channel):
    """(num, den): the delay-line words per 65536 cycles the profile may demand on ``channel``,
    num / den."""
    return delay_line_traffic(ChannelRegs(**regs), lim.f_clk, lim.port_bps,
                              lim.channel_params(channel))


def kind(regs):
    if regs["bod_flags"] & BOD_ENABLE:
        return "BoD"
    return "shaped" if regs["rate_q"] or regs["rate_num"] else "unshaped"


def throughput_cases(rng, bases):
    """The delay-line throughput bound (THROUGHPUT), on boards that guarantee mem_wpc words per
    65536 cycles: just enough and one word short, a demand that is a whole number of words
    (equality passes), both ends of the frame-length switch at overhead 15, fixed and random
    guarantees, and the checks that come first."""
    out = []

    def at(regs, lim, wpc, why, channel):
        # The other channel's guarantee is another, which must not count.
        wpcs = (wpc, 1) if channel == CHANNEL_FORWARD else (1, wpc)
        out.append(case(regs, replace(lim, mem_wpc=wpcs), f"{why}, {kind(regs)}, mem_wpc {wpc}",
                        channel))

    def both_sides(regs, lim, why, channel):
        num, den = traffic(regs, lim, channel)
        need = -(-num // den)
        at(regs, lim, need, why, channel)                      # rounded up: accepted
        at(regs, lim, need - 1, why, channel)                  # rejected (0: not limited)

    # Every built-in channel at every clock.
    for regs, lim, channel in bases:
        both_sides(regs, lim, "built-in", channel)
    # The same, unshaped: the port's line rate, 24 bytes of framing, max_len the worst.
    for regs, lim, channel in rng.sample([b for b in bases if kind(b[0]) == "shaped"], 10):
        both_sides(dict(regs, rate_q=0, rate_num=0, rate_den=1), lim, "unshaped", channel)
    # Overheads around 15, where the worst frame length moves from min_len to max_len.
    for regs, lim, channel in rng.sample([b for b in bases if kind(b[0]) != "unshaped"], 8):
        for overhead in (0, 14, 15, 16, 255):
            both_sides(dict(regs, overhead=overhead, min_len=64, max_len=1500), lim,
                       f"overhead {overhead}", channel)
    # Demands of a whole number of words: the guarantee equal to it passes, one less fails.
    exact, seen = {"shaped": 0, "BoD": 0, "unshaped": 0}, set()
    pool = [b for b in bases if kind(b[0]) == "shaped"]
    pool += [b for b in bases if kind(b[0]) == "BoD"]
    pool += [(dict(r, rate_q=0, rate_num=0, rate_den=1), lim, ch) for r, lim, ch in pool[:12]]
    for _ in range(200_000):
        regs, lim, channel = rng.choice(pool)
        if exact[kind(regs)] >= 4:
            continue
        max_len = rng.randrange(16, 1519)
        r = dict(regs, min_len=rng.randrange(1, max_len + 1), max_len=max_len,
                 overhead=rng.randrange(0, 40), queue_bytes=max(regs["queue_bytes"], max_len))
        if kind(r) == "BoD":                    # slots of a power of two cycles
            r["bod_slot_cycles"] = 1 << rng.randrange(10, 15)
        num, den = traffic(r, lim, channel)
        if num % den or (kind(r), num // den) in seen or validate(r, lim, channel).status:
            continue
        seen.add((kind(r), num // den))
        exact[kind(r)] += 1
        at(r, lim, num // den, "exact demand", channel)
        at(r, lim, num // den - 1, "exact demand", channel)
    assert min(exact.values()) == 4, exact
    # 1 cycle a byte, 1 byte of overhead, 1-byte frames: 16 words every 16 cycles.
    regs, lim, channel = pool[0]
    r = dict(regs, rate_q=1, rate_num=0, rate_den=1, overhead=1, min_len=1, delay=0,
             queue_frames=64)
    for wpc in (65536, 65535, 1 << 20):
        at(r, lim, wpc, "a word per cycle", channel)
    # Fixed guarantees, and random ones about the demand.
    for regs, lim, channel in rng.sample(bases, 16):
        for wpc in (1, 4096, 16384, 65536, (1 << 32) - 1):
            at(regs, lim, wpc, "fixed guarantee", channel)
    for _ in range(40):
        regs, lim, channel = rng.choice(bases)
        num, den = traffic(regs, lim, channel)
        wpc = max(1, rng.randrange(num // den // 2, 2 * num // den + 2))
        at(regs, lim, wpc, "random guarantee", channel)
    # Earlier checks win: a bad field, and a delay line too small (BUDGET before THROUGHPUT).
    for regs, lim, channel in rng.sample(bases, 4):
        at(dict(regs, loss_mode=3), lim, 1, "bad field first", channel)
        at(regs, replace(lim, mem_words=1000), 1, "memory first", channel)
    return out


def delta_cases(bases):
    """A channel whose chip holds its departure times as distances: a frame's serialisation
    and a BoD slot take fewer than FRAME_SPAN and SLOT_SPAN cycles, just kept and just broken, with and without a
    fraction of a cycle per byte; the forward channel, which has the ring, is not bound; the
    return queue's cap is 16,384 frames with BoD off too."""
    out = []
    plain = [b for b in bases if not b[0]["bod_flags"] & BOD_ENABLE and b[0]["rate_q"]
             and b[2] == CHANNEL_RETURN][:4]
    for regs, lim, channel in plain:
        frame = regs["max_len"] + regs["overhead"]
        for frac in (0, 1):
            q = (FRAME_SPAN - 1) // frame - frac
            for value in (q, q + 1):
                r = dict(regs, rate_q=value, rate_num=frac, rate_den=2)
                for ch in (CHANNEL_RETURN, CHANNEL_FORWARD):
                    out.append(case(r, lim, f"serialisation about FRAME_SPAN, fraction {frac}", ch))
        for value in (16384, 16385):
            out.append(case(dict(regs, queue_frames=value), lim, "delta queue's cap",
                            CHANNEL_RETURN))
    for regs, lim, channel in [b for b in bases if b[0]["bod_flags"] & BOD_ENABLE][:4]:
        for value in (SLOT_SPAN - 1, SLOT_SPAN, (1 << 32) - 1):
            out.append(case(dict(regs, bod_slot_cycles=value), lim, "BoD slot about SLOT_SPAN",
                            channel))
    return out


def term_cases(bases):
    """The terminal table's registers (each terminal's own fields are checked at COMMIT): on a
    box that tells 4 terminals with frames apart and serves 6 synthetic ones, the counts at and
    past their limits, where frames of no terminal go, the table on the forward channel (no
    synthetic ones there), and a table's registers while there is none."""
    out = []
    box = [b for b in bases if b[0]["bod_flags"] & BOD_ENABLE and b[2] == CHANNEL_RETURN
           and not b[1].params.delta_queue][:3]
    for regs, lim, channel in box:
        terms = Hardware(lim.f_clk, lim.mem_words,
                         params=replace(lim.params, terminals=4, synthetic=6, demand_levels=16))
        table = dict(regs, term_match=1, term_framed=2, term_synthetic=3, term_unclassified=0xFF)
        edits = [("term_match", 2), ("term_match", 3), ("term_framed", 0), ("term_framed", 4),
                 ("term_framed", 5), ("term_synthetic", 6), ("term_synthetic", 7),
                 ("term_unclassified", 1), ("term_unclassified", 2),
                 ("term_unclassified", 0xFE), ("term_unclassified", 0x100)]
        out.append(case(table, terms, "terminal table", channel))
        for name, value in edits:
            out.append(case(dict(table, **{name: value}), terms, f"{name} edited", channel))
        out.append(case(table, terms, "terminal table on the forward channel", CHANNEL_FORWARD))
        out.append(case(dict(table, term_synthetic=0), terms, "terminals on the forward channel",
                        CHANNEL_FORWARD))
        out.append(case(dict(table, bod_flags=0), terms, "synthetic terminals without BoD",
                        channel))
        out.append(case(table, lim, "a terminal table on a box without", channel))
        for name in ("term_framed", "term_synthetic"):
            out.append(case(dict(regs, **{name: 1}), terms, f"{name} without a table", channel))
    return out


def jitter_cases(bases):
    """Jitter's registers: on a box whose channels have it, a scale that fits and one whose
    reach (the largest entry times jit_sigma) outgrows the delay line, the widest correlation
    and bank and past them; jitter on a box without the block, and where BoD serves the
    channel."""
    out = []
    plain = [b for b in bases if not b[0]["bod_flags"] & BOD_ENABLE][:4]
    served = [b for b in bases if b[0]["bod_flags"] & BOD_ENABLE][:2]
    for regs, lim, channel in plain + served:
        box = replace(lim, params=replace(lim.params, jitter=True))
        edits = [("jit_sigma", 1), ("jit_sigma", lim.f_clk // 100), ("jit_sigma", (1 << 32) - 1),
                 ("jit_sigma", 1 << 32), ("jit_corr", 0xFFFF), ("jit_corr", 0x10000),
                 ("jit_bank", 1), ("jit_bank", 2)]
        for name, value in edits:
            r = dict(regs, **{name: value})
            out.append(case(r, box, f"{name} edited, jitter built", channel))
        out.append(case(dict(regs, jit_sigma=1000), lim, "jitter on a box without", channel))
        # Corruption: any probability and correlation where the channel has it, BoD or not.
        box = replace(lim, params=replace(lim.params, corrupt=True))
        for name, value in (("cor_p", 1), ("cor_p", (1 << 32) - 1), ("cor_p", 1 << 32),
                            ("cor_corr", 0xFFFF), ("cor_corr", 0x10000)):
            out.append(case(dict(regs, **{name: value}), box, f"{name} edited, corruption "
                            f"built", channel))
        out.append(case(dict(regs, cor_p=1 << 20), lim, "corruption on a box without", channel))
        # Duplication: the same, where the channel has it.
        box = replace(lim, params=replace(lim.params, duplicate=True))
        for name, value in (("dup_p", 1), ("dup_p", (1 << 32) - 1), ("dup_p", 1 << 32),
                            ("dup_corr", 0xFFFF), ("dup_corr", 0x10000)):
            out.append(case(dict(regs, **{name: value}), box, f"{name} edited, duplication "
                            f"built", channel))
        out.append(case(dict(regs, dup_p=1 << 20), lim, "duplication on a box without",
                        channel))
        # ECN marking: any step where the channel has it, but not where BoD serves it.
        box = replace(lim, params=replace(lim.params, ecn=True))
        for name, value in (("ecn_sojourn", 1), ("ecn_sojourn", (1 << 32) - 1),
                            ("ecn_sojourn", 1 << 32), ("ecn_queue", 0xFFFF),
                            ("ecn_queue", 0x10000)):
            out.append(case(dict(regs, **{name: value}), box, f"{name} edited, ECN built",
                            channel))
        out.append(case(dict(regs, ecn_queue=5), lim, "ECN marking on a box without", channel))
    return out


def main():
    rng = random.Random(5)
    out = []
    bases = []
    boxes = [Hardware(f_clk, MEM_WORDS) for f_clk in (75_000_000, 50_000_000, 40_000_000)]
    boxes.append(Hardware(55_000_000, MEM_WORDS, params=SPILL))
    boxes.append(Hardware(55_000_000, MEM_WORDS, params=DELTA, spill_channels=("forward",)))
    for lim in boxes:
        f_clk = lim.f_clk
        for p in builtin_profiles().values():
            for (side, ch), channel in zip(p.channels(), (CHANNEL_FORWARD, CHANNEL_RETURN)):
                regs = {k: v for k, v in asdict(ch.registers(lim, side)).items() if k in NAMES}
                bases.append((regs, lim, channel))
                out.append(case(regs, lim, f"{p.name} {side} at {f_clk} Hz", channel))
    edits = [
        ("loss_mode", 3), ("loss_mode", 4), ("rate_den", 0), ("rate_num", None),
        ("rate_q", 0), ("min_len", 0), ("min_len", 5000), ("max_len", 4000), ("max_len", 2048),
        ("queue_frames", 0), ("queue_frames", 1025), ("queue_frames", 1024), ("queue_bytes", 10),
        ("queue_frames", 65535), ("queue_frames", 65536),
        ("delay", (1 << 40) - 1), ("delay", 1 << 40), ("seed", (1 << 64) - 1), ("overhead", 256),
        ("overhead", 255), ("loss_p", 1 << 32), ("rate_q", 1 << 32), ("queue_bytes", (1 << 32) - 1),
    ]
    for regs, lim, channel in rng.sample(bases, 12):
        for name, value in edits:
            r = dict(regs)
            if name == "rate_num":
                r["rate_num"] = r["rate_den"]                    # num must stay below den
            elif name == "rate_q" and value == 0:
                r.update(rate_q=0, rate_num=1, rate_den=9)       # faster than 8 bytes a cycle
            else:
                r[name] = value
            out.append(case(r, lim, f"{name} edited", channel))
    # Unshaped channels at line rate, and memories too small for the delay.
    for regs, lim, channel in rng.sample(bases, 8):
        r = dict(regs, rate_q=0, rate_num=0, rate_den=1)
        out.append(case(r, lim, "unshaped", channel))
        out.append(case(regs, Hardware(lim.f_clk, rng.randint(1000, 400_000)), "small memory",
                        channel))
    out += bod_cases(rng, [b for b in bases if b[0]["bod_flags"] & BOD_ENABLE],
                     [b for b in bases if not b[0]["bod_flags"] & BOD_ENABLE])
    out += throughput_cases(random.Random(9), bases)    # its own draws: the cases above stay
    out += delta_cases([b for b in bases if b[1].params.delta_queue])
    out += term_cases(bases)
    out += jitter_cases(bases)
    path = Path(__file__).with_name("profiles.json")
    path.write_text(json.dumps(out, indent=0) + "\n")
    statuses = {}
    for c in out:
        statuses[c["verdict"]["status"]] = statuses.get(c["verdict"]["status"], 0) + 1
    limited = sum(1 for c in out if c["limits"]["mem_wpc_forward"]
                  or c["limits"]["mem_wpc_return"])
    print(f"wrote {path}: {len(out)} cases, by status {statuses}; {limited} with mem_wpc != 0")


if __name__ == "__main__":
    main()
