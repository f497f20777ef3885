# SPDX-License-Identifier: BSD-2-Clause
"""The memory command arbiter (satemu_gw.memarb) against its model cycle by cycle: which
command is granted in each cycle (reads before writes, a command once offered kept until the
memory takes it), and, with a spilling departure queue, its read bursts first and every read
word routed back to the stream that asked for it."""

import random
from collections import deque

import pytest

from satemu.model.delayline import ArbiterModel, ReadRouter
from satemu.base.queues import BURST
from satemu_gw.memarb import MemArbiter
from membench import Held, Mismatch, Source, expect, raw, simulate

AW = 20


def run_arbiter(seed: int, cycles: int, p_rd: float, p_wr: float, p_mem: float,
                spill: bool = False, p_sp: float = 0.0, perturb=None) -> dict:
    """Random offers on each input and a memory that takes commands at pace ``p_mem`` and
    answers reads in order after 1 to 12 cycles. The queue's reads come as it issues them: a
    burst of 1 to ``BURST`` held back to back, the next only once the last one's data is back.
    Returns the grants, ``(cycle, stream, address)``."""
    dut = MemArbiter(AW, spill=spill)
    rng = random.Random(seed)
    model, router = ArbiterModel(), ReadRouter()
    seen = {"grants": [], "waited": 0, "routed": {"rd": [], "sp": []}, "bursts": 0}

    def addrs():
        while True:
            yield rng.getrandbits(AW)

    async def bench(ctx):
        gen = addrs()
        rd = Source(ctx, dut.rd, rng, p_rd, (next(gen) for _ in range(cycles)))
        wr = Source(ctx, dut.wr, rng, p_wr, (next(gen) for _ in range(cycles)))
        sp = Source(ctx, dut.sp, rng, 1.0) if spill else None
        streams = {"rd": rd, "wr": wr, **({"sp": sp} if spill else {})}
        held = Held("cmd")
        answers = deque()       # (cycle due, word) of reads taken
        sp_inflight = 0         # the burst's reads issued or to issue whose data is not back
        word = 0
        for t in range(cycles):
            if spill and sp_inflight == 0 and rng.random() < p_sp:
                n = rng.randint(1, BURST)
                for _ in range(n):
                    sp.push(next(gen))
                sp_inflight = n
                seen["bursts"] += 1
            for s in streams.values():
                s.drive()
            mem_ready = rng.random() < p_mem
            ctx.set(dut.cmd.ready, mem_ready)
            answer = answers[0][1] if answers and answers[0][0] <= t else None
            if spill:
                ctx.set(dut.rdata.valid, answer is not None)
                ctx.set(dut.rdata.payload, answer or 0)

            valid = {k: s.offer is not None for k, s in streams.items()}
            pick = model.pick(valid)
            offered = pick is not None and valid[pick]
            want = {"cmd.valid": int(offered)}
            if offered:
                want["cmd.payload"] = streams[pick].offer << 1 | (pick == "wr")
            for k in streams:
                if valid[k]:
                    want[f"{k}.ready"] = int(k == pick and mem_ready)
            if spill:
                want["rdata.ready"] = 1
                kind = router.reads[0] if answer is not None else None
                for k in ("rd", "sp"):
                    want[f"{k}_data.valid"] = int(kind == k)
                    if kind == k:
                        want[f"{k}_data.payload"] = answer
            if perturb:
                perturb(t, want)
            ports = {"cmd.valid": dut.cmd.valid, "cmd.payload": dut.cmd.payload,
                     **{f"{k}.ready": streams[k].port.ready for k in streams}}
            if spill:
                ports.update({"rdata.ready": dut.rdata.ready,
                              "rd_data.valid": dut.rd_data.valid,
                              "rd_data.payload": dut.rd_data.payload,
                              "sp_data.valid": dut.sp_data.valid,
                              "sp_data.payload": dut.sp_data.payload})
            for name, value in want.items():
                expect(t, name, raw(ctx, ports[name]), value)
            held.see(t, ctx.get(dut.cmd.valid), raw(ctx, dut.cmd.payload), mem_ready)

            taken = offered and mem_ready
            if taken:
                addr = streams[pick].took()
                seen["grants"].append((t, pick, addr))
                if pick != "wr":
                    router.issued(pick)
                    word += 1
                    due = max(t + rng.randint(1, 12), answers[-1][0] if answers else 0)
                    answers.append((due, (seed << 40) | word))
            seen["waited"] += offered and pick == "wr" and valid.get("rd", False)
            if answer is not None:
                answers.popleft()
                kind = router.returned()
                seen["routed"][kind].append(answer)
                sp_inflight -= kind == "sp"
            model.step(pick, taken)
            await ctx.tick()

    simulate(dut, bench)
    return seen


def kinds_in_a_row(grants, kind):
    """The lengths of the runs of consecutive grants to ``kind``."""
    runs, n = [], 0
    for _, k, _ in grants:
        if k == kind:
            n += 1
        elif n:
            runs.append(n)
            n = 0
    return runs + ([n] if n else [])


@pytest.mark.parametrize("seed, p_rd, p_wr, p_mem", [
    (1, 0.5, 0.5, 1.0),     # the memory always ready: a read never waits for a write
    (2, 0.4, 0.8, 0.4),     # a slow memory: writes offered and held while reads come
    (3, 0.9, 0.9, 0.7),     # both busy: writes go only when the reader pauses
])
def test_arbiter_matches_model(seed, p_rd, p_wr, p_mem):
    seen = run_arbiter(seed, 3000, p_rd, p_wr, p_mem)
    grants = seen["grants"]
    assert {k for _, k, _ in grants} == {"rd", "wr"} and len(grants) > 600
    assert len({t for t, _, _ in grants}) == len(grants)        # one command a cycle
    if p_mem < 1:
        assert seen["waited"] > 20      # a held write kept the cycle from a waiting read
    else:
        assert seen["waited"] == 0


@pytest.mark.parametrize("seed, p_mem", [(5, 1.0), (6, 0.5)])
def test_spilling_arbiter_matches_model(seed, p_mem):
    seen = run_arbiter(seed, 3000, 0.6, 0.6, p_mem, spill=True, p_sp=0.1)
    grants = seen["grants"]
    assert seen["bursts"] > 50 and max(kinds_in_a_row(grants, "sp")) == BURST
    # Every read word came back to the stream that asked, in its order.
    n = {k: sum(g[1] == k for g in grants) for k in ("rd", "sp")}
    assert len(seen["routed"]["rd"]) > n["rd"] - 12 and len(seen["routed"]["sp"]) > 100
    words = sorted(seen["routed"]["rd"] + seen["routed"]["sp"])
    assert seen["routed"]["rd"] == sorted(seen["routed"]["rd"]) and len(set(words)) == len(words)


def test_a_disagreement_names_signal_and_cycle():
    """An expected grant altered in one cycle fails there, by name."""
    def perturb(t, want):
        if t >= 50 and "wr.ready" in want and want["cmd.valid"]:
            want["wr.ready"] ^= 1
    with pytest.raises(Mismatch, match=r"^cycle \d+: wr\.ready is 0x[01], the model says"):
        run_arbiter(2, 300, 0.4, 0.8, 0.4, perturb=perturb)
