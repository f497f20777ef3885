# SPDX-License-Identifier: BSD-2-Clause
"""Terminals on the host (docs/bod.md, "Terminals"): a profile's [[terminal]] tables read and
refused in one line, the sharing rule by hand, a channel of one terminal that is the channel
without a table, frame by frame, and each frame's terminal as a capture names it."""

import random
from dataclasses import replace

import pytest

from satemu.base.boards import BOARDS
from satemu.base.terminals import MATCH_MAC, MATCH_VLAN, frame_key, share_bits, terminal_share
from satemu.cli import main
from satemu.link.profile import ProfileError, parse_profile
from satemu.model.bod import share
from satemu.model.channel import simulate

SIM = BOARDS["sim"].hardware
BASE = """
name = "t"
[forward]
rate = "10 Mbit/s"
delay = "10 ms"
[return]
delay = "10 ms"
queue = "50 packets"
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
"""


def _terminal(name, **kv) -> str:
    return "[[terminal]]\n" + f'name = "{name}"\n' + "".join(f"{k} = {v}\n" for k, v in kv.items())


def _mac(i: int) -> str:
    return f'"02:00:00:00:00:{i:02x}"'


def test_a_profile_s_terminals_and_their_tables():
    text = (BASE + _terminal("a", mac=_mac(1), cra='"100 kbit/s"', queue='"30 packets"')
            + _terminal("b", mac=_mac(2), loss='"1%"', fca="true")
            + _terminal("load", count=3, demand='{ kind = "constant", rate = "200 kbit/s" }'))
    p = parse_profile(text, "t")
    assert [t.name for t in p.terminals.terminals] == ["a", "b", "load-1", "load-2", "load-3"]
    tables = p.tables(SIM)
    ret, fwd = tables["return"], tables["forward"]
    assert ret.match == MATCH_MAC and len(ret.terminals) == 5 and len(ret.framed) == 2
    assert ret.framed[0].key == 0x02_00_00_00_00_01 and ret.framed[0].queue_frames == 30
    assert ret.framed[1].fca and ret.framed[1].loss_p > 0
    assert fwd.shared and len(fwd.terminals) == 2        # only those with frames, by key
    regs = p.check(SIM)
    assert (regs["return"].term_framed, regs["return"].term_synthetic) == (2, 3)
    assert regs["forward"].term_framed == 2 and regs["forward"].term_synthetic == 0


