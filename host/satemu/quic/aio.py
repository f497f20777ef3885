# SPDX-License-Identifier: BSD-2-Clause
"""The bulk application over aioquic's asyncio API with the ACK policies: real-time endpoints."""

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

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import socket
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from aioquic.asyncio import QuicConnectionProtocol, connect, serve
from aioquic.asyncio import client as aio_client
from aioquic.asyncio import server as aio_server
from aioquic.quic.events import (ConnectionTerminated, HandshakeCompleted, StreamDataReceived,
                                 StreamReset)

from satemu.quic.ackpolicy import AckPolicy, PolicyConnection
from satemu.quic.bulk import BulkAnswers, BulkDownload, make_configs
from satemu.quic.settings import ECN_CODEPOINTS, EndpointSettings
from satemu.quic.afpacket import SO_RCVBUFFORCE, SO_SNDBUFFORCE
from satemu.quic.netns import RealtimeError

__all__ = ["policy_connections", "BulkServerProtocol", "BulkClientProtocol", "serve_bulk",
           "fetch_bulk", "read_endpoint_log"]

SOCKET_BUFFER = 8 << 20                 # the endpoints' UDP socket buffers


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
    """A QuicConnectionProtocol that logs (monotonic ns, UDP size, ACK-only) per datagram sent;
    its socket sends with the ECN field ``tos`` (the class's, which a run sets from its
    settings: satemu.quic.settings.ECN_CODEPOINTS)."""

    tos = 0

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
            if self.tos:
                sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, self.tos)

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


def endpoint_configs(settings: Optional[EndpointSettings] = None) -> tuple:
    """:func:`make_configs`'s (client, server) configurations; :class:`RealtimeError` if aioquic
    cannot take ``settings``."""
    try:
        return make_configs(settings)
    except ValueError as e:
        raise RealtimeError(str(e)) from None


def parse_policy(text: "str | AckPolicy") -> AckPolicy:
    """:meth:`AckPolicy.parse`, with :class:`RealtimeError` for an unknown policy."""
    try:
        return AckPolicy.parse(text)
    except ValueError as e:
        raise RealtimeError(str(e)) from None


async def serve_bulk(bind: str, port: int, *, ack: "str | AckPolicy" = "default",
                     settings: Optional[EndpointSettings] = None,
                     stop: Optional[asyncio.Event] = None,
                     ready: Optional[Callable[[tuple], None]] = None) -> dict:
    """Serve bulk downloads with aioquic's ``serve()`` until the first connection has terminated
    (or ``stop`` is set); returns the server's record (see :func:`read_endpoint_log`).

    ``ready`` is called with the bound socket address once the server listens.
    """
    policy = parse_policy(ack)
    settings = settings or EndpointSettings()
    _client_cfg, server_cfg = endpoint_configs(settings)
    stop = stop if stop is not None else asyncio.Event()
    protocols: list[BulkServerProtocol] = []

    def create_protocol(quic: Any, stream_handler: Any = None) -> BulkServerProtocol:
        protocol = BulkServerProtocol(quic, stream_handler=stream_handler,
                                      on_terminated=lambda _p: stop.set())
        protocol.tos = ECN_CODEPOINTS[settings.ecn]
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
    return {"role": "server", "policy": str(policy), "cc": settings.cc,
            "max_ack_delay_ms": settings.max_ack_delay_ms, "settings": settings.to_dict(),
            "connections": len(protocols),
            "served": {str(k): v for p in protocols for k, v in p.served.items()},
            "max_ack_delay_used_ms": used,
            "stats": first.stats if first is not None else {},
            "datagrams": [list(d) for d in datagrams]}


async def fetch_bulk(host: str, port: int, size: int, *, ack: "str | AckPolicy" = "default",
                     settings: Optional[EndpointSettings] = None, local_port: int = 0,
                     timeout: float = 120.0, keylog: "str | None" = None) -> dict:
    """Download ``size`` bytes with aioquic's ``connect()``, close the connection, and return the
    client's record (see :func:`read_endpoint_log`). ``keylog``: a file to write the
    connection's TLS secrets into (SSLKEYLOGFILE lines)."""
    policy = parse_policy(ack)
    settings = settings or EndpointSettings()
    client_cfg, _server_cfg = endpoint_configs(settings)
    with contextlib.ExitStack() as files:
        if keylog:
            client_cfg.secrets_log_file = files.enter_context(
                open(keylog, "w", encoding="ascii"))
        return await _fetch(host, port, size, policy, settings, client_cfg, local_port,
                            timeout)


async def _fetch(host, port, size, policy, settings, client_cfg, local_port, timeout) -> dict:
    made: list[BulkClientProtocol] = []

    def create_protocol(quic: Any, stream_handler: Any = None) -> BulkClientProtocol:
        made.append(BulkClientProtocol(quic, stream_handler=stream_handler))
        made[-1].tos = ECN_CODEPOINTS[settings.ecn]
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
    return {"role": "client", "policy": str(policy), "cc": settings.cc,
            "max_ack_delay_ms": settings.max_ack_delay_ms, "settings": settings.to_dict(),
            "size": size,
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
