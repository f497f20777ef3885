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
* ``live``: read-only, read as they are: the Bandwidth-on-Demand statistics ring (``bod_rec``
  holds the record of superframe ``bod_sel``, see BOD_RECORD) and its superframe count.

The ``bod_*`` profile fields describe the Bandwidth-on-Demand return link (docs/bod.md). Two of
them, ``bod_flags`` (BoD on, FCA, the background's repeat) and ``bod_latency``, take effect like
the memory region: only with COMMIT_LAYOUT while the delay line is empty, and such a commit
restarts the BoD block, superframe 0 beginning in the cycle after the commit. The others apply as
any field does, and the block takes them at its next superframe (a timeline's BoD steps).
"""

from dataclasses import dataclass

from satemu.base.terminals import TERMINAL_FIELDS

__all__ = ["Field", "CFG_FIELDS", "CTL_FIELDS", "STAT_FIELDS", "COUNTERS", "GAUGES", "REGMAP",
           "LOSS_NONE", "LOSS_BERNOULLI", "LOSS_GILBERT_ELLIOTT", "REG_WORDS", "WINDOW_BYTES",
           "WINDOW_BOTH", "ADDR_BITS", "LIVE_FIELDS", "BOD_FIELDS", "BOD_RECORD",
           "BOD_RECORD_WORDS", "BOD_BG_LEVELS", "BOD_ENABLE", "BOD_FCA", "BOD_BG_REPEAT",
           "BOD_LATENCY_MAX", "BOD_RATE_ONE", "COMMIT_APPLY", "COMMIT_RESEED", "COMMIT_LAYOUT",
           "COMMIT_AT", "STATS_SNAPSHOT", "STATS_CLEAR", "LAYOUT_FIELDS", "LOG_FIELDS",
           "LOG_CLEAR", "STATUS_PENDING", "STATUS_LAYOUT_KEPT", "STATUS_EMPTY", "STATUS_REFUSED",
           "STATUS_LATE", "STATUS_COPYING", "TERM_FIELDS", "TERM_WINDOW", "TERM_OFFSETS",
           "TERM_WORDS", "JITTER_FIELDS", "JITTER_TABLE", "JITTER_SHIFT",
           "JITTER_INDEX_BITS", "JITTER_SEED_XOR", "JITTER_ENTRY_MAX", "CORRUPT_FIELDS",
           "CORRUPT_SEED_XOR", "DUPLICATE_FIELDS", "DUPLICATE_SEED_XOR", "ECN_FIELDS"]

LOSS_NONE, LOSS_BERNOULLI, LOSS_GILBERT_ELLIOTT = 0, 1, 2

# COMMIT register bits.
COMMIT_APPLY = 1 << 0    # stage every shadow field; applied atomically (see architecture.md)
COMMIT_RESEED = 1 << 1   # with APPLY: reload the PRNG from SEED and put Gilbert-Elliott in Good
COMMIT_LAYOUT = 1 << 2   # with APPLY: also take MEM_BASE/MEM_SIZE, allowed only while the delay line is empty
COMMIT_AT = 1 << 3       # with APPLY: the commit's cycle is COMMIT_CYCLE, not the write's (a timeline step)
# STATUS register bits.
STATUS_PENDING = 1 << 0      # a commit the channel has not applied yet
STATUS_LAYOUT_KEPT = 1 << 1  # the last layout commit kept the old layout (frames were stored)
STATUS_EMPTY = 1 << 2        # the delay line holds no frame
STATUS_REFUSED = 1 << 3      # the last COMMIT came while one was pending, and was refused
STATUS_LATE = 1 << 4         # the last COMMIT with AT named a cycle already past: it took the write's
STATUS_COPYING = 1 << 5      # the terminal table's shadow is being refilled after a COMMIT: write
                             # no terminal field and commit nothing until it falls
# STATS register bits.
STATS_SNAPSHOT = 1 << 0  # copy every counter and gauge into the readable snapshot
STATS_CLEAR = 1 << 1     # zero every counter and high-water mark (after the snapshot, if both are set)
# BOD_FLAGS register bits.
BOD_ENABLE = 1 << 0      # the channel is served in granted timeslots instead of by the rate shaper
BOD_FCA = 1 << 1         # free capacity assignment: the pool's unused slots go to the terminal
BOD_BG_REPEAT = 1 << 2   # the background-load schedule repeats; otherwise its last level holds
BOD_BG_LEVELS = 8        # levels in the background-load schedule
BOD_LATENCY_MAX = 64     # request-to-grant latency, superframes: the request pipeline's depth
BOD_RATE_ONE = 256       # rates (CRA, RBDC) are in slots per superframe x 256


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

BOD_FIELDS = [
    Field("bod_flags", 3, "cfg", "bit0 BoD on, bit1 FCA, bit2 background schedule repeats"),
    Field("bod_slot_cycles", 32, "cfg", "timeslot duration, cycles; a superframe is bod_slots of them"),
    Field("bod_slots", 16, "cfg", "timeslots per superframe on the return carrier (the shared pool)"),
    Field("bod_slot_bytes", 16, "cfg", "payload bytes per timeslot"),
    Field("bod_cra", 24, "cfg", "CRA, slots per superframe x 256, granted every superframe"),
    Field("bod_rbdc_max", 24, "cfg", "RBDC maximum, slots per superframe x 256 (0: no RBDC)"),
    Field("bod_rbdc_timeout", 16, "cfg", "superframes an RBDC request stays valid (0: until replaced)"),
    Field("bod_vbdc_max", 16, "cfg", "VBDC slots requested and not yet granted, at most (0: no VBDC)"),
    Field("bod_req_period", 16, "cfg", "superframes between capacity requests (>= 1)"),
    Field("bod_latency", 7, "cfg", f"request-to-grant latency, superframes (1..{BOD_LATENCY_MAX})"),
    Field("bod_bg_count", 4, "cfg", f"levels used in the background schedule (1..{BOD_BG_LEVELS})"),
    *[Field(f"bod_bg{i}", 32, "cfg", f"background level {i}: slots per superframe (bits 15..0) "
                                     f"taken by other terminals, for superframes (bits 31..16)")
      for i in range(BOD_BG_LEVELS)],
]
# The channel's terminal table (satemu.base.terminals, docs/bod.md "Terminals"): how frames are
# told apart, how many terminals there are, where frames of no terminal go. Each terminal's own
# settings are written through the terminal window (TERM_WINDOW) for the terminal ``term_sel``.
TERM_FIELDS = [
    Field("term_match", 2, "cfg", "0: no table (one terminal, these registers), 1 MAC, 2 VLAN"),
    Field("term_framed", 7, "cfg", "terminals with frames (0 .. ChannelParams.terminals)"),
    Field("term_synthetic", 7, "cfg", "synthetic terminals after them"),
    Field("term_unclassified", 8, "cfg", "the terminal frames of no terminal go to; 0xFF: "
                                         "dropped (drop_unclassified)"),
]
# Jitter (satemu_gw.jitter, satemu.model.jitter; docs/architecture.md "Jitter"): each frame the
# shaper times adds J = (table[i] x jit_sigma) >> JITTER_SHIFT cycles to its delay, where the
# table is one of the channel's two banks of JITTER_TABLE signed 16-bit entries (in units of
# sigma / 2^JITTER_SHIFT, as netem's tables) and i is drawn at random, or repeats the last i
# with probability jit_corr / 2^16. A frame never leaves before the one ahead of it.
JITTER_TABLE = 4096
JITTER_INDEX_BITS = 12
JITTER_SHIFT = 13
JITTER_ENTRY_MAX = 32768          # the largest magnitude of an entry (signed 16 bits)
# The jitter's xoshiro128++ stream is seeded from the profile's seed xored with this, so that the
# loss draws (seeded from the seed itself) are the same with jitter and without.
JITTER_SEED_XOR = 0x5851_F42D_4C95_7F2D
assert 1 << JITTER_INDEX_BITS == JITTER_TABLE
JITTER_FIELDS = [
    Field("jit_sigma", 32, "cfg", "jitter scale, cycles: the table's unit x 2^13 (0: no jitter)"),
    Field("jit_corr", 16, "cfg", "jitter correlation: P(a frame repeats the last draw) x 2^16"),
    Field("jit_bank", 1, "cfg", "the jitter table bank in force"),
]
# Corruption (satemu_gw.corrupt, satemu.model.corrupt): an admitted frame has one bit flipped,
# at a position drawn uniformly over its bytes, with probability cor_p / 2^32; or it repeats the
# last frame's decision with probability cor_corr / 2^16. The egress MAC computes the FCS over
# the bytes as they leave, so the frame arrives with a good FCS and a bad UDP checksum.
CORRUPT_FIELDS = [
    Field("cor_p", 32, "cfg", "probability an admitted frame has a bit flipped x 2^32"),
    Field("cor_corr", 16, "cfg", "corruption correlation: P(a frame repeats the last decision) "
                                 "x 2^16"),
]
# The corruption's three xoshiro128++ streams (the decision, the repeat, the bit) are seeded
# from the profile's seed xored with these.
CORRUPT_SEED_XOR = (0x2545_F491_4F6C_DD1D, 0x9FB2_1C65_1E98_DF25, 0xD6E8_FEB8_6659_FD93)
# Duplication (satemu_gw.duplicate, satemu.model.duplicate): a frame that passes the length,
# FCS and terminal checks is copied with probability dup_p / 2^32, or repeats the last frame's
# decision with probability dup_corr / 2^16. The copy enters the channel right behind it, a
# frame of its own (its own loss draw, queue, shaper, delay and corruption), and is not copied.
DUPLICATE_FIELDS = [
    Field("dup_p", 32, "cfg", "probability a frame is copied x 2^32"),
    Field("dup_corr", 16, "cfg", "duplication correlation: P(a frame repeats the last decision) "
                                 "x 2^16"),
]
# The duplication's two xoshiro128++ streams (the repeat, the decision) are seeded from the
# profile's seed xored with these.
DUPLICATE_SEED_XOR = (0x6A09_E667_F3BC_C908, 0xBB67_AE85_84CA_A73B)
# ECN marking (satemu_gw.ecnparse, ecnmark; satemu.model.ecn): an ECN-capable IPv4 or IPv6
# packet (its ECN field not 00) is marked CE as the delay line's writer stores it when its time
# in the bottleneck (departure - arrival) reaches ecn_sojourn cycles, or when it finds at least
# ecn_queue frames in the queue (L4S-style step marking; 0: that test off). An IPv4 header's
# checksum is updated with it. Not where BoD serves the channel.
ECN_FIELDS = [
    Field("ecn_sojourn", 32, "cfg", "mark CE from this time in the bottleneck, cycles (0: off)"),
    Field("ecn_queue", 16, "cfg", "mark CE from this many frames queued ahead (0: off)"),
]
CFG_FIELDS = (CFG_FIELDS + BOD_FIELDS + TERM_FIELDS + JITTER_FIELDS + CORRUPT_FIELDS
              + DUPLICATE_FIELDS + ECN_FIELDS)

CTL_FIELDS = [
    Field("commit_cycle", 64, "ctl", "the cycle a COMMIT with AT takes effect at (write it first)"),
    Field("commit", 4, "ctl", "bit0 APPLY, bit1 RESEED, bit2 LAYOUT, bit3 AT"),
    Field("stats", 2, "ctl", "bit0 SNAPSHOT, bit1 CLEAR"),
    Field("bod_sel", 32, "ctl", "record bod_rec shows (mod the ring depth): superframe x "
                                "terminals + terminal"),
    Field("term_sel", 8, "ctl", "the terminal the terminal window (TERM_WINDOW) writes"),
    Field("level_sel", 16, "ctl", "the level-table entry level_rate and level_length write"),
    Field("level_rate", 32, "ctl", "a level's demand, bytes a superframe x 256 (the shadow's)"),
    Field("level_length", 16, "ctl", "a level's superframes (the shadow's)"),
    Field("jit_sel", 13, "ctl", "the jitter table entry jit_val writes next: bank x 4096 + index "
                                "(JITTER_TABLE); each write of jit_val advances it"),
    Field("jit_val", 16, "ctl", "a jitter table entry, signed (written at jit_sel, in the bank "
                                "jit_sel names, at once: write only a bank not in force)"),
    Field("tstat_sel", 16, "ctl", "the terminal counter tstat reads: terminal x 16 + its index "
                                  "in TERMINAL_COUNTERS (terminals: the table's, then no one's)"),
]

# Counters only grow (until STATS_CLEAR); gauges show a present level or a high-water mark.
COUNTERS = ["rx_frames", "rx_bytes", "tx_frames", "tx_bytes",
            "drop_runt", "drop_oversize", "drop_error", "drop_loss", "drop_queue", "drop_mem",
            "drop_overrun", "late", "drop_unclassified", "corrupted", "duplicated",
            "ce_marked"]
GAUGES = ["queue_frames_now", "queue_bytes_now", "queue_frames_hwm", "queue_bytes_hwm",
          "mem_words_now", "mem_words_hwm", "snapshot_cycle"]

STAT_FIELDS = [
    Field("status", 5, "stat", "bit0 commit pending, bit1 last layout commit rejected, "
                               "bit2 delay line empty, bit3 last commit refused (one pending), "
                               "bit4 last commit late (AT: its cycle had passed)"),
    *[Field(name, 64, "stat", f"counter {name}") for name in COUNTERS],
    *[Field(name, 64, "stat", f"gauge {name}") for name in GAUGES],
]


# One superframe's record in the BoD statistics ring, packed least significant field first.
BOD_RECORD = [
    ("sf", 32),          # superframe number since the BoD block (re)started
    ("rbdc_req", 32),    # RBDC requested in this superframe, slots per superframe x 256
    ("vbdc_req", 16),    # VBDC requested in this superframe, slots
    ("bg", 16),          # slots the other terminals took (background demand served)
    ("g_cra", 16),       # slots granted for this superframe, by type
    ("g_rbdc", 16),
    ("g_vbdc", 16),
    ("g_fca", 16),
    ("used", 16),        # granted slots that carried at least one byte
    ("terminal", 16),    # whose record it is (docs/bod.md, "Terminals"; 0: the only one)
    ("backlog", 32),     # bytes queued (frame + overhead, not yet sent) at the superframe's start
]
BOD_RECORD_WORDS = sum(w for _, w in BOD_RECORD) // 32

LIVE_FIELDS = [
    Field("tstat", 64, "live", "the terminal counter tstat_sel names, as it is when selected"),
    Field("bod_count", 32, "live", "superframes recorded since the BoD block (re)started"),
    Field("bod_start", 64, "live", "cycle superframe 0 began (the cycle after the layout commit)"),
    Field("bod_rec", 32 * BOD_RECORD_WORDS, "live", "record of superframe bod_sel (BOD_RECORD)"),
]


# The frame log (a channel built with ``ChannelParams.frame_log``): the channel writes a record
# of every frame it decides and of every frame it starts to send into a ring of 2^bits records
# in memory (satemu.model.framelog, docs/architecture.md "The frame log"). Written and read as
# they are; a channel without the log reads them as 0.
LOG_CLEAR = 1 << 5       # LOG_CTL: zero log_count and log_lost (the ring starts afresh)
LOG_FIELDS = [
    Field("log_base", 32, "ctl", "the log ring's first word in memory (its 2^bits records, "
                                 "two words each, follow)"),
    Field("log_ctl", 6, "ctl", "bits 4..0: the ring holds 2^bits records (0: no log); "
                               "bit 5 CLEAR, a strobe"),
    Field("log_count", 64, "live", "records the memory has taken since the last CLEAR"),
    Field("log_lost", 32, "live", "records lost since the last CLEAR (the log's buffer full)"),
]


def _layout(groups):
    out, offset = {}, 0
    for fields in groups:
        for f in fields:
            out[f.name] = Field(f.name, f.width, f.kind, f.doc, offset)
            offset += f.words
    return out


REGMAP: dict[str, Field] = _layout([CFG_FIELDS, CTL_FIELDS, STAT_FIELDS, LIVE_FIELDS,
                                     LOG_FIELDS])
# The terminal window: terminal ``term_sel``'s fields (satemu.base.terminals.TERMINAL_FIELDS, a
# word each, the 48-bit key two) at TERM_WINDOW + TERM_OFFSETS[name], written into the shadow
# table like any profile field (and staged and applied with it by COMMIT).
TERM_WINDOW = 0xC0
TERM_OFFSETS: dict[str, int] = {}
_at = 0
for _name, _width, _ in TERMINAL_FIELDS:
    TERM_OFFSETS[_name] = _at
    _at += (_width + 31) // 32
TERM_WORDS = _at
REG_WORDS = max(f.offset + f.words for f in REGMAP.values())
assert REG_WORDS <= TERM_WINDOW

# On a SoC's bus the channels' registers sit in windows of WINDOW_BYTES, one word a register:
# window 0 is the forward channel's, window 1 the return channel's, and a write to window
# WINDOW_BOTH reaches both channels in the same cycle (how COMMIT and STATS act on both at once).
WINDOW_BYTES = 0x400
WINDOW_BOTH = 2
ADDR_BITS = 8               # the register bus's word address (RegBusSignature)
assert REG_WORDS <= 1 << ADDR_BITS <= WINDOW_BYTES // 4
CFG_FIELDS = [REGMAP[f.name] for f in CFG_FIELDS]
CTL_FIELDS = [REGMAP[f.name] for f in CTL_FIELDS]
STAT_FIELDS = [REGMAP[f.name] for f in STAT_FIELDS]
LIVE_FIELDS = [REGMAP[f.name] for f in LIVE_FIELDS]
LOG_FIELDS = [REGMAP[f.name] for f in LOG_FIELDS]
BOD_FIELDS = [REGMAP[f.name] for f in BOD_FIELDS]
# The fields a commit takes only with COMMIT_LAYOUT, and only while the delay line is empty: the
# memory region, and the BoD block's flags and request-to-grant latency (the block restarts when
# they change). The gateware keeps the old values of a layout commit it cannot take (STATUS bit
# 1); the firmware commits with COMMIT_LAYOUT only when one of them changes, and refuses such a
# commit while frames are stored (docs/architecture.md, "Commits and sessions"). The other BoD
# fields apply at the block's first superframe after the commit (docs/bod.md, "Changing the
# settings").
LAYOUT_FIELDS = frozenset({"mem_base", "mem_size", "bod_flags", "bod_latency",
                           *(f.name for f in TERM_FIELDS)})
