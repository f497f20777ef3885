# SPDX-License-Identifier: BSD-2-Clause
"""The Versa-5G bitstream (``hw.bitstream``, cached by content hash): it must exist, and every
clock must meet its target. The timing check itself is tested on nextpnr output that misses, so
a failing build cannot pass unnoticed.

The full build starts in the background when the session starts (tests/conftest.py), and these
tests run last, waiting for it; SATEMU_BITSTREAM=0 skips them."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hw import bitstream, versa_ecp5

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


def test_key_covers_the_board_and_not_the_others(monkeypatch, tmp_path):
    """A board's build key changes with its own target and constraints and with what every
    board shares, not with another board's files: work on the Colorlight keeps the Versa's
    build (and its committed report's key)."""
    import shutil
    for d in ("gateware", "hw", "constraints", "firmware", "host/satemu"):
        shutil.copytree(ROOT / d, tmp_path / d, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(bitstream, "ROOT", tmp_path)

    def keys():
        return {name: bitstream._key(name, 1) for name in bitstream.BOARDS}

    before = keys()
    for path, changed in (("hw/colorlight_5a_75b.py", {"colorlight-5a-75b"}),
                          ("constraints/versa_ecp5.py", {"versa-ecp5"}),
                          ("hw/ethport.py", set(bitstream.BOARDS))):
        with open(tmp_path / path, "a") as f:
            f.write("\n# changed\n")
        after = keys()
        assert {n for n in after if after[n] != before[n]} == changed, path
        before = after


def assert_gone(pid):
    """``pid`` stops existing within 5 s (killed, then reaped by init)."""
    with pytest.raises(ProcessLookupError):
        for _ in range(50):
            os.kill(pid, 0)
            time.sleep(0.1)


def test_step_over_the_limit_is_stopped(monkeypatch, tmp_path):
    # A step that runs past SATEMU_BITSTREAM_LIMIT fails the build, and nothing it started
    # (here a child of the shell) is left running.
    monkeypatch.setattr(bitstream, "STEP_LIMIT", 1)
    marker = tmp_path / "child.pid"
    with open(tmp_path / "log", "w") as log, pytest.raises(bitstream.BuildError, match="limit"):
        bitstream._run(["sh", "-c", f"sleep 30 & echo $! > {marker}; wait"], log, tmp_path,
                       dict(os.environ))
    pid = int(marker.read_text())
    assert_gone(pid)


def test_sigterm_stops_the_running_step(tmp_path):
    # The test session stops an unfinished build with SIGTERM to the build's process group; the
    # running step has a group of its own and must go too.
    marker = tmp_path / "child.pid"
    script = (
        "import os, signal, sys\n"
        "from hw import bitstream\n"
        "signal.signal(signal.SIGTERM, bitstream._stop_step)\n"
        "with open(sys.argv[1], 'w') as log:\n"
        f"    bitstream._run(['sh', '-c', 'sleep 30 & echo $! > {marker}; wait'], log, '.', dict(os.environ))\n")
    proc = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "log")], cwd=ROOT,
                            start_new_session=True)
    for _ in range(100):
        if marker.exists() and marker.read_text().strip():
            break
        time.sleep(0.1)
    pid = int(marker.read_text())
    os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(10) == 128 + signal.SIGTERM
    assert_gone(pid)


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
               if c["target_mhz"] == pytest.approx(versa_ecp5.SYS_CLK_FREQ / 1e6, abs=0.1)]
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
    saved = json.loads((ROOT / "bench" / "results" / "bitstream-versa-ecp5.json").read_text())
    assert saved["key"] == versa["key"] and saved["ok"]
