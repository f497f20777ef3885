# SPDX-License-Identifier: BSD-2-Clause
"""The host–firmware protocol, declared once: framing constants, opcodes, status codes, messages.

The C side (firmware) gets a header generated from this module (``satemu.base.gen_c``); both sides are
checked against the committed vectors in ``tests/vectors/protocol.json``.

Wire format of one frame, in both directions::

    COBS( seq u8 | op u8 | length u16 LE | payload[length] | crc16 u16 LE ) 0x00

* COBS removes every zero byte, so 0x00 only ever ends a frame: a receiver that sees garbage
  resynchronises at the next zero. Senders put a 0x00 before every frame as well, so that a
  partial frame left at the receiver (a host that died mid-frame, line noise) is discarded
  instead of corrupting the next one.
* ``crc16`` is CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, no final xor) over
  seq, op, length and payload.
* ``length`` must equal the payload's size: a frame cut short is recognised even when its CRC
  happens to match.
* A request carries an opcode below 0x80; its response carries ``op | 0x80``, the same ``seq``,
  and a payload that starts with a status byte.
"""

from __future__ import annotations

import enum
import struct

from satemu.base.records import RECORD_WORDS as LOG_RECORD_WORDS
from satemu.base.records import BodRecord, unpack_record
from satemu.base.params import TERMINAL_COUNTERS
from satemu.base.regmap import BOD_RECORD_WORDS, CFG_FIELDS, COUNTERS, GAUGES
from satemu.base.terminals import TERMINAL_FIELDS

PROTOCOL_VERSION = 16
MAX_PAYLOAD = 512
HEADER_BYTES = 4          # seq, op, length
CRC_BYTES = 2
MAX_FRAME = HEADER_BYTES + MAX_PAYLOAD + CRC_BYTES
MAX_ENCODED = MAX_FRAME + (MAX_FRAME + 253) // 254 + 1   # COBS worst case plus the delimiter
RESPONSE_BIT = 0x80


class Op(enum.IntEnum):
    """Request opcodes. The response to each is ``op | RESPONSE_BIT``."""
    HELLO = 0x01          # payload: host protocol version u16 → version, capabilities, hardware
    GET_PROFILE = 0x02    # payload: channel u8, which u8 (PROFILE_*) → that profile's fields
    SET_PROFILE = 0x03    # payload: channel u8, generation u32, every profile field u64 → status
    COMMIT = 0x04         # payload: flags u8 (COMMIT_RESEED), generation u32 → status, result
    GET_STATS = 0x05      # payload: channel u8 → STATS_FIELDS, u64 each
    RESET_STATS = 0x06    # payload: none → status; clears both channels at once
    BOD_TRACE = 0x07      # payload: BOD_TRACE_REQUEST → BOD_TRACE_HEAD, then n BoD records
    LINK_STATS = 0x08     # payload: none → LINK_STATS_FIELDS, u32 each: the control link's
    READ_LOG = 0x09       # payload: READ_LOG_REQUEST → READ_LOG_HEAD, then n frame-log records
    CLEAR_LOG = 0x0A      # payload: none → status; clears both channels' frame logs at once
    TIMELINE_WRITE = 0x0B     # payload: TIMELINE_WRITE_REQUEST, then n entries → status
    TIMELINE_START = 0x0C     # payload: TIMELINE_START_REQUEST → status
    TIMELINE_STOP = 0x0D      # payload: none → status; the profile in force stays
    TIMELINE_STATUS = 0x0E    # payload: none → TIMELINE_STATE
    TERMINAL_SET = 0x0F       # payload: TERMINAL_SET_REQUEST → status
    LEVEL_SET = 0x10          # payload: LEVEL_SET_REQUEST → status
    TERMINAL_STATS = 0x11     # payload: channel u8, terminal u8 → TERMINAL_STATS
    JITTER_SET = 0x12         # payload: JITTER_SET_REQUEST → status


