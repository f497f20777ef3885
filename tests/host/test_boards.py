# SPDX-License-Identifier: BSD-2-Clause
"""The board registry (satemu.base.boards) and ``satemu show --board`` on each board."""

from dataclasses import replace

import pytest

from satemu.base.boards import BOARDS, DEFAULT_BOARD, MAC_PORT, _board
from satemu.cli import main
from satemu.base.units import format_size

# A profile whose forward channel needs more delay-line throughput than the Versa-5G guarantees
# (300 Mbit/s of 60-byte frames: 6982 words per 65536 cycles at 55 MHz, against 5957).
FAST = ('name = "fast"\n[forward]\nrate = "320 Mbit/s"\ndelay = "10 ms"\nqueue = "100 packets"\n'
        '[return]\nrate = "1 Mbit/s"\ndelay = "10 ms"\n')


def test_each_record_is_one_board():
    assert DEFAULT_BOARD == "sim"                       # what `make demo` runs
    for name, board in BOARDS.items():
        assert board.name == name
        hw = board.hardware
        assert hw.params == board.channel and not hw.params.bod
        # Each channel's parameters: the board's, with the BoD block where the board has it,
        # and its queue on chip where the board builds it without the ring (as distances,
        # delta_queue frames, where the board has them).
        for channel, channel_name in enumerate(("forward", "return")):
            want = replace(board.channel, bod=channel_name in board.bod_channels)
            if not want.bod:        # synthetic terminals and their levels: the BoD block's
                want = replace(want, synthetic=0, demand_levels=0)
            if channel_name not in board.spill_channels:
                depth = board.channel.delta_queue or board.channel.queue_onchip
                want = replace(want, queue_depth=depth, queue_fifo=0)
            assert board.channel_params(channel).delta_coded == (
                channel_name not in board.spill_channels and board.channel.delta_queue > 0)
            if board.mem_paces:
                want = replace(want, mem_pace=board.mem_paces[channel])
            assert board.channel_params(channel) == want
        # Every board's ports are LiteEth MACs, with their egress costs.
        assert {k: getattr(board.channel, k) for k in MAC_PORT} == MAC_PORT
        # The simulated board has nothing to flash or build a bitstream of; the others have.
        assert (board.programmer is None) == (board.bitstream is None) == (name == "sim")


def test_the_table_is_what_the_boards_say():
    """Spelled out, so that a change to a board shows here as well as in its target."""
    sim_hw, versa, colorlight = (BOARDS[n].hardware for n in ("sim", "versa-ecp5",
                                                               "colorlight-5a-75b"))
    # The simulated board's queues spill, and so does the Versa-5G's forward queue: their delay
    # lines end where the departure-time ring starts, 2^16 words before the next region.
    deep = (1 << 22) - (1 << 16)
    assert (sim_hw.f_clk, sim_hw.mem_words, sim_hw.mem_wpc) == (6_250_000, deep, (0, 0))
    # The guarantees are what each channel's pace lets leave: 65536 // 9 and 65536 // 19 (the
    # Versa-5G's DDR3, split as its links are), 65536 // 15.
    assert (versa.f_clk, versa.mem_words, versa.mem_wpc) == (55_000_000, deep, (7281, 3449))
    assert (colorlight.f_clk, colorlight.mem_words, colorlight.mem_wpc) == (40_000_000, 1 << 18,
                                                                         (4369, 4369))
    assert [hw.channel_params(ch).mem_pace for hw in (sim_hw, versa, colorlight)
            for ch in ("forward", "return")] == [0, 0, 9, 19, 15, 15]
    assert (sim_hw.params.counter_bits, versa.params.counter_bits,
            colorlight.params.counter_bits) == (64, 32, 32)
    assert colorlight.params.queue_depth == colorlight.params.queue_onchip == 512
    assert colorlight.params.spill_words == 0
    assert (sim_hw.params.queue_depth, sim_hw.params.queue_onchip) == (65535, 1024)
    assert (versa.params.queue_depth, versa.params.queue_onchip, versa.params.spill_words) == (
        65535, 1024, 1 << 16)
    # The Versa-5G's return channel holds its queue on chip, 16,384 departure times as
    # distances; no other board's channel codes them so.
    assert [versa.channel_params(ch).queue_depth for ch in ("forward", "return")] == [
        65535, 16384]
    assert [versa.channel_params(ch).delta_coded for ch in ("forward", "return")] == [
        False, True]
    assert (versa.limits()["delta_queue"], sim_hw.limits()["delta_queue"],
            colorlight.limits()["delta_queue"]) == (16384, 0, 0)
    assert (versa.spill_mask, sim_hw.spill_mask, colorlight.spill_mask) == (1, 3, 0)
    # A queue BoD serves waits in the BoD block's FIFO: its cap while BoD is on.
    assert (sim_hw.params.bod_depth, versa.params.bod_depth) == (65535, 16384)
    assert (sim_hw.limits()["bod_queue"], versa.limits()["bod_queue"]) == (65535, 16384)
    assert [versa.channel_params("return").queue_cap(bod) for bod in (False, True)] == [
        16384, 16384]
    assert (sim_hw.bod_channels, versa.bod_channels, colorlight.bod_channels) == (
        ("return",), ("return",), ())
    assert (sim_hw.port_bps, versa.port_bps) == (400_000_000, 1_000_000_000)


