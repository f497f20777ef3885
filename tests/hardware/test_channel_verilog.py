# SPDX-License-Identifier: BSD-2-Clause
"""The channels' Verilog as the SoC builds take it (hw.soc_common.write_channel_verilog)."""

from satemu.base.boards import BOARDS
from satemu.base.queues import WORD_BITS
from satemu_gw.depdelta import MEMORY_PREFIX
from hw.soc_common import write_channel_verilog, without_delta_init


def test_the_delta_queue_memories_come_without_their_zeros(tmp_path):
    """The Versa-5G's return channel holds its departure distances in 34 one-bit memories of
    16,384 words; their initial zeros are left out of its Verilog (otherwise over half a million
    lines), and nothing else's: the forward channel's Verilog, and every other memory's
    initial block in the return channel's, stay as Amaranth wrote them."""
    fwd, ret = write_channel_verilog(tmp_path, BOARDS["versa-ecp5"])
    text = ret.read_text()
    for bit in range(WORD_BITS):
        assert f"reg [0:0] {MEMORY_PREFIX}{bit} [16383:0];" in text
        assert f"{MEMORY_PREFIX}{bit}[0] = " not in text
    assert text.count("initial begin") >= 5 and len(text) < 2_000_000
    assert without_delta_init(fwd.read_text()) == fwd.read_text()
    kept = "  initial begin\n    storage[0] = 8'h00;\n    storage[1] = 8'h00;\n  end\n"
    ours = "  initial begin\n" + "".join(f"    {MEMORY_PREFIX}3[{i}] = 1'h0;\n"
                                         for i in range(4)) + "  end\n"
    assert without_delta_init(kept + ours + kept) == kept + kept
