#!/usr/bin/env bash
# `make test`: the whole suite, in two pytest sessions so that both cores work all along. First
# every test not marked slow (tests/conftest.py), spread over every core (pytest-xdist); then
# the slow ones (Verilator models, the simulated boards, a bitstream with SATEMU_BITSTREAM=1),
# which run their builds in the background beside each other. Each session prints its own
# summary and checks that it left the checkout as it found it; the last line sums both.
# SPDX-License-Identifier: BSD-2-Clause
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

"$PY" -m pytest -q -p no:cacheprovider -m "not slow" -n auto --dist loadfile "$@" \
    2>&1 | tee "$logs/fast"
fast=${PIPESTATUS[0]}
"$PY" -m pytest -q -p no:cacheprovider -m slow --durations=15 "$@" 2>&1 | tee "$logs/slow"
slow=${PIPESTATUS[0]}

# Both sessions' counts, from the summary line each printed last ("N passed, M failed, ...").
"$PY" - "$logs/fast" "$logs/slow" <<'PY'
import re, sys
kinds = ("passed", "failed", "skipped", "xfailed", "xpassed", "errors", "error")
total = dict.fromkeys(kinds, 0)
for path in sys.argv[1:]:
    lines = [l for l in open(path, errors="replace") if re.search(r"\d+ (passed|failed|error)", l)]
    for n, kind in re.findall(r"(\d+) (\w+)", lines[-1] if lines else ""):
        if kind in total:
            total[kind] += int(n)
failed = total["failed"] + total["errors"] + total["error"]
if total["xfailed"] or total["xpassed"]:
    print(f"(of them {total['xfailed']} xfailed, counted as skipped, and {total['xpassed']} "
          f"xpassed, counted as passed)")
print(f"suite: {total['passed'] + total['xpassed']} passed, {failed} failed, "
      f"{total['skipped'] + total['xfailed']} skipped")
PY
[ "$fast" -eq 0 ] && [ "$slow" -eq 0 ]
