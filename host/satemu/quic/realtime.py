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
# gateway side): forward is server -> client, return is client -> server, as in satemu.quic.cosim.
#
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
#
# Cleaning up: the namespaces carry the owner's PID in their names (satemu.quic.netns), so a run
# first sweeps those of dead runs. During the run SIGTERM and SIGINT unwind it through the same
# clean-up as a normal end (children's process groups stopped, namespaces and with them their
# interfaces deleted, each once; a second signal does not cut that short), then it says so on
# one line and exits with status 128 + the signal's number.
#
# Time: every process stamps with CLOCK_MONOTONIC in nanoseconds. Network namespaces do not
# virtualise clocks, so the stamps of all processes on one host are comparable; the Transfer
# built from them uses cycle = monotonic ns and f_clk = 1e9.
#
# What the captures can and cannot say:
#   * sizes are Ethernet frames without FCS (AF_PACKET never sees it), as the emulator counts
#     them. Frames shorter than 60 bytes are not padded on a veth (a NIC pads them on the wire),
#     so the recorded size is padded to 60 (CapturedFrame.size; .length keeps the raw length);
#   * "sent" is a frame leaving the sender's interface, "delivered" one reaching the receiver's
#     interface: a datagram the receiving socket then drops (full buffer) counts as delivered.
#     The endpoints' own counters (client_stats/server_stats: datagrams_received) tell those
#     apart; the endpoints enlarge their socket buffers (aio.SOCKET_BUFFER) so a Python receiver
#     does not drop bursts a fast link delivers;
#   * ACK-only is known only for our endpoints (from their logs, matched by order and size).
#     For external ones it is unknown; PacketRecord.ack_only is a bool, so it is False there and
#     realtime.json says ``ack_only_known: false``;
#   * time stamps are the kernel's (SO_TIMESTAMPNS, CLOCK_REALTIME) moved onto CLOCK_MONOTONIC
#     with an offset read when the capture starts; a clock step during a run would shift them
#     (implausible ones fall back to the time the sniffer read the frame);
#   * no board counters: Transfer.board_stats is {}, so report.metrics.summarize()'s cross-check
#     with the emulator has nothing to compare with and reports every item as a mismatch;
#   * no determinism: seed is 0 and meaningless, randomness is real.

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

from ..transfer import Delivery, PacketRecord, Transfer
from .ackpolicy import AckPolicy
from .aio import endpoint_configs, fetch_bulk, parse_policy, read_endpoint_log, serve_bulk
from .capture import align_log, capture, read_capture
from .netns import Namespaces, RealtimeError
from .packets import CLIENT, SERVER
from .settings import EndpointSettings

__all__ = ["build_transfer", "run_realtime", "main", "F_CLK", "TEMPLATE_FIELDS"]

F_CLK = 1_000_000_000                   # cycle = CLOCK_MONOTONIC nanoseconds
MODULE = "satemu.quic.realtime"
HOST_DIR = Path(__file__).resolve().parents[2]      # what PYTHONPATH needs for ``-m MODULE``
TEMPLATE_FIELDS = ("server_ip", "server_port", "client_ip", "size", "outdir", "python", "ack",
                   "cc", "max_ack_delay_ms")
SETTLE_S = 0.5                          # after the endpoints: frames still in flight land
STARTUP_TIMEOUT_S = 15.0                # captures ready, server bound


# ---------------------------------------------------------------------------------------------
# building a Transfer from captures and endpoint logs

def build_transfer(*, size: int, ack: str, cc: str, client_capture: "str | Path",
                   server_capture: "str | Path", client_log: Optional[dict] = None,
                   server_log: Optional[dict] = None, client_exit: Optional[int] = None,
                   max_ack_delay_ms: float = 25.0, wall_s: float = 0.0,
                   error: Optional[str] = None, client_ip: str = CLIENT.ipv4,
                   server_ip: str = SERVER.ipv4, settings: Optional[dict] = None,
                   stacks: Optional[dict] = None) -> tuple[Transfer, dict]:
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
            flags, counts = align_log(out, logged)
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
        wall_s=wall_s, virtual_s=wall_s, error=error, engine="realtime", settings=settings,
        stacks=stacks)
    return transfer, info


