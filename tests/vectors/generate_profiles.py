#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Write tests/vectors/profiles.json: profiles in register units with the verdict the firmware
must give (satemu.validate). Run only to change the checks on purpose."""

import json
import random
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "host"))
from satemu.profile import Hardware, builtin_profiles  # noqa: E402
from satemu.protocol import CHANNEL_FORWARD, CHANNEL_RETURN, PROFILE_FIELDS  # noqa: E402
from satemu.regmap import BOD_ENABLE, BOD_FCA  # noqa: E402
from satemu.validate import Limits, validate  # noqa: E402

NAMES = [f.name for f in PROFILE_FIELDS]


def case(fields, lim, why, channel):
    v = validate(fields, lim, channel)
    return {"why": why, "limits": {"f_clk": lim.f_clk, "mem_words": lim.mem_words,
                                   "port_bps": lim.port_bps, "bod_mask": lim.bod_mask},
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
            ("bod_flags", BOD_ENABLE | BOD_FCA),
        ]
        for name, value in edits:
            out.append(case(dict(regs, **{name: value}), lim, f"{name} edited (BoD)", channel))
        # A schedule of four levels, the last one broken, then whole.
        sched = dict(regs, bod_bg_count=4, bod_bg1=3 << 16, bod_bg2=slots | 9 << 16,
                     bod_bg3=slots + 1 | 1 << 16)
        out.append(case(sched, lim, "BoD schedule, level 3 too high", channel))
        out.append(case(dict(sched, bod_bg3=1 << 16), lim, "BoD schedule", channel))
        # No BoD block on the channel: the forward channel, or a box without any.
        out.append(case(regs, lim, "BoD on the forward channel", CHANNEL_FORWARD))
        out.append(case(regs, Limits(lim.f_clk, lim.mem_words, bod_mask=0), "BoD, no block",
                        channel))
        # Budgets: a small memory, and a fast carrier of short slots.
        out.append(case(regs, Limits(lim.f_clk, rng.randint(1000, 100_000)), "BoD, small memory",
                        channel))
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


def main():
    rng = random.Random(5)
    out = []
    bases = []
    for f_clk in (75_000_000, 50_000_000, 40_000_000):
        hw = Hardware(f_clk=f_clk)
        lim = Limits(f_clk, hw.mem_words)
        for p in builtin_profiles().values():
            for (side, ch), channel in zip(p.channels(), (CHANNEL_FORWARD, CHANNEL_RETURN)):
                regs = {k: v for k, v in asdict(ch.registers(hw)).items() if k in NAMES}
                bases.append((regs, lim, channel))
                out.append(case(regs, lim, f"{p.name} {side} at {f_clk} Hz", channel))
    edits = [
        ("loss_mode", 3), ("loss_mode", 4), ("rate_den", 0), ("rate_num", None),
        ("rate_q", 0), ("min_len", 0), ("min_len", 5000), ("max_len", 4000), ("max_len", 2048),
        ("queue_frames", 0), ("queue_frames", 1025), ("queue_frames", 1024), ("queue_bytes", 10),
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
        out.append(case(regs, Limits(lim.f_clk, rng.randint(1000, 400_000)), "small memory",
                        channel))
    out += bod_cases(rng, [b for b in bases if b[0]["bod_flags"] & BOD_ENABLE],
                     [b for b in bases if not b[0]["bod_flags"] & BOD_ENABLE])
    path = Path(__file__).with_name("profiles.json")
    path.write_text(json.dumps(out, indent=0) + "\n")
    statuses = {}
    for c in out:
        statuses[c["verdict"]["status"]] = statuses.get(c["verdict"]["status"], 0) + 1
    print(f"wrote {path}: {len(out)} cases, by status {statuses}")


if __name__ == "__main__":
    main()
