# SPDX-License-Identifier: BSD-2-Clause
"""The Python API (satemu.api): its docstrings' examples run, docs/api.md is what its
docstrings write, and a Box works on a fake box (the firmware's Python references behind a
serial port); tests/system/test_console.py's API test covers the simulated board."""

import doctest
from pathlib import Path

from satemu import api
from satemu.box import device as device_mod

from test_serve import LiveBox

ROOT = Path(__file__).resolve().parents[2]


def test_the_examples_run():
    result = doctest.testmod(api, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 8 and result.failed == 0


def test_the_reference_is_the_docstrings():
    assert (ROOT / "docs" / "api.md").read_text() == api.reference(), \
        "docs/api.md is stale: python -m satemu.api writes it"


def test_a_box_loads_and_reads(monkeypatch):
    fake = LiveBox()
    monkeypatch.setattr(device_mod.serial, "serial_for_url", lambda url, **kw: fake)
    with api.Box("fake://x") as box:
        report = box.load("short-asym")
        assert report.name == "short-asym" and fake.commits == 1
        first = box.snapshot()["channels"]["forward"]["rx_frames"]
        assert box.snapshot()["channels"]["forward"]["rx_frames"] > first
        box.reset_counters()
        assert box.hardware.f_clk > 0


def test_a_box_gives_its_bod_records(monkeypatch):
    """Box.bod_trace: the rows `satemu bod-trace` writes; NoBod for a box without BoD."""
    import pytest
    from satemu.box.bod_trace import COLUMNS
    from test_bod_profiles import FakeBox, _model_records
    records = _model_records(superframes=12)
    fake = FakeBox(history=records, count=len(records))
    monkeypatch.setattr(device_mod.serial, "serial_for_url", lambda url, **kw: fake)
    with api.Box("fake://x") as box:
        box.load("geo-testbed-bod")
        got = box.bod_trace(2, profile="geo-testbed-bod")
        assert [r["sf"] for r in got.rows] == list(range(2, len(records)))
        assert list(got.rows[0]) == COLUMNS and got.shaped
        assert got.lines()[0].startswith(f"read superframes 2 .. {len(records) - 1}")
    fake = LiveBox()
    monkeypatch.setattr(device_mod.serial, "serial_for_url", lambda url, **kw: fake)
    with api.Box("fake://y") as box, pytest.raises(api.NoBod, match="no Bandwidth-on-Demand"):
        box.bod_trace()


def test_a_transfer_writes_its_files(tmp_path):
    s = api.run_transfer(api.Profile.named("short-asym"), 20_000, ack="ratio:2", out=tmp_path)
    assert s["completed"] and (tmp_path / "result.json").is_file()
    assert (tmp_path / "packets.csv").is_file()
