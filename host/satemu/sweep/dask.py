# SPDX-License-Identifier: BSD-2-Clause
"""A sweep's points on a Dask scheduler, one that another host runs probed before it is trusted."""

from __future__ import annotations

import contextlib
import socket
import struct
import sys
import threading
import time

from satemu.sweep.errors import SweepError
from satemu.sweep.worker import release_board, run_point


# A --dask scheduler: how long connecting to it and its greeting may take, in all (s), and
# the largest greeting accepted (a scheduler's, its comm handshake, is about 100 bytes).
DASK_TIMEOUT = 30.0
GREETING_MAX = 1 << 16


def check_scheduler(address: str, timeout: float = DASK_TIMEOUT) -> None:
    """Return if a Dask scheduler answers at ``address`` (``tcp://HOST:PORT``, ``HOST:PORT``
    or ``tls://HOST:PORT``), else raise SweepError (one line). Dask's client trusts its
    peer's first message (it allocates the length that message's first 8 bytes claim, and
    reads the handshake without a time limit), so this connects itself, reads the greeting a
    scheduler sends first, within ``timeout`` seconds in all, connection included, and no more
    than GREETING_MAX bytes of it, and checks that it is a Dask handshake (decoded as plain
    msgpack: nothing in it is unpickled)."""
    import distributed.comm.addressing  # noqa: F401  (the probe's modules, imported before
    import msgpack  # noqa: F401                       its clock runs)
    ours = _frames(_greeting_of_ours())
    box: dict = {}
    socks: list = []
    probe = threading.Thread(target=_greeting, args=(address, timeout, ours, socks, box),
                             name="satemu-dask-probe", daemon=True)
    probe.start()
    probe.join(timeout + 0.25)          # the probe keeps its own time; this is the backstop
    if probe.is_alive():                # e.g. a resolver, or a TLS peer that trickles
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        probe.join(1.0)
        raise SweepError(f"--dask {address}: not a Dask scheduler (no greeting within "
                           f"{timeout:g} s)")
    if "error" in box:
        raise box["error"]


def _greeting(address: str, timeout: float, ours: bytes, socks: list, box: dict) -> None:
    """check_scheduler's probe, in its thread: its SweepError into ``box["error"]``."""
    try:
        _read_greeting(address, timeout, ours, socks)
    except SweepError as e:
        box["error"] = e
    except Exception as e:              # anything unforeseen is still a refusal, in one line
        box["error"] = SweepError(f"--dask {address}: not a Dask scheduler "
                                    f"({type(e).__name__}: {e})")


