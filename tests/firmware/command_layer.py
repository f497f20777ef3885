# SPDX-License-Identifier: BSD-2-Clause
"""The firmware's C on the host, for the tests: its generated headers (from the real declarations
or from others a test gives), the shared vectors as C, and the command layer's test program."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Mapping, Sequence

from satemu.base import protocol as P
from satemu.base.gen_c import (BANNER, PROTO_HEADER, bod_vectors_header, hello_vectors_header,
    limits_initializer, log_vectors_header, profile_vectors_header, proto_header,
    vectors_header)
from satemu.base.params import ChannelParams, ChannelRegs
from satemu.base.regmap import BOD_BG_REPEAT, BOD_FCA, REGMAP, Field
from satemu.base.hardware import Hardware
from satemu.base.validate import validate

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "firmware" / "app"
PROTO = ROOT / "firmware" / "proto"
C_TESTS = ROOT / "firmware" / "tests"
BUILD = ROOT / "build" / "firmware-host"
VECTORS = json.loads((ROOT / "tests" / "vectors" / "protocol.json").read_text())
PROFILE_CASES = json.loads((ROOT / "tests" / "vectors" / "profiles.json").read_text())
TERMINAL_CASES = json.loads((ROOT / "tests" / "vectors" / "terminals.json").read_text())
# The command layer: request handling, the timeline runner, profile checks, statistics, and the
# codec under them.
SOURCES = [APP / "requests.c", APP / "terminals.c", APP / "timeline.c", APP / "validate.c",
           APP / "stats.c", PROTO / "proto.c"]
SANITIZERS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
# The box test_fw.c checks SET_PROFILE's writes on (its struct satemu_limits) and the region it
# gives the channel.
WRITE_BOX = Hardware(f_clk=75_000_000, mem_words=6 << 20,
                     params=ChannelParams(terminals=4, synthetic=4, demand_levels=8,
                                          jitter=True, corrupt=True, duplicate=True,
                                          ecn=True))


def case_hardware(case: dict) -> Hardware:
    """The box a profile vector (tests/vectors/profiles.json) is checked against, read as HELLO's
    limits are (``Hardware.from_limits``); a limit the vector does not give is the default box's."""
    lim = case["limits"]
    limits = {**Hardware(lim["f_clk"], lim["mem_words"]).limits(), **lim}
    return Hardware.from_limits(limits, tuple(name for i, name in enumerate(P.CHANNEL_NAMES)
                                              if lim["bod_mask"] >> i & 1))


WRITE_CHANNEL, WRITE_MEM_BASE = P.CHANNEL_RETURN, 0x0123_4560


def write_case(profile_fields: Sequence[Field]) -> dict[str, int]:
    """A profile that ``WRITE_BOX`` accepts whose fields (``profile_fields``, by name) all
    differ, in each register word, so that a field written to another's register shows: the
    fields that no rule constrains while BoD is off (loss probabilities, seed, the BoD block's
    settings, any field a test adds) take random values of their width."""
    base = ChannelRegs(loss_mode=2, rate_q=400, rate_num=3, rate_den=7, overhead=17,
                       delay=5 << 32 | 1000,
                       queue_frames=50, queue_bytes=100_000, min_len=64, max_len=1500,
                       bod_flags=BOD_FCA | BOD_BG_REPEAT, term_match=1, term_framed=4,
                       term_synthetic=0, term_unclassified=0xFF, jit_sigma=123_457, jit_bank=1)
    # (jit_sigma: a jitter the delay line holds. jit_bank, one bit, cannot differ from both
    # term_synthetic's 0 and term_match's 1: its word is left out of the distinct ones)
    fixed = {name: getattr(base, name) for name in (
        "loss_mode", "rate_q", "rate_num", "rate_den", "overhead", "delay", "queue_frames",
        "queue_bytes", "min_len", "max_len", "bod_flags", "term_match", "term_framed",
        "term_synthetic", "term_unclassified", "jit_sigma", "jit_bank")}
    rng = random.Random(11)
    for _ in range(1000):
        values = {f.name: fixed.get(f.name, rng.randrange(1, 1 << f.width)) for f in profile_fields}
        words = [v >> shift & 0xFFFF_FFFF for f in profile_fields if f.width > 1
                 for v, shift in ((values[f.name], 0), (values[f.name], 32))[:f.words]]
        if len(set(words)) == len(words):
            break
    else:
        raise AssertionError("no profile with distinct register words")
    real = {f.name: values.get(f.name, 0) for f in P.PROFILE_FIELDS}
    assert validate(real, WRITE_BOX, WRITE_CHANNEL).status == P.Status.OK
    return values