@pytest.mark.parametrize("extra, message", [
    (_terminal("a", mac=_mac(1)) + _terminal("b", mac=_mac(1)),
     "terminal.b.mac: 02:00:00:00:00:01 is terminal a's too"),
    ("".join(_terminal(f"t{i}", mac=_mac(i)) for i in range(1, 10)),
     "9 terminals with frames, this box tells at most 8 apart"),
    (_terminal("a", mac=_mac(1), cra='"4 Mbit/s"') + _terminal("b", mac=_mac(2), cra='"4 Mbit/s"'),
     "the terminals' CRA adds up to"),
    (_terminal("a", mac=_mac(1), count=2), "only synthetic terminals come in groups"),
    (_terminal("a", mac=_mac(1)) + _terminal("s", demand='{ kind = "trace", file = "bad.csv" }'),
     "terminal.s.demand.file: bad.csv line 2: expected 'duration, rate'"),
    (_terminal("a", mac=_mac(1)) + "[terminals.x]\n", "terminals.x: unknown setting"),
])
def test_bad_terminals_are_one_line(tmp_path, capsys, extra, message):
    (tmp_path / "bad.csv").write_text("0.1 s, 100 kbit/s\ngarbage\n")
    path = tmp_path / "t.toml"
    path.write_text(BASE + extra)
    assert main(["show", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err


def test_a_vlan_declared_twice_and_terminals_without_bod(tmp_path, capsys):
    vlan = BASE.replace('match = "mac"', 'match = "vlan"')
    with pytest.raises(ProfileError, match="vlan: 10 is terminal a's too"):
        parse_profile(vlan + _terminal("a", vlan=10) + _terminal("b", vlan=10), "t").check(SIM)
    plain = vlan.split("[return.bod]")[0].replace('delay = "10 ms"\nqueue', 'rate = "1 Mbit/s"\nqueue')
    with pytest.raises(ProfileError, match="give the return channel a \\[return.bod\\] table"):
        parse_profile(plain + "[terminals]\nmatch = \"vlan\"\n" + _terminal("a", vlan=10),
                      "t").check(SIM)


@pytest.mark.parametrize("board", ["versa-ecp5", "colorlight-5a-75b"])
def test_the_real_boards_refuse_terminals_in_one_line(board):
    p = parse_profile(BASE + _terminal("a", mac=_mac(1)), "t")
    with pytest.raises(ProfileError, match="this box tells no terminals apart"):
        p.check(BOARDS[board].hardware)


def test_the_sharing_rule_by_hand():
    # Oversubscribed: 8 slots for 16 asked, q = 2^15: 5, 2 and 0, and the slot left to the
    # first still short from terminal 1 on.
    assert share([10, 5, 1], 8, 1) == [5, 3, 0]
    assert share([10, 5, 1], 8, 0) == [6, 2, 0]
    assert share([3, 4], 7, 1) == [3, 4] and share([3, 4], 9, 0) == [3, 4]
    assert share([1, 1, 1], 2, 2) == [1, 0, 1]
    # The delay line and the queue split into the fewest equal parts, a power of two.
    assert [share_bits(n) for n in (1, 2, 3, 4, 5, 8)] == [0, 1, 2, 2, 3, 3]
    assert terminal_share(1000, 3) == 250


def test_whose_frame():
    frame = bytes.fromhex("025341540001" "020000000007" "8100" "0064" "0800") + bytes(50)
    assert frame_key(frame, MATCH_MAC, True) == 0x02_00_00_00_00_07       # its source
    assert frame_key(frame, MATCH_MAC, False) == 0x02_53_41_54_00_01      # its destination
    assert frame_key(frame, MATCH_VLAN, True) == 100
    assert frame_key(frame[:12] + b"\x08\x00" + frame[16:], MATCH_VLAN, True) is None
    p = parse_profile(BASE + _terminal("a", mac=_mac(7)), "t")
    whose = p.terminals.whose()
    assert whose(1, frame) == "terminal a" and whose(0, frame) == "no terminal's"


def test_one_terminal_is_the_channel_without_a_table():
    """A table of one terminal with frames, with the channel's own queue, loss and BoD settings,
    gives every frame the same fate and egress cycle, and every superframe the same record, as
    the channel without a table (docs/bod.md: every rule reduces to one terminal's)."""
    rng, drops = random.Random(3), 0
    for trial in range(6):
        loss = rng.choice(['"0%"', '"2%"', '"10%"'])
        text = (BASE.replace('queue = "50 packets"', f'queue = "{rng.randint(5, 60)} packets"')
                + _terminal("only", mac=_mac(9), fca=rng.choice(["true", "false"]), loss=loss))
        p = parse_profile(text, "t")
        regs = p.check(SIM)["return"]
        table = p.tables(SIM)["return"]
        one = table.terminals[0]
        plain_regs = replace(regs, term_match=0, term_framed=0, term_synthetic=0,
                             term_unclassified=0xFF, queue_frames=one.queue_frames,
                             queue_bytes=one.queue_bytes, loss_mode=one.loss_mode,
                             loss_p=one.loss_p,
                             bod_flags=regs.bod_flags | (1 << 1 if one.fca else 0))
        params = SIM.channel_params("return")
        t, frames = 0, []
        for _ in range(300):
            t += rng.randint(50, 4000)
            frames.append((t, rng.choice([60, 200, 600, 1500]), False))
        key = 0x02_00_00_00_00_09
        until = t + 200_000
        with_table = simulate([f + (key,) for f in frames], regs, params, until=until,
                              table=table)
        without = simulate(frames, plain_regs, params, until=until)
        assert with_table.egress_cycles().tolist() == without.egress_cycles().tolist(), trial
        assert with_table.fates().tolist() == without.fates().tolist()
        assert with_table.bod == without.bod and len(without.bod) > 10
        assert with_table.terminals[0]["tx_frames"] == without.counters["tx_frames"]
        assert with_table.terminals[0]["drop_loss"] == without.counters["drop_loss"]
        drops += without.counters["drop_loss"]
    assert drops > 0
