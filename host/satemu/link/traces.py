# SPDX-License-Identifier: BSD-2-Clause
"""Link traces (Mahimahi delivery opportunities, CSV rows) read into timeline steps for one channel.

A trace becomes a :class:`Trace`: a tuple of :class:`TraceStep` (a time offset in seconds from
the trace's start and the channel fields set there) and the period after which it repeats. All
values are exact ``fractions.Fraction``: "rate" in bit/s (0 means no delivery at all, an
outage), "delay" in seconds, "loss" a probability in [0, 1).

Mahimahi traces (:func:`read_mahimahi`) list one delivery opportunity per line: a whole number
of milliseconds at which one packet of ``packet_bytes`` bytes may leave. The trace loops with a
period of its last timestamp, and a timestamp equal to the period is the first millisecond of
the next repetition (every timestamp is taken modulo the period).

**The conversion is not exact per opportunity.** The box's rate shaper expresses a rate, not a
list of departure instants, so the period is cut into windows of ``resolution`` seconds (the
last one shorter when the period is not a multiple of it) and each window becomes the mean rate
of the opportunities in it: opportunities x packet_bytes x 8 / window length. Within a window
the packets are spread evenly at that rate; bursts and gaps shorter than a window are lost, and
a window with no opportunity at all is an outage (rate 0). Consecutive windows of equal rate
merge into one step. A finer resolution follows the trace more closely, with more steps.

CSV traces (:func:`read_csv`) have a header naming ``time`` and at least one of ``rate``,
``delay``, ``loss`` (in any order), then a row per step: ``time`` in seconds (a bare number or
a time with units, "250 ms"), ``rate`` with units or a bare number of bit/s, ``delay`` a time
with units, ``loss`` a probability ("1%", "0.01"). An empty field leaves the value unchanged;
lines starting with ``#`` and blank lines are skipped. Times start at 0 and increase strictly;
the period is the last time plus the last interval between rows.

Every problem raises :class:`TraceError`, one line naming the trace and, where it applies, the
line number (from 1). Files over :data:`MAX_BYTES` bytes or :data:`MAX_LINES` lines are refused
before they are parsed, and a trace of more than :data:`MAX_STEPS` steps at the line that makes
one too many, before the rest is parsed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from satemu.base.boards import BOARDS
from satemu.base.units import (MAX_DIGITS, UnitError, check_magnitude, decimal_text,
    parse_probability, parse_rate, parse_time)

__all__ = ["TraceError", "TraceStep", "Trace", "MAX_BYTES", "MAX_LINES", "MAX_STEPS", "COLUMNS",
           "read_mahimahi", "read_csv", "read_trace"]

MAX_BYTES = 50_000_000      # a trace file's size, in bytes (50 MB)
MAX_LINES = 2_000_000       # a trace file's lines
# The most steps a trace may give: a timeline's (satemu.link.timeline.MAX_STEPS), the entries of the
# largest timeline store a board has, since each step sets one or more.
MAX_STEPS = max(board.timeline_entries for board in BOARDS.values())
COLUMNS = ("time", "rate", "delay", "loss")
_QUOTE = 40                 # characters of offending text quoted in a message

_WHOLE = re.compile(r"[0-9]+")
_BARE = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


class TraceError(ValueError):
    """One line: '<name>:<line number>: <what is wrong>' (or '<name>: ...' for whole-file
    problems)."""


@dataclass(frozen=True)
class TraceStep:
    """The channel fields set ``at`` seconds from the trace's start (only those it changes)."""
    at: Fraction
    changes: dict


@dataclass(frozen=True)
class Trace:
    """Steps from 0 on, strictly increasing in time, repeating every ``period`` seconds."""
    steps: tuple[TraceStep, ...]
    period: Fraction
    source: str


def _quote(text: str) -> str:
    """``text`` for a message, cut to at most ``_QUOTE`` characters, quoted on one line."""
    if len(text) > _QUOTE:
        text = text[:_QUOTE - 3] + "..."
    return repr(text)


def _label(name: str) -> str:
    """A trace's name as it can stand in a one-line message."""
    name = str(name)
    return name if name.isprintable() else repr(name)