def write_vector_header(profile_fields: Sequence[Field], regmap: Mapping[str, Field]) -> str:
    """``write_case`` for test_fw.c: its fields in the order of ``profile_fields``, and the
    channel's registers once SET_PROFILE wrote it (every other word 0), as ``regmap`` places
    them."""
    values = write_case(profile_fields)
    image = [0] * max(f.offset + f.words for f in regmap.values())
    for name, value in (*values.items(), ("mem_base", WRITE_MEM_BASE),
                        ("mem_size", WRITE_BOX.mem_words)):
        for k in range(regmap[name].words):
            image[regmap[name].offset + k] = value >> (32 * k) & 0xFFFF_FFFF
    return "\n".join([
        "/* SET_PROFILE of distinct fields (tests/firmware/command_layer.py). */",
        "#include <stdint.h>", "",
        f"#define WRITE_CHANNEL {WRITE_CHANNEL}", f"#define WRITE_MEM_BASE {WRITE_MEM_BASE}u",
        f"#define WRITE_MEM_WORDS {WRITE_BOX.mem_words}u",
        "static const uint64_t write_fields[SATEMU_PROFILE_FIELDS] = {",
        *(f"    {values[f.name]}u,    /* {f.name} */" for f in profile_fields), "};",
        "static const uint32_t write_image[SATEMU_REG_WORDS] = {",
        *(f"    0x{w:08x}u," for w in image), "};", ""])


def terminal_vectors_header(cases: Sequence[dict],
                            profile_fields: Sequence[Field] | None = None) -> str:
    """tests/vectors/terminals.json as C: each case's box, channel, profile fields, terminals
    (fields in ``TERMINAL_FIELDS`` order) and levels, and the TERMINAL_BAD detail the COMMIT's
    check must give (status OK with no detail for a table that runs). The profile fields in
    ``profile_fields``' order (by default ``PROFILE_FIELDS``'), by name; one the cases lack
    is 0."""
    names = [f.name for f in P.PROFILE_FIELDS]
    order = names if profile_fields is None else [f.name for f in profile_fields]
    width = max(len(c["terminals"]) for c in cases)
    depth = max(max((len(c["levels"]) for c in cases), default=1), 1)
    out = [BANNER, "#include <stdint.h>", "",
           f"#define TERM_VEC_TERMINALS {width}", f"#define TERM_VEC_LEVELS {depth}",
           "static const struct terminal_case {", "    const char *why;",
           "    struct satemu_limits limits;", "    uint32_t bod_mask;", "    int channel;",
           "    uint64_t fields[SATEMU_PROFILE_FIELDS];", "    unsigned n;",
           "    uint64_t t[TERM_VEC_TERMINALS][SATEMU_TERMINAL_FIELDS];", "    unsigned levels;",
           "    uint32_t level[TERM_VEC_LEVELS][2];",
           "    uint8_t status; uint16_t index; uint8_t rule; uint64_t value, lo, hi;",
           "} terminal_cases[] = {"]
    for c in cases:
        v = c["verdict"] or {"index": 0, "rule": 0, "value": 0, "lo": 0, "hi": 0}
        status = int(P.Status.TERMINAL_BAD if c["verdict"] else P.Status.OK)
        values = dict(zip(names, c["fields"]))
        limits = {name: c["limits"][name] for name, _ in P.LIMIT_FIELDS}
        terms = ", ".join("{" + ", ".join(f"{x}u" for x in t) + "}" for t in c["terminals"])
        levels = ", ".join(f"{{{r}u, {n}u}}" for r, n in c["levels"])
        out.append(f"    {{\"{c['why']}\", {limits_initializer(limits)}, "
                   f"{c['limits']['bod_mask']}u, {c['channel']}, "
                   f"{{{', '.join(f'{values.get(n, 0)}u' for n in order)}}}, "
                   f"{len(c['terminals'])}, "
                   f"{{{terms}}}, {len(c['levels'])}, {{{levels or '{0}'}}}, {status}, "
                   f"{v['index']}, {v['rule']}, {v['value']}u, {v['lo']}u, {v['hi']}u}},")
    out.append("};")
    return "\n".join(out) + "\n"