def _read_greeting(address: str, timeout: float, ours: bytes, socks: list) -> None:
    """Connect to ``address``, send ``ours`` (a client's greeting) and check the answer, in
    ``timeout`` s; ``socks`` gets each socket as it is opened."""
    import msgpack
    from distributed.comm.addressing import parse_address, parse_host_port
    deadline = time.monotonic() + timeout
    scheme, loc = parse_address(address)
    if scheme not in ("tcp", "tls"):
        raise SweepError(f"--dask {address}: a tcp:// or tls:// scheduler address, or "
                           f"'local'")
    try:
        host, port = parse_host_port(loc)
    except ValueError as e:
        raise SweepError(f"--dask {address}: {e}") from None
    if not 0 < port < 65536:
        raise SweepError(f"--dask {address}: port {port} is outside 1..65535")
    context = None
    if scheme == "tls":
        from distributed.security import Security
        context = Security().get_connection_args("client").get("ssl_context")
        if context is None:
            raise SweepError(f"--dask {address}: tls:// needs Dask's TLS settings "
                               f"(distributed.comm.tls in its configuration)")

    def left() -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        return remaining

    def refuse(why: str) -> SweepError:
        return SweepError(f"--dask {address}: not a Dask scheduler ({why})")

    try:
        conn = socket.create_connection((host, port), timeout=left())
    except TimeoutError:
        raise SweepError(f"--dask {address}: no scheduler there (no connection within "
                           f"{timeout:g} s)") from None
    except OSError as e:
        raise SweepError(f"--dask {address}: no scheduler there ({e})") from None
    socks.append(conn)
    try:
        if context is not None:
            conn.settimeout(left())
            conn = context.wrap_socket(conn, server_hostname=host)
            socks.append(conn)

        # Greet as Dask's client does, first: a peer that answers only what it is sent (an
        # HTTP server, say) answers now.
        try:
            conn.settimeout(left())
            conn.sendall(ours)
        except TimeoutError:
            raise refuse(f"it would not read a greeting within {timeout:g} s") from None
        except ConnectionError:
            raise refuse("it closed the connection unasked") from None

        def read(n: int) -> bytes:
            data = b""
            while len(data) < n:
                try:
                    conn.settimeout(left())
                    chunk = conn.recv(n - len(data))
                except TimeoutError:
                    raise refuse(f"no greeting within {timeout:g} s") from None
                except ConnectionError:
                    chunk = b""
                if not chunk:
                    raise refuse(f"it closed the connection after {len(data)} bytes of its "
                                 f"greeting" if data else "it closed the connection unasked")
                data += chunk
            return data

        # Dask's TCP framing: 8 bytes, the length of the rest; then the frame count, each
        # frame's length (8 bytes each, native order, as Dask writes them) and the frames.
        head = read(8)
        (length,) = struct.unpack("Q", head)
        if not 16 <= length <= GREETING_MAX:
            raise refuse(f"its first 8 bytes, {head!r}, claim a message of {length} bytes")
        body = read(length)
        (count,) = struct.unpack_from("Q", body)
        if not 1 <= count <= (length - 8) // 8:
            raise refuse(f"its first message claims {count} frames in {length} bytes")
        sizes = struct.unpack_from(f"{count}Q", body, 8)
        if 8 * (1 + count) + sum(sizes) != length:
            raise refuse("its first message's frames do not add up to its length")
        first = body[8 * (1 + count):8 * (1 + count) + sizes[0]]
        try:
            hello = msgpack.unpackb(first, raw=False, use_list=False, strict_map_key=False)
        except Exception:
            hello = None
        if not (isinstance(hello, dict) and {"compression", "python", "pickle-protocol"}
                <= hello.keys()):
            raise refuse("its first message is not a Dask handshake")
    finally:
        conn.close()


def _greeting_of_ours() -> dict:
    """The handshake a Dask client sends (distributed.comm.core.Comm.handshake_info)."""
    import pickle
    return {"compression": None, "python": tuple(sys.version_info)[:3],
            "pickle-protocol": pickle.HIGHEST_PROTOCOL}


def _frames(msg: dict) -> bytes:
    """``msg`` as Dask's TCP comm sends it: its length, its frames' count and lengths, them."""
    from distributed.protocol import dumps
    frames = [bytes(f) for f in dumps(msg)]
    body = struct.pack(f"Q{len(frames)}Q", len(frames), *map(len, frames)) + b"".join(frames)
    return struct.pack("Q", len(body)) + body


def _dask(points, address, jobs, timeout):
    """Points on a Dask scheduler (``local``: a LocalCluster of ``jobs`` processes; another,
    one check_scheduler has let through)."""
    from dask.distributed import Client, LocalCluster, as_completed
    cluster = None
    if address == "local":
        # No dashboard; the scheduler's HTTP server (its health routes) on a free loopback
        # port, not on 8787, which another cluster may hold (Dask then warns and moves).
        cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                               dashboard_address=None,
                               scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
        client = Client(cluster)
    else:
        try:
            client = Client(address, timeout=timeout)
        except Exception as e:          # a peer that greets as Dask does, then fails
            raise SweepError(f"--dask {address}: no scheduler there "
                               f"({type(e).__name__}: {e})") from None
    futures = {}
    try:
        for p in points:
            futures[client.submit(run_point, p, key=f"satemu-point-{p.id}", pure=False)] = p
        for f in as_completed(futures):
            p = futures[f]
            try:
                yield p, f.result()
            except Exception as e:         # KilledWorker: its worker died (thrice)
                yield p, {"ok": False, "error": f"{type(e).__name__}: {e}", "log": None}
    finally:
        with contextlib.suppress(Exception):
            client.cancel(list(futures))
        with contextlib.suppress(Exception):
            client.run(release_board)
        client.close()
        if cluster is not None:
            cluster.close()
