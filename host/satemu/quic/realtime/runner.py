# SPDX-License-Identifier: BSD-2-Clause
"""A real-time run: captures, a server and a client in two namespaces, and its Transfer."""

# Processes, all started with ``ip netns exec NS ...`` and all in a session of their own, so a
# shell template's children go with it:
#   * ``python -m satemu.quic.realtime capture --if IF --out FILE --ready FILE`` in each
#     namespace: an AF_PACKET sniffer (capture.capture()); started first, waited for (ready file);
#   * the server: ``... serve`` (aioquic's asyncio API, see aio.serve_bulk()) or ``sh -c TEMPLATE``;
#     the client starts once the server's namespace has a UDP socket on the server port
#     (read from /proc/PID/net/udp{,6}, which shows that process's namespace);
#   * the client: ``... fetch`` (see aio.fetch_bulk()) or ``sh -c TEMPLATE``.
# Every value substituted into a template is shell-quoted (shlex.quote) after formatting, so a
# value (an --out directory with a ';' in it, say) is one word and never a command.

from __future__ import annotations

import contextlib
import json
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional

from satemu.quic.transfer import Transfer
from satemu.quic.ackpolicy import AckPolicy
from satemu.quic.aio import endpoint_configs, parse_policy, read_endpoint_log
from satemu.quic.netns import Namespaces, RealtimeError
from satemu.quic.packets import CLIENT, SERVER
from satemu.quic.settings import EndpointSettings
from satemu.quic.realtime.captures import build_transfer
from satemu.quic.realtime.supervise import (MODULE, _child_env, _Processes, _Run, _say, _tail,
    _udp_bound, start_captures)

TEMPLATE_FIELDS = ("server_ip", "server_port", "client_ip", "size", "outdir", "python", "ack",
                   "cc", "max_ack_delay_ms")
SETTLE_S = 0.5                          # after the endpoints: frames still in flight land
STARTUP_TIMEOUT_S = 15.0                # captures ready, server bound