def test_show_defaults_to_the_simulated_board(capsys):
    assert main(["show", "geo-testbed"]) == 0
    out = capsys.readouterr().out
    assert "board: sim (the simulated board" in out and "at 6.25 MHz:" in out
    assert f"of {format_size(((1 << 22) - (1 << 16)) * 8)} (" in out and "(not limited)" in out


def test_show_on_the_versa(capsys):
    assert main(["show", "geo-testbed", "--board", "versa-ecp5"]) == 0
    out = capsys.readouterr().out
    mem = format_size(BOARDS["versa-ecp5"].delay_line_words * 8)
    assert "board: versa-ecp5 (the Lattice ECP5 Versa-5G), 55 MHz, ports at 1 Gbit/s" in out
    assert (f"delay line per channel: {mem}, 7281 (forward) and 3449 (return) words per 65536 "
            f"cycles guaranteed, frames falling due together leave at 9 (forward) and 19 "
            f"(return) cycles a word") in out
    assert "at 55 MHz: 51 + 13/17 cycles per byte, delay 16500000 cycles" in out
    # The forward queue spills to the ring; the return channel's stays on chip.
    assert "queue 637.5 KB or 65535 packets (hardware cap)" in out
    assert f"of {mem} (3.5%)" in out and "of 7281 guaranteed" in out
    assert "of 3449 guaranteed" in out
    # geo-large's 1-BDP forward queue is the one it declares: 18.75 MB fill before 65535 frames.
    assert main(["show", "geo-large", "--board", "versa-ecp5"]) == 0
    out = capsys.readouterr().out
    assert "queue 18.75 MB or 65535 packets (hardware cap), whichever fills first" in out
    assert "up to 6439 words per 65536 cycles of 7281 guaranteed (88.4%)" in out
    assert "queue 225 KB or 16384 packets (the return channel holds its queue on chip)" in out
    # A BoD queue waits in the BoD block's FIFO: geo-medium's 750 KB, 12,500 frames of ACKs.
    assert main(["show", "geo-medium-bod", "--board", "versa-ecp5"]) == 0
    out = capsys.readouterr().out
    assert "queue 750 KB or 16384 packets (the BoD block's cap), whichever fills first" in out


