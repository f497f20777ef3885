# SPDX-License-Identifier: BSD-2-Clause
"""The firmware takes its tables from the Python declarations only: built from a reordered
``PROFILE_FIELDS``, or from one with a field added (and the register map laid out anew), the
same command layer gives the Python validator's verdicts on the shared vectors and writes each
field to its own register; a board's header gives what ``satemu.base.boards`` says of it."""

import random
import subprocess
from dataclasses import replace

import pytest

from command_layer import (BUILD, C_TESTS, PROFILE_CASES, SANITIZERS, SOURCES,
                           build_command_layer, case_hardware, compile_c, run_command_layer,
                           write_headers)
from satemu.base import protocol as P
from satemu.base import regmap as R
from satemu.base import validate as V
from satemu.base.boards import BOARDS
from satemu.base.gen_c import (BOARD_HEADER, PROTO_HEADER, board_header, proto_header,
    write_firmware_headers)
from satemu.base.params import ChannelRegs

NAMES = [f.name for f in P.PROFILE_FIELDS]


def declare(monkeypatch, fields, regmap=R.REGMAP):
    """Makes the Python validator take the profile as ``fields`` (its order and names) on the
    registers of ``regmap``: what it would be, were they protocol's and regmap's. ChannelRegs
    (the models' profile) gets only the fields it knows."""
    monkeypatch.setattr(V, "PROFILE_FIELDS", fields)
    monkeypatch.setattr(V, "INDEX", {f.name: i for i, f in enumerate(fields)})
    monkeypatch.setattr(V, "REGMAP", regmap)
    known = set(ChannelRegs.__dataclass_fields__)
    monkeypatch.setattr(V, "ChannelRegs", lambda **kw: ChannelRegs(
        **{k: v for k, v in kw.items() if k in known}))


def verdict(case, fields, values) -> list:
    """The Python validator's verdict on ``values`` (by name) under the declaration ``fields``,
    as [status, field, value, lo, hi]; the field is its index in ``fields``."""
    v = V.validate(values, case_hardware(case), case["channel"])
    return [int(v.status), v.field, v.value, v.lo, v.hi]


def shared_verdict(case, fields) -> list:
    """The shared vector's verdict, its field named by its index in ``fields``."""
    v = case["verdict"]
    field = v["field"]
    if v["status"] == P.Status.BAD_FIELD:
        field = [f.name for f in fields].index(NAMES[field])
    return [v["status"], field, v["value"], v["lo"], v["hi"]]


def test_reordered_profile_fields(monkeypatch):
    """PROFILE_FIELDS in another order: the generated enum, tables and message layout follow it,
    and the firmware built from them gives the verdicts the Python validator gives under the
    same declaration, on every shared vector (its fields permuted to match) and where two fields
    are too wide at once (the first in the new order is named), and writes every field to its
    own register."""
    fields = list(P.PROFILE_FIELDS)
    random.Random(7).shuffle(fields)
    order = [f.name for f in fields]
    assert order != NAMES and order.index("loss_mode") != 0
    bg = sorted(order.index(f"bod_bg{i}") for i in range(R.BOD_BG_LEVELS))
    assert bg != list(range(bg[0], bg[0] + R.BOD_BG_LEVELS))     # the levels are scattered
    header = proto_header(fields)
    assert f"SATEMU_F_LOSS_MODE = {order.index('loss_mode')}," in header
    assert f"SATEMU_SET_PROFILE_REQUEST_BYTES {P.SET_PROFILE_REQUEST.size}" in header

    with monkeypatch.context() as m:
        declare(m, fields)
        for c in PROFILE_CASES:
            values = dict(zip(NAMES, c["fields"]))
            assert verdict(c, fields, values) == shared_verdict(c, fields), c["why"]
        # Two fields too wide at once: the verdict depends on the order, in C as in Python.
        rng = random.Random(8)
        narrow = [f for f in P.PROFILE_FIELDS if f.width < 64]
        valid = [c for c in PROFILE_CASES if c["verdict"]["status"] == P.Status.OK]
        extra, flipped = [], 0
        for c in rng.sample(valid, 24):
            a, b = rng.sample(narrow, 2)
            values = dict(zip(NAMES, c["fields"]))
            values.update({a.name: 1 << a.width, b.name: 1 << b.width})
            status, field, value, lo, hi = verdict(c, fields, values)
            first = min((a, b), key=lambda f: order.index(f.name))
            assert status == P.Status.BAD_FIELD and fields[field] == first
            flipped += NAMES.index(first.name) > min(NAMES.index(a.name), NAMES.index(b.name))
            extra.append(dict(c, why=f"{a.name} and {b.name} too wide",
                              fields=[values[n] for n in NAMES],
                              verdict={"status": status, "field": NAMES.index(first.name),
                                       "value": value, "lo": lo, "hi": hi}))
        assert flipped                    # some name the field the real order does not check first
    report = run_command_layer(BUILD / "reordered", fields, extra_cases=extra)
    assert "FAIL" not in report


