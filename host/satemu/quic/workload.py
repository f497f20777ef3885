# SPDX-License-Identifier: BSD-2-Clause
"""What a flow's client asks of its server: a bulk download, objects fetched in sequence or in
parallel (as streams of one connection or as connections of their own), or an upload; and the
client's half of that application on any stack, with each object's times.

The application protocol is satemu.quic.bulk's (``BulkAnswers``): ``GET <size>\\n`` on a client
stream is answered with ``size`` bytes of ``payload_bytes`` and FIN; ``PUT <size>\\n`` and that
many bytes of it, then FIN, with ``OK <size>\\n`` and FIN. Every byte that arrives is checked.
With ``protocol = "h3"`` (aioquic only) the same requests travel as HTTP/3 messages
(satemu.quic.flows): ``:method`` GET or PUT, ``:path`` ``/<size>``, the bodies as DATA frames.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from satemu.base.units import UnitError, format_size, parse_size
from satemu.quic.bulk import payload_bytes, take_payload

__all__ = ["KINDS", "ORDERS", "OVER", "PROTOCOLS", "MAX_OBJECTS", "MAX_BYTES", "Workload",
           "Request", "ObjectTimes", "Requests", "FlowTimes", "parse_workload"]

KINDS = ("bulk", "objects", "upload")
ORDERS = ("sequence", "parallel")
OVER = ("streams", "connections")
PROTOCOLS = ("plain", "h3")     # the request line on a stream, or HTTP/3 messages
# A workload's objects at most (the QUIC-for-SATCOM mix has 31; both stacks allow 100 open
# bidirectional streams a connection), and its bytes in all (10 GiB: far beyond what a
# co-simulation moves in its time limit, and what one Python process can hold per object).
MAX_OBJECTS = 100
MAX_BYTES = 10 << 30
_KEYS = {"kind", "size", "sizes", "order", "over", "count", "protocol"}


@dataclass(frozen=True)
class Request:
    """One object of a workload: ``GET`` (download) or ``PUT`` (upload) of ``size`` bytes;
    ``index``: its place in the workload."""
    index: int
    method: str
    size: int

    def line(self) -> bytes:
        return f"{self.method} {self.size}\n".encode()


@dataclass(frozen=True)
class Workload:
    """A flow's application: ``kind`` bulk (one download of ``sizes[0]``), objects (one download
    of each size, in ``order``, ``over`` streams of one connection or connections of their own)
    or upload (``sizes[0]`` bytes to the server); ``protocol``: ``plain`` (a request line on a
    stream) or ``h3`` (HTTP/3 messages)."""
    kind: str = "bulk"
    sizes: tuple[int, ...] = (1_000_000,)
    order: str = "sequence"
    over: str = "streams"
    protocol: str = "plain"

    @classmethod
    def bulk(cls, size: int) -> "Workload":
        return cls("bulk", (size,))

    @property
    def total(self) -> int:
        return sum(self.sizes)

    @property
    def method(self) -> str:
        return "PUT" if self.kind == "upload" else "GET"

    def requests(self) -> list[Request]:
        return [Request(i, self.method, s) for i, s in enumerate(self.sizes)]

    def connections(self) -> list[list[Request]]:
        """The requests each connection of the flow carries, in the flow's connection order:
        one connection with them all, or one an object."""
        reqs = self.requests()
        if self.kind == "objects" and self.over == "connections":
            return [[r] for r in reqs]
        return [reqs]

    @property
    def parallel(self) -> bool:
        return self.kind == "objects" and self.order == "parallel"

    def describe(self) -> str:
        return self._describe() + (" over HTTP/3" if self.protocol == "h3" else "")

    def _describe(self) -> str:
        if self.kind == "bulk":
            return f"download {format_size(self.sizes[0])}"
        if self.kind == "upload":
            return f"upload {format_size(self.sizes[0])}"
        sizes = ", ".join(format_size(s) for s in self.sizes[:6])
        more = f" and {len(self.sizes) - 6} more" if len(self.sizes) > 6 else ""
        over = "one connection" if self.over == "streams" else "a connection each"
        return (f"{len(self.sizes)} objects ({sizes}{more}; {format_size(self.total)}) in "
                f"{self.order}, over {over}")

    def to_dict(self) -> dict:
        return {"kind": self.kind, "sizes": list(self.sizes), "order": self.order,
                "over": self.over, "protocol": self.protocol}


def _size(path: str, value) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{path}: a size such as \"290 KB\", not {value!r}")
    try:
        n = value if isinstance(value, int) else parse_size(str(value))
    except UnitError as e:
        raise ValueError(f"{path}: {e}") from None
    if n != int(n) or n < 1:
        raise ValueError(f"{path}: {str(value)[:40]!r} is not a whole number of bytes, at least 1")
    return int(n)


def parse_workload(path: str, table) -> Workload:
    """A flow's ``workload`` table: ``{kind = "bulk", size = "10 MB"}``, ``{kind = "objects",
    sizes = ["40 KB", "4 MB"], order = "parallel", over = "connections"}`` (``count = N``
    repeats the list N times), ``{kind = "upload", size = "1 MB"}``; any of them with
    ``protocol = "h3"`` (HTTP/3; default ``plain``); ValueError (one line, naming ``path``) if
    it does not read."""
    if not isinstance(table, dict):
        raise ValueError(f"{path}: a table such as {{kind = \"bulk\", size = \"1 MB\"}}")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ValueError(f"{path}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")
    kind = table.get("kind", "bulk")
    protocol = table.get("protocol", "plain")
    if protocol not in PROTOCOLS:
        raise ValueError(f"{path}.protocol: {str(protocol)[:40]!r} is not one of "
                         f"{', '.join(PROTOCOLS)}")
    if kind not in KINDS:
        raise ValueError(f"{path}.kind: {str(kind)[:40]!r} is not one of {', '.join(KINDS)}")
    if kind == "objects":
        for key in ("size",):
            if key in table:
                raise ValueError(f"{path}.{key}: objects take sizes = [...]")
        sizes = table.get("sizes")
        if not isinstance(sizes, list) or not sizes:
            raise ValueError(f"{path}.sizes: a list of object sizes, at least one")
        count = table.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_OBJECTS:
            raise ValueError(f"{path}.count: a whole number 1..{MAX_OBJECTS}")
        if len(sizes) * count > MAX_OBJECTS:
            raise ValueError(f"{path}: {len(sizes) * count} objects, at most {MAX_OBJECTS}")
        one = tuple(_size(f"{path}.sizes[{i}]", v) for i, v in enumerate(sizes))
        order, over = table.get("order", "sequence"), table.get("over", "streams")
        if order not in ORDERS:
            raise ValueError(f"{path}.order: {str(order)[:40]!r} is not one of "
                             f"{', '.join(ORDERS)}")
        if over not in OVER:
            raise ValueError(f"{path}.over: {str(over)[:40]!r} is not one of {', '.join(OVER)}")
        w = Workload("objects", one * count, order, over, protocol)
    else:
        for key in ("sizes", "order", "over", "count"):
            if key in table:
                raise ValueError(f"{path}.{key}: only objects take {key}")
        if "size" not in table:
            raise ValueError(f"{path}.size: a {kind} needs its size, e.g. \"1 MB\"")
        w = Workload(kind, (_size(f"{path}.size", table["size"]),), protocol=protocol)
    if w.total > MAX_BYTES:
        raise ValueError(f"{path}: {format_size(w.total)} in all, at most "
                         f"{format_size(MAX_BYTES)}")
    return w


@dataclass
class ObjectTimes:
    """One object as the client saw it (seconds on the flow's clock)."""
    index: int
    method: str
    size: int
    stream_id: Optional[int] = None
    requested_at: Optional[float] = None
    first_byte_at: Optional[float] = None
    completed_at: Optional[float] = None
    received: int = 0                 # GET: payload bytes; PUT: answer bytes
    answer: bytes = b""
    error: Optional[str] = None
    verify: bool = True               # GET: each byte checked as it comes (take_payload)

    def to_dict(self) -> dict:
        return {"index": self.index, "method": self.method, "size": self.size,
                "stream_id": self.stream_id, "requested_s": self.requested_at,
                "first_byte_s": self.first_byte_at, "completed_s": self.completed_at,
                "error": self.error}


@dataclass
class Requests:
    """The client's half of the application for one connection: its requests, sent all at once
    (``parallel``) or each when the one before completed, and what came back.

    ``open(data, fin, request)`` opens a client bidirectional stream with ``data`` (and FIN),
    the request line and body of ``request``, returning its id, or None if the stack names it
    later (:meth:`opened`); an HTTP/3 client sends ``request`` as its own message instead."""
    requests: list[Request]
    parallel: bool
    verify: bool = True
    objects: list[ObjectTimes] = field(default_factory=list)
    _waiting: list[ObjectTimes] = field(default_factory=list)   # opened, id not yet known
    _by_stream: dict[int, ObjectTimes] = field(default_factory=dict)
    _next: int = 0
    error: Optional[str] = None

    def __post_init__(self) -> None:
        self.objects = [ObjectTimes(r.index, r.method, r.size, verify=self.verify)
                        for r in self.requests]

    @property
    def done(self) -> bool:
        return all(o.completed_at is not None for o in self.objects)

    @property
    def completed_at(self) -> Optional[float]:
        return max(o.completed_at for o in self.objects) if self.done else None

    @property
    def first_byte_at(self) -> Optional[float]:
        times = [o.first_byte_at for o in self.objects if o.first_byte_at is not None]
        return min(times) if times else None

    def begin(self, now: float, open: Callable[[bytes, bool, Request], Optional[int]]) -> None:
        self._open = open
        for _ in range(len(self.requests) if self.parallel else 1):
            self._ask(now)

    def _ask(self, now: float) -> None:
        if self._next >= len(self.requests):
            return
        r, o = self.requests[self._next], self.objects[self._next]
        self._next += 1
        o.requested_at = now
        data = r.line() + (payload_bytes(0, r.size) if r.method == "PUT" else b"")
        sid = self._open(data, True, r)
        if sid is None:
            self._waiting.append(o)
        else:
            self._named(o, sid)

    def _named(self, o: ObjectTimes, sid: int) -> None:
        o.stream_id = sid
        self._by_stream[sid] = o

    def opened(self, sid: int) -> None:
        """The stack named the stream of the oldest request still unnamed."""
        if self._waiting:
            self._named(self._waiting.pop(0), sid)

    def reset(self, sid: int) -> None:
        o = self._by_stream.get(sid)
        if o is not None and o.completed_at is None and o.error is None:
            o.error = "server reset the stream"
            self.error = self.error or f"object {o.index}: {o.error}"

    def data(self, sid: int, data: bytes, end: bool, now: float) -> None:
        """Data on stream ``sid``; when an object completes, the next is asked for."""
        o = self._by_stream.get(sid)
        if o is None or o.completed_at is not None:
            return
        if data and o.first_byte_at is None:
            o.first_byte_at = now
        if o.method == "GET":
            good = take_payload(o, data, end)
        else:
            o.answer = (o.answer + data)[:64]
            o.received += len(data)
            good = None if not end else o.answer == f"OK {o.size}\n".encode()
            if good is False and o.error is None:
                o.error = f"the server answered {o.answer[:40]!r}"
        if good is None:
            return
        if good and o.error is None:
            o.completed_at = now
            if not self.parallel:
                self._ask(now)
            return
        self.error = self.error or f"object {o.index}: {o.error}"


class FlowTimes:
    """What a flow's client says of itself (BulkClient's surface), from its ``app``
    (:class:`Requests`) and its connection's ``terminated``."""

    app: Requests
    started_at: Optional[float] = None
    handshake_at: Optional[float] = None
    terminated: Any = None

    @property
    def done(self) -> bool:
        return self.app.done

    @property
    def completed_at(self) -> Optional[float]:
        return self.app.completed_at

    @property
    def first_byte_at(self) -> Optional[float]:
        return self.app.first_byte_at

    @property
    def error(self) -> Optional[str]:
        if self.app.error is not None:
            return self.app.error
        if self.terminated is not None and not self.app.done:
            why = getattr(self.terminated, "reason_phrase", None) or self.terminated
            code = getattr(self.terminated, "error_code", None)
            return f"connection closed: {why}" + (f" (code {code})" if code else "")
        return None