def test_show_on_the_colorlight(capsys):
    assert main(["show", "geo-testbed", "--board", "colorlight-5a-75b"]) == 0
    out = capsys.readouterr().out
    assert "at 40 MHz:" in out and f"of {format_size((1 << 18) * 8)} (20.0%)" in out
    assert "or 512 packets (hardware cap)" in out
    # geo-large's 11 MB of delay line do not fit its 2 MB: the same one-line error as ever.
    assert main(["show", "geo-large", "--board", "colorlight-5a-75b"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("satemu: forward: delay x rate needs") and "the channel has 262144" in err
    # It has no BoD block: a BoD profile is refused before anything is loaded, and says why.
    assert main(["show", "geo-testbed-bod", "--board", "colorlight-5a-75b"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("satemu: return.bod: the return channel has no Bandwidth-on-Demand "
                          "block on this hardware (no channel has one)")
    assert main(["show", "geo-testbed-bod", "--board", "versa-ecp5"]) == 0


def test_show_fails_beyond_the_versa_throughput(capsys, tmp_path):
    fast = tmp_path / "fast.toml"
    fast.write_text(FAST)
    assert main(["show", str(fast), "--board", "versa-ecp5"]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert cap.err.startswith("satemu: forward: the profile's rate needs up to 7448 words per "
                              "65536 cycles of delay-line bandwidth, the board guarantees this "
                              "channel 7281") and "Traceback" not in cap.err
    # The return channel is checked against its own guarantee.
    slow_fwd = tmp_path / "return.toml"
    slow_fwd.write_text(FAST.replace("320 Mbit/s", "100 Mbit/s").replace("1 Mbit/s",
                                                                           "150 Mbit/s"))
    assert main(["show", str(slow_fwd), "--board", "versa-ecp5"]) == 2
    assert capsys.readouterr().err.startswith(
        "satemu: return: the profile's rate needs up to 3491 words per 65536 cycles of "
        "delay-line bandwidth, the board guarantees this channel 3449")
    # Not on the simulated board, whose delay line is not limited; nor with --mem-wpc over it.
    assert main(["show", str(fast)]) == 0
    assert main(["show", str(fast), "--board", "versa-ecp5", "--mem-wpc", "0"]) == 0
    assert main(["show", str(fast), "--board", "versa-ecp5", "--mem-wpc", "7448"]) == 0
    assert main(["show", str(fast), "--board", "versa-ecp5", "--mem-wpc", "7447"]) == 2


def test_options_override_the_board(capsys):
    assert main(["show", "geo-testbed", "--board", "versa-ecp5", "--f-clk", "75000000",
                 "--mem-words", str(6 << 20)]) == 0
    out = capsys.readouterr().out
    assert "75 MHz, ports at 1 Gbit/s; given --f-clk 75000000, --mem-words 6291456" in out
    assert "at 75 MHz: 70 + 10/17 cycles per byte" in out
    assert f"of {format_size((6 << 20) * 8)} (" in out
    assert "of 7281 guaranteed" in out                  # the Versa's, not given


def test_unknown_board_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["show", "geo-testbed", "--board", "ulx3s"])
    assert e.value.code == 2
    assert "invalid choice: 'ulx3s'" in capsys.readouterr().err


def test_a_ring_in_the_forward_channel_only(tmp_path):
    """A board that builds the departure-time ring in its forward channel only
    (``Board.spill_channels``): a deeper forward queue is accepted, a deeper return queue
    refused with its cap, and a return queue given in bytes only is capped at what the chip
    holds."""
    from satemu.link.profile import ProfileError, load_profile
    text = ('name = "deep"\n[forward]\nrate = "50 Mbit/s"\ndelay = "300 ms"\n'
            'queue = "FWD packets"\n[return]\nrate = "10 Mbit/s"\ndelay = "300 ms"\n'
            'queue = "RET packets"\n')
    hw = replace(BOARDS["sim"].hardware, spill_channels=("forward",))
    assert hw.spill_mask == 1 and hw.limits()["spill_mask"] == 1
    path = tmp_path / "deep.toml"
    path.write_text(text.replace("FWD", "12500").replace("RET", "1024"))
    regs = load_profile(str(path)).check(hw)
    assert (regs["forward"].queue_frames, regs["return"].queue_frames) == (12500, 1024)
    path.write_text(text.replace("FWD", "12500").replace("RET", "1025"))
    with pytest.raises(ProfileError, match=r"^return.queue: 1025 packets is outside the allowed "
                                           r"range 1 packet \.\. 1024 packets"):
        load_profile(str(path)).check(hw)
    medium = load_profile("geo-medium")
    assert medium.ret.frame_cap(hw, "return") == (
        1024, "the return channel holds its queue on chip")
    assert medium.forward.frame_cap(hw, "forward") == (65535, "hardware cap")


def test_a_board_may_split_its_memory_between_the_channels():
    """``Board.mem_paces`` gives each channel its own pace, and so its own guarantee, as HELLO
    reports them: on the Versa-5G, the split its DDR3 was measured to hold (docs/hardware.md,
    "The split, measured"), 9 cycles a word forward and 19 return. A board gives a pace for
    each channel or none."""
    split = BOARDS["versa-ecp5"]
    with pytest.raises(ValueError, match="mem_paces gives a pace for each channel"):
        _board(replace(split, mem_paces=(9,)))
    hw = split.hardware
    assert split.mem_wpc == (7281, 3449) and (hw.wpc("forward"), hw.wpc("return")) == (7281, 3449)
    assert (hw.limits()["mem_wpc_forward"], hw.limits()["mem_wpc_return"]) == (7281, 3449)
    assert [split.channel_params(ch).mem_pace for ch in (0, 1)] == [9, 19]
    assert split.channel_params("return").bod and not split.channel_params("forward").bod


@pytest.mark.parametrize("board", ["sim", "versa-ecp5"])
def test_every_built_in_queue_is_the_one_it_declares(board):
    """On the simulated board and the Versa-5G, each built-in profile's queue, in every step of
    its timeline, holds what the profile declares: its packets where it gives a count, else as
    many frames as its byte limit holds of what the direction carries in a download, 1500-byte
    packets forward and ACKs of the profile's shortest frame back (geo-large's 18.75 MB forward
    queue is 12,500 packets, geo-medium's 750 KB return queue 12,500 ACKs of 60 bytes)."""
    from satemu.link.profile import builtin_profiles
    from satemu.link.timeline import compile_timeline
    hw = BOARDS[board].hardware
    deepest = {"forward": 0, "return": 0}
    for name, profile in builtin_profiles().items():
        if profile.terminals is not None and not hw.channel_params("return").terminals:
            continue            # (geo-shared-bod: a box that tells no terminals apart refuses it)
        settings = [(dict(profile.channels()), profile.check(hw))]
        if profile.timeline is not None:
            settings += [(s.profiles, s.regs) for s in compile_timeline(profile, hw).steps]
        for profiles, regs in settings:
            for channel, ch in profiles.items():
                r = regs[channel]
                frame = 1500 if channel == "forward" else r.min_len
                held = r.queue_bytes // frame
                declared = min(ch.queue_frames or held, held)
                assert r.queue_frames >= declared, (name, channel, r.queue_frames, declared)
                deepest[channel] = max(deepest[channel], declared)
    assert deepest == {"forward": 12500, "return": 12500}
