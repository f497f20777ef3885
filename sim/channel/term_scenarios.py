# SPDX-License-Identifier: BSD-2-Clause
"""Terminals on the channel bench (docs/bod.md, "Terminals"): several terminals with frames and
synthetic ones contending for one BoD pool; frames of no terminal; a step that changes a
terminal's settings; the forward channel's per-terminal accounting."""

from __future__ import annotations

import random
from dataclasses import replace
from fractions import Fraction

from satemu.base.params import ChannelParams
from satemu.base.regmap import BOD_ENABLE, BOD_RATE_ONE, LOSS_GILBERT_ELLIOTT
from satemu.base.terminals import (DEMAND_CONSTANT, DEMAND_LEVELS, DEMAND_ONE, DEMAND_ONOFF,
    MATCH_MAC, MATCH_VLAN, TERM_FCA, TERM_SYNTHETIC, UNCLASSIFIED_DROP, TerminalRegs,
    TerminalTable)
from sim.channel.bod_scenarios import PARAMS as BOD_PARAMS, bod_regs
from sim.channel.scenarios import HOSTILE_MEM, MEM_WORDS
from sim.traffic import SCENARIO_PARAMS, scenario, traffic

# The return channel with terminals as the simulated board builds it, smaller: 4 terminals with
# frames, 8 synthetic, 16 levels.
TERM_PARAMS = replace(BOD_PARAMS, terminals=4, synthetic=8, demand_levels=16)
# The forward channel: one queue, the table only counts each terminal's frames.
FORWARD_PARAMS = replace(SCENARIO_PARAMS, terminals=4)

F = 1_000_000
SUPERFRAME = Fraction(1, 100)          # 40 slots of 100 bytes: a 3.2 Mbit/s carrier
SLOTS, SLOT_BYTES = 40, 100


def _rate(bps) -> int:
    """bit/s as slots per superframe x 256 on this pool."""
    return round(Fraction(bps) * SUPERFRAME / (8 * SLOT_BYTES) * BOD_RATE_ONE)


def _demand(bps) -> int:
    """bit/s as bytes a superframe x 256."""
    return round(Fraction(bps) * SUPERFRAME / 8 * DEMAND_ONE)


def _whose(frames, seed, weights):
    """Each frame's terminal: an index with frames, or -1 (no terminal's), by ``weights``."""
    rng = random.Random(seed)
    who = list(range(len(weights) - 1)) + [-1]
    return [f + [rng.choices(who, weights)[0]] for f in frames]


def _synthetic():
    """Six synthetic terminals: constant, on/off and a schedule of levels, two of each."""
    on = round((1 << 32) * Fraction(SUPERFRAME) / Fraction(5, 100))     # mean on 50 ms
    off = round((1 << 32) * Fraction(SUPERFRAME) / Fraction(10, 100))   # mean off 100 ms
    base = dict(flags=TERM_SYNTHETIC, cra=_rate(8_000), rbdc_max=_rate(1_000_000),
                rbdc_timeout=6, vbdc_max=30, req_period=2)
    return [TerminalRegs(**base, demand_kind=DEMAND_CONSTANT, demand_rate=_demand(300_000)),
            TerminalRegs(**base, demand_kind=DEMAND_ONOFF, demand_rate=_demand(900_000),
                         demand_on=min(on, (1 << 32) - 1), demand_off=off),
            TerminalRegs(**base, demand_kind=DEMAND_LEVELS, demand_first=0, demand_count=2),
            TerminalRegs(**base, demand_kind=DEMAND_CONSTANT, demand_rate=_demand(150_000)),
            TerminalRegs(**base, demand_kind=DEMAND_ONOFF, demand_rate=_demand(600_000),
                         demand_on=min(2 * on, (1 << 32) - 1), demand_off=off),
            TerminalRegs(**base, demand_kind=DEMAND_LEVELS, demand_first=2, demand_count=3)]


LEVELS = ((_demand(800_000), 5), (0, 10), (_demand(200_000), 3), (_demand(1_500_000), 2),
          (0, 6))


