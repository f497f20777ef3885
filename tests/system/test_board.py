# SPDX-License-Identifier: BSD-2-Clause
"""The simulated board end to end: LiteX SoC with both channels and the C firmware in Verilator,
driven through the CLI and the device API over socket://."""

import socket
import time

import pytest

from satemu.base import protocol as P
from satemu.cli import main
from satemu.box.device import Device, DeviceError
from satemu.base.boards import BOARDS
from satemu.link.profile import load_profile
from satemu.base.validate import profile_fields
from sim import board


def test_hello_reports_the_board(url):
    with Device(url) as dev:
        info = dev.hello()
        hw = dev.hardware()
    assert info["version"] == P.PROTOCOL_VERSION
    assert info["f_clk"] == 6_250_000 and info["mem_words"] == (1 << 22) - (1 << 16)
    assert (info["queue_depth"], info["queue_fifo"]) == (65535, 1024)
    assert info["port_bps"] == 400_000_000
    # The simulated board's delay lines are not limited; its queues spill on both channels.
    assert info["mem_wpc_forward"] == info["mem_wpc_return"] == 0 and info["spill_mask"] == 3
    # The firmware reports the registry's record: its limits and its BoD channel.
    want = BOARDS["sim"].hardware
    assert hw.limits() == want.limits() and hw.bod_channels == want.bod_channels


def test_cli_loads_a_profile_into_both_channels(url, capsys):
    assert main(["load", "geo-testbed", "--port", url, "--reseed"]) == 0
    assert "the whole profile is in force" in capsys.readouterr().out
    with Device(url) as dev:
        regs = load_profile("geo-testbed").check(dev.hardware())
        for channel, side in ((P.CHANNEL_FORWARD, "forward"), (P.CHANNEL_RETURN, "return")):
            got = dev.get_profile(channel)
            assert got == profile_fields(regs[side])


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
        regs = load_profile("geo-small").check(dev.hardware())["forward"]
        from dataclasses import replace
        with pytest.raises(DeviceError, match=r"max_len=9000 is outside 60 .. 2048"):
            dev.set_profile(P.CHANNEL_FORWARD, replace(regs, max_len=9000))
        with pytest.raises(DeviceError, match=r"queue_frames=70000 is outside 0 .. 65535"):
            dev.set_profile(P.CHANNEL_RETURN, replace(regs, queue_frames=70000))
        with pytest.raises(DeviceError, match=r"delay line needs \d+ words, the channel has 4128768"):
            dev.set_profile(P.CHANNEL_FORWARD, replace(regs, delay=(1 << 40) - 1))
        # Nothing was written: the staged profile is still the one loaded before.
        before = dev.get_profile(P.CHANNEL_FORWARD, in_force=False)
        with pytest.raises(DeviceError):
            dev.set_profile(P.CHANNEL_FORWARD, replace(regs, loss_mode=3))
        assert dev.get_profile(P.CHANNEL_FORWARD, in_force=False) == before


def test_garbage_and_a_vanished_host_do_not_wedge_the_firmware(url):
    host, port = url[len("socket://"):].split(":")
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


def test_clients_that_leave_mid_answer_or_flood_cost_the_board_nothing(url, board_state):
    """The simulated UART (sim/modules/satemu_uart): a client that leaves before its answer, a
    client that leaves while the next one knocks, and a client that sends far more than the
    UART can take at once are all served or let go, and the board runs on."""
    host, port = url[len("socket://"):].split(":")
    hello = P.PROTOCOL_VERSION.to_bytes(2, "little")
    with socket.create_connection((host, int(port))) as s:   # gone before its answer
        s.sendall(b"\0" + P.encode_frame(0x55, P.Op.HELLO, hello))  # a seq no one else uses
    with Device(url, timeout=120.0) as dev:                   # attached as the other leaves
        assert dev.hello()["version"] == P.PROTOCOL_VERSION
        # 5 KB of noise, more than the 4 KiB the module holds, then a request: TCP holds the
        # client back while the firmware drains the noise, and the request arrives whole.
        dev.port.write(bytes(range(1, 256)) * 20)
        assert dev.hello()["version"] == P.PROTOCOL_VERSION
    assert board._children[board_state["pid"]].poll() is None, "the board exited"
    with Device(url) as dev:
        assert dev.hello()["version"] == P.PROTOCOL_VERSION