def _check_size(text: str, name: str) -> list[str]:
    """``text``'s lines (split at "\\n") once its size and line count are within the limits."""
    if not isinstance(text, str):
        raise TypeError(f"a trace's text must be a str, got {type(text).__name__}")
    if len(text) > MAX_BYTES or (4 * len(text) > MAX_BYTES
                                 and len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES):
        raise TraceError(f"{name}: more than {MAX_BYTES:,} bytes; a trace may have at most "
                         f"{MAX_BYTES:,} bytes ({decimal_text(Fraction(MAX_BYTES, 10**6))} MB)")
    newlines = text.count("\n")
    lines = newlines + (1 if text and not text.endswith("\n") else 0)
    if lines > MAX_LINES:
        raise TraceError(f"{name}: {lines:,} lines; a trace may have at most {MAX_LINES:,}")
    return text.split("\n")


# --- Mahimahi ---------------------------------------------------------------------------------


def read_mahimahi(text: str, *, name: str, resolution: Fraction,
                  packet_bytes: int = 1500) -> Trace:
    """The rate steps of a Mahimahi delivery-opportunity trace, at ``resolution`` seconds (a
    positive whole number of milliseconds); see the module's note on what is lost."""
    name = _label(name)
    if isinstance(resolution, bool) or not isinstance(resolution, (int, Fraction)):
        raise TraceError(f"{name}: the resolution must be a Fraction of seconds, got "
                         f"{_quote(repr(resolution))}")
    res_ms = Fraction(resolution) * 1000
    if res_ms <= 0 or res_ms.denominator != 1:
        raise TraceError(f"{name}: resolution {decimal_text(Fraction(resolution))} s is not a "
                         f"positive whole number of milliseconds")
    res_ms = int(res_ms)
    if isinstance(packet_bytes, bool) or not isinstance(packet_bytes, int) or packet_bytes <= 0:
        raise TraceError(f"{name}: packet_bytes must be a positive whole number, got "
                         f"{_quote(repr(packet_bytes))}")
    try:
        check_magnitude(packet_bytes)
    except UnitError as e:
        raise TraceError(f"{name}: packet_bytes: {e}") from None
    lines = _check_size(text, name)

    last = len(lines)                           # lines[:last]: up to the last non-blank line
    while last and not lines[last - 1].strip():
        last -= 1
    if last == 0:
        raise TraceError(f"{name}: no delivery opportunities (the file is "
                         f"{'empty' if not text else 'only blank lines'})")

    # One pass, the steps made as the lines are read, so that a trace of more steps than a
    # timeline may have is refused at the line that makes one too many. Timestamps do not
    # decrease, so the windows come in order, each complete (of res_ms) once a later one
    # begins. Two things wait for the end: the period (the last timestamp), whose
    # opportunities count in window 0, and so window 0's rate (rest: the steps from window 1).
    bits, most = packet_bytes * 8, MAX_STEPS
    rest: list[tuple[int, int, int]] = []       # (window, opportunities, its length in ms)

    def too_many(where: str) -> TraceError:
        return TraceError(f"{where}: more than {most:,} steps at {res_ms} ms resolution; a "
                          f"timeline has at most {most:,} (the entries of a box's timeline "
                          f"store, one or more a step)")

    def step(window: int, count: int, length_ms: int = res_ms) -> None:
        if rest and rest[-1][1] * length_ms == count * rest[-1][2]:
            return                               # same rate as the window before: merged
        rest.append((window, count, length_ms))
        if len(rest) > most:                     # window 0's step merges at most one away
            raise too_many(f"{name}:{number}")

    first_count = 0                              # window 0's opportunities
    window, count, same = 0, 0, 0                # the window being counted; the run of `previous`
    previous = 0
    for number, line in enumerate(lines[:last], start=1):
        field = line.strip()
        if not field:
            raise TraceError(f"{name}:{number}: blank line inside the trace (only trailing "
                             f"blank lines are allowed)")
        if not _WHOLE.fullmatch(field):
            raise TraceError(f"{name}:{number}: {_quote(field)} is not a timestamp (a whole "
                             f"non-negative number of milliseconds)")
        if len(field) > MAX_DIGITS:
            raise TraceError(f"{name}:{number}: {_quote(field)} has more than {MAX_DIGITS} "
                             f"digits")
        try:
            stamp = check_magnitude(int(field))
        except UnitError as e:
            raise TraceError(f"{name}:{number}: {e}") from None
        if stamp < previous:
            raise TraceError(f"{name}:{number}: timestamp {stamp} ms is before the previous "
                             f"line's {previous} ms; timestamps must not decrease")
        same = same + 1 if number > 1 and stamp == previous else 1
        previous = stamp
        if stamp // res_ms != window:            # the window counted is complete
            if window == 0:
                first_count = count
            else:
                step(window, count)
            if stamp // res_ms > window + 1:
                step(window + 1, 0)              # windows without an opportunity: outage
            window, count = stamp // res_ms, 0
        count += 1

    period = previous
    if period == 0:
        raise TraceError(f"{name}: period of 0 ms: the last timestamp (line {last}) is 0, and "
                         f"a Mahimahi trace loops over its last timestamp")
    windows = -(-period // res_ms)               # the last one may be shorter
    # The last `same` opportunities, at the period, are the next repetition's first.
    if window == 0:
        first_count = count
    else:
        first_count += same
        if window < windows:                     # else it held only those at the period
            step(window, count - same, min(res_ms, period - window * res_ms))
    first = (0, first_count, min(res_ms, period))
    if rest and rest[0][1] * first[2] == first[1] * rest[0][2]:
        del rest[0]                              # window 1 merged into window 0
    steps = [TraceStep(at=Fraction(window * res_ms, 1000),
                       changes={"rate": Fraction(count * bits * 1000, length_ms)})
             for window, count, length_ms in [first] + rest]
    if len(steps) > most:
        raise too_many(name)

    source = (f"mahimahi trace {name}: {last:,} opportunities of {packet_bytes} bytes "
              f"over {decimal_text(Fraction(period, 1000))} s, converted to rate steps at "
              f"{res_ms} ms resolution (mean rate per window, {len(steps):,} steps)")
    return Trace(steps=tuple(steps), period=Fraction(period, 1000), source=source)


# --- CSV --------------------------------------------------------------------------------------


def _parse_field(column: str, field: str) -> Fraction:
    """The value of one non-empty CSV field of ``column``; UnitError or ValueError if bad."""
    if column == "time":
        return parse_time(f"{field} s" if _BARE.fullmatch(field) else field)
    if column == "rate":
        value = parse_rate(f"{field} bit/s" if _BARE.fullmatch(field) else field)
        if value < 0:
            raise ValueError(f"a rate must be 0 (an outage) or more, got {_quote(field)}")
        return value
    if column == "delay":
        value = parse_time(field)
        if value < 0:
            raise ValueError(f"a delay must be 0 or more, got {_quote(field)}")
        return value
    value = parse_probability(field)
    if not 0 <= value < 1:
        raise ValueError(f"a loss probability must be at least 0 and below 1 (100%), got "
                         f"{_quote(field)}")
    return value


def read_csv(text: str, *, name: str) -> Trace:
    """The steps of a CSV trace (header ``time`` plus any of ``rate``, ``delay``, ``loss``)."""
    name = _label(name)
    lines = _check_size(text, name)

    # The steps are made as the rows are read, so that a trace of more steps than a timeline
    # may have is refused at the row that makes one too many. A field written as the row
    # before wrote it holds its value: it is not parsed again.
    most = MAX_STEPS
    header: list[str] | None = None
    rows = 0
    last: tuple[int, Fraction] | None = None      # (line number, time) of the last row
    before: Fraction | None = None                # the time of the row before it
    written: dict[str, tuple[str, Fraction]] = {}  # column -> (field, value) of the last row
    steps: list[TraceStep] = []
    in_force: dict[str, Fraction] = {}
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if header is None:
            header = _read_header(line, name, number)
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != len(header):
            raise TraceError(f"{name}:{number}: {len(fields)} fields, but the header names "
                             f"{len(header)} ({','.join(header)})")
        values: dict[str, Fraction] = {}
        for column, field in zip(header, fields):
            if not field:
                if column == "time":
                    raise TraceError(f"{name}:{number}: the time is empty; every row needs one")
                if not rows:
                    raise TraceError(f"{name}:{number}: the first row leaves {column} empty; "
                                     f"it must set every column of the header")
                continue
            if column in written and written[column][0] == field:
                values[column] = written[column][1]
                continue
            try:
                values[column] = _parse_field(column, field)
            except ValueError as e:              # UnitError included
                raise TraceError(f"{name}:{number}: {column} {_quote(field)}: {e}") from None
            written[column] = (field, values[column])
        at = values.pop("time")
        if not rows and at != 0:
            raise TraceError(f"{name}:{number}: the first row's time is {decimal_text(at)} s; a "
                             f"trace starts at 0")
        if last is not None and at <= last[1]:
            raise TraceError(f"{name}:{number}: time {decimal_text(at)} s is not after "
                             f"{decimal_text(last[1])} s (line {last[0]}); times must "
                             f"increase strictly")
        rows += 1
        before, last = (last[1] if last else None), (number, at)
        changes = {k: v for k, v in values.items() if in_force.get(k) != v}
        if changes or not steps:
            steps.append(TraceStep(at=at, changes=changes))
            in_force.update(changes)
            if len(steps) > most:
                raise TraceError(f"{name}:{number}: more than {most:,} steps by this row; a "
                                 f"timeline has at most {most:,} (the entries of a box's "
                                 f"timeline store, one or more a step)")

    if header is None:
        raise TraceError(f"{name}: no header line; the first line must name the columns, such "
                         f"as 'time,rate,delay,loss'")
    if rows < 2:
        raise TraceError(f"{name}: {rows} data row{'' if rows == 1 else 's'}; a CSV "
                         f"trace needs at least 2 (its period is the last time plus the last "
                         f"interval)")

    period = 2 * last[1] - before
    source = (f"csv trace {name}: {rows:,} rows of {','.join(header)} over "
              f"{decimal_text(period)} s ({len(steps):,} steps)")
    return Trace(steps=tuple(steps), period=period, source=source)


def _read_header(line: str, name: str, number: int) -> list[str]:
    """The column names of a CSV header line, checked."""
    header = [f.strip() for f in line.split(",")]
    unknown = [c for c in header if c not in COLUMNS]
    if unknown:
        shown = ", ".join(_quote(c) for c in unknown)
        raise TraceError(f"{name}:{number}: unknown column{'s' if len(unknown) > 1 else ''} "
                         f"{shown} in the header; the columns are {', '.join(COLUMNS)} (the "
                         f"first line must name them)")
    repeated = sorted({c for c in header if header.count(c) > 1}, key=header.index)
    if repeated:
        raise TraceError(f"{name}:{number}: column{'s' if len(repeated) > 1 else ''} "
                         f"{', '.join(repeated)} named more than once in the header")
    if "time" not in header:
        raise TraceError(f"{name}:{number}: the header has no time column")
    if len(header) < 2:
        raise TraceError(f"{name}:{number}: the header names only time; add at least one of "
                         f"rate, delay, loss")
    return header


# --- files ------------------------------------------------------------------------------------


def read_trace(path: Path, *, resolution: Fraction | None = None) -> Trace:
    """The trace in file ``path``: CSV if its suffix is ".csv" (in any case), else Mahimahi,
    which needs ``resolution`` (seconds, a whole number of milliseconds)."""
    path = Path(path)
    name = _label(str(path))
    csv = path.suffix.lower() == ".csv"
    if not csv and resolution is None:
        raise TraceError(f"{name}: a Mahimahi trace needs a resolution (seconds, a whole "
                         f"number of milliseconds) to become rate steps")
    if "\0" in str(path):                        # open() would raise ValueError for it
        raise TraceError(f"{name}: a file name cannot hold a NUL byte")
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise TraceError(f"{name}: cannot be read: {e.strerror or e}") from None
    if len(data) > MAX_BYTES:
        raise TraceError(f"{name}: more than {MAX_BYTES:,} bytes; a trace may have at most "
                         f"{MAX_BYTES:,} bytes ({decimal_text(Fraction(MAX_BYTES, 10**6))} MB)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise TraceError(f"{name}:{line}: not UTF-8 text (byte {e.start})") from None
    if csv:
        return read_csv(text, name=name)
    return read_mahimahi(text, name=name, resolution=resolution)
