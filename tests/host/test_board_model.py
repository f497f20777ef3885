# SPDX-License-Identifier: BSD-2-Clause
"""The board model (satemu.model.board) on its own: the wire's and MACs' timing, lock-step halts,
the channels it drives, and the model engine's transfers. That it equals the simulated board
frame for frame is tests/system/test_engines.py's."""

import pytest

from satemu.model.board import (FORWARD, PORT_A, PORT_B, RETURN, TX_LATENCY, BoardModel,
    arrival_from_wire, wire_cycles)
from satemu.base.boards import BOARDS
from satemu.model.channel import simulate
from satemu.base.ether import PREAMBLE, padded, to_wire
from satemu.base.params import ChannelRegs, Fate
from satemu.link.profile import load_profile
from satemu.quic.cosim import differences
from satemu.quic.engine import run_model_transfer

SIM = BOARDS["sim"]


def regs(name="short-asym"):
    r = load_profile(name).check(SIM.hardware)
    return {FORWARD: r["forward"], RETURN: r["return"]}


def frame(n, size=200):
    return bytes([n & 0xFF]) * 14 + bytes(size - 14)


def test_wire_mac_and_channel_timing_and_halts():
    """Frames queued together go back to back on the wire; each arrives at the channel at the
    MAC's latency, leaves it at the channel model's egress cycle, reaches the other port's wire
    TX_LATENCY later, and the engine halts after each one's last beat."""
    r = regs()
    m = BoardModel(r, cycle=1000)
    frames = [frame(i, 100 + 300 * i) for i in range(4)]
    for f in frames:
        m.send(PORT_B, to_wire(f), 1000)
    starts = m.traffic.wire_in[PORT_B]
    assert starts[0] == 1000
    for i in range(1, 4):
        assert starts[i] == starts[i - 1] + wire_cycles(len(to_wire(frames[i - 1])))
    arrivals = [arrival_from_wire(s, len(f)) for s, f in zip(starts, frames)]
    assert m.traffic.arrivals(FORWARD) == arrivals
    want = simulate([(a, len(f), False) for a, f in zip(arrivals, frames)], r[FORWARD],
                    SIM.channel_params(FORWARD))
    halts = []
    while len(m.traffic.egress[FORWARD]) < 4:
        halts.append(m.run(10 ** 9))
    out = m.traffic.egress[FORWARD]
    assert [e.start for e in out] == [x.egress for x in want.frames]
    assert [e.wire for e in out] == [x.egress + TX_LATENCY for x in want.frames]
    assert [e.frame for e in out] == [padded(f) for f in frames] and all(e.wire_ok for e in out)
    assert halts == [e.end for e in out]              # one halt per frame, after its last beat
    assert m.run(halts[-1] + 5) == halts[-1] + 5      # nothing more leaves: runs to the limit
    m.finish()
    s = m.stats(FORWARD)
    assert s["rx_frames"] == s["tx_frames"] == 4 and s["rx_bytes"] == sum(map(len, frames))


def test_port_drops_and_bad_fcs_are_counted_with_their_cause():
    m = BoardModel(regs(), cycle=0)
    m.send(PORT_A, to_wire(frame(1), bad_preamble=True))
    m.send(PORT_A, to_wire(frame(2), bad_fcs=True))
    m.send(PORT_A, to_wire(frame(3)))
    m.finish()
    s = m.stats(RETURN)
    assert (s["drop_preamble"], s["rx_frames"], s["drop_error"], s["tx_frames"]) == (1, 2, 1, 1)
    assert [x.fate for x in m.channels[RETURN].frames] == [Fate.ERROR, Fate.DELIVERED]


def test_fragments_are_runts_and_an_empty_frame_has_no_preamble():
    """After the SFD: nothing is a preamble error; one beat (up to eight bytes) a five-byte runt,
    flagged, arriving as a two-beat frame would; nine to twelve bytes a runt of all but the
    FCS."""
    m = BoardModel(regs(), cycle=0)
    for n in (0, 1, 8, 9, 12):
        m.send(PORT_A, PREAMBLE + bytes(range(n)), 100 * n)
    m.finish()
    s = m.stats(RETURN)
    assert (s["drop_preamble"], s["rx_frames"], s["drop_runt"]) == (1, 4, 4)
    assert s["rx_bytes"] == 5 + 5 + 5 + 8
    assert m.traffic.arrivals(RETURN) == [arrival_from_wire(100 * n, 8) for n in (1, 8, 9, 12)]


def test_a_long_burst_is_reported_as_where_the_board_may_overrun():
    m = BoardModel(regs(), cycle=0)
    for i in range(30):                   # 30 x 1514 bytes back to back: 5,730 beats
        m.send(PORT_B, to_wire(frame(i, 1514)))
    verdict = m.exactness()
    assert verdict["forward"]["longest_burst_beats"] == 30 * 191
    assert verdict["forward"]["overrun_possible"] and not verdict["exact"]
    assert not verdict["return"]["overrun_possible"]


def test_model_engine_transfer_is_deterministic_and_consistent():
    a = run_model_transfer("short-asym", 60_000, ack="ratio:2", seed=3, max_seconds=20)
    b = run_model_transfer("short-asym", 60_000, ack="ratio:2", seed=3, max_seconds=20)
    assert a.completed and a.engine == "model" and a.exactness["exact"]
    assert differences(a, b) == []
    c = run_model_transfer("short-asym", 60_000, ack="ratio:10", seed=3, max_seconds=20)
    assert differences(a, c)                          # and the comparison does see a change
    for d in ("forward", "return"):
        sent = [p for p in a.sent if p.direction == d]
        got = [x for x in a.delivered if x.direction == d]
        assert a.board_stats[d]["rx_frames"] == len(sent)
        assert a.board_stats[d]["tx_frames"] == len(got)


def test_model_engine_bod_records_from_the_phase():
    """A BoD transfer: superframe 0 began ``bod_phase`` cycles before the transfer, and the
    records run from it, on as far as asked."""
    t = run_model_transfer("geo-testbed-bod", 30_000, ack="ratio:2", seed=1, max_seconds=30,
                           bod_phase=12_345, bod_superframes=400)
    assert t.completed and t.bod["phase"] == 12_345 and t.origin - t.bod["start"] == 12_345
    assert [r["sf"] for r in t.bod["records"]] == list(range(len(t.bod["records"])))
    assert len(t.bod["records"]) >= 400
    assert sum(r["used"] for r in t.bod["records"]) > 0


def test_cli_rejects_a_board_option_with_the_model_engine(capsys):
    from satemu.cli import main
    assert main(["quic", "--engine", "model", "--profile", "short-asym", "--port",
                 "socket://127.0.0.1:1", "--eth-port", "2"]) != 0
    assert "not with --engine model" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["quic", "--engine", "fpga", "--profile", "short-asym"])
