# SPDX-License-Identifier: BSD-2-Clause
"""The channel's register map, declared once: gateware, host tool and firmware header derive from it.

The bus is 32 bits wide and word addressed. Values wider than 32 bits span consecutive words,
least significant word first. Three kinds of register exist:

* ``cfg``: profile fields. Writes land in a *shadow* copy; the COMMIT control copies every shadow
  field at once into a staged copy, which the channel applies to all frames whose last beat arrives
  after the commit cycle (see docs/architecture.md, "Configuration").
* ``ctl``: write-only strobes.
* ``stat``: read-only. Counters and gauges are read from a snapshot taken by ``STATS.snapshot``,
  so a set of counters read over several bus cycles is consistent.
"""

from dataclasses import dataclass

__all__ = ["Field", "CFG_FIELDS", "CTL_FIELDS", "STAT_FIELDS", "COUNTERS", "GAUGES", "REGMAP",
           "LOSS_NONE", "LOSS_BERNOULLI", "LOSS_GILBERT_ELLIOTT",
           "REG_WORDS", "COMMIT_APPLY", "COMMIT_RESEED", "COMMIT_LAYOUT", "STATS_SNAPSHOT", "STATS_CLEAR"]

LOSS_NONE, LOSS_BERNOULLI, LOSS_GILBERT_ELLIOTT = 0, 1, 2

# COMMIT register bits.
COMMIT_APPLY = 1 << 0    # stage every shadow field; applied atomically (see architecture.md)
COMMIT_RESEED = 1 << 1   # with APPLY: reload the PRNG from SEED and put Gilbert-Elliott in Good
COMMIT_LAYOUT = 1 << 2   # with APPLY: also take MEM_BASE/MEM_SIZE, allowed only while the delay line is empty
# STATS register bits.
STATS_SNAPSHOT = 1 << 0  # copy every counter and gauge into the readable snapshot
STATS_CLEAR = 1 << 1     # zero every counter and high-water mark (after the snapshot, if both are set)


@dataclass(frozen=True)
class Field:
    name: str
    width: int
    kind: str       # "cfg", "ctl" or "stat"
    doc: str
    offset: int = -1  # word offset, filled in by _layout

    @property
    def words(self) -> int:
        return (self.width + 31) // 32


CFG_FIELDS = [
    Field("loss_mode", 2, "cfg", "0 none, 1 Bernoulli, 2 Gilbert-Elliott"),
    Field("loss_p", 32, "cfg", "Bernoulli loss probability x 2^32 (drop when draw < loss_p)"),
    Field("ge_p", 32, "cfg", "Gilbert-Elliott P(Good->Bad) per frame x 2^32"),
    Field("ge_r", 32, "cfg", "Gilbert-Elliott P(Bad->Good) per frame x 2^32"),
    Field("ge_loss_good", 32, "cfg", "Gilbert-Elliott loss probability in Good x 2^32"),
    Field("ge_loss_bad", 32, "cfg", "Gilbert-Elliott loss probability in Bad x 2^32"),
    Field("seed", 64, "cfg", "PRNG seed, loaded on COMMIT with RESEED"),
    Field("rate_q", 32, "cfg", "serialisation time per byte, integer cycles"),
    Field("rate_num", 32, "cfg", "serialisation time per byte, fraction numerator (< rate_den)"),
    Field("rate_den", 32, "cfg", "serialisation time per byte, fraction denominator (>= 1)"),
    Field("overhead", 8, "cfg", "bytes added to every frame's length for serialisation only"),
    Field("delay", 40, "cfg", "delay-line latency in cycles, from departure to egress start"),
    Field("queue_frames", 16, "cfg", "bottleneck queue limit in frames"),
    Field("queue_bytes", 32, "cfg", "bottleneck queue limit in bytes (frame lengths)"),
    Field("min_len", 16, "cfg", "shortest valid frame in bytes; shorter ones are runts"),
    Field("max_len", 16, "cfg", "longest valid frame in bytes; longer ones are oversize"),
    Field("mem_base", 32, "cfg", "delay-line region base, in memory words (COMMIT_LAYOUT)"),
    Field("mem_size", 32, "cfg", "delay-line region size, in memory words (COMMIT_LAYOUT)"),
]

CTL_FIELDS = [
    Field("commit", 3, "ctl", "bit0 APPLY, bit1 RESEED, bit2 LAYOUT"),
    Field("stats", 2, "ctl", "bit0 SNAPSHOT, bit1 CLEAR"),
]

# Counters only grow (until STATS_CLEAR); gauges show a present level or a high-water mark.
COUNTERS = ["rx_frames", "rx_bytes", "tx_frames", "tx_bytes",
            "drop_runt", "drop_oversize", "drop_error", "drop_loss", "drop_queue", "drop_mem",
            "drop_overrun", "late"]
GAUGES = ["queue_frames_now", "queue_bytes_now", "queue_frames_hwm", "queue_bytes_hwm",
          "mem_words_now", "mem_words_hwm", "snapshot_cycle"]

STAT_FIELDS = [
    Field("status", 4, "stat", "bit0 commit pending, bit1 last layout commit rejected, "
                               "bit2 delay line empty, bit3 reserved"),
    *[Field(name, 64, "stat", f"counter {name}") for name in COUNTERS],
    *[Field(name, 64, "stat", f"gauge {name}") for name in GAUGES],
]


def _layout(groups):
    out, offset = {}, 0
    for fields in groups:
        for f in fields:
            out[f.name] = Field(f.name, f.width, f.kind, f.doc, offset)
            offset += f.words
    return out


REGMAP: dict[str, Field] = _layout([CFG_FIELDS, CTL_FIELDS, STAT_FIELDS])
REG_WORDS = max(f.offset + f.words for f in REGMAP.values())
CFG_FIELDS = [REGMAP[f.name] for f in CFG_FIELDS]
CTL_FIELDS = [REGMAP[f.name] for f in CTL_FIELDS]
STAT_FIELDS = [REGMAP[f.name] for f in STAT_FIELDS]