def term_scenarios() -> dict[str, dict]:
    sc = {}
    regs = bod_regs(F, superframe=SUPERFRAME, slots=SLOTS, slot_bytes=SLOT_BYTES, overhead=6,
                    cra=64_000, rbdc_max=1_600_000, timeout=8, vbdc_max=60, latency=8,
                    background=((0.1, 1),), queue_frames=200)
    framed = [
        TerminalRegs(key=0x020000000002, queue_frames=60, cra=_rate(64_000),
                     rbdc_max=_rate(1_600_000), rbdc_timeout=8, vbdc_max=60),
        TerminalRegs(key=0x020000000003, queue_frames=30, cra=_rate(32_000),
                     rbdc_max=_rate(1_000_000), vbdc_max=40, req_period=2,
                     loss_mode=LOSS_GILBERT_ELLIOTT, ge_p=1 << 26, ge_r=1 << 30,
                     ge_loss_good=1 << 22, ge_loss_bad=1 << 31),
        TerminalRegs(key=0x020000000004, queue_frames=100, queue_bytes=40_000, vbdc_max=100,
                     flags=TERM_FCA),
    ]
    table = TerminalTable(MATCH_MAC, tuple(framed + _synthetic()), UNCLASSIFIED_DROP, LEVELS)
    sc["terms-contend"] = scenario(
        "three terminals with frames and six synthetic ones on an oversubscribed pool; frames "
        "of no terminal dropped", f_clk=F, regs=replace(regs, **table.registers()),
        params=TERM_PARAMS, table=table, tb_seed=41, mem=HOSTILE_MEM, run_after=300_000,
        frames=_whose(traffic(51, 700, rate_bps=2_400_000, f_clk=F, load=1.0, p_runt=0.01,
                              p_err=0.01, p_burst=0.04, p_idle=0.01,
                              idle_cycles=(50_000, 150_000)), 61, [4, 3, 3, 1]),
        expect={"unclassified": "summary['counters']['drop_unclassified'] > 0",
                "every terminal sent": "all(summary['terminals'][str(i)]['tx_frames'] > 0 "
                                       "for i in range(3))",
                "queue drops": "summary['terminals']['1']['drop_queue'] > 0",
                "shared": "any(r['g_rbdc'] > 0 and r['terminal'] >= 3 for r in "
                          "bod['records'])"})

    # VLAN IDs; frames of no terminal go to the first; FCA on two; a step at a named cycle
    # changes a terminal's CRA, queue and loss and a synthetic terminal's demand.
    vlan = [TerminalRegs(key=100, queue_frames=80, cra=_rate(96_000), vbdc_max=50,
                         flags=TERM_FCA),
            TerminalRegs(key=200, queue_frames=80, cra=_rate(48_000),
                         rbdc_max=_rate(1_200_000), vbdc_max=50, flags=TERM_FCA)]
    synth = _synthetic()[:3]
    table2 = TerminalTable(MATCH_VLAN, tuple(vlan + synth), 0, LEVELS[:2])
    step = replace(table2, terminals=(
        replace(vlan[0], cra=_rate(400_000), queue_frames=20, loss_mode=1, loss_p=1 << 29),
        vlan[1], replace(synth[0], demand_rate=_demand(1_200_000), rbdc_max=_rate(1_500_000)),
        *synth[1:]))
    regs2 = replace(regs, **table2.registers(), bod_flags=BOD_ENABLE)
    cycle = 400_000
    sc["terms-vlan-step"] = scenario(
        "VLAN terminals, frames of no terminal to the first, FCA, and a step changing a "
        "terminal's settings at its named cycle", f_clk=F, regs=regs2, params=TERM_PARAMS,
        table=table2, tb_seed=42, run_after=200_000,
        frames=_whose(traffic(52, 500, rate_bps=2_000_000, f_clk=F, load=1.0, p_burst=0.03),
                      62, [5, 4, 1]),
        commits=[{"at": cycle - 20_000, "cycle": cycle, "regs": regs2, "table": step}],
        expect={"given to the first": "summary['terminals']['0']['rx_frames'] > "
                                      "summary['terminals']['1']['rx_frames']",
                "fca": "any(r['g_fca'] > 0 for r in bod['records'])",
                "loss after the step": "summary['terminals']['0']['drop_loss'] > 0"})
    sc["terms-vlan-step"]["expect_commit_cycles"] = [cycle]

    # The forward channel: shaped at 8 Mbit/s, one queue; each frame counted as its
    # destination's, a frame of no terminal as no one's, and every one delivered or dropped by
    # the channel's own rules.
    fwd = TerminalTable(MATCH_MAC, tuple(TerminalRegs(key=t.key) for t in framed),
                        UNCLASSIFIED_DROP, (), True)
    from satemu.link.registers import channel_registers
    fregs = channel_registers(f_clk=F, rate_bps=8_000_000, delay_s=Fraction(1, 20),
                              queue_frames=40, mem_size=MEM_WORDS, loss=0.01, seed=5,
                              params=FORWARD_PARAMS)
    sc["terms-forward"] = scenario(
        "the forward channel's per-terminal accounting on one shared queue", f_clk=F,
        regs=replace(fregs, **fwd.registers()), params=FORWARD_PARAMS, table=fwd, tb_seed=43,
        frames=_whose(traffic(53, 500, rate_bps=8_000_000, f_clk=F, load=1.5, p_runt=0.02),
                      63, [3, 3, 3, 1]),
        expect={"no one's": "summary['terminals']['None']['tx_frames'] > 0",
                "queue": "sum(summary['terminals'][str(i)]['drop_queue'] for i in range(3)) > 0"})
    return sc
