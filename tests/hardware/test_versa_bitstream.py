# SPDX-License-Identifier: BSD-2-Clause
"""The Versa-5G bitstream (``hw.bitstream``, cached by content key): it must exist, and every
clock must meet its target. The timing check itself is tested on nextpnr output that misses, so
a failing build cannot pass unnoticed.

The full build starts in the background when the session starts (tests/conftest.py), and these
tests run last, waiting for it; SATEMU_BITSTREAM=0 skips them."""

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


@pytest.fixture(scope="module")
def versa(request):
    if os.environ.get("SATEMU_BITSTREAM") == "0":
        pytest.skip("SATEMU_BITSTREAM=0: the Versa-5G build is left out")
    return bitstream.finish_background(getattr(request.config, "satemu_bitstream", None),
                                       "versa-ecp5")


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
    not) describes the netlist these sources build: the same key, and the same timing and
    utilisation to the last digit (the flow is deterministic for a key). After a change that
    moves the key, the report must be rebuilt and committed."""
    saved = json.loads((ROOT / "bench" / "results" / "bitstream-versa-ecp5.json").read_text())
    assert saved["key"] == versa["key"], (
        "bench/results/bitstream-versa-ecp5.json is of another build: run make bitstream "
        "BOARD=versa-ecp5 and commit it")
    assert saved["ok"] and saved["routed"]
    for field in ("clocks", "utilisation", "utilisation_all", "tools", "nextpnr_args"):
        assert saved[field] == versa[field], field