def test_added_profile_field(monkeypatch):
    """A profile field added to the register map: every later register moves, the profile grows
    by a field, and the firmware built from the generated headers still gives the Python
    validator's verdicts (the new field 0), checks the new field's width and writes it, and
    every other field, to its own register."""
    spare = R.Field("spare", 12, "cfg", "a field the test adds")
    at = [f.name for f in R.CFG_FIELDS].index("overhead") + 1
    cfg = [*R.CFG_FIELDS[:at], spare, *R.CFG_FIELDS[at:]]
    regmap = R._layout([cfg, R.CTL_FIELDS, R.STAT_FIELDS, R.LIVE_FIELDS, R.LOG_FIELDS])
    fields = [regmap[f.name] for f in cfg if f.name not in ("mem_base", "mem_size")]
    assert regmap["delay"].offset == R.REGMAP["delay"].offset + 1
    assert regmap["bod_rec"].offset == R.REGMAP["bod_rec"].offset + 1
    header = proto_header(fields, regmap)
    assert f"SATEMU_PROFILE_FIELDS {len(P.PROFILE_FIELDS) + 1}" in header
    assert f"SATEMU_SET_PROFILE_REQUEST_BYTES {P.SET_PROFILE_REQUEST.size + 8}" in header

    with monkeypatch.context() as m:
        declare(m, fields, regmap)
        index = [f.name for f in fields].index("spare")
        for c in PROFILE_CASES:
            values = dict(zip(NAMES, c["fields"]), spare=0)
            assert verdict(c, fields, values) == shared_verdict(c, fields), c["why"]
            if c["verdict"]["status"] == P.Status.OK:    # test_fw.c's rule for every field
                values["spare"] = 1 << 12
                assert verdict(c, fields, values) == [P.Status.BAD_FIELD, index, 4096, 0, 4095]
    report = run_command_layer(BUILD / "added", fields, regmap)
    assert "FAIL" not in report


def test_register_image_catches_a_swap():
    """The register-image check has teeth: a header whose register table swaps two fields of the
    same width fails it (and only it)."""
    out = BUILD / "swapped"
    headers = write_headers(out)
    proto = headers / PROTO_HEADER
    text = proto.read_text()
    swap = {"[SATEMU_F_GE_P] = SATEMU_REG_GE_P,": "[SATEMU_F_GE_P] = SATEMU_REG_GE_R,",
            "[SATEMU_F_GE_R] = SATEMU_REG_GE_R,": "[SATEMU_F_GE_R] = SATEMU_REG_GE_P,"}
    for old, new in swap.items():
        assert text.count(old) == 1
        text = text.replace(old, new)
    proto.write_text(text)
    run = subprocess.run([str(build_command_layer(out, headers))], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode != 0
    fails = [line for line in run.stdout.splitlines() if line.startswith("FAIL")]
    assert fails == ["FAIL register image #0"], run.stdout[-3000:]


@pytest.mark.parametrize("name, mem_wpc", [(name, None) for name in BOARDS]
                         + [("versa-ecp5", 0)])
def test_board_header(name, mem_wpc):
    """A board's header, as main.c uses it: HELLO reports the board's limits (``mem_wpc``
    replacing its guarantee when given) and frame log, each channel's delay line and log ring
    are where ``satemu.base.boards`` puts them, and the BoD channels, ring and counter width are the
    board's."""
    board = BOARDS[name]
    out = BUILD / f"board-{name}-{mem_wpc}"
    paths = write_firmware_headers(out, board, mem_wpc)
    assert [p.name for p in paths] == [PROTO_HEADER, BOARD_HEADER]
    assert paths[1].read_text() == board_header(board, mem_wpc)
    exe = compile_c("cc", out / "test_board", [*SOURCES, C_TESTS / "test_board.c"], SANITIZERS,
                    out)
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60, check=True)
    hw = board.hardware if mem_wpc is None else replace(board.hardware, mem_wpc=mem_wpc)
    hello = P.hello_answer(P.HELLO_REQUEST.pack(P.PROTOCOL_VERSION), hw.limits(), hw.bod_mask)
    assert run.stdout.splitlines() == [
        f"board {name}", f"hello {hello.hex()}",
        *(f"delay_line {ch} {board.delay_line_base(ch)} {board.delay_line_words}"
          for ch in range(len(P.CHANNEL_NAMES))),
        f"bod_mask {board.hardware.bod_mask}", f"bod_ring {board.channel.bod_ring}",
        f"counter_bits {board.channel.counter_bits}", f"log_bits {board.log_bits}",
        *(f"log_ring {ch} {board.log_base(ch)} {board.log_words}"
          for ch in range(len(P.CHANNEL_NAMES))),
        f"timeline {board.timeline_base} {2 * board.timeline_entries}"]
    assert (1 << board.log_bits if board.log_words else 0) == hw.log_records


def test_headers_written_only_when_changed():
    """write_firmware_headers leaves a header that would not change as it is, so that make
    rebuilds nothing."""
    out = BUILD / "rewrite"
    board = BOARDS["colorlight-5a-75b"]
    paths = write_firmware_headers(out, board, 0)
    for p in paths:
        p.touch()
    stamps = [p.stat().st_mtime_ns for p in paths]
    assert write_firmware_headers(out, board, 0) == paths
    assert [p.stat().st_mtime_ns for p in paths] == stamps
    write_firmware_headers(out, board, None)         # the board's own guarantee: 4369
    assert paths[0].stat().st_mtime_ns == stamps[0]
    text = paths[1].read_text()
    assert ".mem_wpc_forward = 4369u," in text and ".mem_wpc_return = 4369u," in text
