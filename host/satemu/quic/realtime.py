# SPDX-License-Identifier: BSD-2-Clause
"""Real-time QUIC transfers between two network namespaces, across a real link, with captures."""

# The virtual-time co-simulation (sim.cosim) drives sans-I/O endpoints in lock-step with the
# simulated board. This module does the same transfer in real time, for a real board (or any
# link between two interfaces of this host) and for external QUIC implementations:
#
#   client namespace (10.0.0.2/24)                          server namespace (10.0.0.1/24)
#     fetch (or --client-cmd) -- client_if ==== link ==== server_if -- serve (or --server-cmd)
#     capture on client_if                                   capture on server_if
#
# With a board, client_if is cabled to port A (the terminal side) and server_if to port B (the
# gateway side): forward is server -> client, return is client -> server, as in sim.cosim.
#
# Processes, all started with ``ip netns exec NS ...`` and all in a session of their own, so a
# shell template's children go with it:
#   * ``python -m satemu.quic.realtime capture --if IF --out FILE --ready FILE`` in each
#     namespace: an AF_PACKET sniffer (see capture()); started first, waited for (ready file);
#   * the server: ``... serve`` (aioquic's asyncio API, see serve_bulk()) or ``sh -c TEMPLATE``;
#     the client starts once the server's namespace has a UDP socket on the server port
#     (read from /proc/PID/net/udp{,6}, which shows that process's namespace);
#   * the client: ``... fetch`` (see fetch_bulk()) or ``sh -c TEMPLATE``.
#
# Time: every process stamps with CLOCK_MONOTONIC in nanoseconds. Network namespaces do not
# virtualise clocks, so the stamps of all processes on one host are comparable; the Transfer
# built from them uses cycle = monotonic ns and f_clk = 1e9.
#
# PolicyConnection under aioquic's asyncio API: aioquic.asyncio.client.connect() and
# aioquic.asyncio.server.QuicServer.datagram_received() build their connection by calling the
# name ``QuicConnection`` that each of those modules imported at module level. policy_connections()
# rebinds that module attribute, for the duration of a ``with`` block, to a factory that returns
# PolicyConnection(configuration, policy=..., **the same keyword arguments). Nothing else in
# aioquic changes, and the endpoint processes are dedicated to one transfer, so a process-wide
# rebinding is harmless there (the client rebinds only the client module's name and the server
# only the server module's, so both can share one process, as the tests do).
#
# Per-datagram log: QuicConnectionProtocol.transmit() sends exactly what
# ``self._quic.datagrams_to_send(now=...)`` returns, in order. _LoggingProtocol wraps that
# method of its own connection: it stamps the datagrams and reads PolicyConnection's
# last_datagrams_info(), so every logged datagram carries its size and whether it is ACK-only.
#
# What the captures can and cannot say:
#   * sizes are Ethernet frames without FCS (AF_PACKET never sees it), as the emulator counts
#     them. Frames shorter than 60 bytes are not padded on a veth (a NIC pads them on the wire),
#     so the recorded size is padded to 60 (CapturedFrame.size; .length keeps the raw length);
#   * "sent" is a frame leaving the sender's interface, "delivered" one reaching the receiver's
#     interface: a datagram the receiving socket then drops (full buffer) counts as delivered.
#     The endpoints' own counters (client_stats/server_stats: datagrams_received) tell those
#     apart; the endpoints enlarge their socket buffers (SOCKET_BUFFER) so a Python receiver
#     does not drop bursts a fast link delivers;
#   * ACK-only is known only for our endpoints (from their logs, matched by order and size).
#     For external ones it is unknown; PacketRecord.ack_only is a bool, so it is False there and
#     realtime.json says ``ack_only_known: false``;
#   * time stamps are the kernel's (SO_TIMESTAMPNS, CLOCK_REALTIME) moved onto CLOCK_MONOTONIC
#     with an offset read when the capture starts; a clock step during a run would shift them
#     (implausible ones fall back to the time the sniffer read the frame);
#   * no board counters: Transfer.board_stats is {}, so report.summarize()'s cross-check with
#     the emulator has nothing to compare with and reports every item as a mismatch;
#   * no determinism: seed is 0 and meaningless, randomness is real.

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import itertools
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from aioquic.asyncio import QuicConnectionProtocol, connect, serve
from aioquic.asyncio import client as aio_client
from aioquic.asyncio import server as aio_server
from aioquic.quic.events import (ConnectionTerminated, HandshakeCompleted, StreamDataReceived,
                                 StreamReset)

from ..ether import MIN_FRAME
from .endpoints import AckPolicy, BulkAnswers, BulkDownload, PolicyConnection, make_configs
from .packets import (CLIENT, ETHERTYPE_IPV4, HEADERS_BYTES, IPPROTO_UDP, SERVER,
                      internet_checksum)

from ..transfer import Delivery, PacketRecord, Transfer

__all__ = ["RealtimeError", "Namespaces", "policy_connections", "BulkServerProtocol",
           "BulkClientProtocol", "serve_bulk", "fetch_bulk", "capture", "CapturedFrame",
           "read_capture", "read_endpoint_log", "build_transfer", "run_realtime", "main",
           "F_CLK", "TEMPLATE_FIELDS"]

F_CLK = 1_000_000_000                   # cycle = CLOCK_MONOTONIC nanoseconds
PREFIX_LEN = 24
MODULE = "satemu.quic.realtime"
HOST_DIR = Path(__file__).resolve().parents[2]      # what PYTHONPATH needs for ``-m MODULE``
IP_SEARCH = ("/usr/sbin", "/sbin", "/usr/bin", "/bin")
TEMPLATE_FIELDS = ("server_ip", "server_port", "client_ip", "size", "outdir", "python", "ack",
                   "cc", "max_ack_delay_ms")
SETTLE_S = 0.5                          # after the endpoints: frames still in flight land
STARTUP_TIMEOUT_S = 15.0                # captures ready, server bound

# Linux constants the socket module does not export (x86-64 and the generic ABI).
ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_STATISTICS = 6
PACKET_OUTGOING = 4
SO_TIMESTAMPNS = 35
SCM_TIMESTAMPNS = SO_TIMESTAMPNS
SO_SNDBUFFORCE = 32
SO_RCVBUFFORCE = 33
SOCKET_BUFFER = 8 << 20                 # the endpoints' UDP socket buffers
SNAPLEN = 64
CAPTURE_RCVBUF = 32 << 20


