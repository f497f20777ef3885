#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Write tests/vectors/terminals.json: terminal tables with the verdict the firmware must give
at COMMIT (satemu.base.validate.terminal_verdict, then terminal_budget; docs/bod.md,
"Terminals"), as TERMINAL_BAD's detail. Run only to change the checks on purpose."""

import json
import sys
from dataclasses import asdict, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "host"))
from satemu.base.hardware import Hardware  # noqa: E402
from satemu.base.params import ChannelParams, ChannelRegs  # noqa: E402
from satemu.base.protocol import (CHANNEL_FORWARD, CHANNEL_RETURN, PROFILE_FIELDS,  # noqa: E402
    TABLE_INDEX, TERMINAL_RULES)
from satemu.base.terminals import (DEMAND_CONSTANT, DEMAND_LEVELS, DEMAND_ONOFF,  # noqa: E402
    MATCH_MAC, MATCH_VLAN, TERM_FCA, TERM_SYNTHETIC, UNCLASSIFIED_DROP, TerminalRegs,
    TerminalTable)
from satemu.base.validate import terminal_budget, terminal_verdict  # noqa: E402
from satemu.link.profile import load_profile  # noqa: E402

NAMES = [f.name for f in PROFILE_FIELDS]
BOX = Hardware(75_000_000, 6 << 20, params=ChannelParams(terminals=4, synthetic=4,
                                                         demand_levels=8))


def verdict(table: TerminalTable, regs: ChannelRegs, hw: Hardware, side: str):
    params = hw.channel_params(side)
    v = (terminal_verdict(table, regs, params)
         or terminal_budget(table, regs, params, hw.f_clk, hw.port_bps))
    if v is None:
        return None
    return {"index": TABLE_INDEX if v.terminal < 0 else v.terminal,
            "rule": TERMINAL_RULES.index(v.field), "value": v.value, "lo": v.lo, "hi": v.hi}


def case(why: str, table: TerminalTable, regs: ChannelRegs, hw: Hardware, channel: int):
    side = "return" if channel == CHANNEL_RETURN else "forward"
    regs = replace(regs, **table.registers())
    fields = asdict(regs)
    lim = hw.limits()
    return {"why": why, "channel": channel,
            "limits": {**lim, "bod_mask": hw.bod_mask},
            "fields": [fields[n] for n in NAMES],
            "terminals": [list(t.values()) for t in table.terminals],
            "levels": [list(level) for level in table.levels],
            "verdict": verdict(table, regs, hw, side)}