# ---------------------------------------------------------------------------------------------
# running it

class _Processes:
    """Child processes, each in a session of its own; signalled by process group only while
    their leader is unreaped (so the group id is still theirs), reaped on exit. :meth:`wait`
    calls ``check`` while it waits (it may raise: a signal, _Run.check); :meth:`stop` and
    :meth:`close` do not, so nothing cuts them short."""

    def __init__(self, env: dict, check: Callable[[], None] = lambda: None) -> None:
        self.env = env
        self.check = check
        self.stopped = 0                        # process groups close() had to stop
        self.procs: list[subprocess.Popen] = []
        self._files: list[Any] = []

    def __enter__(self) -> "_Processes":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stop every child still running (newest first), counting them in ``stopped``, and
        close the logs. Idempotent: a reaped child is skipped, so a second call does nothing."""
        for p in reversed(self.procs):
            if p.returncode is None:
                self.stop(p, grace=2.0)
                self.stopped += 1
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

    def wait(self, p: subprocess.Popen, timeout: float, check: bool = True) -> bool:
        """Wait up to ``timeout`` s for ``p`` to exit (not reaping it); True if it did."""
        deadline = time.monotonic() + timeout
        while not self.exited(p):
            if check:
                self.check()
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
        if not self.wait(p, grace, check=False):
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


def _say(message: str) -> None:
    print(f"satemu: {message}", file=sys.stderr, flush=True)


def _child_env() -> dict:
    env = dict(os.environ)
    paths = [str(HOST_DIR)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env["PYTHONUNBUFFERED"] = "1"
    return env


class _Stop(BaseException):
    """Raised once by :meth:`_Run.check` after SIGTERM or SIGINT: unwinds the run."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _Run:
    """What a real-time run holds (``ns``, ``procs``, a temporary directory ``tmp``), set by the
    run as soon as each exists and released when the ``with`` is left, however it is left.

    In the main thread SIGTERM and SIGINT are caught meanwhile. The handler only notes the first
    one (``signum``); the run's waits call :meth:`check`, which raises :class:`_Stop` once, so
    the run unwinds from a known point and nothing ever interrupts a release half-way. On exit
    the children's process groups are stopped, the namespaces deleted (their interfaces with
    them) and ``tmp`` removed, each once (:meth:`release` is idempotent); then, if a signal came
    (also during a normal end), one line goes to ``say`` and the run leaves with
    SystemExit(128 + signum), or KeyboardInterrupt for SIGINT (status 130 at the CLI). The
    previous handlers come back on exit. Outside the main thread (where Python runs no signal
    handler) the signals keep their handlers."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self, say: Callable[[str], None] = _say) -> None:
        self.say = say
        self.ns: Optional[Namespaces] = None
        self.procs: Optional[_Processes] = None
        self.tmp: Optional[tempfile.TemporaryDirectory] = None
        self.signum: Optional[int] = None
        self._unwinding = False
        self._old: dict = {}

    def __enter__(self) -> "_Run":
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self._old[sig] = signal.signal(sig, self._note)
        return self

    def _note(self, signum: int, _frame: Any) -> None:
        if self.signum is None:
            self.signum = signum

    def check(self) -> None:
        """Raise :class:`_Stop` if a signal came, the first time only (the unwinding and the
        release it leads to call waits that check too)."""
        if self.signum is not None and not self._unwinding:
            self._unwinding = True
            raise _Stop(self.signum)

    def release(self) -> None:
        """Stop the children, delete the namespaces, remove ``tmp``; each only once."""
        self._unwinding = True
        if self.procs is not None:
            self.procs.close()
        if self.ns is not None:
            self.ns.close()
        if self.tmp is not None:
            self.tmp.cleanup()
            self.tmp = None

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        try:
            self.release()
        finally:
            for sig, old in self._old.items():
                signal.signal(sig, old if old is not None else signal.SIG_DFL)
            self._old.clear()
        if self.signum is None:
            return
        stopped = self.procs.stopped if self.procs is not None else 0
        deleted = self.ns.deleted if self.ns is not None else []
        removed = (f"deleted namespaces {' and '.join(deleted)} with their interfaces"
                   if deleted else "no namespace was created yet")
        self.say(f"stopped by {signal.Signals(self.signum).name}: stopped {stopped} child "
                 f"process group(s), {removed}; exit status {128 + self.signum}")
        if self.signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + self.signum)


def run_realtime(client_if: str, server_if: str, size: int, ack: str = "default",
                 settings: Optional[EndpointSettings] = None,
                 client_cmd: Optional[str] = None, server_cmd: Optional[str] = None,
                 timeout: float = 120.0, outdir: "str | Path | None" = None, *,
                 netem: Optional[str] = None, server_port: int = SERVER.port,
                 say: Callable[[str], None] = _say) -> Transfer:
    """Download ``size`` bytes from a server in one namespace (behind ``server_if``) to a client
    in another (behind ``client_if``), in real time, and return a ``satemu.transfer.Transfer``
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
    server_policy = policy if policy.kind == "ack-frequency" else AckPolicy("default")
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
                     "client.ready", "server.ready"):
            (out / name).unlink(missing_ok=True)
        py = [sys.executable, "-m", MODULE]
        common = ["--settings", json.dumps(settings.to_dict())]
        error = None
        client_exit = None
        res.ns = Namespaces(client_if, server_if, check=res.check)
        res.procs = _Processes(_child_env(), check=res.check)
        with res.ns as ns, res.procs as procs:
            if ns.swept:
                say(f"swept {len(ns.swept)} namespace(s) left by runs no longer running: "
                    f"{', '.join(ns.swept)}")
            if netem:
                ns.netem(netem)
            captures = {}
            for role, name, ifname in (("client", ns.client, client_if),
                                       ("server", ns.server, server_if)):
                captures[role] = procs.start(ns.exec_argv(name, py + [
                    "capture", "--if", ifname, "--out", str(out / f"{role}.pcapng"),
                    "--ready", str(out / f"{role}.ready")]), out / f"{role}-capture.log")
            deadline = time.monotonic() + STARTUP_TIMEOUT_S
            for role, p in captures.items():
                while not (out / f"{role}.ready").exists():
                    res.check()
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
            from ..pcapng import PcapngError, embed_secrets
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


