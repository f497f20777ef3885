#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Benchmark: does a stack's BBR sender behave like published BBR across a GEO link?

Published BBR (Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM Queue 2016;
the IETF's draft-cardwell-iccrg-bbr-congestion-control) paces at the bottleneck's rate and
keeps about one BDP in flight, so across a link with a 1-BDP queue it delivers near the
bottleneck rate and the queue seldom overflows. This bench runs every sender the stacks have
(quinn: BBR, Cubic, NewReno; aioquic: Cubic, Reno, for reference) downloading SIZE bytes across
geo-testbed (8.5/1.5 Mbit/s, 300 ms each way, a 1-BDP forward queue) and
geo-constrained-return (its return at 100 kbit/s), on the model engine (equal to the simulated
board frame for frame: tests/system/test_engines.py), and records for each: the completion
time, the delivered rate against the bottleneck's, the datagrams the server sent, the forward
queue's drops and their share, and whether the sender behaves like published BBR: at least
UTILISATION of the bottleneck rate and at most DROP_SHARE of its datagrams dropped by the
queue. Only quinn has BBR here, so the verdict is about quinn's (issue 43's ngtcp2 would add
another).

Writes bench/results/bbr.json and bbr.md.

    python bench/bench_bbr.py [--size 10MB] [--seeds 1,2]
"""

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "host"))

from satemu.base.units import parse_size                          # noqa: E402
from satemu.link.profile import load_profile                      # noqa: E402
from satemu.quic.engine import run_model_transfer                 # noqa: E402
from satemu.quic.settings import EndpointSettings                 # noqa: E402
from satemu.report.fates import fate_summary                      # noqa: E402
from satemu.report.metrics import origin_cycle                    # noqa: E402

PROFILES = ("geo-testbed", "geo-constrained-return")
# (server stack, controller): every controller of each stack; both endpoints of one stack.
SENDERS = (("quinn", "bbr"), ("quinn", "cubic"), ("quinn", "reno"), ("aioquic", "cubic"),
           ("aioquic", "reno"))
UTILISATION = 0.8       # of the bottleneck rate, delivered
DROP_SHARE = 0.02       # of the server's datagrams, dropped by the forward queue
RESULT = ROOT / "bench" / "results" / "bbr.json"


def run(profile: str, stack: str, cc: str, size: int, seed: int) -> dict:
    t0 = time.monotonic()
    t = run_model_transfer(profile, size, seed=seed, stacks=(stack, stack),
                           settings=EndpointSettings(cc=cc), max_seconds=600)
    wall = time.monotonic() - t0
    rate = load_profile(profile).forward.rate
    forward = t.board_stats["forward"]
    sent = sum(r.direction == "forward" for r in t.sent)
    seconds = (t.sent[-1].cycle - origin_cycle(t)) / t.f_clk if t.sent else None
    delivered = size * 8 / t.completion_s if t.completed and t.completion_s else 0.0
    fates = fate_summary(t) or {}
    row = {
        "profile": profile, "stack": stack, "cc": cc, "seed": seed, "size": size,
        "completed": t.completed, "error": t.error,
        "completion_s": t.completion_s, "link_seconds": seconds,
        "bottleneck_mbps": float(rate) / 1e6,
        "delivered_mbps": delivered / 1e6,
        "utilisation": delivered / float(rate),
        "forward_datagrams": sent,
        "forward_drop_queue": forward["drop_queue"],
        "forward_drop_share": forward["drop_queue"] / sent if sent else 0.0,
        "forward_fates": fates.get("forward"),
        "queue_frames_hwm": forward["queue_frames_hwm"],
        "wall_s": round(wall, 2),
    }
    row["like_published_bbr"] = (t.completed and row["utilisation"] >= UTILISATION
                                 and row["forward_drop_share"] <= DROP_SHARE)
    return row


def markdown(results: dict) -> str:
    lines = [
        "# BBR, checked: each stack's senders across the GEO profiles",
        "",
        f"`python bench/bench_bbr.py` on the model engine, {results['size']:,}-byte downloads, "
        f"seeds {', '.join(map(str, results['seeds']))}. Like published BBR: at least "
        f"{UTILISATION:.0%} of the bottleneck rate delivered and at most {DROP_SHARE:.0%} of "
        "the server's datagrams dropped by the 1-BDP forward queue.",
        "",
        "| profile | sender | seed | done in | delivered | of the bottleneck | datagrams "
        "| queue drops | dropped | like published BBR |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results["runs"]:
        done = f"{r['completion_s']:.1f} s" if r["completed"] else "not done"
        lines.append(
            f"| {r['profile']} | {r['stack']} {r['cc']} | {r['seed']} | {done} "
            f"| {r['delivered_mbps']:.2f} Mbit/s | {r['utilisation']:.0%} "
            f"| {r['forward_datagrams']:,} | {r['forward_drop_queue']:,} "
            f"| {r['forward_drop_share']:.1%} | {'yes' if r['like_published_bbr'] else 'no'} |")
    lines += ["", results["verdict"], ""]
    return "\n".join(lines)


def verdict(runs: list[dict]) -> str:
    bbr = [r for r in runs if r["cc"] == "bbr"]
    like = [r for r in bbr if r["like_published_bbr"]]
    worst = max(bbr, key=lambda r: r["forward_drop_share"])
    if len(like) == len(bbr):
        return "Every BBR run behaves like published BBR."
    return (f"{len(bbr) - len(like)} of {len(bbr)} BBR runs do not behave like published BBR: "
            f"quinn's BBR lost up to {worst['forward_drop_share']:.0%} of its datagrams at the "
            f"1-BDP queue ({worst['profile']}, seed {worst['seed']}) and delivered "
            f"{worst['utilisation']:.0%} of the bottleneck there. Results with quinn's BBR are "
            "results about quinn's BBR (quinn marks it experimental), not about BBR.")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="10MB")
    ap.add_argument("--seeds", default="1,2")
    args = ap.parse_args()
    size = int(parse_size(args.size))
    seeds = [int(s) for s in args.seeds.split(",")]
    t0 = time.monotonic()
    runs = []
    for profile in PROFILES:
        for stack, cc in SENDERS:
            for seed in seeds:
                row = run(profile, stack, cc, size, seed)
                runs.append(row)
                print(f"{profile:24} {stack:8} {cc:6} seed {seed}: "
                      f"{row['delivered_mbps']:.2f} Mbit/s ({row['utilisation']:.0%}), "
                      f"{row['forward_drop_queue']} of {row['forward_datagrams']} dropped "
                      f"({row['forward_drop_share']:.1%}), {row['wall_s']} s", flush=True)
    results = {"benchmark": "bbr", "engine": "model", "date": time.strftime("%Y-%m-%d"),
               "command": f"python bench/bench_bbr.py --size {args.size} --seeds {args.seeds}",
               "size": size, "seeds": seeds, "utilisation_threshold": UTILISATION,
               "drop_share_threshold": DROP_SHARE, "runs": runs,
               "wall_s": round(time.monotonic() - t0, 1)}
    results["verdict"] = verdict(runs)
    RESULT.write_text(json.dumps(results, indent=2) + "\n")
    RESULT.with_suffix(".md").write_text(markdown(results))
    print(results["verdict"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
