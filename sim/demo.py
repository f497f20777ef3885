# SPDX-License-Identifier: BSD-2-Clause
"""`make demo`: one channel of the link, in Verilator, checked frame by frame against the model.

Runs the forward channel of the geo-small profile (10 Mbit/s, 300 ms one way, a 100-frame queue,
1% loss) with bursty overload, on the Verilog the Amaranth cores generate. The full SoC, firmware
and QUIC endpoints come with the next issues; this shows what the channel core does today.
"""

from __future__ import annotations

import sys
from fractions import Fraction

from satemu.channel_model import ChannelParams, channel_registers, Fate
from sim.build import ROOT
from sim.run import run_scenario
from sim.traffic import scenario, traffic

F_CLK = 1_000_000        # a low simulated clock keeps 300 ms at one million cycles
RATE = 10_000_000
OVERHEAD = 24            # preamble, SFD, FCS and inter-frame gap: R is an Ethernet line rate


def main() -> int:
    regs = channel_registers(f_clk=F_CLK, rate_bps=RATE, overhead=OVERHEAD,
                             delay_s=Fraction(3, 10), queue_frames=100, loss=0.01, seed=2026,
                             mem_size=1 << 20)
    frames = traffic(1, 600, rate_bps=RATE, f_clk=F_CLK, load=1.5, p_burst=0.03, p_err=0.01,
                     p_runt=0.01)
    sc = scenario("demo geo-small forward", f_clk=F_CLK, regs=regs, frames=frames, tb_seed=7,
                  mem={"cmd_ready": 0.8, "wdata_ready": 0.8, "lat_min": 4, "lat_max": 30})
    print("satemu demo: forward channel of geo-small, 10 Mbit/s, 300 ms one way, 100-frame queue, "
          "1% loss")
    print(f"  gateware: Amaranth -> Verilog -> Verilator, clock {F_CLK / 1e6:g} MHz; memory with "
          "random backpressure and 4-30 cycle reads")
    s = run_scenario(sc, ROOT / "build" / "demo")
    c = s["counters"]
    arr, egr = s["arrivals"], s["egress"]
    offered = sum(f[1] for f in frames)
    span = (arr[-1] - arr[0]) / F_CLK
    print(f"  offered   {c['rx_frames']} frames, {offered} bytes at "
          f"{8 * offered / span / 1e6:.1f} Mbit/s")
    print(f"  delivered {c['tx_frames']} frames, {c['tx_bytes']} bytes")
    print(f"  dropped   loss {c['drop_loss']}, queue full {c['drop_queue']}, runt {c['drop_runt']}, "
          f"bad FCS {c['drop_error']}, memory full {c['drop_mem']}")
    print(f"  queue     high-water {c['queue_frames_hwm']} frames / {c['queue_bytes_hwm']} bytes; "
          f"delay line high-water {c['mem_words_hwm'] * 8} bytes")

    # Departures are the model's; the RTL's egress cycles equal it (checked below).
    from satemu.channel_model import simulate, ChannelRegs
    model = simulate(zip(arr, [f[1] for f in frames], [f[2] for f in frames]),
                     ChannelRegs(**sc["regs"]), ChannelParams())
    kept = [(f, r) for f, r in zip(frames, model.frames) if r.fate == Fate.DELIVERED]
    delays = [r.egress - r.departure for _, r in kept]
    exact = sum(d == regs.delay for d in delays)
    print(f"  one-way   departure -> egress: exactly {regs.delay / F_CLK * 1e3:.3f} ms for {exact} "
          f"frames; {len(delays) - exact} waited up to {(max(delays) - regs.delay) / F_CLK * 1e6:.0f} us "
          f"behind a longer frame (the 64-bit egress port carries {64 * F_CLK / 1e6:g} Mbit/s at this clock)")
    busy = [(a, b) for a, b in zip(kept, kept[1:]) if b[1].departure - a[1].departure <= 
            (b[0][1] + OVERHEAD) * 8 * F_CLK // RATE + 1]
    if busy:
        bits = sum((b[0][1] + OVERHEAD) * 8 for _, b in busy)
        cycles = sum(b[1].departure - a[1].departure for a, b in busy)
        print(f"  shaped    {bits / cycles * F_CLK / 1e6:.4f} Mbit/s on the wire while backlogged "
              f"({len(busy)} frame gaps)")
    ok = not s["errors"] and not s["failed"]
    print(f"  check     {len(egr)} egress cycles, payloads and {len(c)} counters "
          f"{'equal the reference model exactly' if ok else 'DIFFER from the model'}")
    print(f"  sim speed {c['snapshot_cycle'] / s['wall_s'] / 1e3:.0f}k cycles per wall second "
          f"({s['wall_s']:.1f} s)")
    for e in s["errors"][:10]:
        print("   ", e)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