class _Quoted:
    """A template value: formatted as the value itself would be (``{size:d}``, ``{outdir!s}``),
    then shell-quoted, so that it reaches ``sh -c`` as exactly one word."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __format__(self, spec: str) -> str:
        return shlex.quote(format(self.value, spec))

    def __str__(self) -> str:
        return shlex.quote(str(self.value))

    def __repr__(self) -> str:
        return shlex.quote(repr(self.value))


def _template(text: str, values: dict, which: str) -> str:
    """``text`` with its placeholders filled from ``values``, each value shell-quoted
    (:class:`_Quoted`): a value never ends a command or starts another. A placeholder goes
    bare into the template (``--out {outdir}/x``), not inside quotes of its own."""
    try:
        return text.format(**{k: _Quoted(v) for k, v in values.items()})
    except (KeyError, IndexError, ValueError, AttributeError, TypeError) as e:
        raise RealtimeError(f"--{which}-cmd {text!r}: bad placeholder ({e}); the placeholders "
                            f"are {', '.join('{' + k + '}' for k in TEMPLATE_FIELDS)} (write a "
                            "literal brace as {{ or }})") from None


def run_realtime(client_if: str, server_if: str, size: int, ack: str = "default",
                 settings: Optional[EndpointSettings] = None,
                 client_cmd: Optional[str] = None, server_cmd: Optional[str] = None,
                 timeout: float = 120.0, outdir: "str | Path | None" = None, *,
                 netem: Optional[str] = None, server_port: int = SERVER.port,
                 say: Callable[[str], None] = _say) -> Transfer:
    """Download ``size`` bytes from a server in one namespace (behind ``server_if``) to a client
    in another (behind ``client_if``), in real time, and return a ``satemu.quic.transfer.Transfer``
    built from captures on both interfaces (see :func:`build_transfer`).

    Our endpoints (aioquic's asyncio API with PolicyConnection) run unless ``client_cmd`` /
    ``server_cmd`` give shell templates for external ones; placeholders: {server_ip}
    {server_port} {client_ip} {size} {outdir}, and {python} {ack} {cc} {max_ack_delay_ms}, each
    replaced by its value shell-quoted (so written bare, not inside quotes). An external client
    has completed when it exits with status 0. The client's ACK policy is ``ack``; the server
    keeps aioquic's default unless ``ack`` is ack-frequency:N (as in satemu.quic.cosim).
    ``netem`` (e.g. "delay 10ms") adds a netem qdisc on both interfaces.

    ``outdir`` receives the captures (client.pcapng, server.pcapng; with our client, the TLS
    secrets embedded, and in keys.log), the endpoints' records
    (client.json, server.json), their output (*.log) and realtime.json (per-direction counts:
    logged, captured out/in, matched; ``swept``); None uses a temporary directory removed
    afterwards. Raises :class:`RealtimeError` for set-up problems; a transfer that fails returns
    with ``completed`` False and ``error`` set.

    Clean-up: the set-up first removes the namespaces of dead runs (netns.Namespaces) and
    ``say``s how many when there were any. In the main thread, SIGTERM or SIGINT during the run
    stops the children (their process groups), deletes the namespaces (and with them their
    interfaces) and a temporary ``outdir``, ``say``s so in one line, then raises
    SystemExit(128 + signum) for SIGTERM and KeyboardInterrupt for SIGINT (the CLI's status for
    it is 130); see :class:`_Run`.
    """
    if size < 1:
        raise RealtimeError("size must be at least 1 byte")
    policy = parse_policy(ack)
    server_policy = policy if policy.asks_peer else AckPolicy("default")
    settings = settings or EndpointSettings()
    endpoint_configs(settings)                  # validate before any set-up
    cc, max_ack_delay_ms = settings.cc, settings.max_ack_delay_ms
    with _Run(say) as res:
        if outdir is None:
            res.tmp = tempfile.TemporaryDirectory(prefix="satemu-realtime-")
        out = Path(res.tmp.name if res.tmp is not None else outdir).resolve()
        out.mkdir(parents=True, exist_ok=True)
        values = {"server_ip": SERVER.ipv4, "server_port": server_port,
                  "client_ip": CLIENT.ipv4, "size": size, "outdir": str(out),
                  "python": sys.executable, "ack": str(policy), "cc": cc,
                  "max_ack_delay_ms": max_ack_delay_ms}
        client_sh = _template(client_cmd, values, "client") if client_cmd else None
        server_sh = _template(server_cmd, values, "server") if server_cmd else None
        for name in ("client.pcapng", "server.pcapng", "keys.log", "client.json", "server.json",
                     "client-capture.ready", "server-capture.ready"):
            (out / name).unlink(missing_ok=True)
        py = [sys.executable, "-m", MODULE]
        common = ["--settings", json.dumps(settings.to_dict())]
        error = None
        client_exit = None
        res.ns = Namespaces(client_if, server_if, check=res.check)
        res.procs = _Processes(_child_env(), check=res.check)
        with res.ns as ns, res.procs as procs:
            captures = start_captures(res, ns, procs, out, netem, STARTUP_TIMEOUT_S)
            deadline = time.monotonic() + STARTUP_TIMEOUT_S
            if server_sh is None:
                server_argv = py + ["serve", "--bind", SERVER.ipv4, "--port", str(server_port),
                                    "--ack", str(server_policy), "--stats",
                                    str(out / "server.json")] + common
            else:
                server_argv = ["sh", "-c", server_sh]
            server = procs.start(ns.exec_argv(ns.server, server_argv), out / "server.log")
            while not _udp_bound(server.pid, server_port):
                res.check()
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
                                    "--result", str(out / "client.json"),
                                    "--keylog", str(out / "keys.log")] + common
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
            res.check()
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
            if not (out / f"{role}.pcapng").exists():
                raise RealtimeError(f"the {role} capture wrote nothing: "
                                    f"{_tail(out / f'{role}-capture.log')}")
        keys = out / "keys.log"
        if keys.exists() and keys.stat().st_size:     # our client's: Wireshark decrypts QUIC
            from satemu.base.pcapng import PcapngError, embed_secrets
            for role in ("client", "server"):
                with contextlib.suppress(PcapngError):  # a cut file: read_capture says so
                    embed_secrets(out / f"{role}.pcapng", keys.read_bytes())
        transfer, info = build_transfer(
            size=size, ack=str(policy) if client_sh is None else "external",
            cc=cc if server_sh is None else "external",
            client_capture=out / "client.pcapng", server_capture=out / "server.pcapng",
            client_log=logs.get("client") if client_sh is None else None,
            server_log=logs.get("server") if server_sh is None else None,
            client_exit=client_exit, max_ack_delay_ms=max_ack_delay_ms, wall_s=wall,
            error=error, settings=settings.to_dict(),
            stacks={"client": "aioquic" if client_sh is None else "external",
                    "server": "aioquic" if server_sh is None else "external"})
        info.update(client_if=client_if, server_if=server_if, namespaces=[ns.client, ns.server],
                    swept=ns.swept, netem=netem, client_cmd=client_sh, server_cmd=server_sh,
                    client_exit=client_exit, server_policy=str(server_policy),
                    completed=transfer.completed, completion_s=transfer.completion_s,
                    error=transfer.error)
        (out / "realtime.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n",
                                           encoding="utf-8")
        return transfer
