# SPDX-License-Identifier: BSD-2-Clause
"""Traffic generation and scenario records for the channel bench (tests, benchmarks, demo)."""

from __future__ import annotations

import random
from dataclasses import asdict

from satemu.base.params import ChannelParams


def traffic(seed: int, n: int, *, rate_bps: float | None, f_clk: int, load: float = 1.0,
            start: int = 2000, lengths=(60, 1518), p_small: float = 0.3, p_full: float = 0.3,
            p_runt: float = 0.0, p_oversize: float = 0.0, p_err: float = 0.0,
            p_malformed: float = 0.0,
            p_burst: float = 0.0, burst: tuple[int, int] = (4, 40),
            p_idle: float = 0.0, idle_cycles: tuple[int, int] = (10_000, 100_000),
            oversize_max: int = 2600) -> list[list]:
    """Frames as [earliest start cycle, length, error], error 0 (good), 1 (bad FCS) or 2 (a
    malformed byte count of 0 on the last beat).

    Inter-frame spacing is exponential with a mean that offers ``load`` times ``rate_bps``
    (line rate of the 64-bit port when unshaped); bursts send frames back to back, idle gaps
    leave the channel alone for long stretches. Lengths mix minimum, full and uniform sizes,
    with runts, oversize frames and bad-FCS frames at the given probabilities.
    """
    rng = random.Random(seed)
    out = []
    t = start
    in_burst = 0
    lo, hi = lengths
    for _ in range(n):
        u = rng.random()
        if u < p_runt:
            length = rng.randint(1, lo - 1)
        elif u < p_runt + p_oversize:
            length = rng.randint(hi + 1, oversize_max)
        elif u < p_runt + p_oversize + p_small:
            length = lo
        elif u < p_runt + p_oversize + p_small + p_full:
            length = hi
        else:
            length = rng.randint(lo, hi)
        err = int(rng.random() < p_err)
        if rng.random() < p_malformed:      # byte count 0 on the last beat: length rounds to 8
            err, length = 2, max(8, (length + 7) // 8 * 8)
        out.append([t, length, err])
        if in_burst:
            in_burst -= 1
            continue
        if rng.random() < p_burst:
            in_burst = rng.randint(*burst)
            continue
        if rate_bps:
            mean = length * 8 * f_clk / (rate_bps * load)
        else:
            mean = (length + 7) // 8 / load
        t += max(1, int(rng.expovariate(1 / mean)))
        if rng.random() < p_idle:
            t += rng.randint(*idle_cycles)
    return out


# The scenarios' channel: a queue that outgrows the 32 departure times on chip into memory
# (satemu_gw.depqueue), as the boards' do beyond 1024, so that most scenarios' queues spill.
SCENARIO_PARAMS = ChannelParams(frame_log=True, queue_fifo=32, jitter=True, corrupt=True,
                                duplicate=True, ecn=True)


def scenario(name: str, *, f_clk: int, frames: list, regs, params=SCENARIO_PARAMS,
             mem: dict | None = None, tb_seed: int = 1, beat_gap: float = 0.0,
             sink_ready: float = 1.0, commits: list | None = None, run_after: int = 0,
             expect: dict | None = None, table=None, jitter=None) -> dict:
    """A scenario's record. With a terminal ``table`` (satemu.base.terminals.TerminalTable)
    each frame is [start, length, error, whose]: the index of the terminal with frames whose
    key it carries, or -1 (sim.channel.bench.frame_bytes); a commit may carry a ``table`` too."""
    return {
        "run_after": run_after, "expect": expect or {},
        "name": name, "f_clk": f_clk, "params": asdict(params), "regs": asdict(regs),
        "frames": frames, "mem": mem or {}, "tb_seed": tb_seed, "beat_gap": beat_gap,
        "sink_ready": sink_ready, "table": asdict(table) if table is not None else None,
        # The jitter table's two banks (satemu.model.jitter), written before the first commit.
        "jitter": [list(bank) for bank in jitter] if jitter is not None else None,
        # A commit is written at cycle ``at``; with ``cycle`` it is named for that cycle
        # (COMMIT_AT), as the firmware commits a timeline's steps.
        "commits": [{"at": c["at"], "regs": asdict(c["regs"]), "reseed": c.get("reseed", False),
                     **({"cycle": c["cycle"]} if "cycle" in c else {}),
                     **({"table": asdict(c["table"])} if c.get("table") is not None else {})}
                    for c in (commits or [])],
    }



def overlay_ip(body: bytearray, rng: random.Random) -> bytearray:
    """``body`` (a frame's bytes) made, in place where long enough, into an IPv4 or IPv6 packet
    (untagged or in an 802.1Q tag) with an ECN field drawn from all four (Not-ECT, ECT(1),
    ECT(0), CE) and, in IPv4, a valid header checksum; or left as it is (about one frame in
    six): the frames ECN marking tells apart (satemu.model.ecn)."""
    kind = rng.randrange(6)
    if kind == 5:
        return body
    at = 14
    if kind in (2, 3):
        body[12:16] = (b"\x81\x00" + rng.randbytes(2))[:max(0, len(body) - 12)]
        at = 18
    ecn = rng.randrange(4)
    if kind in (0, 2, 4):
        header = bytearray(rng.randbytes(20))
        header[0] = 0x45
        header[1] = header[1] & 0xFC | ecn
        header[10:12] = b"\0\0"
        s = sum(int.from_bytes(header[i:i + 2], "big") for i in range(0, 20, 2))
        while s >> 16:
            s = (s & 0xFFFF) + (s >> 16)
        header[10:12] = (~s & 0xFFFF).to_bytes(2, "big")
        ether = b"\x08\x00"
    else:
        header = bytearray(rng.randbytes(40))
        header[0] = 0x60 | header[0] & 0x0F
        header[1] = header[1] & 0xCF | ecn << 4
        ether = b"\x86\xdd"
    if kind == 4:
        ether = b"\x08\x06"                 # (ARP: an IPv4-like header, not IP)
    whole = ether + header
    body[at - 2:at - 2 + len(whole)] = whole[:max(0, len(body) - at + 2)]
    return body
