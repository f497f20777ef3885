# SPDX-License-Identifier: BSD-2-Clause
"""`make demo`: the simulated board carries traffic both ways under a GEO profile.

Builds the simulated board once (LiteX SoC with VexRiscv, LiteDRAM and both channels, the C
firmware in ROM, all in Verilator), starts it, loads the geo-small profile through the CLI over
the UART, sends frames in on port B (forward) and port A (return), and shows what came out and
what the board's counters say, checked frame by frame against the reference model. QUIC across
the link comes with a later issue; this is what the box does today.
"""

from __future__ import annotations

import random
import sys
import time

from satemu.channel_model import Fate
from satemu.cli import main as cli
from satemu.device import Device
from sim import board
from sim.frames import FORWARD, RETURN, expected_egress, observed_egress, run_traffic

PROFILE = "geo-small"          # 10/2 Mbit/s, 300 ms one way, 1-BDP queues


def traffic(rng: random.Random, n: int, ack_like: bool) -> list[tuple[bytes, bool]]:
    """Downloads look like full frames; the return way carries mostly small (ACK-sized) ones."""
    out = []
    for _ in range(n):
        size = rng.choice([64, 64, 90, 1518]) if ack_like else rng.choice([1518, 1518, 1518, 600])
        out.append((bytes(rng.randrange(256) for _ in range(size)), False))
    return out


def main() -> int:
    print("satemu demo: the simulated board (LiteX SoC + firmware + both channels in Verilator)")
    t0 = time.monotonic()
    state = board.launch()
    print(f"  board up at {state['url']} after {time.monotonic() - t0:.0f} s "
          f"(built once, cached under build/board/)")
    try:
        print(f"\n$ satemu load {PROFILE} --port {state['url']}")
        if cli(["load", PROFILE, "--port", state["url"], "--reseed"]):
            return 1
        with Device(state["url"]) as dev:
            dev.reset_stats()
            f_clk = dev.hello()["f_clk"]
        rng = random.Random(2026)
        sent = {FORWARD: traffic(rng, 400, ack_like=False), RETURN: traffic(rng, 200, ack_like=True)}
        print(f"\nputting {len(sent[FORWARD])} frames on port B's wire and {len(sent[RETURN])} on "
              f"port A's, at a quarter of the 1 Gbit/s wire rate ...")
        t1 = time.monotonic()
        got, models, taken = run_traffic(state["url"], state["eth_port"], sent)
        wall = time.monotonic() - t1
        expected = expected_egress(sent, models, taken)
        ok = all(observed_egress(got, ch) == expected[ch] and
                 all(e.wire_ok for e in got.egress[ch]) for ch in sent)
        for ch, name in ((FORWARD, "forward B->A"), (RETURN, "return  A->B")):
            m = models[ch]
            out = got.egress[ch]
            delays = sorted(e.start - r.departure for e, r in
                            zip(out, [r for r in m.frames if r.fate == Fate.DELIVERED]))
            bits = sum(len(e.frame) * 8 for e in out[1:])     # N frames span N - 1 gaps
            span = (out[-1].start - out[0].start) / f_clk if len(out) > 1 else 0
            print(f"  {name}: {len(got.events[ch])} in, {len(out)} out, "
                  f"{m.counters['drop_queue']} tail-dropped; departure->egress "
                  f"{delays[0] / f_clk * 1e3:.3f} ms; leaving at "
                  f"{bits / span / 1e6 if span else 0:.2f} Mbit/s of frame bytes")
        print(f"  every egress cycle, every byte and every FCS "
              f"{'equals' if ok else 'DIFFERS from'} the reference model's ({wall:.1f} s wall)")
        print(f"\n$ satemu stats --port {state['url']}")
        cli(["stats", "--port", state["url"]])
        return 0 if ok else 1
    finally:
        board.kill(state)


if __name__ == "__main__":
    sys.exit(main())
