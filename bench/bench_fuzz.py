#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Benchmark: the firmware's libFuzzer targets, each for at least 10^6 executions.

The evidence behind the firmware's fuzzing (docs/architecture.md, "Verification"): each target
of tests/firmware/fuzzing.py (fuzz_proto: a fresh deframer per input, each frame into the
command layer; fuzz_stream: one deframer kept across all inputs, against a model of the stream;
fuzz_hw: the command layer on hardware the input chooses), built with libFuzzer, ASan and UBSan,
runs from its seed corpus with seed 1 for ``--runs`` inputs. Records for each the executions
libFuzzer reports, the wall time, executions a second, the coverage reached (edges, features),
the corpus it ended with, the crash inputs it wrote, its exit status, and the machine's load
when it started (the wall time is one core's, shared). The corpora stay in build/fuzz/ (not
committed). Writes bench/results/fuzz.json (build/fuzz/fuzz.json for fewer runs or targets);
exits non-zero on any crash or short run.

    python bench/bench_fuzz.py                      # 4 to 10 minutes, on one core
    python bench/bench_fuzz.py --runs 100000 --target fuzz_hw
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "firmware")]

import fuzzing  # noqa: E402

OUT = ROOT / "build" / "fuzz"
RUNS = 1_000_000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=RUNS)
    ap.add_argument("--target", action="append", choices=fuzzing.TARGETS,
                    help="a target to run (repeatable; default: all)")
    args = ap.parse_args()
    rows = []
    for target in args.target or fuzzing.TARGETS:
        exe = fuzzing.build(target, OUT)
        corpus = OUT / f"{target}-corpus"
        seeds = fuzzing.seed(target, corpus)
        load = os.getloadavg()[0]
        r = fuzzing.run(exe, corpus, args.runs)
        tail = r.pop("log_tail")
        rows.append({"target": target, "seeds": seeds, **r, "load_1min": round(load, 2)})
        print(f"{target:12s} {r['runs']} runs in {r['wall_s']} s ({r['exec_per_s']}/s), "
              f"{r['edges']} edges, corpus {r['corpus_files']} files / {r['corpus_bytes']} B, "
              f"{r['crashes']} crashes", flush=True)
        if r["returncode"] or r["crashes"]:
            print(tail)
    version = subprocess.run([fuzzing.clang(), "--version"], capture_output=True,
                             text=True).stdout.splitlines()[0]
    full = args.runs >= RUNS and not args.target
    out = ROOT / "bench" / "results" / "fuzz.json" if full else OUT / "fuzz.json"
    out.write_text(json.dumps({
        "what": f"each libFuzzer target for {args.runs} inputs from its seed corpus, -seed=1, "
                f"-max_len={fuzzing.MAX_LEN}, under ASan and UBSan; runs, executions and coverage "
                "(edges, features) as libFuzzer reports them, the corpus it ended with, the crash "
                "inputs it wrote; load_1min: the machine's load when the target started",
        "command": ".venv/bin/python bench/bench_fuzz.py", "compiler": version,
        "rows": rows}, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    ok = all(r["returncode"] == 0 and r["crashes"] == 0 and r["runs"] == args.runs
             for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