# ---------------------------------------------------------------------------------------------
# entry point: python -m satemu.quic.realtime {serve,fetch,capture}

def _write_json(path: str, record: dict) -> None:
    tmp = Path(f"{path}.tmp")
    tmp.write_text(json.dumps(record) + "\n", encoding="utf-8")
    tmp.replace(path)


def _settings(args: argparse.Namespace) -> EndpointSettings:
    try:
        return EndpointSettings.from_dict(json.loads(args.settings)) if args.settings \
            else EndpointSettings()
    except (ValueError, TypeError) as e:
        raise RealtimeError(f"--settings: {e}") from None


def _cmd_serve(args: argparse.Namespace) -> int:
    async def run() -> dict:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        ready = (lambda _addr: Path(args.ready).touch()) if args.ready else None
        return await serve_bulk(args.bind, args.port, ack=args.ack,
                                settings=_settings(args), stop=stop, ready=ready)

    record = asyncio.run(run())
    if args.stats:
        _write_json(args.stats, record)
    return 0


def _cmd_fetch(args: argparse.Namespace) -> int:
    record = asyncio.run(fetch_bulk(args.connect, args.port, args.size, ack=args.ack,
                                    settings=_settings(args), local_port=args.local_port,
                                    timeout=args.timeout, keylog=args.keylog))
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
        p.add_argument("--settings", metavar="JSON", help="the endpoint settings "
                       "(satemu.quic.settings.EndpointSettings as a JSON object; default: its "
                       "defaults)")

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
    fetch.add_argument("--keylog", metavar="FILE", help="write the connection's TLS secrets "
                       "here (SSLKEYLOGFILE lines)")
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