class RealtimeError(Exception):
    """A real-time run cannot be set up or run; the message says why (no traceback needed)."""


# ---------------------------------------------------------------------------------------------
# network namespaces

_ns_serial = itertools.count()


def _ip_binary() -> str:
    path = os.pathsep.join([os.environ.get("PATH", ""), *IP_SEARCH])
    found = shutil.which("ip", path=path)
    if found is None:
        raise RealtimeError("the 'ip' command (iproute2) was not found: install iproute2")
    return found


def _require_root() -> None:
    if os.geteuid() != 0:
        raise RealtimeError("real-time mode creates network namespaces and needs root: run it "
                            "as root (e.g. with sudo)")


def _run(argv: list[str], what: str) -> str:
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip() or f"exit status {done.returncode}"
        raise RealtimeError(f"{what}: {detail}")
    return done.stdout


class Namespaces:
    """Two network namespaces joined by a link: ``client_if`` and ``server_if`` moved into them.

    On entry: creates namespaces ``{prefix}-c{pid}-{n}`` (client) and ``{prefix}-s{pid}-{n}``
    (server), moves each interface into its namespace, brings it and ``lo`` up, assigns
    10.0.0.2/24 (client) and 10.0.0.1/24 (server), and waits up to ``link_timeout`` seconds for
    carrier on both. On exit (and on any failure during entry) it deletes the namespaces.

    What happens to the interfaces then: a physical NIC returns to the root namespace, down and
    without addresses; a veth (or other virtual) interface is destroyed along with its namespace,
    and with it its peer. Processes still running in a namespace keep it alive past
    ``ip netns del``: stop them first (run_realtime() does).

    Raises :class:`RealtimeError` when not root, when ``ip`` is missing, when an interface does
    not exist, or when any ``ip`` step fails; it never leaves a namespace behind.
    """

    def __init__(self, client_if: str, server_if: str, prefix: str = "satemu", *,
                 client_ip: str = CLIENT.ipv4, server_ip: str = SERVER.ipv4,
                 link_timeout: float = 10.0) -> None:
        if client_if == server_if:
            raise RealtimeError(f"client and server interface are both {client_if!r}: they must "
                                "be the two ends of the link")
        self.client_if, self.server_if = client_if, server_if
        self.client_ip, self.server_ip = client_ip, server_ip
        serial = f"{os.getpid()}-{next(_ns_serial)}"
        self.client = f"{prefix}-c{serial}"
        self.server = f"{prefix}-s{serial}"
        self.link_timeout = link_timeout
        self.ip = ""
        self._created: list[str] = []

    def __enter__(self) -> "Namespaces":
        _require_root()
        self.ip = _ip_binary()
        for ifname in (self.client_if, self.server_if):
            done = subprocess.run([self.ip, "-o", "link", "show", "dev", ifname],
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True)
            if done.returncode != 0:
                raise RealtimeError(f"network interface {ifname!r} does not exist (in this "
                                    "namespace)")
        try:
            for ns, ifname, addr in ((self.client, self.client_if, self.client_ip),
                                     (self.server, self.server_if, self.server_ip)):
                _run([self.ip, "netns", "add", ns], f"creating network namespace {ns}")
                self._created.append(ns)
                _run([self.ip, "link", "set", "dev", ifname, "netns", ns],
                     f"moving {ifname} into namespace {ns}")
                _run([self.ip, "-n", ns, "link", "set", "dev", "lo", "up"], f"{ns}: lo up")
                _run([self.ip, "-n", ns, "addr", "flush", "dev", ifname], f"{ns}: flush {ifname}")
                _run([self.ip, "-n", ns, "addr", "add", f"{addr}/{PREFIX_LEN}", "dev", ifname],
                     f"{ns}: address {addr} on {ifname}")
                _run([self.ip, "-n", ns, "link", "set", "dev", ifname, "up"],
                     f"{ns}: {ifname} up")
            self._wait_carrier()
        except BaseException:
            self._delete()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        problems = self._delete()
        if problems and exc[0] is None:
            raise RealtimeError("; ".join(problems))

    def _wait_carrier(self) -> None:
        deadline = time.monotonic() + self.link_timeout
        for ns, ifname in ((self.client, self.client_if), (self.server, self.server_if)):
            while True:
                flags = _run([self.ip, "-n", ns, "-o", "link", "show", "dev", ifname],
                             f"{ns}: {ifname} state")
                if "LOWER_UP" in flags:
                    break
                if time.monotonic() > deadline:
                    raise RealtimeError(f"{ifname} has no carrier after {self.link_timeout:g} s "
                                        "(is the link cabled and the peer interface up?)")
                time.sleep(0.05)

    def _delete(self) -> list[str]:
        problems = []
        while self._created:
            ns = self._created.pop()
            done = subprocess.run([self.ip, "netns", "del", ns], stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True)
            if done.returncode != 0:
                problems.append(f"deleting namespace {ns}: {done.stderr.strip()}")
        return problems

    def exec_argv(self, ns: str, argv: list[str]) -> list[str]:
        """``argv`` run inside namespace ``ns``."""
        return [self.ip, "netns", "exec", ns, *argv]

    def netem(self, spec: str) -> None:
        """``tc qdisc replace dev IF root netem SPEC`` on both interfaces (e.g. "delay 10ms")."""
        tc = shutil.which("tc", path=os.pathsep.join([os.environ.get("PATH", ""), *IP_SEARCH]))
        if tc is None:
            raise RealtimeError("netem requested but 'tc' (iproute2) was not found")
        for ns, ifname in ((self.client, self.client_if), (self.server, self.server_if)):
            _run(self.exec_argv(ns, [tc, "qdisc", "replace", "dev", ifname, "root", "netem",
                                     *spec.split()]), f"{ns}: netem {spec} on {ifname}")


# ---------------------------------------------------------------------------------------------
# aioquic's asyncio API with PolicyConnection