class Status(enum.IntEnum):
    """First payload byte of every response."""
    OK = 0
    BAD_LENGTH = 1        # the payload's length does not fit the opcode
    BAD_OPCODE = 2        # no such request
    BAD_CHANNEL = 3       # channel is not 0 (forward) or 1 (return)
    BAD_FIELD = 4         # + field index u8, value u64, min u64, max u64
    BUSY = 5              # a commit is still pending in the gateware
    BAD_VERSION = 6       # + the firmware's protocol version u16
    BUDGET = 7            # + words needed u64, words available u64: the delay line cannot hold it
    NO_BOD = 8            # the channel has no Bandwidth-on-Demand block
    THROUGHPUT = 9        # + words per 65536 cycles needed u64, guaranteed u64: DRAM too slow
    INCOMPLETE = 10       # + each channel's staged generation u32: COMMIT of a load not staged
    LAYOUT_BUSY = 11      # + channel mask u8: BoD settings change while those hold frames
    PENDING = 12          # + channel mask u8: committed, but those channels' BoD part not yet
    NO_LOG = 13           # the channel (READ_LOG) or the box (CLEAR_LOG) has no frame log
    NO_TIMELINE = 14      # the box has no timeline store
    TIMELINE_BAD = 15     # + TIMELINE_FAULT_DETAIL: the timeline (or this write) cannot run
    RUNNING = 16          # a timeline is running: TIMELINE_STOP first
    TERMINAL_BAD = 17     # + TERMINAL_BAD_DETAIL: the load's terminal table cannot run
    NO_JITTER = 18        # the box's channels have no jitter block
    JITTER_BAD = 19       # + JITTER_BAD_DETAIL: JITTER_SET cannot write those entries


class Capability(enum.IntFlag):
    CHANNELS = 1 << 0     # two link channels (forward, return)
    BOD = 1 << 1          # some channel (on the SoC: the return channel) has a BoD block
    FRAME_LOG = 1 << 2    # the channels have a frame log (READ_LOG, CLEAR_LOG)
    TIMELINE = 1 << 3     # the box runs timelines (TIMELINE_*)
    TERMINALS = 1 << 4    # the channels tell terminals apart (TERMINAL_*, LEVEL_SET)
    JITTER = 1 << 5       # the channels have jitter (JITTER_SET)


class Impairment(enum.IntFlag):
    """The impairments a box's channels have besides loss, queue, rate, delay and jitter (build
    options, satemu.base.params.ChannelParams): the ``impairments`` limit's bits."""
    CORRUPT = 1 << 0      # a bit flipped in a share of frames (satemu_gw.corrupt)
    DUPLICATE = 1 << 1    # a share of frames sent twice (satemu_gw.duplicate)
    ECN = 1 << 2          # ECN-capable packets marked CE by a step (satemu_gw.ecnparse, ecnmark)


CHANNEL_FORWARD, CHANNEL_RETURN = 0, 1
CHANNEL_NAMES = ("forward", "return")       # by channel number

# The box's limits, as its firmware holds them (the generated ``struct satemu_limits``) and as
# HELLO reports them, in this order after the version (u16) and the capabilities (u32): the
# field and its ``struct`` format. ``queue_depth``: the queue's cap in frames on a channel of
# ``spill_mask``, a bit per channel whose queue may outgrow the chip (its departure times then
# spill to a ring in memory, and each frame costs a word more of delay-line traffic);
# ``queue_fifo``: the departure times held on chip, the cap of any queue on a channel outside
# ``spill_mask`` where ``delta_queue`` is 0; ``bod_queue``: the cap of a queue the BoD block
# serves (its own FIFO, on chip); ``delta_queue``: where not 0, the cap of any queue on a
# channel outside ``spill_mask``, which holds its departure times on chip as distances (a
# frame's serialisation and a BoD slot then take under 2^23 and 2^22 cycles,
# satemu.model.depdelta);
# ``mem_words``: delay-line words per channel;
# ``mem_wpc_forward``, ``mem_wpc_return``: the delay-line throughput each channel is
# guaranteed while the other takes its own, in 64-bit words per 65536 cycles (0: not limited);
# ``log_records``: the records each channel's frame-log ring holds, a power of two (0: no frame
# log); ``timeline_entries``: the entries its timeline store holds (0: no timelines);
# ``terminals``: the terminals with frames each channel tells apart, ``synthetic``: the synthetic
# ones a BoD channel serves besides, ``demand_levels``: its level table's entries (0, 0, 0: no
# terminals; satemu.base.terminals); ``jitter_table``: the entries of each bank of the
# channels' jitter tables (0: no jitter; satemu.model.jitter); ``impairments``: the other
# impairments the channels have, a bit each (Impairment).
# ``satemu.base.hardware.Hardware`` is the host's view of them.
LIMIT_FIELDS = (("f_clk", "I"), ("queue_depth", "H"), ("queue_fifo", "H"), ("spill_mask", "H"),
                ("bod_queue", "H"), ("delta_queue", "H"),
                ("max_frame", "H"), ("latency_floor", "I"), ("mem_words", "I"),
                ("port_bps", "Q"), ("mem_wpc_forward", "I"), ("mem_wpc_return", "I"),
                ("log_records", "I"), ("timeline_entries", "I"), ("terminals", "B"),
                ("synthetic", "B"), ("demand_levels", "H"), ("jitter_table", "H"),
                ("impairments", "H"))
