# SPDX-License-Identifier: BSD-2-Clause
"""Terminals end to end on the simulated board (docs/bod.md, "Terminals"): a profile with three
terminals with frames and synthetic ones loaded through the CLI over the UART; frames of each
terminal, and of none, on port A's wire and to each on port B's; every frame leaving at the
cycle the model says, each terminal's counters read back (TERMINAL_STATS, ``satemu stats``) and
every record of every terminal in the BoD ring equal to the model's."""

import random

import pytest

from satemu.base.boards import BOARDS
from satemu.box.device import Device, DeviceError
from satemu.cli import main
from satemu.link.profile import load_profile
from satemu.model.bod import superframe_cycles
from satemu.model.channel import simulate

PROFILE = """
name = "terminals-e2e"
[forward]
rate = "10 Mbit/s"
delay = "10 ms"
[return]
delay = "10 ms"
queue = "100 packets"
[return.bod]
superframe = "5 ms"
slots = 20
slot_bytes = 188
latency = 4
cra = "50 kbit/s"
rbdc_max = "1 Mbit/s"
rbdc_timeout = 6
vbdc_max = "8 KB"
[terminals]
match = "mac"
unclassified = "drop"
[[terminal]]
name = "a"
mac = "02:00:00:00:00:0a"
cra = "100 kbit/s"
[[terminal]]
name = "b"
mac = "02:00:00:00:00:0b"
queue = "30 packets"
loss = "2%"
[[terminal]]
name = "c"
mac = "02:00:00:00:00:0c"
fca = true
[[terminal]]
name = "load"
count = 4
demand = { kind = "onoff", rate = "600 kbit/s", on = "50 ms", off = "80 ms" }
rbdc_max = "800 kbit/s"
"""
MACS = [bytes.fromhex(f"02000000000{c}") for c in "abc"] + [bytes.fromhex("02ffffffff01")]
SERVER = bytes.fromhex("025341540001")


def _frame(rng, src: bytes, dst: bytes) -> bytes:
    length = rng.choice([60, 90, 200, 600, 1200, 1500])
    return dst + src + b"\x88\xb5" + bytes(rng.randrange(256) for _ in range(length - 14))


def test_terminals_share_the_pool_over_the_uart_as_the_model_says(url, board_state, tmp_path,
                                                                  capsys):
    from sim.frames import FORWARD, RETURN, expected_egress, observed_egress, run_traffic

    path = tmp_path / "terminals.toml"
    path.write_text(PROFILE)
    # (after whatever the board ran before: test_board_bod's BoD runs leave the block's
    # memories as they were, which superframe 0 of this load's run zeroes)
    # (reseeded: the loss draws start from the profile's seed, as the model's do)
    assert main(["load", str(path), "--port", url, "--reseed"]) == 0
    hw = BOARDS["sim"].hardware
    tables = load_profile(str(path)).tables(hw)
    rng = random.Random(23)
    sent = {RETURN: [(_frame(rng, rng.choice(MACS), SERVER), False) for _ in range(150)],
            FORWARD: [(_frame(rng, SERVER, rng.choice(MACS)), False) for _ in range(100)]}
    with Device(url) as dev:
        dev.reset_stats()
        dev.clear_log()                 # (the capture below: this run's frames, every one)
    traffic, models, taken = run_traffic(url, board_state["eth_port"], sent, load=0.03,
                                         tables={RETURN: tables["return"],
                                                 FORWARD: tables["forward"]})
    for ch in (RETURN, FORWARD):
        assert observed_egress(traffic, ch) == expected_egress(sent, models, taken)[ch]
    ret = models[RETURN]
    assert ret.counters["drop_unclassified"] > 0 and ret.terminals[1]["drop_loss"] > 0
    # Each terminal's counters, as the board counts them, on both channels.
    with Device(url) as dev:
        for ch in (RETURN, FORWARD):
            for who, want in models[ch].terminals.items():
                assert dev.terminal_stats(ch, who) == want, (ch, who)
        trace = dev.bod_trace(terminals=len(tables["return"].terminals))
        with pytest.raises(DeviceError, match="terminal"):
            dev.terminal_stats(RETURN, hw.channel_params("return").terminals)
    capsys.readouterr()
    assert main(["stats", "--port", url]) == 0
    out = capsys.readouterr().out
    assert "terminal 0" in out and "no terminal's" in out
    # satemu bod-trace: a row a terminal a superframe, and the pool's plot with each one's grants.
    csv_path, png = tmp_path / "trace.csv", tmp_path / "trace.png"
    assert main(["bod-trace", "--port", url, "--out", str(csv_path), "--plot", str(png)]) == 0
    assert "a record each for 7 terminals" in capsys.readouterr().out
    import csv
    with csv_path.open() as f:
        rows = list(csv.DictReader(f))
    assert rows[0]["terminal"] is not None and {int(r["terminal"]) for r in rows} == set(range(7))
    assert png.stat().st_size > 10_000
    # satemu capture: the frame log as pcapng, each frame's terminal named by its index.
    from satemu.base.pcapng import read_pcapng
    pcap = tmp_path / "log.pcapng"
    assert main(["capture", "--port", url, "--out", str(pcap)]) == 0
    comments = [c for p in read_pcapng(pcap).packets for c in p.comments]
    assert any("return channel" in c and ", terminal 1" in c for c in comments)
    assert any("forward channel" in c and ", no terminal's" in c for c in comments)
    # Every record of every terminal, synthetic ones included, equal to the model's.
    per = len(tables["return"].terminals)
    regs = load_profile(str(path)).check(hw)["return"]
    arrivals = traffic.arrivals(RETURN)
    frames = [sent[RETURN][i][0] for i in taken[RETURN]]
    from satemu.base.terminals import frame_key
    model = simulate(zip(arrivals, [len(f) for f in frames], [False] * len(arrivals),
                         [frame_key(f, tables["return"].match, True) for f in frames]),
                     regs, hw.channel_params("return"), bod_start=trace.start,
                     until=trace.start + trace.count * superframe_cycles(regs) - 1,
                     table=tables["return"])
    # (seven terminals a 5 ms superframe outrun the reading over the simulated UART: the ring
    # overwrites records before they are read, and those are listed as lost)
    assert len(model.bod) == trace.count * per and len(trace.records) >= 200
    assert trace.records == [model.bod[r.sf * per + r.terminal] for r in trace.records]
    assert {r.terminal for r in trace.records} == set(range(per))
    assert any(r.g_rbdc for r in model.bod if r.terminal >= 3)      # the synthetic load
    with Device(url) as dev:          # leave the board as the other system tests expect it
        dev.load(load_profile("geo-testbed"), stop_timeline=True)
        dev.reset_stats()