@contextlib.contextmanager
def policy_connections(policy: "str | AckPolicy", *, client: bool = True,
                       server: bool = True) -> Iterator[Callable[..., PolicyConnection]]:
    """Make aioquic's asyncio ``connect()`` (``client``) and ``serve()`` (``server``) build
    :class:`PolicyConnection` with ``policy`` instead of QuicConnection, inside the block.

    Both modules call their module-level name ``QuicConnection`` with keyword arguments only;
    that name is rebound to a factory and restored on exit. Not thread-safe.
    """
    factory = functools.partial(PolicyConnection, policy=AckPolicy.parse(policy))
    modules = [m for m, on in ((aio_client, client), (aio_server, server)) if on]
    saved = [(m, m.QuicConnection) for m in modules]
    try:
        for m in modules:
            m.QuicConnection = factory
        yield factory
    finally:
        for m, original in reversed(saved):
            m.QuicConnection = original


def _enlarge_buffers(sock: Any, size: int = SOCKET_BUFFER) -> None:
    """Give a UDP socket ``size``-byte buffers (beyond net.core.[rw]mem_max when root): with
    the default ~200 KB a Python receiver drops bursts a fast link delivers, losses that are
    the host's, not the link's."""
    for force, plain in ((SO_RCVBUFFORCE, socket.SO_RCVBUF), (SO_SNDBUFFORCE, socket.SO_SNDBUF)):
        try:
            sock.setsockopt(socket.SOL_SOCKET, force, size)
        except OSError:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, plain, size)


class _LoggingProtocol(QuicConnectionProtocol):
    """A QuicConnectionProtocol that logs (monotonic ns, UDP size, ACK-only) per datagram sent."""

    def __init__(self, quic: Any, stream_handler: Any = None) -> None:
        super().__init__(quic, stream_handler=stream_handler)
        self.datagrams: list[tuple[int, int, Optional[bool]]] = []
        original = quic.datagrams_to_send
        describe = getattr(quic, "last_datagrams_info", None)

        def datagrams_to_send(now: float) -> list:
            out = original(now=now)
            stamp = time.monotonic_ns()          # transmit() hands them to sendto() right away
            infos = describe() if describe is not None else [None] * len(out)
            for (data, _addr), info in zip(out, infos):
                self.datagrams.append((stamp, len(data),
                                       None if info is None else bool(info.ack_only)))
            return out

        quic.datagrams_to_send = datagrams_to_send

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            _enlarge_buffers(sock)

    @property
    def stats(self) -> dict:
        stats = getattr(self._quic, "stats", None)
        return asdict(stats) if stats is not None else {}


class BulkServerProtocol(_LoggingProtocol, BulkAnswers):
    """BulkServer's application (:class:`BulkAnswers`) over asyncio."""

    def __init__(self, quic: Any, stream_handler: Any = None,
                 on_terminated: Optional[Callable[["BulkServerProtocol"], None]] = None) -> None:
        super().__init__(quic, stream_handler=stream_handler)
        BulkAnswers.__init__(self)
        self.on_terminated = on_terminated
        self.terminated = False

    def quic_event_received(self, event: Any) -> None:
        if isinstance(event, StreamDataReceived):
            if self.answer(self._quic, event):
                self._transmit_soon()
        elif isinstance(event, ConnectionTerminated) and not self.terminated:
            self.terminated = True
            if self.on_terminated is not None:
                self.on_terminated(self)


class BulkClientProtocol(_LoggingProtocol, BulkDownload):
    """BulkClient's application (:class:`BulkDownload`) over asyncio, stamping start,
    handshake, first byte and completion (monotonic ns)."""

    def __init__(self, quic: Any, stream_handler: Any = None) -> None:
        super().__init__(quic, stream_handler=stream_handler)
        self.started_ns: Optional[int] = None
        self.handshake_ns: Optional[int] = None
        self.first_byte_ns: Optional[int] = None
        self.completed_ns: Optional[int] = None
        self.finished: asyncio.Future = self._loop.create_future()

    def connect(self, addr: Any, transmit: bool = True) -> None:
        self.started_ns = time.monotonic_ns()      # just before the first Initial is built
        super().connect(addr, transmit=transmit)

    async def wait_connected(self) -> None:
        # aioquic's, except that the waiter's ConnectionError is retrieved even when nobody
        # awaits it any more (a timeout cancelled the wait), so asyncio does not log it.
        if not self._connected:
            waiter = self._connected_waiter = self._loop.create_future()
            waiter.add_done_callback(lambda f: f.cancelled() or f.exception())
            await asyncio.shield(waiter)

    def request(self, size: int) -> None:
        self.ask(self._quic, size)
        self.transmit()

    def _finish(self, error: Optional[str]) -> None:
        if self.finished.done():
            return                      # the outcome is settled (e.g. closing after completion)
        if error is not None and self.error is None:
            self.error = error
        self.finished.set_result(None)

    def quic_event_received(self, event: Any) -> None:
        now = time.monotonic_ns()
        if isinstance(event, HandshakeCompleted):
            self.handshake_ns = now
        elif isinstance(event, StreamReset) and event.stream_id == self.stream_id:
            self._finish("server reset the stream")
        elif isinstance(event, StreamDataReceived) and event.stream_id == self.stream_id:
            if event.data and self.first_byte_ns is None:
                self.first_byte_ns = now
            complete = self.take(event)
            if complete:
                self.completed_ns = now
            if complete is not None:
                self._finish(self.error)
        elif isinstance(event, ConnectionTerminated):
            reason = f": {event.reason_phrase}" if event.reason_phrase else ""
            self._finish(f"connection closed before completion (error {event.error_code}"
                         f"{reason})")


def _configs(cc: str, max_ack_delay_ms: float, initial_rtt_ms: float) -> tuple:
    try:
        return make_configs(cc=cc, max_ack_delay_ms=max_ack_delay_ms,
                            initial_rtt_ms=initial_rtt_ms)
    except ValueError as e:
        raise RealtimeError(str(e)) from None


def _parse_policy(text: "str | AckPolicy") -> AckPolicy:
    try:
        return AckPolicy.parse(text)
    except ValueError as e:
        raise RealtimeError(str(e)) from None