# HELLO's request: the host's protocol version (u16).
HELLO_REQUEST = struct.Struct("<H")
# HELLO's answer after the status byte.
HELLO_RESPONSE = struct.Struct("<HI" + "".join(fmt for _, fmt in LIMIT_FIELDS))
HELLO_FIELDS = ("version", "capabilities") + tuple(name for name, _ in LIMIT_FIELDS)


class ProtocolError(Exception):
    """A frame that cannot be decoded, or a response that does not fit its request."""


def crc16(data: bytes, crc: int = 0xFFFF) -> int:
    """CRC-16/CCITT-FALSE; crc16(b"123456789") == 0x29B1."""
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def cobs_encode(data: bytes) -> bytes:
    """Consistent Overhead Byte Stuffing, without the trailing delimiter. Data that ends exactly
    with a full 254-byte block gets no empty block after it (the usual form)."""
    out = bytearray()
    block = bytearray()
    full = False                     # the last code written was a full block's 0xFF
    for byte in data:
        if byte == 0:
            out.append(len(block) + 1)
            out += block
            block.clear()
            full = False
        else:
            block.append(byte)
            if len(block) == 254:
                out.append(255)
                out += block
                block.clear()
                full = True
    if block or not full:
        out.append(len(block) + 1)
        out += block
    return bytes(out)


class OverlongError(ProtocolError):
    """A frame that decodes to more than the buffer may hold."""


def cobs_decode(data: bytes, cap: int | None = None) -> bytes:
    """Inverse of :func:`cobs_encode`. Raises ProtocolError on a malformed block and
    OverlongError once the output would exceed ``cap`` bytes, checking in the same order as the
    firmware's decoder, so both classify every input alike."""
    out = bytearray()
    i = 0
    cap = len(data) if cap is None else cap
    while i < len(data):
        code = data[i]
        if code == 0 or i + code > len(data):
            raise ProtocolError("malformed COBS block")
        for byte in data[i + 1:i + code]:
            if byte == 0:
                raise ProtocolError("zero byte inside a COBS frame")
            if len(out) >= cap:
                raise OverlongError("frame too long")
            out.append(byte)
        i += code
        if code != 255 and i < len(data):
            if len(out) >= cap:
                raise OverlongError("frame too long")
            out.append(0)
    return bytes(out)


def encode_frame(seq: int, op: int, payload: bytes = b"") -> bytes:
    """One frame on the wire, delimiter included."""
    if len(payload) > MAX_PAYLOAD:
        raise ProtocolError(f"payload of {len(payload)} bytes exceeds {MAX_PAYLOAD}")
    body = struct.pack("<BBH", seq & 0xFF, op & 0xFF, len(payload)) + payload
    return cobs_encode(body + struct.pack("<H", crc16(body))) + b"\0"


class Deframer:
    """Turns a byte stream into frames. Never raises on input: whatever cannot be a frame is
    counted and skipped, and decoding resynchronises at the next delimiter."""

    def __init__(self):
        self.buf = bytearray()
        self.overflow = False
        self.errors = dict.fromkeys(LINK_STATS_FIELDS[1:], 0)

    def feed(self, data: bytes) -> list[tuple[int, int, bytes]]:
        """Returns the (seq, op, payload) of every complete, valid frame in ``data``."""
        frames = []
        for byte in data:
            if byte != 0:
                if len(self.buf) < MAX_ENCODED:
                    self.buf.append(byte)
                else:
                    self.overflow = True
                continue
            raw, overflow = bytes(self.buf), self.overflow
            self.buf.clear()
            self.overflow = False
            if overflow:
                self.errors["overlong"] += 1
            elif raw:
                frame = self._decode(raw)
                if frame is not None:
                    frames.append(frame)
        return frames

    def _decode(self, raw: bytes):
        try:
            body = cobs_decode(raw, MAX_FRAME)
        except OverlongError:
            self.errors["overlong"] += 1
            return None
        except ProtocolError:
            self.errors["cobs"] += 1
            return None
        if len(body) < HEADER_BYTES + CRC_BYTES:
            self.errors["short"] += 1
            return None
        seq, op, length = struct.unpack_from("<BBH", body)
        if length != len(body) - HEADER_BYTES - CRC_BYTES:
            self.errors["length"] += 1
            return None
        if crc16(body[:-CRC_BYTES]) != struct.unpack_from("<H", body, len(body) - CRC_BYTES)[0]:
            self.errors["crc"] += 1
            return None
        return seq, op, bytes(body[HEADER_BYTES:-CRC_BYTES])


# ---------------------------------------------------------------------------------------------
# Message payloads. Integers are little-endian.