def main():
    regs = load_profile("geo-testbed-bod").check(BOX)["return"]
    fwd = load_profile("geo-testbed-bod").check(BOX)["forward"]
    slots = regs.bod_slots
    a = TerminalRegs(key=0x02_00_00_00_00_0A, queue_frames=20, queue_bytes=30_000, cra=256)
    b = TerminalRegs(key=0x02_00_00_00_00_0B, queue_frames=10, queue_bytes=15_000, loss_mode=1,
                     loss_p=1 << 28, rbdc_max=4 * 256, rbdc_timeout=6, vbdc_max=20)
    c = TerminalRegs(key=0x02_00_00_00_00_0C, queue_frames=8, queue_bytes=12_000, flags=TERM_FCA,
                     req_period=2)
    s1 = TerminalRegs(key=0, flags=TERM_SYNTHETIC, rbdc_max=3 * 256, rbdc_timeout=4,
                      demand_kind=DEMAND_ONOFF, demand_rate=600, demand_on=5, demand_off=8)
    s2 = TerminalRegs(key=0, flags=TERM_SYNTHETIC, vbdc_max=40, demand_kind=DEMAND_LEVELS,
                      demand_first=1, demand_count=2)
    levels = ((1000, 3), (0, 2), (5000, 1))
    good = TerminalTable(MATCH_MAC, (a, b, c, s1, s2), UNCLASSIFIED_DROP, levels)
    out = [case("three with frames, two synthetic", good, regs, BOX, CHANNEL_RETURN)]

    def edit(why, i, **change):
        terms = list(good.terminals)
        terms[i] = replace(terms[i], **change)
        out.append(case(why, replace(good, terminals=tuple(terms)), regs, BOX, CHANNEL_RETURN))

    cap = BOX.channel_params("return").terminal_cap(True, 3)
    carrier = slots * 256
    edit("a key of 0", 0, key=0)
    edit("a key past 48 bits", 1, key=1 << 48)
    edit("a key twice", 2, key=a.key)
    edit("a queue of no frames", 0, queue_frames=0)
    edit("a queue past its part", 1, queue_frames=cap + 1)
    edit("a queue at its part", 1, queue_frames=cap)
    edit("a queue of fewer bytes than a frame", 0, queue_bytes=regs.min_len - 1)
    edit("a loss mode past Gilbert-Elliott", 1, loss_mode=3)
    edit("a loss probability past its width", 1, loss_p=1 << 32)
    edit("a CRA past the carrier", 0, cra=carrier + 1)
    edit("a CRA at the carrier", 0, cra=carrier)
    edit("an RBDC maximum past the carrier", 3, rbdc_max=carrier + 1)
    edit("a request period of 0", 2, req_period=0)
    edit("a demand on a terminal with frames", 0, demand_kind=DEMAND_CONSTANT)
    edit("a terminal with frames and no way to drain", 2, flags=0)
    edit("levels from past the table", 4, demand_first=5, demand_count=0)
    edit("no levels", 4, demand_count=0)
    edit("levels past the table", 4, demand_count=3)
    edit("a demand kind past its width", 3, demand_kind=4)
    edit("a synthetic terminal among those with frames", 1, flags=TERM_SYNTHETIC)
    edit("a queue of the most bytes", 0, queue_frames=cap,
         queue_bytes=(1 << 32) - 1)
    edit("an RBDC timeout past its width", 1, rbdc_timeout=1 << 16)
    split = replace(good, terminals=tuple(replace(t, cra=carrier // 3 + 1)
                                          for t in good.terminals))
    out.append(case("CRA over the pool in all", split, regs, BOX, CHANNEL_RETURN))
    out.append(case("a level of 0 superframes", replace(good, levels=((1000, 3), (0, 0))),
                    regs, BOX, CHANNEL_RETURN))
    out.append(case("BoD off", good, replace(regs, bod_flags=0), BOX, CHANNEL_RETURN))
    small = Hardware(75_000_000, 40_000, params=BOX.params)
    out.append(case("a small delay line split three ways", good,
                    replace(regs, mem_size=small.mem_words), small, CHANNEL_RETURN))
    vlan = TerminalTable(MATCH_VLAN, (replace(a, key=10), replace(b, key=4094)), 1)
    out.append(case("by VLAN", vlan, regs, BOX, CHANNEL_RETURN))
    out.append(case("a VLAN ID of 4095", replace(vlan, terminals=(replace(a, key=4095), vlan.terminals[1])), regs,
                    BOX, CHANNEL_RETURN))
    four = tuple(replace(a, key=a.key + k) for k in range(4))
    out.append(case("four with frames", TerminalTable(MATCH_MAC, four), regs, BOX,
                    CHANNEL_RETURN))
    # The forward channel's table: one shared queue; only the keys count.
    shared = TerminalTable(MATCH_MAC, (a, replace(b, queue_frames=0, cra=carrier + 1), c),
                           shared=True)
    out.append(case("forward: only the keys", shared, fwd, BOX, CHANNEL_FORWARD))
    out.append(case("forward: a key twice", replace(shared, terminals=(a, a)), fwd, BOX,
                    CHANNEL_FORWARD))
    path = Path(__file__).with_name("terminals.json")
    path.write_text(json.dumps(out, indent=0) + "\n")
    bad = sum(1 for c in out if c["verdict"])
    print(f"wrote {path}: {len(out)} cases, {bad} refused")


if __name__ == "__main__":
    main()