async def serve_bulk(bind: str, port: int, *, ack: "str | AckPolicy" = "default",
                     cc: str = "reno", max_ack_delay_ms: float = 25.0,
                     initial_rtt_ms: float = 333.0, stop: Optional[asyncio.Event] = None,
                     ready: Optional[Callable[[tuple], None]] = None) -> dict:
    """Serve bulk downloads with aioquic's ``serve()`` until the first connection has terminated
    (or ``stop`` is set); returns the server's record (see :func:`read_endpoint_log`).

    ``ready`` is called with the bound socket address once the server listens.
    """
    policy = _parse_policy(ack)
    _client_cfg, server_cfg = _configs(cc, max_ack_delay_ms, initial_rtt_ms)
    stop = stop if stop is not None else asyncio.Event()
    protocols: list[BulkServerProtocol] = []

    def create_protocol(quic: Any, stream_handler: Any = None) -> BulkServerProtocol:
        protocol = BulkServerProtocol(quic, stream_handler=stream_handler,
                                      on_terminated=lambda _p: stop.set())
        protocols.append(protocol)
        return protocol

    with policy_connections(policy, client=False, server=True):
        server = await serve(bind, port, configuration=server_cfg,
                             create_protocol=create_protocol)
        try:
            if ready is not None:
                ready(server._transport.get_extra_info("sockname"))
            await stop.wait()
        finally:
            server.close()
            await asyncio.sleep(0)              # let the transport finish closing its socket
    first = protocols[0] if protocols else None
    datagrams = sorted((d for p in protocols for d in p.datagrams), key=lambda d: d[0])
    used = None
    if first is not None:
        used = first._quic._loss.max_ack_delay * 1000.0
    return {"role": "server", "policy": str(policy), "cc": cc,
            "max_ack_delay_ms": max_ack_delay_ms, "connections": len(protocols),
            "served": {str(k): v for p in protocols for k, v in p.served.items()},
            "max_ack_delay_used_ms": used,
            "stats": first.stats if first is not None else {},
            "datagrams": [list(d) for d in datagrams]}


async def fetch_bulk(host: str, port: int, size: int, *, ack: "str | AckPolicy" = "default",
                     cc: str = "reno", max_ack_delay_ms: float = 25.0,
                     initial_rtt_ms: float = 333.0, local_port: int = 0,
                     timeout: float = 120.0) -> dict:
    """Download ``size`` bytes with aioquic's ``connect()``, close the connection, and return the
    client's record (see :func:`read_endpoint_log`)."""
    policy = _parse_policy(ack)
    client_cfg, _server_cfg = _configs(cc, max_ack_delay_ms, initial_rtt_ms)
    made: list[BulkClientProtocol] = []

    def create_protocol(quic: Any, stream_handler: Any = None) -> BulkClientProtocol:
        made.append(BulkClientProtocol(quic, stream_handler=stream_handler))
        return made[-1]

    error: Optional[str] = None
    try:
        async with asyncio.timeout(timeout):
            with policy_connections(policy, client=True, server=False):
                async with connect(host, port, configuration=client_cfg,
                                   create_protocol=create_protocol,
                                   local_port=local_port) as protocol:
                    protocol.request(size)
                    await protocol.finished
    except TimeoutError:
        error = f"timed out after {timeout:g} s"
    except ConnectionError:
        error = "connection failed (handshake did not complete)"
    except OSError as e:
        error = f"socket error: {e}"
    p = made[0] if made else None

    def seconds(stamp: Optional[int]) -> Optional[float]:
        if p is None or stamp is None or p.started_ns is None:
            return None
        return (stamp - p.started_ns) / 1e9

    if error is None and p is not None:
        error = p.error
    completed = p is not None and p.completed_ns is not None and p.error is None
    if completed:
        error = None                    # done; a late close problem does not undo it
    elif error is None:
        error = "transfer did not complete"
    return {"role": "client", "policy": str(policy), "cc": cc,
            "max_ack_delay_ms": max_ack_delay_ms, "size": size,
            "received": p.received if p is not None else 0,
            "completed": completed, "error": error,
            "started_ns": p.started_ns if p is not None else None,
            "handshake_ns": p.handshake_ns if p is not None else None,
            "first_byte_ns": p.first_byte_ns if p is not None else None,
            "completed_ns": p.completed_ns if p is not None else None,
            "handshake_s": seconds(p.handshake_ns) if p is not None else None,
            "completion_s": seconds(p.completed_ns) if completed else None,
            "stats": p.stats if p is not None else {},
            "datagrams": [list(d) for d in (p.datagrams if p is not None else [])]}