# The profile fields a host sends, in this order, each as u64. The memory region (mem_base,
# mem_size) is not among them: the firmware owns the memory layout.
PROFILE_FIELDS = [f for f in CFG_FIELDS if f.name not in ("mem_base", "mem_size")]
PROFILE = struct.Struct("<" + "Q" * len(PROFILE_FIELDS))
# channel, the load's generation, the fields
SET_PROFILE_REQUEST = struct.Struct("<BI" + "Q" * len(PROFILE_FIELDS))
# GET_PROFILE's request: a channel and which of its profiles: the staged one (the shadow
# registers, as the last SET_PROFILE left them) or the one in force (the last commit's).
GET_PROFILE_REQUEST = struct.Struct("<BB")
PROFILE_STAGED, PROFILE_IN_FORCE = 0, 1
# COMMIT's request: flags (COMMIT_RESEED; the firmware adds APPLY, and LAYOUT when needed) and
# the generation both channels must have been staged with. A load picks a random non-zero
# generation; SET_PROFILE stages a channel with it, a refused SET_PROFILE unstages the channel.
COMMIT_REQUEST = struct.Struct("<BI")
# COMMIT's answer after an OK status: whether it applied the load now or found it in force
# already (a retried COMMIT).
COMMIT_APPLIED, COMMIT_ALREADY = 0, 1
COMMIT_RESULT = struct.Struct("<B")
INCOMPLETE_DETAIL = struct.Struct("<II")        # each channel's staged generation (0: none)
CHANNEL_MASK_DETAIL = struct.Struct("<B")       # LAYOUT_BUSY's and PENDING's channels, a bit each
BAD_FIELD_DETAIL = struct.Struct("<BQQQ")       # field index, value, min, max
BUDGET_DETAIL = struct.Struct("<QQ")            # words needed, words available
THROUGHPUT_DETAIL = struct.Struct("<QQ")        # words per 65536 cycles needed, guaranteed
# Counters of the channel's ingress port kept outside the channel (the MAC's), after the channel's.
PORT_COUNTERS = ["drop_preamble"]   # frames the MAC discarded: no valid preamble and SFD
STATS_FIELDS = COUNTERS + GAUGES + PORT_COUNTERS
STATS = struct.Struct("<" + "Q" * len(STATS_FIELDS))

# BOD_TRACE: the per-superframe records of a channel's BoD statistics ring (satemu.base.regmap
# BOD_RECORD). The ring holds the last ``ring`` superframes (ChannelParams.bod_ring); the answer
# starts at the requested superframe or at the oldest one still held, whichever is later, and
# carries as many records as were asked for, exist and fit the payload. Each record is the
# BOD_RECORD_WORDS words of ``bod_rec`` as read after writing the superframe to ``bod_sel``. A
# record overwritten while it was read carries a later ``sf``: the host checks it. The head
# carries ``bod_start``, the cycle superframe 0 began, so superframe ``sf`` began at cycle
# start + sf x bod_slots x bod_slot_cycles; a different start between answers means the block
# restarted (a layout commit) in between.
BOD_TRACE_REQUEST = struct.Struct("<BIB")       # channel, first superframe, max records
BOD_TRACE_HEAD = struct.Struct("<IQIB")         # bod_count, bod_start, first superframe returned, n
BOD_RECORD_BYTES = 4 * BOD_RECORD_WORDS

# READ_LOG: records of a channel's frame log (satemu.model.framelog), which the channel writes
# into a ring of ``ring`` (LIMIT_FIELDS' log_records) records in the DRAM. Records are numbered
# from 0 since the log's last clear (CLEAR_LOG, and the firmware's start); record n sits in slot
# n mod ring and carries the lap (n div ring) mod 2^10. The head carries ``log_count`` (records
# the memory has taken since the clear) and ``log_lost`` (records lost: the log's buffer was
# full). The answer starts at the requested record or at the oldest one the ring still holds
# (``log_count - ring``), whichever is later, and carries as many records as were asked for,
# exist and fit the payload, each its two 64-bit words. The firmware reads a record's word 1,
# then word 0, then word 1 again: when the two reads of word 1 differ (the channel overwrote the
# slot meanwhile) it sends word 1 as 0, which is not a record (its ``valid`` bit is 0), and the
# host counts it stale. A slot overwritten between the count's read and the record's (its lap
# is a later one) the host tells by the lap, and counts stale too.
READ_LOG_REQUEST = struct.Struct("<BQB")       # channel, first record, max records
READ_LOG_HEAD = struct.Struct("<QIQB")         # log_count, log_lost, first record returned, n
LOG_RECORD = struct.Struct("<" + "Q" * LOG_RECORD_WORDS)    # word 0, word 1
LOG_RECORD_BYTES = LOG_RECORD.size

