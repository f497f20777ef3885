#!/usr/bin/env bash
# `make test`: the whole suite, in pytest sessions arranged so that both cores work all along.
# First every test not marked slow (tests/conftest.py), spread over every core (pytest-xdist);
# then the slow ones (Verilator models, the simulated boards, a bitstream with
# SATEMU_BITSTREAM=1) in two sessions at once. Each session prints its own summary and checks
# that it left the checkout as it found it; the last line sums them all.
# SPDX-License-Identifier: BSD-2-Clause
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# The simulated boards the slow sessions use, built beside the fast tests from the start: the
# data-path variants first, whose points are the longest chain of the suite, then the system
# tests' board (each build holds its key's lock: a session that needs a board waits for it,
# then finds it built; sim.board.build_board).
prebuild=
if [ $# -eq 0 ]; then
    mkdir -p build/board
    "$PY" -c 'import sys; from sim.board import build_board
for name in sys.argv[1:]: build_board(board=name)' colorlight-5a-75b versa-ecp5 sim \
        >build/board/prebuild.log 2>&1 &
    prebuild=$!
fi
"$PY" -m pytest -q -p no:cacheprovider -m "not slow" -n auto --dist loadfile "$@" \
    2>&1 | tee "$logs/fast"
fast=${PIPESTATUS[0]}
# The slow tests in two sessions side by side, each on a core (tests/conftest.py,
# --slow-session): in the background the data-path boards' points, the install tests and the
# system tests that need no board or start their own (and with SATEMU_BITSTREAM=1 the
# bitstream); here the gateware's cocotb benches, then the system tests on their one board.
# The background session's output follows this one's.
"$PY" -m pytest -q -p no:cacheprovider -m slow --durations=10 --slow-session beside "$@" \
    >"$logs/slow-boards" 2>&1 &
boards_pid=$!
"$PY" -m pytest -q -p no:cacheprovider -m slow --durations=10 --slow-session main "$@" \
    2>&1 | tee "$logs/slow"
slow=${PIPESTATUS[0]}
wait "$boards_pid"
boards=$?
[ -n "$prebuild" ] && wait "$prebuild"
[ "$boards" -eq 5 ] && boards=0        # pytest's "no tests collected": arguments left it none
[ "$slow" -eq 5 ] && slow=0
cat "$logs/slow-boards"

# Every session's counts, from the summary line each printed last ("N passed, M failed, ...").
"$PY" - "$logs/fast" "$logs/slow" "$logs/slow-boards" <<'PY'
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
[ "$fast" -eq 0 ] && [ "$slow" -eq 0 ] && [ "$boards" -eq 0 ]