def read_endpoint_log(path: "str | Path") -> dict:
    """An endpoint's JSON record: ``role``, ``policy``, ``stats`` (EndpointStats as a dict),
    ``datagrams`` ([monotonic ns, UDP size, ACK-only] per datagram sent, in order) and, for the
    client, ``completed``, ``error``, ``completion_s``, ``handshake_s`` and the stamps."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------------------------
# capture

def _clock_offset_ns() -> int:
    """CLOCK_REALTIME - CLOCK_MONOTONIC, from the tightest of a few bracketed readings."""
    best = None
    for _ in range(5):
        a = time.monotonic_ns()
        real = time.clock_gettime_ns(time.CLOCK_REALTIME)
        b = time.monotonic_ns()
        if best is None or b - a < best[0]:
            best = (b - a, real - (a + b) // 2)
    return best[1]


def capture(ifname: str, out: "str | Path", ready: "str | Path | None" = None,
            snaplen: int = SNAPLEN, should_stop: Callable[[], bool] = lambda: False) -> dict:
    """Record every frame on ``ifname`` until ``should_stop()`` (checked at least every 0.2 s),
    as JSON lines in ``out``: a header object, then ``[monotonic ns, pkttype, frame length,
    hex of the first snaplen bytes]`` per frame, then a trailer object with the kernel's
    packet/drop counts. Creates ``ready`` once the socket is bound.

    pkttype is the sockaddr_ll packet type: 4 (PACKET_OUTGOING) for frames this namespace sent,
    0..3 for received ones. The length is the frame without FCS (AF_PACKET never sees it). The
    time is the kernel's receive stamp (SO_TIMESTAMPNS, CLOCK_REALTIME) moved onto
    CLOCK_MONOTONIC with an offset read at start; when a stamp is missing or implausible (not
    within 5 s before the moment it was read) the read time is used instead and counted in the
    trailer as ``user_stamps``.
    """
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    with sock, open(out, "w", encoding="utf-8") as f:
        try:
            sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, CAPTURE_RCVBUF)
        except OSError:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, CAPTURE_RCVBUF)
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        sock.bind((ifname, ETH_P_ALL))
        sock.setblocking(False)               # drop what arrived before bind (any interface)
        with contextlib.suppress(BlockingIOError):
            while True:
                sock.recv(1)
        sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)      # reading resets the counters
        sock.settimeout(0.2)
        offset = _clock_offset_ns()
        f.write(json.dumps({"capture": ifname, "pid": os.getpid(), "snaplen": snaplen,
                            "realtime_offset_ns": offset,
                            "start_ns": time.monotonic_ns()}) + "\n")
        if ready is not None:
            Path(ready).write_text(f"{os.getpid()}\n", encoding="utf-8")
        buf = bytearray(snaplen)
        ancsize = socket.CMSG_SPACE(16)
        frames = user_stamps = 0

        def one() -> None:
            nonlocal frames, user_stamps
            nbytes, anc, _flags, addr = sock.recvmsg_into([buf], ancsize, socket.MSG_TRUNC)
            read_at = time.monotonic_ns()
            stamp = None
            for level, kind, data in anc:
                if level == socket.SOL_SOCKET and kind == SCM_TIMESTAMPNS and len(data) >= 16:
                    sec, nsec = struct.unpack_from("=qq", data)
                    stamp = sec * 1_000_000_000 + nsec - offset
            if stamp is None or not read_at - 5_000_000_000 <= stamp <= read_at + 1_000_000:
                stamp = read_at
                user_stamps += 1
            f.write(json.dumps([stamp, addr[2], nbytes, bytes(buf[:min(nbytes, snaplen)]).hex()])
                    + "\n")
            frames += 1

        while not should_stop():
            try:
                one()
            except TimeoutError:
                pass
        sock.setblocking(False)               # what is still queued
        with contextlib.suppress(BlockingIOError):
            while True:
                one()
        packets, drops = struct.unpack("=II", sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
        trailer = {"end_ns": time.monotonic_ns(), "frames": frames, "kernel_packets": packets,
                   "kernel_drops": drops, "user_stamps": user_stamps}
        f.write(json.dumps(trailer) + "\n")
    return trailer


@dataclass(frozen=True)
class CapturedFrame:
    """An IPv4/UDP frame between the two endpoints' addresses, from a capture file."""

    t_ns: int
    outgoing: bool              # pkttype PACKET_OUTGOING: sent from the capturing namespace
    length: int                 # captured frame bytes (no FCS, not padded)
    size: int                   # length padded to the 60-byte Ethernet minimum: what a wire carries
    src: str
    dst: str
    sport: int
    dport: int
    udp_size: int               # UDP payload bytes (the QUIC datagram)


def _parse_head(head: bytes, length: int, hosts: frozenset) -> Optional[tuple]:
    """(src, dst, sport, dport, udp payload size) of an IPv4/UDP frame between ``hosts``;
    None if it is some other traffic; ValueError if it is between them but malformed.

    The checks of packets.parse_frame that the first 64 bytes allow: EtherType, version, IHL 5,
    header checksum, no fragments, protocol, lengths. The UDP checksum cannot be checked (the
    payload is not captured; outgoing frames on offloading interfaces do not carry it yet).
    """
    if len(head) < HEADERS_BYTES or struct.unpack_from("!H", head, 12)[0] != ETHERTYPE_IPV4:
        return None
    ip = head[14:34]
    if ip[0] >> 4 != 4 or ip[9] != IPPROTO_UDP:
        return None
    src, dst = socket.inet_ntoa(ip[12:16]), socket.inet_ntoa(ip[16:20])
    if frozenset((src, dst)) != hosts:
        return None
    if ip[0] & 0xF != 5:
        raise ValueError("IPv4 options are not supported")
    if internet_checksum(ip) != 0:
        raise ValueError("bad IPv4 header checksum")
    total_length, flags_frag = struct.unpack_from("!HxxH", ip, 2)
    if flags_frag & 0x3FFF:
        raise ValueError("fragmented IPv4 packet")
    sport, dport, udp_length = struct.unpack_from("!HHH", head, 34)
    if total_length < 28 or 14 + total_length > length or udp_length != total_length - 20:
        raise ValueError("IPv4/UDP lengths do not match the frame")
    if length > max(14 + total_length, MIN_FRAME):
        raise ValueError("bytes after the IPv4 packet beyond the minimum-length padding")
    return src, dst, sport, dport, udp_length - 8


def read_capture(path: "str | Path", hosts: tuple[str, str] = (CLIENT.ipv4, SERVER.ipv4)
                 ) -> tuple[list[CapturedFrame], dict]:
    """The IPv4/UDP frames between ``hosts`` in a capture file, in capture order, and a dict with
    the file's header and trailer and counts: ``frames`` (all captured), ``other`` (not between
    the hosts), ``undecodable`` (between them but malformed; counted per direction too)."""
    frames: list[CapturedFrame] = []
    meta: dict = {"header": None, "trailer": None, "frames": 0, "other": 0, "undecodable": 0,
                  "undecodable_in": 0, "undecodable_out": 0}
    pair = frozenset(hosts)
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                item = json.loads(line)
            except ValueError:
                continue                    # a line cut short by a killed sniffer
            if isinstance(item, dict):
                meta["header" if meta["header"] is None else "trailer"] = item
                continue
            t_ns, pkttype, length, head = item
            meta["frames"] += 1
            outgoing = pkttype == PACKET_OUTGOING
            try:
                parsed = _parse_head(bytes.fromhex(head), length, pair)
            except ValueError:
                meta["undecodable"] += 1
                meta["undecodable_out" if outgoing else "undecodable_in"] += 1
                continue
            if parsed is None:
                meta["other"] += 1
                continue
            src, dst, sport, dport, udp_size = parsed
            frames.append(CapturedFrame(t_ns, outgoing, length, max(length, MIN_FRAME),
                                        src, dst, sport, dport, udp_size))
    return frames, meta


# ---------------------------------------------------------------------------------------------
# building a Transfer from captures and endpoint logs

