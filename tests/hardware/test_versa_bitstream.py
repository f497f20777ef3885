# SPDX-License-Identifier: BSD-2-Clause
"""The boards' bitstreams (``hw.bitstream``, cached by content key): every clock must meet its
target, and each board's committed report (``bench/results/bitstream-<board>.json``, which
`make bitstream` writes) must be of the sources as they are: its content key is theirs. The
flow is deterministic for a key (the key hashes every file the build reads, the tools' releases,
the seed and nextpnr's options), so a report of this key is what a build of these sources gives;
a change that moves a key fails here until the report is rebuilt and committed. The timing check
itself is tested on nextpnr output that misses, so a failing build cannot pass unnoticed.

SATEMU_BITSTREAM=1 builds the Versa-5G's bitstream too, in the background from the session's
start (tests/conftest.py; these tests run last, waiting for it), and holds the committed report
to that build to the last digit; SATEMU_BITSTREAM=0 leaves every check of a build out."""

import json
import os
from pathlib import Path

import pytest

from hw import bitstream
from satemu.base.boards import BOARDS

ROOT = Path(__file__).resolve().parents[2]

# nextpnr's summary lines, as its log prints them after routing.
FAILING_LOG = """\
Info: Max frequency for clock '$glbnet$sys_clk': 38.75 MHz (FAIL at 75.01 MHz)
Info: Max frequency for clock '$glbnet$eth_clocks0_rx$TRELLIS_IO_IN': 213.31 MHz (PASS at 125.00 MHz)
Info: \t        TRELLIS_COMB:   43455/  43848    99%
"""


def test_timing_failure_is_reported():
    parsed = bitstream.parse_nextpnr(FAILING_LOG, None)
    assert parsed["clocks"]["$glbnet$sys_clk"] == {"fmax_mhz": 38.75, "target_mhz": 75.01, "met": False}
    assert parsed["clocks"]["$glbnet$eth_clocks0_rx$TRELLIS_IO_IN"]["met"] is True
    assert parsed["utilisation_all"]["TRELLIS_COMB"] == {"used": 43455, "available": 43848, "percent": 99.1}
    assert parsed["routed"] is False        # no "Routing complete.": placement's estimates
    assert bitstream.parse_nextpnr(FAILING_LOG + "Info: Routing complete.\n", None)["routed"]


def test_report_json_overrides_log():
    # nextpnr's JSON report is the more precise source; a miss there fails too.
    report = {"fmax": {"sys": {"achieved": 74.99, "constraint": 75.0}},
              "utilization": {"TRELLIS_FF": {"used": 10, "available": 20}}}
    parsed = bitstream.parse_nextpnr("", report)
    assert parsed["clocks"]["sys"]["met"] is False
    assert parsed["utilisation_all"]["TRELLIS_FF"]["percent"] == 50.0


def _saved(board: str) -> dict:
    return json.loads((ROOT / "bench" / "results" / f"bitstream-{board}.json").read_text())


BUILT = os.environ.get("SATEMU_BITSTREAM") == "1"


@pytest.fixture(scope="module")
def versa(request):
    """The Versa-5G's build (SATEMU_BITSTREAM=1), else its committed report, which must be of
    these sources."""
    if os.environ.get("SATEMU_BITSTREAM") == "0":
        pytest.skip("SATEMU_BITSTREAM=0: the Versa-5G build is left out")
    if BUILT:
        return bitstream.finish_background(getattr(request.config, "satemu_bitstream", None),
                                           "versa-ecp5")
    return _of_these_sources("versa-ecp5")


def _of_these_sources(board: str) -> dict:
    saved = _saved(board)
    assert saved["key"] == bitstream._key(board), (
        f"bench/results/bitstream-{board}.json is of another build: run make bitstream "
        f"BOARD={board} and commit it")
    return saved


@pytest.mark.parametrize("board", ["versa-ecp5", "colorlight-5a-75b"])
def test_each_board_s_committed_report_is_of_these_sources_and_meets_timing(board):
    if os.environ.get("SATEMU_BITSTREAM") == "0":
        pytest.skip("SATEMU_BITSTREAM=0: the builds' checks are left out")
    saved = _of_these_sources(board)
    assert saved["ok"] and saved["routed"] and saved["error"] is None
    assert saved["sys_clk_hz"] == BOARDS[board].f_clk
    for name, c in saved["clocks"].items():
        assert c["met"] and c["fmax_mhz"] >= c["target_mhz"], name
    for name, u in saved["utilisation"].items():
        assert 0 <= u["used"] <= u["available"], name


def test_versa_bitstream_meets_timing(versa):
    assert versa["ok"], f"the Versa-5G build failed: {versa['error']}"
    assert versa["error"] is None and versa["routed"]
    # The system clock's net takes the name of one of its loads (in the last builds
    # "satemu_memwiden.clk"), so it is found by its target.
    sys_clk = [c for c in versa["clocks"].values()
               if c["target_mhz"] == pytest.approx(BOARDS["versa-ecp5"].f_clk / 1e6, abs=0.1)]
    assert len(sys_clk) == 1
    for name, c in versa["clocks"].items():
        assert c["fmax_mhz"] >= c["target_mhz"], name
    # Both RGMII receive clocks are constrained at 125 MHz.
    rx = [c for name, c in versa["clocks"].items() if "eth_clocks" in name]
    assert len(rx) == 2 and all(c["target_mhz"] == 125.0 for c in rx)


def test_versa_bitstream_file_and_report(versa):
    assert versa["bitstream"], f"the Versa-5G build wrote no bitstream: {versa['error']}"
    if not BUILT:
        pytest.skip("the bitstream itself is built with SATEMU_BITSTREAM=1 (make bitstream)")
    bit = ROOT / versa["bitstream"]
    data = bit.read_bytes()
    # An ECP5 bitstream starts with ecppack's comment block, then the preamble 0xFFFFBDB3.
    assert b"\xff\xff\xbd\xb3" in data[:4096]
    assert len(data) > 100_000
    util = versa["utilisation"]
    for name in ("luts", "ffs", "bram", "dsp"):
        assert 0 < util[name]["used"] <= util[name]["available"], name
    assert versa["build_seconds"]["total"] > 0


def test_committed_report_is_this_build(versa):
    """The tracked report (`make bitstream BOARD=versa-ecp5` writes it; the suite's build does
    not) describes the netlist these sources build: the same key, and, built here
    (SATEMU_BITSTREAM=1), the same timing and utilisation to the last digit (the flow is
    deterministic for a key). After a change that moves the key, the report must be rebuilt and
    committed."""
    saved = _saved("versa-ecp5")
    assert saved["key"] == versa["key"], (
        "bench/results/bitstream-versa-ecp5.json is of another build: run make bitstream "
        "BOARD=versa-ecp5 and commit it")
    assert saved["ok"] and saved["routed"]
    for field in ("clocks", "utilisation", "utilisation_all", "tools", "nextpnr_args"):
        assert saved[field] == versa[field], field
