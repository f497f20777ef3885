# SPDX-License-Identifier: BSD-2-Clause
"""The simulated board end to end: LiteX SoC with both channels and the C firmware in Verilator,
driven through the CLI and the device API over socket://."""

import socket
import time

import pytest

from satemu import protocol as P
from satemu.cli import main
from satemu.device import Device, DeviceError
from satemu.profile import Hardware, load_profile
from sim import board

_ETH = {}    # the Ethernet-module port of each board the fixture started


@pytest.fixture(scope="module")
def url():
    state = board.launch()
    _ETH[state["url"]] = state["eth_port"]
    yield state["url"]
    board.kill(state)


def box_hardware(dev):
    info = dev.hello()
    return Hardware(f_clk=info["f_clk"], mem_words=info["mem_words"], params=dev.params())


def test_hello_reports_the_board(url):
    with Device(url) as dev:
        info = dev.hello()
    assert info["version"] == P.PROTOCOL_VERSION
    assert info["f_clk"] == 10_000_000 and info["mem_words"] == 1 << 22


def test_cli_loads_a_profile_into_both_channels(url, capsys):
    assert main(["load", "geo-testbed", "--port", url, "--reseed"]) == 0
    assert "committed both channels" in capsys.readouterr().out
    with Device(url) as dev:
        regs = load_profile("geo-testbed").check(box_hardware(dev))
        for channel, side in ((P.CHANNEL_FORWARD, "forward"), (P.CHANNEL_RETURN, "return")):
            got = dev.get_profile(channel)
            assert got == {f.name: getattr(regs[side], f.name) for f in P.PROFILE_FIELDS}


def test_cli_reads_stats(url, capsys):
    assert main(["stats", "--port", url]) == 0
    out = capsys.readouterr().out
    assert "frames in" in out and "of box time" in out
    with Device(url) as dev:
        first = dev.get_stats(P.CHANNEL_FORWARD)["snapshot_cycle"]
        assert dev.get_stats(P.CHANNEL_FORWARD)["snapshot_cycle"] > first > 0
        assert dev.get_stats(P.CHANNEL_RETURN)["rx_frames"] == 0
        dev.reset_stats()


def test_firmware_rejects_out_of_range_profiles(url):
    """The host checks profiles first; the firmware checks them again, whoever sends them."""
    with Device(url) as dev:
        regs = load_profile("geo-small").check(box_hardware(dev))["forward"]
        from dataclasses import replace
        with pytest.raises(DeviceError, match=r"max_len=9000 is outside 60 .. 2048"):
            dev.set_profile(P.CHANNEL_FORWARD, replace(regs, max_len=9000))
        with pytest.raises(DeviceError, match=r"queue_frames=5000 is outside 1 .. 1024"):
            dev.set_profile(P.CHANNEL_RETURN, replace(regs, queue_frames=5000))
        with pytest.raises(DeviceError, match=r"delay line needs \d+ words, the channel has 4194304"):
            dev.set_profile(P.CHANNEL_FORWARD, replace(regs, delay=(1 << 40) - 1))
        # Nothing was written: the staged profile is still the one loaded before.
        before = dev.get_profile(P.CHANNEL_FORWARD)
        with pytest.raises(DeviceError):
            dev.set_profile(P.CHANNEL_FORWARD, replace(regs, loss_mode=3))
        assert dev.get_profile(P.CHANNEL_FORWARD) == before


def test_garbage_and_a_vanished_host_do_not_wedge_the_firmware(url):
    host, port = url[len("socket://"):].split(":")
    # (Under 2 KB at once: the simulated UART's receive buffer; see sim/board.py.)
    with socket.create_connection((host, int(port))) as s:
        s.sendall(bytes(range(1, 256)) * 4)                 # a run longer than any frame
        s.sendall(b"\0\x05\x11\x22\0")                      # malformed COBS
        s.sendall(P.encode_frame(9, P.Op.HELLO, b"\x01\x00")[:-4])  # a host dies mid-frame
    time.sleep(0.5)
    with Device(url) as dev:                               # the next host is served
        assert dev.hello()["version"] == P.PROTOCOL_VERSION
        with pytest.raises(DeviceError, match="BAD_OPCODE"):
            dev.call(0x6B)
        with pytest.raises(DeviceError, match="BAD_CHANNEL"):
            dev.call(P.Op.GET_STATS, b"\x07")
        with pytest.raises(DeviceError, match="BAD_LENGTH"):
            dev.call(P.Op.COMMIT, b"")


def test_cli_without_a_box_says_so(capsys):
    assert main(["stats", "--port", "socket://127.0.0.1:1", "--timeout", "0.5"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("satemu: cannot open socket://127.0.0.1:1") and "Traceback" not in err


def test_frames_cross_both_channels_as_the_model_says(url, capsys):
    """A profile loaded through the CLI; frames injected on port B come out on port A and frames
    on A come out on B, each at the egress cycle the reference model predicts, with their bytes;
    the counters the CLI reads back equal what was sent and dropped."""
    import random
    from satemu.channel_model import Fate
    from sim.frames import FORWARD, RETURN, expected_egress, run_traffic

    assert main(["load", "short-asym", "--port", url, "--reseed"]) == 0
    with Device(url) as dev:
        dev.reset_stats()
    rng = random.Random(7)
    sent = {}
    for ch, n in ((FORWARD, 40), (RETURN, 30)):
        sent[ch] = []
        for i in range(n):
            length = rng.choice([60, 1518, rng.randint(61, 1517), rng.randint(20, 59)])
            sent[ch].append((bytes(rng.randrange(256) for _ in range(length)), i % 9 == 4))
    traffic, models = run_traffic(url, _ETH[url], sent)
    expected = expected_egress(sent, models)
    for ch in (FORWARD, RETURN):
        assert traffic.egress[ch] == expected[ch]
        assert {int(Fate.DELIVERED), int(Fate.RUNT), int(Fate.ERROR)} <= set(models[ch].fates())
    # The small return queue (3.75 KB at 1.5 Mbit/s) overflows: tail drops are exercised too.
    assert int(Fate.QUEUE) in set(models[FORWARD].fates()) | set(models[RETURN].fates())

    capsys.readouterr()
    assert main(["stats", "--port", url]) == 0
    rows = {line[2:26].strip(): line[26:].split() for line in capsys.readouterr().out.splitlines()[2:]}
    from satemu.cli import STAT_ROWS
    for key, label in STAT_ROWS:
        want = [models[ch].counters.get(key, models[ch].gauges.get(key)) for ch in (FORWARD, RETURN)]
        if key.endswith("_now") or want[0] is None:
            continue
        assert [int(v) for v in rows[label]] == want, label