# Timelines (docs/architecture.md, "Timelines"). The box holds up to ``timeline_entries``
# entries (LIMIT_FIELDS) in its DRAM; an entry sets one profile field of one channel at a cycle
# offset from the timeline's start, and the entries with the same offset are one step, which
# the firmware stages on the profile in force and commits named for its cycle (COMMIT_AT), so
# that it applies to every frame that arrives after that cycle. Entries are sorted by offset.
# A step may change any profile field but the seed and the layout fields (the memory region,
# the BoD settings). TIMELINE_WRITE stores n entries from entry ``first``; TIMELINE_START runs
# the first ``entries`` of them with offset 0 at cycle ``start``, again every ``period`` cycles
# (0: once); while one runs, SET_PROFILE, COMMIT, TIMELINE_WRITE and TIMELINE_START answer
# RUNNING. Started while a load is staged whole (SET_PROFILE on both channels under one
# generation), it is ARMED for that load instead: the COMMIT that applies the load starts it,
# so that a host that dies between the two leaves the old profile, or the new one with its
# timeline (``Device.load(timeline=...)``); a SET_PROFILE or TIMELINE_STOP disarms it, and
# TIMELINE_WRITE and TIMELINE_START answer RUNNING meanwhile.
TIMELINE_ENTRY = struct.Struct("<QQ")           # offset (cycles), channel << 56 | field << 48 | value
TIMELINE_VALUE_BITS = 48
TIMELINE_WRITE_HEAD = struct.Struct("<IB")      # first entry, n entries (1..TIMELINE_WRITE_MAX)
TIMELINE_WRITE_MAX = (MAX_PAYLOAD - TIMELINE_WRITE_HEAD.size) // TIMELINE_ENTRY.size
# TIMELINE_WRITE's request: the head, then TIMELINE_WRITE_MAX entries, of which the first n count
# (the rest are zero): one length for every write.
TIMELINE_WRITE_REQUEST = struct.Struct(TIMELINE_WRITE_HEAD.format
                                       + "QQ" * TIMELINE_WRITE_MAX)
TIMELINE_START_REQUEST = struct.Struct("<IQQ")  # entries, start cycle, period (0: once)
# The farthest start TIMELINE_START takes: a day of box time ahead of its cycle.
TIMELINE_AHEAD_MAX_S = 86_400
# The firmware holds each step, staged, until its cycle is f_clk / TIMELINE_LEAD_DIVISOR cycles
# (a tenth of a second) ahead, and only then commits it (COMMIT_AT): TIMELINE_STOP drops a step
# held, so after a stop the box takes at most that long to take the step committed, and a later
# load waits no longer. The lead is above what any request a running timeline answers takes on
# the slowest CPU, so that no step goes late for it.
TIMELINE_LEAD_DIVISOR = 10


class TimelineFault(enum.IntEnum):
    """Why a timeline (or a TIMELINE_WRITE) cannot run: TIMELINE_BAD's reason, and the one
    TIMELINE_STATUS reports for a timeline that stopped on a step."""
    NONE = 0
    BEYOND = 1            # the entries go beyond the store
    UNSORTED = 2          # an entry's offset is below the one before it
    FIELD = 3             # a channel or a field a step may not set (the seed, the layout)
    VALUE = 4             # a value wider than its field
    PERIOD = 5            # a period not above the last offset
    EMPTY = 6             # no entries
    PROFILE = 7           # a step's profile failed the checks (TIMELINE_STATE's ``verdict``)
    STEP = 8              # a step of more entries than both channels have fields
    AHEAD = 9             # a start over TIMELINE_AHEAD_MAX_S ahead, or a last step past 2^64


TIMELINE_FAULT_DETAIL = struct.Struct("<IB")    # the entry, the reason (TimelineFault)


class TimelineRun(enum.IntEnum):
    """TIMELINE_STATE's ``state``."""
    IDLE = 0              # none started (or stopped)
    RUNNING = 1
    DONE = 2              # its last step took effect, and it does not repeat
    FAILED = 3            # stopped on a step whose profile failed the checks
    ARMED = 4             # started with a load staged whole: runs once that load's COMMIT took


# TIMELINE_STATUS's answer after the status byte: the run's state, its entries, start and
# period; the next step's first entry and the laps begun; the steps that took effect, of which
# late (their cycle had passed when the firmware committed them: they took the commit's cycle);
# the cycle the step in force took effect at (0: none yet); the fault's entry, reason and the
# failed step's verdict status.
TIMELINE_STATE = struct.Struct("<BIQQIIIIQIBB")
TIMELINE_STATE_FIELDS = ("state", "entries", "start", "period", "next", "lap", "applied", "late",
                         "in_force_cycle", "fault_entry", "fault", "verdict")


