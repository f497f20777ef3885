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
from satemu.protocol import PROFILE_FIELDS  # noqa: E402
from satemu.validate import Limits, validate  # noqa: E402

NAMES = [f.name for f in PROFILE_FIELDS]


def case(fields, lim, why):
    v = validate(fields, lim)
    return {"why": why, "limits": {"f_clk": lim.f_clk, "mem_words": lim.mem_words,
                                   "port_bps": lim.port_bps},
            "fields": [fields[n] for n in NAMES],
            "verdict": {"status": int(v.status), "field": v.field, "value": v.value,
                        "lo": v.lo, "hi": v.hi}}


def main():
    rng = random.Random(5)
    out = []
    bases = []
    for f_clk in (75_000_000, 50_000_000, 40_000_000):
        hw = Hardware(f_clk=f_clk)
        lim = Limits(f_clk, hw.mem_words)
        for p in builtin_profiles().values():
            for side, ch in p.channels():
                regs = {k: v for k, v in asdict(ch.registers(hw)).items() if k in NAMES}
                bases.append((regs, lim))
                out.append(case(regs, lim, f"{p.name} {side} at {f_clk} Hz"))
    edits = [
        ("loss_mode", 3), ("loss_mode", 4), ("rate_den", 0), ("rate_num", None),
        ("rate_q", 0), ("min_len", 0), ("min_len", 5000), ("max_len", 4000), ("max_len", 2048),
        ("queue_frames", 0), ("queue_frames", 1025), ("queue_frames", 1024), ("queue_bytes", 10),
        ("delay", (1 << 40) - 1), ("delay", 1 << 40), ("seed", (1 << 64) - 1), ("overhead", 256),
        ("overhead", 255), ("loss_p", 1 << 32), ("rate_q", 1 << 32), ("queue_bytes", (1 << 32) - 1),
    ]
    for regs, lim in rng.sample(bases, 12):
        for name, value in edits:
            r = dict(regs)
            if name == "rate_num":
                r["rate_num"] = r["rate_den"]                    # num must stay below den
            elif name == "rate_q" and value == 0:
                r.update(rate_q=0, rate_num=1, rate_den=9)       # faster than 8 bytes a cycle
            else:
                r[name] = value
            out.append(case(r, lim, f"{name} edited"))
    # Unshaped channels at line rate, and memories too small for the delay.
    for regs, lim in rng.sample(bases, 8):
        r = dict(regs, rate_q=0, rate_num=0, rate_den=1)
        out.append(case(r, lim, "unshaped"))
        out.append(case(regs, Limits(lim.f_clk, rng.randint(1000, 400_000)), "small memory"))
    path = Path(__file__).with_name("profiles.json")
    path.write_text(json.dumps(out, indent=0) + "\n")
    statuses = {}
    for c in out:
        statuses[c["verdict"]["status"]] = statuses.get(c["verdict"]["status"], 0) + 1
    print(f"wrote {path}: {len(out)} cases, by status {statuses}")


if __name__ == "__main__":
    main()
