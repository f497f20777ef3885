# SPDX-License-Identifier: BSD-2-Clause
"""hw.fcs.RegisteredFCSChecker alone, in Migen's simulator: frames with their FCS in, the same
frames without it out, the last byte flagged exactly when the FCS is wrong or a byte came with
``error``; with the output stalled at random and frames back to back."""

import random
import zlib

from migen import run_simulation

from hw.fcs import RegisteredFCSChecker


def with_fcs(frame: bytes, bad: bool = False) -> bytes:
    fcs = zlib.crc32(frame) ^ (0xDEADBEEF if bad else 0)
    return frame + fcs.to_bytes(4, "little")


def run(frames, expected: int, stall: float, seed: int):
    """frames: (bytes with FCS, index of a byte sent with error or None). Returns the frames
    that came out (``expected`` of them, then 50 cycles more), as (bytes, error flag), and the
    error pulses counted."""
    dut = RegisteredFCSChecker()
    rnd = random.Random(seed)
    out, pulses = [], []

    def send():
        for data, err_at in frames:
            for k, byte in enumerate(data):
                yield dut.sink.data.eq(byte)
                yield dut.sink.last.eq(k == len(data) - 1)
                yield dut.sink.error.eq(k == err_at)
                yield dut.sink.valid.eq(1)
                yield
                while not (yield dut.sink.ready):
                    yield
            yield dut.sink.valid.eq(0)
            for _ in range(rnd.choice((0, 0, 1, 3))):      # back to back, or a short gap
                yield

    def receive():
        frame = bytearray()
        limit = 10 * sum(len(d) for d, _ in frames)
        cycle, after = 0, 0
        while cycle < limit and after < 50:
            cycle += 1
            after += len(out) == expected
            ready = rnd.random() >= stall
            yield dut.source.ready.eq(ready)
            yield
            if (yield dut.error):
                pulses.append(True)
            if ready and (yield dut.source.valid):
                frame.append((yield dut.source.data))
                if (yield dut.source.last):
                    assert (yield dut.source.last_be) == 1
                    out.append((bytes(frame), bool((yield dut.source.error))))
                    frame = bytearray()
        assert not frame, "a frame was left unfinished"

    run_simulation(dut, [send(), receive()])
    return out, len(pulses)


def test_frames_come_out_without_fcs_and_flagged_exactly():
    rnd = random.Random(7)
    frames, want = [], []
    for n in range(24):
        body = rnd.randbytes(rnd.choice((1, 2, 5, 14, 60, 61, 200)))
        bad = n % 4 == 1
        err_at = rnd.randrange(len(body) + 4) if n % 7 == 3 else None
        frames.append((with_fcs(body, bad), err_at))
        want.append((body, bad or err_at is not None))
    # A frame of four bytes or fewer (its FCS or less) comes out as nothing.
    frames.insert(5, (b"\x01\x02\x03\x04", None))
    frames.insert(15, (b"\x05\x06", None))
    for stall, seed in ((0.0, 1), (0.3, 2), (0.7, 3)):
        got, pulses = run(frames, len(want), stall, seed)
        assert got == want, f"stall {stall}"
        assert pulses == sum(flag for _, flag in want)