def timeline_entry(offset: int, channel: int, field: int, value: int) -> bytes:
    """One entry as TIMELINE_WRITE carries it (and the box stores it: word 0, word 1)."""
    return TIMELINE_ENTRY.pack(offset, channel << 56 | field << 48 | value)


# Terminals (docs/bod.md, "Terminals"; satemu.base.terminals). A load with a terminal table
# stages, under its generation, each terminal's fields (TERMINAL_SET: a channel, the generation,
# the terminal's index and its TERMINAL_FIELDS, u64 each; after the channel's SET_PROFILE, which
# says how many terminals there are) and the level table (LEVEL_SET: a channel, the generation,
# the first entry, n, then LEVEL_SET_MAX entries of a rate u32 and a length u16, the first n
# counting). COMMIT applies the load only with every terminal and level staged under its
# generation, and checks the whole table first (satemu.base.validate.terminal_verdict and
# terminal_budget): TERMINAL_BAD with the terminal (or level) index u16, 0xFFFF for the table,
# the rule (TERMINAL_RULES' index) u8, value, min and max u64. TERMINAL_STATS gives a terminal's
# counters (TERMINAL_COUNTERS, u64 each, 64-bit counts since the last RESET_STATS), terminal
# 0xFF for the frames of no terminal's.
TERMINAL_SET_REQUEST = struct.Struct("<BIB" + "Q" * len(TERMINAL_FIELDS))
LEVEL_SET_MAX = 40
LEVEL_SET_HEAD = struct.Struct("<BIHB")         # channel, generation, first entry, n
LEVEL_SET_REQUEST = struct.Struct(LEVEL_SET_HEAD.format + "IH" * LEVEL_SET_MAX)
TERMINAL_STATS_REQUEST = struct.Struct("<BB")   # channel, terminal (NO_ONES: no one's)
TERMINAL_STATS = struct.Struct("<" + "Q" * len(TERMINAL_COUNTERS))
NO_ONES = 0xFF
TABLE_INDEX = 0xFFFF                            # TERMINAL_BAD's index: the table's own rule
TERMINAL_BAD_DETAIL = struct.Struct("<HBQQQ")   # index, rule, value, min, max
# The rules a terminal table can break, as TERMINAL_BAD names them (TerminalVerdict's fields).
# ("cra" is a terminal's field, and with TABLE_INDEX the sum of all terminals' CRA.)
TERMINAL_RULES = (*(name for name, _, _ in TERMINAL_FIELDS), "match", "terminals", "synthetic",
                  "unclassified", "levels", "level", "capacity", "budget",
                  "term_match", "term_framed", "term_synthetic", "term_unclassified")
assert len(set(TERMINAL_RULES)) == len(TERMINAL_RULES)


# JITTER_SET writes n entries (1..JITTER_SET_MAX) of a channel's jitter table bank from entry
# ``first``, at once (satemu.base.regmap: jit_sel, jit_val). It writes only a bank the profile
# in force does not draw from (jit_bank, with jit_sigma not 0), and nothing while a timeline
# runs (RUNNING, whose steps may name either bank) or a commit is being applied (BUSY): a host
# writes the other bank, then loads a profile that names it. JITTER_BAD says why not, with the
# bank: JitterFault.
JITTER_SET_MAX = 248
JITTER_SET_HEAD = struct.Struct("<BBHB")         # channel, bank, first entry, n
JITTER_SET_REQUEST = struct.Struct(JITTER_SET_HEAD.format + "h" * JITTER_SET_MAX)
JITTER_BAD_DETAIL = struct.Struct("<BB")         # the reason (JitterFault), the bank


class JitterFault(enum.IntEnum):
    RANGE = 1       # the bank is not 0 or 1, or the entries are not 1..JITTER_SET_MAX of the bank
    IN_FORCE = 2    # the profile in force draws its jitter from that bank


# LINK_STATS: the control link as the box sees it, since it started: the requests it answered,
# then what its deframer discarded, by cause (the Deframer's ``errors``, in this order).
LINK_STATS_FIELDS = ("requests", "cobs", "short", "length", "crc", "overlong")
LINK_STATS = struct.Struct("<" + "I" * len(LINK_STATS_FIELDS))