def write_headers(out: Path, profile_fields: Sequence[Field] | None = None,
                  regmap: Mapping[str, Field] | None = None,
                  extra_cases: Sequence[dict] = ()) -> Path:
    """Writes into ``out`` the firmware's protocol header for ``profile_fields`` and ``regmap``
    (by default the real ones) and the shared vectors as C, the profile vectors (with
    ``extra_cases``, in the same form) in the order of ``profile_fields``; returns ``out``."""
    fields = P.PROFILE_FIELDS if profile_fields is None else profile_fields
    out.mkdir(parents=True, exist_ok=True)
    texts = {PROTO_HEADER: proto_header(profile_fields, regmap),
             "satemu_vectors.h": vectors_header(VECTORS),
             "satemu_bod_vectors.h": bod_vectors_header(VECTORS["bod_trace"]),
             "satemu_hello_vectors.h": hello_vectors_header(VECTORS["hello"]),
             "satemu_log_vectors.h": log_vectors_header(VECTORS["read_log"]),
             "satemu_profile_vectors.h": profile_vectors_header(
                 [*PROFILE_CASES, *extra_cases], profile_fields),
             "satemu_write_vector.h": write_vector_header(fields, regmap or REGMAP),
             "satemu_terminal_vectors.h": terminal_vectors_header(TERMINAL_CASES,
                                                                  profile_fields)}
    for name, text in texts.items():
        (out / name).write_text(text)
    return out


def compile_c(compiler: str, out: Path, sources: Sequence[Path], flags: Sequence[str],
              headers: Path) -> Path:
    """Compiles ``sources`` against the firmware's headers and the generated ones in
    ``headers`` into the program ``out``."""
    cmd = [compiler, "-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror", *flags,
           f"-I{APP}", f"-I{PROTO}", f"-I{headers}", *map(str, sources), "-o", str(out)]
    run = subprocess.run(cmd, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-5000:]
    return out


def build_command_layer(out: Path, headers: Path) -> Path:
    """firmware/tests/test_fw.c with the command layer, under the sanitizers, against the
    generated headers in ``headers``: the program ``out / "test_fw"``."""
    return compile_c("cc", out / "test_fw", [*SOURCES, C_TESTS / "test_fw.c"], SANITIZERS,
                     headers)


def run_command_layer(out: Path, profile_fields: Sequence[Field] | None = None,
                      regmap: Mapping[str, Field] | None = None,
                      extra_cases: Sequence[dict] = ()) -> str:
    """Builds test_fw.c in ``out`` against headers generated from ``profile_fields`` and
    ``regmap`` (``write_headers``), runs it and returns its report, every check passed."""
    exe = build_command_layer(out, write_headers(out, profile_fields, regmap, extra_cases))
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-5000:] + run.stderr[-5000:]
    assert run.stdout.strip().endswith(" 0 failed"), run.stdout[-5000:]
    return run.stdout