def _align(captured: list[CapturedFrame], logged: list) -> tuple[list[bool], dict]:
    """ACK-only per captured frame, from a sender's log matched by order and UDP size.

    Normally both lists are the same datagrams in the same order. When they are not (a datagram
    the kernel dropped before the interface, or one sent outside the log), a capture skips
    ahead over at most a few log entries to the next one of its size; unmatched frames get
    False. Returns the flags and counts: matched, log_only, capture_only.
    """
    flags, i, matched, capture_only = [], 0, 0, 0
    for frame in captured:
        j = next((k for k in range(i, min(i + 8, len(logged)))
                  if logged[k][1] == frame.udp_size), None)
        if j is None:
            flags.append(False)
            capture_only += 1
            continue
        flags.append(bool(logged[j][2]))
        matched += 1
        i = j + 1
    return flags, {"matched": matched, "log_only": len(logged) - matched,
                   "capture_only": capture_only}


def build_transfer(*, size: int, ack: str, cc: str, client_capture: "str | Path",
                   server_capture: "str | Path", client_log: Optional[dict] = None,
                   server_log: Optional[dict] = None, client_exit: Optional[int] = None,
                   max_ack_delay_ms: float = 25.0, wall_s: float = 0.0,
                   error: Optional[str] = None, client_ip: str = CLIENT.ipv4,
                   server_ip: str = SERVER.ipv4) -> tuple[Transfer, dict]:
    """A :class:`Transfer` (cycle = monotonic ns, f_clk = 1e9) from the two captures and, for
    our own endpoints, their logs; and a dict of diagnostics (per-direction counts).

    ``sent``: frames captured outgoing at the sender's interface (forward: server namespace;
    return: client namespace); ``delivered``: frames captured incoming at the receiver's. Sizes
    are frames without FCS, padded to 60 bytes. ``ack_only`` comes from the sender's log,
    matched by order; without a log (an external endpoint) it is unknown and recorded as False.
    Completion: from the client log when there is one; otherwise ``client_exit == 0`` and
    completion_s is measured on the wire: from the first frame the client sent to the last
    forward frame delivered to the client. That leaves out the client's work before its first
    Initial and after the last frame (the application's own figure is a little longer), and
    counts any forward frame that comes after the last data.
    """
    hosts = (client_ip, server_ip)
    at_client, meta_c = read_capture(client_capture, hosts)
    at_server, meta_s = read_capture(server_capture, hosts)
    directions = {
        "forward": ([f for f in at_server if f.outgoing and f.src == server_ip],
                    [f for f in at_client if not f.outgoing and f.src == server_ip], server_log),
        "return": ([f for f in at_client if f.outgoing and f.src == client_ip],
                   [f for f in at_server if not f.outgoing and f.src == client_ip], client_log),
    }
    sent: list[PacketRecord] = []
    delivered: list[Delivery] = []
    info: dict = {"ack_only_known": {}, "directions": {},
                  "captures": {"client": meta_c, "server": meta_s}}
    for direction, (out, got, log) in directions.items():
        logged = log.get("datagrams", []) if log else []
        if log:
            flags, counts = _align(out, logged)
        else:
            flags, counts = [False] * len(out), {"matched": 0, "log_only": 0,
                                                  "capture_only": len(out)}
        info["ack_only_known"][direction] = bool(log)
        info["directions"][direction] = {
            "logged": len(logged), "captured_out": len(out), "captured_in": len(got),
            "logged_ack_only": sum(1 for d in logged if d[2]), **counts}
        sent += [PacketRecord(f.t_ns, direction, f.size, f.udp_size, flag)
                 for f, flag in zip(out, flags)]
        delivered += [Delivery(f.t_ns, direction, f.size) for f in got]
    sent.sort(key=lambda r: r.cycle)
    delivered.sort(key=lambda d: d.cycle)

    handshake_s = None
    if client_log is not None:
        completed = bool(client_log.get("completed"))
        completion_s = client_log.get("completion_s") if completed else None
        handshake_s = client_log.get("handshake_s")
        error = error or client_log.get("error")
    else:
        completed = client_exit == 0 and error is None
        first = directions["return"][0][0].t_ns if directions["return"][0] else None
        last = directions["forward"][1][-1].t_ns if directions["forward"][1] else None
        completion_s = ((last - first) / 1e9 if completed and first is not None
                        and last is not None and last > first else None)
        if client_exit not in (0, None) and error is None:
            error = f"client command exited with status {client_exit}"
    if completed:
        error = None
    used = server_log.get("max_ack_delay_used_ms") if server_log else None
    transfer = Transfer(
        profile="realtime", size=size, ack=ack, cc=cc, seed=0, f_clk=F_CLK,
        completed=completed, completion_s=completion_s, handshake_s=handshake_s,
        sent=sent, delivered=delivered,
        client_stats=dict(client_log.get("stats", {})) if client_log else {},
        server_stats=dict(server_log.get("stats", {})) if server_log else {},
        board_stats={},
        undecodable=meta_c["undecodable_in"] + meta_s["undecodable_in"],
        max_ack_delay_advertised_ms=max_ack_delay_ms, max_ack_delay_used_ms=used,
        wall_s=wall_s, virtual_s=wall_s, error=error)
    return transfer, info


# ---------------------------------------------------------------------------------------------
# running it

class _Processes:
    """Child processes, each in a session of its own; signalled by process group only while
    their leader is unreaped (so the group id is still theirs), reaped on exit."""

    def __init__(self, env: dict) -> None:
        self.env = env
        self.procs: list[subprocess.Popen] = []
        self._files: list[Any] = []

    def __enter__(self) -> "_Processes":
        return self

    def __exit__(self, *exc: Any) -> None:
        for p in reversed(self.procs):
            self.stop(p, grace=2.0)
        for f in self._files:
            f.close()

    def start(self, argv: list[str], log: Path) -> subprocess.Popen:
        out = open(log, "wb")
        self._files.append(out)
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                             env=self.env, start_new_session=True)
        self.procs.append(p)
        return p

    @staticmethod
    def exited(p: subprocess.Popen) -> bool:
        """Whether ``p`` has exited, without reaping it."""
        if p.returncode is not None:
            return True
        try:
            return os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True

    def wait(self, p: subprocess.Popen, timeout: float) -> bool:
        """Wait up to ``timeout`` s for ``p`` to exit (not reaping it); True if it did."""
        deadline = time.monotonic() + timeout
        while not self.exited(p):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        return True

    def signal(self, p: subprocess.Popen, sig: int) -> None:
        if p.returncode is None:                # unreaped: the group id is still p's
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, sig)

    def stop(self, p: subprocess.Popen, grace: float = 5.0) -> Optional[int]:
        """SIGTERM ``p``'s group (leftover children of an exited shell too), SIGKILL after
        ``grace`` s, then reap; returns the exit status."""
        if p.returncode is not None:
            return p.returncode
        self.signal(p, signal.SIGTERM)
        if not self.wait(p, grace):
            self.signal(p, signal.SIGKILL)
        return p.wait()

    def finish(self, p: subprocess.Popen) -> int:
        """Reap ``p`` after it exited, stopping what it left running in its group."""
        status = os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
        self.signal(p, signal.SIGTERM)
        p.wait()
        return status.si_status if status is not None and status.si_code == os.CLD_EXITED \
            else p.returncode