# Every request's payload, by opcode: HELLO the host's version; GET_PROFILE a channel and which
# profile; GET_STATS a channel; SET_PROFILE a channel, the generation and every profile field;
# COMMIT its flags and the generation; RESET_STATS, LINK_STATS, CLEAR_LOG, TIMELINE_STOP and
# TIMELINE_STATUS nothing; BOD_TRACE a channel, the first superframe and the most records;
# READ_LOG a channel, the first record and the most records; TIMELINE_WRITE the first entry, a
# count and the entries; TIMELINE_START the entries, the start cycle and the period. A channel, where a request has one (REQUEST_CHANNEL), comes first. The
# firmware's table of request lengths is generated from these (satemu.base.gen_c).
CHANNEL_REQUEST = struct.Struct("<B")
EMPTY_REQUEST = struct.Struct("<")
REQUESTS = {Op.HELLO: HELLO_REQUEST, Op.GET_PROFILE: GET_PROFILE_REQUEST,
            Op.SET_PROFILE: SET_PROFILE_REQUEST, Op.COMMIT: COMMIT_REQUEST,
            Op.GET_STATS: CHANNEL_REQUEST, Op.RESET_STATS: EMPTY_REQUEST,
            Op.BOD_TRACE: BOD_TRACE_REQUEST, Op.LINK_STATS: EMPTY_REQUEST,
            Op.READ_LOG: READ_LOG_REQUEST, Op.CLEAR_LOG: EMPTY_REQUEST,
            Op.TIMELINE_WRITE: TIMELINE_WRITE_REQUEST, Op.TIMELINE_START: TIMELINE_START_REQUEST,
            Op.TIMELINE_STOP: EMPTY_REQUEST, Op.TIMELINE_STATUS: EMPTY_REQUEST,
            Op.TERMINAL_SET: TERMINAL_SET_REQUEST, Op.LEVEL_SET: LEVEL_SET_REQUEST,
            Op.TERMINAL_STATS: TERMINAL_STATS_REQUEST, Op.JITTER_SET: JITTER_SET_REQUEST}
REQUEST_CHANNEL = frozenset({Op.GET_PROFILE, Op.SET_PROFILE, Op.GET_STATS, Op.BOD_TRACE,
                             Op.READ_LOG, Op.TERMINAL_SET, Op.LEVEL_SET, Op.TERMINAL_STATS,
                             Op.JITTER_SET})
assert set(REQUESTS) == set(Op)
BOD_TRACE_MAX = (MAX_PAYLOAD - 1 - BOD_TRACE_HEAD.size) // BOD_RECORD_BYTES   # records per answer
READ_LOG_MAX = (MAX_PAYLOAD - 1 - READ_LOG_HEAD.size) // LOG_RECORD_BYTES     # records per answer


def hello_answer(request: bytes, limits: dict[str, int], bod_mask: int) -> bytes:
    """The firmware's answer (status byte first) to the HELLO request payload ``request``, from a
    box whose limits are ``limits`` (the values of ``LIMIT_FIELDS``) and whose channels with a
    BoD block are the bits of ``bod_mask``: the reference for the shared vectors. Any version
    but ours is answered BAD_VERSION, with the same body, so the host can say which it is. A
    box with a frame log (``log_records`` not 0) announces FRAME_LOG, one with a timeline store
    (``timeline_entries`` not 0) TIMELINE."""
    if len(request) != HELLO_REQUEST.size:
        return bytes([Status.BAD_LENGTH])
    (version,) = HELLO_REQUEST.unpack(request)
    caps = (Capability.CHANNELS | (Capability.BOD if bod_mask else 0)
            | (Capability.FRAME_LOG if limits["log_records"] else 0)
            | (Capability.TIMELINE if limits["timeline_entries"] else 0)
            | (Capability.TERMINALS if limits.get("terminals") else 0)
            | (Capability.JITTER if limits.get("jitter_table") else 0))
    status = Status.OK if version == PROTOCOL_VERSION else Status.BAD_VERSION
    return bytes([status]) + HELLO_RESPONSE.pack(PROTOCOL_VERSION, caps,
                                                 *(limits[name] for name, _ in LIMIT_FIELDS))


def bod_trace_window(count: int, ring: int, first: int, max_records: int) -> tuple[int, int]:
    """(first superframe, number of records) the firmware answers a BOD_TRACE request with, when
    ``count`` superframes have been recorded into a ring of depth ``ring``."""
    first = max(first, count - ring)
    return first, max(0, min(max_records, count - first, BOD_TRACE_MAX))