def test_a_client_that_leaves_takes_its_unread_bytes_with_it(url, board_state):
    """A client that sends 128 KB of garbage (1,310 bad frames) and leaves: the UART module
    drops what the board had not read yet, in its buffer and in the socket, instead of feeding
    it all to the firmware at the UART's pace, so the next client is served at once and the
    firmware counts only the few frames it had taken."""
    host, port = url[len("socket://"):].split(":")
    errors = ("cobs", "short", "length", "crc", "overlong")
    with Device(url) as dev:
        before = sum(dev.link_stats()[k] for k in errors)
    chunk = bytes(range(1, 100)) + b"\0"                   # a bad frame, then its delimiter
    with socket.create_connection((host, int(port))) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        s.sendall(chunk * 1310)
    with Device(url, timeout=30.0) as dev:
        assert dev.hello()["version"] == P.PROTOCOL_VERSION
        taken = sum(dev.link_stats()[k] for k in errors) - before
    assert 0 <= taken < 200, f"the board digested {taken} of the 1,310 bad frames"
    assert board._children[board_state["pid"]].poll() is None, "the board exited"


def test_cli_without_a_box_says_so(capsys):
    assert main(["stats", "--port", "socket://127.0.0.1:1", "--timeout", "0.5"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("satemu: cannot open socket://127.0.0.1:1") and "Traceback" not in err


def _stats_rows(capsys, url):
    capsys.readouterr()
    assert main(["stats", "--port", url]) == 0
    return {line[2:26].strip(): line[26:].split() for line in capsys.readouterr().out.splitlines()[2:]}


def test_frames_cross_both_channels_as_the_model_says(url, board_state, capsys):
    """A profile loaded through the CLI; frames put on port B's wire come out on port A's and
    frames on A come out on B, each leaving its channel at the cycle the reference model
    predicts and reaching the wire a fixed number of cycles later, with its bytes and a good
    FCS; the counters the CLI reads back equal what was sent and dropped."""
    import random
    from satemu.base.params import Fate
    from sim.frames import (FORWARD, INGRESS_PORT, RETURN, TX_LATENCY, arrival_from_wire,
                            expected_egress, observed_egress, run_traffic)

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
    traffic, models, taken = run_traffic(url, board_state["eth_port"], sent)
    expected = expected_egress(sent, models, taken)
    latency = set()
    for ch in (FORWARD, RETURN):
        assert taken[ch] == list(range(len(sent[ch])))       # no overrun at this load
        # The receiving MAC's latency is fixed: arrivals follow from the wire.
        assert traffic.arrivals(ch) == [arrival_from_wire(w, len(f)) for w, (f, _) in
                                        zip(traffic.wire_in[INGRESS_PORT[ch]], sent[ch])]
        assert observed_egress(traffic, ch) == expected[ch]
        assert all(e.wire_ok for e in traffic.egress[ch])
        latency |= {e.wire - e.start for e in traffic.egress[ch]}
        assert {int(Fate.DELIVERED), int(Fate.RUNT), int(Fate.ERROR)} <= set(models[ch].fates())
    # The transmit MAC adds the same latency to every frame of both ports.
    assert latency == {TX_LATENCY}
    # The small return queue (3.75 KB at 1.5 Mbit/s) overflows: tail drops are exercised too.
    assert int(Fate.QUEUE) in set(models[FORWARD].fates()) | set(models[RETURN].fates())

    rows = _stats_rows(capsys, url)
    from satemu.cli import STAT_ROWS
    for key, label in STAT_ROWS:
        want = [models[ch].counters.get(key, models[ch].gauges.get(key, 0)) for ch in (FORWARD, RETURN)]
        if key.endswith("_now"):
            continue
        assert [int(v) for v in rows[label]] == want, label


def test_a_queue_deeper_than_the_chip_as_the_model_says(url, board_state, tmp_path):
    """A 3000-frame queue, loaded with the CLI: 2000 frames of 300 bytes at 60% of the wire's
    rate (faster, the frames' words, their log records and the reads of the frames leaving
    would outrun the memory port) into a 50 Mbit/s forward link build a queue of more than the
    1024 departure times the chip holds,
    so the rest wait in memory (docs/architecture.md, "Queues deeper than the chip"). Every
    frame leaves at the cycle the model says, and the board's queue high-water mark is the
    model's."""
    from satemu.base.params import Fate
    from sim.frames import FORWARD, expected_egress, observed_egress, run_traffic

    profile = tmp_path / "deep.toml"
    profile.write_text('name = "deep"\n[forward]\nrate = "50 Mbit/s"\ndelay = "1 ms"\n'
                       'queue = "3000 packets"\n[return]\nrate = "10 Mbit/s"\n')
    assert main(["load", str(profile), "--port", url, "--reseed"]) == 0
    with Device(url) as dev:
        assert dev.hardware().params.queue_onchip == 1024
        dev.reset_stats()
    sent = {FORWARD: [(bytes([i % 251]) * 300, False) for i in range(2000)]}
    traffic, models, taken = run_traffic(url, board_state["eth_port"], sent, load=0.6)
    model = models[FORWARD]
    assert taken[FORWARD] == list(range(2000))          # no overrun at this load
    assert observed_egress(traffic, FORWARD) == expected_egress(sent, models, taken)[FORWARD]
    assert all(r.fate == Fate.DELIVERED for r in model.frames)
    assert model.gauges["queue_frames_hwm"] > 1400
    with Device(url) as dev:
        stats = dev.get_stats(FORWARD)
    assert stats["queue_frames_hwm"] == model.gauges["queue_frames_hwm"]
    assert stats["tx_frames"] == 2000 and stats["late"] == 0


IMPAIRED = """
name = "impaired"
[forward]
rate = "20 Mbit/s"
delay = "2 ms"
queue = "40 packets"
loss = "2%"
ecn_step = ["300 us", "6 packets"]
duplicate = "10%"
duplicate_correlation = "20%"
corrupt = "5%"
[return]
rate = "10 Mbit/s"
delay = "1 ms"
queue = "20 packets"
ecn_step = "4 packets"
duplicate = "5%"
"""


def test_ecn_duplication_and_corruption_on_the_wire_as_the_model_says(url, board_state,
                                                                       tmp_path):
    """IPv4 and IPv6 packets of every ECN field, tagged and not, and other frames, at half
    the wire's rate into queues that fill: every frame and copy leaves at the cycle the model
    says with the model's bytes (CE marks with their IPv4 checksums, flipped bits), and the
    counters say as much."""
    import random
    from satemu.base.params import Fate
    from sim.frames import FORWARD, RETURN, expected_egress, observed_egress, run_traffic
    from sim.traffic import overlay_ip

    path = tmp_path / "impaired.toml"
    path.write_text(IMPAIRED)
    assert main(["load", str(path), "--port", url, "--reseed"]) == 0
    with Device(url) as dev:
        dev.reset_stats()
    rng = random.Random(11)
    sent = {}
    for ch, n in ((FORWARD, 300), (RETURN, 200)):
        sent[ch] = []
        for i in range(n):
            length = rng.choice([60, 1518, rng.randint(61, 1517), rng.randint(20, 59)])
            frame = bytes(overlay_ip(bytearray(rng.randbytes(length)), rng))
            sent[ch].append((frame, i % 23 == 5))
    traffic, models, taken = run_traffic(url, board_state["eth_port"], sent, load=0.5)
    expected = expected_egress(sent, models, taken)
    with Device(url) as dev:
        stats = {ch: dev.get_stats(ch) for ch in (FORWARD, RETURN)}
    for ch in (FORWARD, RETURN):
        assert observed_egress(traffic, ch) == expected[ch]
        c = models[ch].counters
        for name in ("rx_frames", "tx_frames", "duplicated", "ce_marked", "corrupted",
                     "drop_queue", "drop_loss", "late"):
            assert stats[ch][name] == c[name], (ch, name)
        assert c["duplicated"] > 5 and c["ce_marked"] > 10
        assert any(r.copy and r.fate is not Fate.DELIVERED for r in models[ch].frames) or \
            c["drop_queue"] == 0
    assert models[FORWARD].counters["corrupted"] > 2


def test_every_frame_on_the_wire_is_delivered_or_counted(url, board_state, capsys):
    """A burst of shortest frames at the full wire rate outruns the channel's admission engine:
    the frames it has no room for are discarded whole and counted as overrun; frames without a
    start-of-frame delimiter are discarded by the MAC and counted too. Every frame put on the
    wire is accounted for, and the frames taken still leave exactly as the model says."""
    from satemu.base.params import Fate
    from sim.frames import FORWARD, expected_egress, observed_egress, run_traffic

    assert main(["load", "short-asym", "--port", url, "--reseed"]) == 0
    with Device(url) as dev:
        dev.reset_stats()
    sent = {FORWARD: [(bytes([i]) * 60, False) for i in range(120)]}
    bad = {FORWARD: {3, 50, 51, 119}}
    traffic, models, taken = run_traffic(url, board_state["eth_port"], sent, bad_preamble=bad, load=1.0)
    overrun = sum(kind == "O" for _, kind in traffic.events[FORWARD])
    assert overrun > 0 and len(taken[FORWARD]) + overrun + len(bad[FORWARD]) == 120
    assert observed_egress(traffic, FORWARD) == expected_egress(sent, models, taken)[FORWARD]
    delivered = sum(r.fate == Fate.DELIVERED for r in models[FORWARD].frames)
    with Device(url) as dev:
        stats = dev.get_stats(FORWARD)
    assert stats["drop_overrun"] == overrun and stats["drop_preamble"] == len(bad[FORWARD])
    assert stats["tx_frames"] == delivered and stats["late"] == 0
    assert (stats["rx_frames"] + stats["drop_overrun"] + stats["drop_preamble"] == 120)
    assert stats["rx_frames"] == stats["tx_frames"] + sum(
        stats[k] for k in ("drop_runt", "drop_oversize", "drop_error", "drop_loss", "drop_queue",
                           "drop_mem"))
    rows = _stats_rows(capsys, url)
    assert rows["dropped: overrun"][0] == str(overrun)
    assert rows["dropped: no preamble"][0] == str(len(bad[FORWARD]))


def test_commit_applies_only_a_whole_load_once(url):
    """A load half staged (SET forward, then the host gone) is never applied by a bare COMMIT;
    GET_PROFILE tells the staged profile from the one in force; a retried COMMIT applies
    nothing and says the load is in force already."""
    from satemu.box.device import _RNG
    with Device(url) as dev:
        dev.load(load_profile("geo-testbed"))
        old = load_profile("geo-testbed").check(dev.hardware())
        new = load_profile("geo-small").check(dev.hardware())
        generation = _RNG.randrange(1, 1 << 32)
        dev.set_profile(P.CHANNEL_FORWARD, new["forward"], generation)
    with Device(url) as dev:                              # the next session
        with pytest.raises(DeviceError, match=r"not staged on both channels \(forward holds "
                                              rf"load {generation:#x}, return 0x0.*nothing was "
                                              r"applied"):
            dev.commit(generation)
        for channel, side in ((P.CHANNEL_FORWARD, "forward"), (P.CHANNEL_RETURN, "return")):
            assert dev.get_profile(channel) == profile_fields(old[side])
        assert dev.get_profile(P.CHANNEL_FORWARD, in_force=False) == profile_fields(new["forward"])
        dev.set_profile(P.CHANNEL_RETURN, new["return"], generation)
        assert dev.commit(generation) is True
        assert dev.commit(generation) is False                # a retry: nothing applied again
        for channel, side in ((P.CHANNEL_FORWARD, "forward"), (P.CHANNEL_RETURN, "return")):
            assert dev.get_profile(channel) == profile_fields(new[side])
        with pytest.raises(DeviceError, match="not staged on both"):
            dev.commit(generation ^ 1)


def test_one_client_at_a_time_and_the_link_counted(url, board_state, capsys):
    """The simulated board's UART turns a second client away with a clear message and serves
    the first on, and every later one; the firmware counts what its deframer discarded, and
    `satemu stats` shows it."""
    with Device(url) as first:
        before = first.link_stats()
        with pytest.raises(DeviceError, match="another client holds the simulated board's UART"):
            Device(url, timeout=2.0).hello()
        assert first.hello()["version"] == P.PROTOCOL_VERSION
        bad = bytearray(P.encode_frame(3, P.Op.HELLO, b"\x05\x00"))
        bad[2] ^= 0x40                                    # a bad CRC
        first.port.write(b"\0" + bytes(bad))
        after = first.link_stats()
        assert after["crc"] == before["crc"] + 1
        assert after["requests"] >= before["requests"] + 2
    assert board._children[board_state["pid"]].poll() is None, "the board exited"
    for _ in range(2):                                    # later clients are served
        with Device(url) as dev:
            assert dev.hello()["version"] == P.PROTOCOL_VERSION
    capsys.readouterr()
    assert main(["stats", "--port", url]) == 0
    out = capsys.readouterr().out
    assert "discarded by the box: " in out and "bad CRC" in out



def test_fragments_are_counted_and_spare_the_frames_around_them(url, board_state):
    """Fragments of 0 to 12 bytes after the SFD, each between two good frames, on both ports:
    none vanishes and none joins the next frame. The arrivals, the frames that leave and every
    counter equal the board model's (a fragment of one beat is a five-byte runt, flagged)."""
    import random
    from satemu.model.board import BoardModel
    from satemu.base.ether import PREAMBLE, to_wire
    from satemu.base.params import ChannelRegs, Fate
    from sim.frames import FORWARD, INGRESS_PORT, RETURN, EthPorts, wire_cycles

    assert main(["load", "short-asym", "--port", url, "--reseed"]) == 0
    with Device(url) as dev:
        dev.reset_stats()
        words = dev.hello()["mem_words"]
        regs = {ch: ChannelRegs(**dev.get_profile(ch), mem_size=words) for ch in (FORWARD, RETURN)}
    rng = random.Random(21)
    with EthPorts(board_state["eth_port"]) as eth:
        start = eth.hold() + 50_000
        model = BoardModel(regs, cycle=start)
        for ch in (FORWARD, RETURN):
            at = start
            wires = []
            for n in range(13):
                wires.append(to_wire(rng.randbytes(60)))
                wires.append(PREAMBLE + rng.randbytes(n))
            wires.append(to_wire(rng.randbytes(100)))
            for wire in wires:
                eth.send(INGRESS_PORT[ch], wire, at)
                model.send(INGRESS_PORT[ch], wire, at)
                at += wire_cycles(len(wire)) + rng.choice((0, 3))
        eth.release()
        results = model.finish()
        want = model.traffic
        got = eth.wait({ch: len(want.events[ch]) for ch in (FORWARD, RETURN)},
                       {ch: len(want.egress[ch]) for ch in (FORWARD, RETURN)})
    for ch in (FORWARD, RETURN):
        assert got.events[ch] == want.events[ch]
        assert [(e.start, e.frame) for e in got.egress[ch]] == \
               [(e.start, e.frame) for e in want.egress[ch]]
        fates = [f.fate for f in results[ch].frames]
        assert fates.count(Fate.DELIVERED) == 14 and fates.count(Fate.RUNT) == 12
    with Device(url) as dev:
        for ch in (FORWARD, RETURN):
            stats, expected = dev.get_stats(ch), model.stats(ch)
            for key in (*results[ch].counters, "drop_preamble"):
                assert stats[key] == expected[key], (ch, key)
            assert stats["drop_preamble"] == 1           # the SFD with nothing after it