def _tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])


def _udp_bound(pid: int, port: int) -> bool:
    """Whether the network namespace of process ``pid`` has a UDP socket on ``port``."""
    for name in ("udp", "udp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local = line.split()[1]
            if int(local.rsplit(":", 1)[1], 16) == port:
                return True
    return False


def _template(text: str, values: dict, which: str) -> str:
    try:
        return text.format(**values)
    except (KeyError, IndexError, ValueError) as e:
        raise RealtimeError(f"--{which}-cmd {text!r}: bad placeholder ({e}); the placeholders "
                            f"are {', '.join('{' + k + '}' for k in TEMPLATE_FIELDS)} (write a "
                            "literal brace as {{ or }})") from None


def _child_env() -> dict:
    env = dict(os.environ)
    paths = [str(HOST_DIR)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_realtime(client_if: str, server_if: str, size: int, ack: str = "default",
                 cc: str = "reno", max_ack_delay_ms: float = 25.0,
                 client_cmd: Optional[str] = None, server_cmd: Optional[str] = None,
                 timeout: float = 120.0, outdir: "str | Path | None" = None, *,
                 netem: Optional[str] = None, initial_rtt_ms: float = 333.0,
                 server_port: int = SERVER.port) -> Transfer:
    """Download ``size`` bytes from a server in one namespace (behind ``server_if``) to a client
    in another (behind ``client_if``), in real time, and return a ``sim.cosim.Transfer``-shaped
    record built from captures on both interfaces (see :func:`build_transfer`).

    Our endpoints (aioquic's asyncio API with PolicyConnection) run unless ``client_cmd`` /
    ``server_cmd`` give shell templates for external ones; placeholders: {server_ip}
    {server_port} {client_ip} {size} {outdir}, and {python} {ack} {cc} {max_ack_delay_ms}. An
    external client has completed when it exits with status 0. The client's ACK policy is
    ``ack``; the server keeps aioquic's default unless ``ack`` is ack-frequency:N (as in
    sim.cosim.run_transfer). ``netem`` (e.g. "delay 10ms") adds a netem qdisc on both interfaces.

    ``outdir`` receives the captures (client.capture, server.capture), the endpoints' records
    (client.json, server.json), their output (*.log) and realtime.json (per-direction counts:
    logged, captured out/in, matched); None uses a temporary directory removed afterwards.
    Raises :class:`RealtimeError` for set-up problems; a transfer that fails returns with
    ``completed`` False and ``error`` set.
    """
    if size < 1:
        raise RealtimeError("size must be at least 1 byte")
    policy = _parse_policy(ack)
    server_policy = policy if policy.kind == "ack-frequency" else AckPolicy("default")
    _configs(cc, max_ack_delay_ms, initial_rtt_ms)              # validate before any set-up
    tmp = tempfile.TemporaryDirectory(prefix="satemu-realtime-") if outdir is None else None
    out = Path(tmp.name if tmp is not None else outdir).resolve()
    try:
        out.mkdir(parents=True, exist_ok=True)
        values = {"server_ip": SERVER.ipv4, "server_port": server_port,
                  "client_ip": CLIENT.ipv4, "size": size, "outdir": str(out),
                  "python": sys.executable, "ack": str(policy), "cc": cc,
                  "max_ack_delay_ms": max_ack_delay_ms}
        client_sh = _template(client_cmd, values, "client") if client_cmd else None
        server_sh = _template(server_cmd, values, "server") if server_cmd else None
        for name in ("client.capture", "server.capture", "client.json", "server.json",
                     "client.ready", "server.ready"):
            (out / name).unlink(missing_ok=True)
        py = [sys.executable, "-m", MODULE]
        common = ["--cc", cc, "--max-ack-delay", repr(max_ack_delay_ms),
                  "--initial-rtt", repr(initial_rtt_ms)]
        error = None
        client_exit = None
        with Namespaces(client_if, server_if) as ns, _Processes(_child_env()) as procs:
            if netem:
                ns.netem(netem)
            captures = {}
            for role, name, ifname in (("client", ns.client, client_if),
                                       ("server", ns.server, server_if)):
                captures[role] = procs.start(ns.exec_argv(name, py + [
                    "capture", "--if", ifname, "--out", str(out / f"{role}.capture"),
                    "--ready", str(out / f"{role}.ready")]), out / f"{role}-capture.log")
            deadline = time.monotonic() + STARTUP_TIMEOUT_S
            for role, p in captures.items():
                while not (out / f"{role}.ready").exists():
                    if procs.exited(p) or time.monotonic() > deadline:
                        raise RealtimeError(f"the {role} capture did not start: "
                                            f"{_tail(out / f'{role}-capture.log') or 'timeout'}")
                    time.sleep(0.02)

            if server_sh is None:
                server_argv = py + ["serve", "--bind", SERVER.ipv4, "--port", str(server_port),
                                    "--ack", str(server_policy), "--stats",
                                    str(out / "server.json")] + common
            else:
                server_argv = ["sh", "-c", server_sh]
            server = procs.start(ns.exec_argv(ns.server, server_argv), out / "server.log")
            while not _udp_bound(server.pid, server_port):
                if procs.exited(server):
                    status = procs.stop(server)
                    raise RealtimeError(f"the server exited (status {status}) before listening "
                                        f"on UDP port {server_port}: "
                                        f"{_tail(out / 'server.log') or 'no output'}")
                if time.monotonic() > deadline:
                    raise RealtimeError("the server did not start listening on UDP port "
                                        f"{server_port} within {STARTUP_TIMEOUT_S:g} s: "
                                        f"{_tail(out / 'server.log') or 'no output'}")
                time.sleep(0.02)

            if client_sh is None:
                client_argv = py + ["fetch", "--connect", SERVER.ipv4, "--port",
                                    str(server_port), "--local-port", str(CLIENT.port),
                                    "--size", str(size), "--ack", str(policy),
                                    "--timeout", repr(timeout),
                                    "--result", str(out / "client.json")] + common
            else:
                client_argv = ["sh", "-c", client_sh]
            started = time.monotonic()
            client = procs.start(ns.exec_argv(ns.client, client_argv), out / "client.log")
            # our client gives up by itself at ``timeout``; allow it time to write its record
            if procs.wait(client, timeout + (10.0 if client_sh is None else 0.0)):
                client_exit = procs.finish(client)
            else:
                error = f"timed out after {timeout:g} s"
                procs.stop(client)
            wall = time.monotonic() - started
            if client_exit == 0:
                if server_sh is None:
                    procs.wait(server, 10.0)    # ours leaves once the connection has closed
                else:
                    time.sleep(SETTLE_S)        # an external one is stopped after a grace time
            procs.stop(server)
            time.sleep(SETTLE_S)                      # frames in flight reach the captures
            for p in captures.values():
                procs.stop(p, grace=10.0)

        logs = {}
        for role, cmd in (("client", client_sh), ("server", server_sh)):
            path = out / f"{role}.json"
            if cmd is None and path.exists():
                logs[role] = read_endpoint_log(path)
        if client_sh is None and "client" not in logs and error is None:
            error = f"the client wrote no result: {_tail(out / 'client.log') or 'no output'}"
        for role in ("client", "server"):
            if not (out / f"{role}.capture").exists():
                raise RealtimeError(f"the {role} capture wrote nothing: "
                                    f"{_tail(out / f'{role}-capture.log')}")
        transfer, info = build_transfer(
            size=size, ack=str(policy) if client_sh is None else "external",
            cc=cc if server_sh is None else "external",
            client_capture=out / "client.capture", server_capture=out / "server.capture",
            client_log=logs.get("client") if client_sh is None else None,
            server_log=logs.get("server") if server_sh is None else None,
            client_exit=client_exit, max_ack_delay_ms=max_ack_delay_ms, wall_s=wall,
            error=error)
        info.update(client_if=client_if, server_if=server_if, namespaces=[ns.client, ns.server],
                    netem=netem, client_cmd=client_sh, server_cmd=server_sh,
                    client_exit=client_exit, server_policy=str(server_policy),
                    completed=transfer.completed, completion_s=transfer.completion_s,
                    error=transfer.error)
        (out / "realtime.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n",
                                           encoding="utf-8")
        return transfer
    finally:
        if tmp is not None:
            tmp.cleanup()


# ---------------------------------------------------------------------------------------------
# entry point: python -m satemu.quic.realtime {serve,fetch,capture}

def _write_json(path: str, record: dict) -> None:
    tmp = Path(f"{path}.tmp")
    tmp.write_text(json.dumps(record) + "\n", encoding="utf-8")
    tmp.replace(path)


def _cmd_serve(args: argparse.Namespace) -> int:
    async def run() -> dict:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        ready = (lambda _addr: Path(args.ready).touch()) if args.ready else None
        return await serve_bulk(args.bind, args.port, ack=args.ack, cc=args.cc,
                                max_ack_delay_ms=args.max_ack_delay,
                                initial_rtt_ms=args.initial_rtt, stop=stop, ready=ready)

    record = asyncio.run(run())
    if args.stats:
        _write_json(args.stats, record)
    return 0


def _cmd_fetch(args: argparse.Namespace) -> int:
    record = asyncio.run(fetch_bulk(args.connect, args.port, args.size, ack=args.ack, cc=args.cc,
                                    max_ack_delay_ms=args.max_ack_delay,
                                    initial_rtt_ms=args.initial_rtt, local_port=args.local_port,
                                    timeout=args.timeout))
    if args.result:
        _write_json(args.result, record)
    if not record["completed"]:
        print(f"fetch: {record['error']}", file=sys.stderr)
    return 0 if record["completed"] else 1


def _cmd_capture(args: argparse.Namespace) -> int:
    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.append(True))
    capture(args.interface, args.out, args.ready, should_stop=lambda: bool(stop))
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"python -m {MODULE}",
                                 description="Real-time QUIC bulk endpoints and a capture")
    sub = ap.add_subparsers(dest="command", required=True)

    def quic_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--port", type=int, default=SERVER.port, help="server UDP port")
        p.add_argument("--ack", default="default", help="ACK policy: default, ratio:N, "
                       "adaptive or ack-frequency:N")
        p.add_argument("--cc", choices=["reno", "cubic"], default="reno")
        p.add_argument("--max-ack-delay", type=float, default=25.0, metavar="MS")
        p.add_argument("--initial-rtt", type=float, default=333.0, metavar="MS")

    serve = sub.add_parser("serve", help="serve one bulk download, then exit")
    serve.add_argument("--bind", default=SERVER.ipv4)
    quic_args(serve)
    serve.add_argument("--stats", metavar="FILE", help="write the server's record here")
    serve.add_argument("--ready", metavar="FILE", help="create FILE once listening")
    serve.set_defaults(func=_cmd_serve)
    fetch = sub.add_parser("fetch", help="download --size bytes; exit 0 when complete")
    fetch.add_argument("--connect", default=SERVER.ipv4)
    quic_args(fetch)
    fetch.add_argument("--size", type=int, required=True)
    fetch.add_argument("--local-port", type=int, default=0, help="client UDP port (0: any)")
    fetch.add_argument("--timeout", type=float, default=120.0, metavar="S")
    fetch.add_argument("--result", metavar="FILE", help="write the client's record here")
    fetch.set_defaults(func=_cmd_fetch)
    cap = sub.add_parser("capture", help="record the frames on an interface until SIGTERM")
    cap.add_argument("--if", dest="interface", required=True)
    cap.add_argument("--out", required=True)
    cap.add_argument("--ready", help="create this file once capturing")
    cap.set_defaults(func=_cmd_capture)
    return ap


def main(argv: Optional[list[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (RealtimeError, OSError) as e:
        print(f"{MODULE} {args.command}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