def bod_trace_answer(request: bytes, bod_mask: int, ring: int, count, start,
                     read_record) -> bytes:
    """The firmware's answer (status byte first) to the BOD_TRACE request payload ``request``:
    the reference for the shared vectors and for fakes of a box. ``bod_mask`` has a bit per
    channel with a BoD block, ``count(channel)`` reads its ``bod_count``, ``start(channel)`` its
    ``bod_start`` and ``read_record(channel, sf)`` the record words the ring holds for
    superframe ``sf``."""
    if len(request) != BOD_TRACE_REQUEST.size:
        return bytes([Status.BAD_LENGTH])
    channel, first, max_records = BOD_TRACE_REQUEST.unpack(request)
    if channel > CHANNEL_RETURN:
        return bytes([Status.BAD_CHANNEL])
    if not bod_mask >> channel & 1:
        return bytes([Status.NO_BOD])
    recorded, began = count(channel), start(channel)
    first, n = bod_trace_window(recorded, ring, first, max_records)
    words = [w for i in range(n) for w in read_record(channel, first + i)]
    return (bytes([Status.OK]) + BOD_TRACE_HEAD.pack(recorded, began, first, n)
            + struct.pack(f"<{len(words)}I", *words))


def decode_bod_trace(rest: bytes) -> tuple[int, int, int, list[BodRecord]]:
    """(bod_count, bod_start, first superframe, records) from a BOD_TRACE answer after its
    status byte."""
    if len(rest) < BOD_TRACE_HEAD.size:
        raise ProtocolError(f"BOD_TRACE answer of {len(rest)} bytes is too short")
    count, start, first, n = BOD_TRACE_HEAD.unpack_from(rest)
    if len(rest) != BOD_TRACE_HEAD.size + n * BOD_RECORD_BYTES:
        raise ProtocolError(f"BOD_TRACE answer of {len(rest)} bytes does not hold {n} records")
    records = []
    for i in range(n):
        at = BOD_TRACE_HEAD.size + i * BOD_RECORD_BYTES
        records.append(unpack_record(int.from_bytes(rest[at:at + BOD_RECORD_BYTES], "little")))
    return count, start, first, records


def read_log_window(count: int, ring: int, first: int, max_records: int) -> tuple[int, int]:
    """(first record, number of records) the firmware answers a READ_LOG request with, when the
    log's memory has taken ``count`` records into a ring of ``ring`` records."""
    first = max(first, count - ring)
    return first, max(0, min(max_records, count - first, READ_LOG_MAX))


def read_log_answer(request: bytes, log_records, count, lost, read_words) -> bytes:
    """The firmware's answer (status byte first) to the READ_LOG request payload ``request``:
    the reference for the shared vectors and for fakes of a box. ``log_records`` is the records
    each channel's ring holds (one number for both, or one per channel; 0: no log there),
    ``count(channel)`` reads its ``log_count``, ``lost(channel)`` its ``log_lost`` (in this
    order) and ``read_words(channel, n)`` gives record ``n``'s two words as the firmware sends
    them (word 1 as 0 where its two reads of it differed)."""
    if len(request) != READ_LOG_REQUEST.size:
        return bytes([Status.BAD_LENGTH])
    channel, first, max_records = READ_LOG_REQUEST.unpack(request)
    if channel > CHANNEL_RETURN:
        return bytes([Status.BAD_CHANNEL])
    ring = log_records if isinstance(log_records, int) else log_records[channel]
    if not ring:
        return bytes([Status.NO_LOG])
    recorded, dropped = count(channel), lost(channel)
    first, n = read_log_window(recorded, ring, first, max_records)
    out = bytearray([Status.OK]) + READ_LOG_HEAD.pack(recorded, dropped, first, n)
    for i in range(n):
        out += LOG_RECORD.pack(*read_words(channel, first + i))
    return bytes(out)


def clear_log_answer(request: bytes, log_records: int) -> bytes:
    """The firmware's answer to CLEAR_LOG on a box whose rings hold ``log_records`` records
    (0: no frame log): it clears both channels' logs in one write."""
    if len(request) != EMPTY_REQUEST.size:
        return bytes([Status.BAD_LENGTH])
    return bytes([Status.OK if log_records else Status.NO_LOG])


def decode_read_log(rest: bytes) -> tuple[int, int, int, list[tuple[int, int]]]:
    """(log_count, log_lost, first record, records as (word 0, word 1)) from a READ_LOG answer
    after its status byte."""
    if len(rest) < READ_LOG_HEAD.size:
        raise ProtocolError(f"READ_LOG answer of {len(rest)} bytes is too short")
    count, lost, first, n = READ_LOG_HEAD.unpack_from(rest)
    if len(rest) != READ_LOG_HEAD.size + n * LOG_RECORD_BYTES:
        raise ProtocolError(f"READ_LOG answer of {len(rest)} bytes does not hold {n} records")
    return count, lost, first, [LOG_RECORD.unpack_from(rest, READ_LOG_HEAD.size
                                                       + i * LOG_RECORD_BYTES)
                                for i in range(n)]
