# SPDX-License-Identifier: BSD-2-Clause
"""Reference models of the delay line's blocks (writer, reader, egress, arbiter, skid buffer).

Each is written from the block's documented contract (its docstring in ``satemu_gw`` and
docs/architecture.md, "The channel pipeline", "Timing semantics", "The delay line in memory"),
not from its RTL, so that ``tests/gateware`` can check each block cycle by cycle on its own.
Nothing in the gateware imports this module.
"""

from collections import deque

from satemu.base.params import frame_beats, frame_words

WRAP48 = 1 << 48


def header_word(length: int, egress: int) -> int:
    """A frame's header word in memory: ``length`` (16 bits), then its egress cycle mod 2^48."""
    return (length & 0xFFFF) | (egress % WRAP48) << 16


def parse_header(word: int) -> tuple[int, int]:
    """``(length, egress)`` of a header word."""
    return word & 0xFFFF, (word >> 16) % WRAP48


def due(now: int, egress: int) -> bool:
    """Whether cycle ``now`` has reached ``egress``, compared wrap-safe on 48 bits (schedules
    up to 2^47 cycles ahead)."""
    return (now - egress) % WRAP48 < 1 << 47


def last_nbytes(length: int) -> int:
    """The bytes on a frame's last beat."""
    return length - 8 * (frame_beats(length) - 1)


class SkidModel:
    """The skid buffer: a queue of two places whose every output is registered. Its source
    offers the oldest payload taken in an earlier cycle; its sink is ready while a place is
    free, whatever the source's ready does this cycle."""

    def __init__(self):
        self.held: deque[int] = deque()

    @property
    def ready(self) -> bool:
        return len(self.held) < 2

    @property
    def valid(self) -> bool:
        return bool(self.held)

    @property
    def payload(self) -> int:
        return self.held[0]

    def step(self, taken: int | None, given: bool) -> None:
        """End a cycle: the source's head left if ``given``; ``taken`` (unless None) came in."""
        if given:
            self.held.popleft()
        if taken is not None:
            self.held.append(taken)


class ArbiterModel:
    """The memory command arbiter: of the streams offering, the spilling queue's reads first,
    then the reader's, then the writer's; but a command offered and not taken is offered
    again, before anything else, until the memory takes it."""

    ORDER = ("sp", "rd", "wr")

    def __init__(self):
        self.held: str | None = None

    def pick(self, valid: dict[str, bool]) -> str | None:
        """The stream whose command is on ``cmd`` this cycle, given which offer one."""
        if self.held is not None:
            return self.held
        return next((k for k in self.ORDER if valid.get(k)), None)

    def step(self, pick: str | None, taken: bool) -> None:
        self.held = pick if pick is not None and not taken else None


class ReadRouter:
    """Read data comes back in command order: each word goes to the stream whose read it
    answers."""

    def __init__(self):
        self.reads: deque[str] = deque()

    def issued(self, kind: str) -> None:
        self.reads.append(kind)

    def returned(self) -> str:
        return self.reads.popleft()


def writer_writes(decision: dict, beats: list[int], mem_base: int, mem_size: int,
                  addr_width: int) -> tuple[list, tuple | None]:
    """What the writer writes for one decision and the beats it takes from the ingress FIFO:
    ``(words, late_header)``. ``words`` are ``(addr, data, commits)`` in order: an admitted
    frame's header word at its offset, then its beats at the words after it (the region a
    ring of ``mem_size`` words); a BoD frame's beats only, counting for nothing until its
    header (``late_header``, written when the slot scheduler releases it) makes the whole
    frame readable; a discarded frame writes nothing. ``commits`` is how many words the
    memory's acceptance of that word's data adds to ``written``."""
    assert len(beats) == decision["stored"]
    if not decision["keep"]:
        return [], None
    mask = (1 << addr_width) - 1
    off = decision["offset"]

    def at(k):
        return (mem_base + (off + k) % mem_size) & mask
    bod = decision["bod"]
    head = header_word(decision["length"], decision["egress"])
    words = [] if bod else [(at(0), head, 1)]
    words += [(at(1 + k), b, 0 if bod else 1) for k, b in enumerate(beats)]
    late = (at(0), head, frame_words(decision["length"])) if bod else None
    return words, late


class EgressModel:
    """Egress: a frame starts in the first cycle in which its descriptor is there, ``now`` has
    reached its egress cycle and the port is idle (its previous frame's last beat has gone);
    its beats follow, one a cycle the sink takes. At the start its words are freed and it is
    counted (``tx_frames``, ``tx_bytes``, and ``late`` when it starts after its cycle);
    ``clear`` zeroes the counts up to and including its cycle. Counts read the cycle after."""

    COUNTERS = ("tx_frames", "tx_bytes", "late")

    def __init__(self, word_init: int = 0, counter_init: int = 0):
        self.freed = word_init
        self.counts = dict.fromkeys(self.COUNTERS, counter_init)
        self.frame: tuple[int, int] | None = None     # (length, egress) of the frame being sent
        self.sent = 0                                 # its beats gone

    def step(self, now: int, desc: tuple[int, int] | None, data: int | None,
             source_ready: bool, clear: bool) -> dict:
        """One cycle, given the descriptor and data beat offered (None: none) and the sink's
        ready: what egress shows this cycle, then the state it leaves."""
        out = {"started": 0, "source_valid": 0, "data_ready": 0, "desc_ready": 0}
        if self.frame is None and desc is not None and due(now, desc[1]):
            length, egress = self.frame = desc
            self.sent = 0
            late = (now % WRAP48) != egress
            out.update(started=1, start_length=length, start_late=int(late))
            self.freed = (self.freed + frame_words(length)) % (1 << 32)
            self.counts["tx_frames"] += 1
            self.counts["tx_bytes"] += length
            self.counts["late"] += late
        if self.frame is not None:
            length = self.frame[0]
            last = self.sent + 1 == frame_beats(length)
            out["data_ready"] = int(source_ready)
            if data is not None:
                out.update(source_valid=1, data=data, last=int(last),
                           nbytes=last_nbytes(length) if last else 8, err=0)
                if source_ready:
                    self.sent += 1
                    if last:
                        out["desc_ready"] = 1
                        self.frame = None
        for name in self.COUNTERS:
            self.counts[name] = 0 if clear else self.counts[name] % (1 << 64)
        return out
