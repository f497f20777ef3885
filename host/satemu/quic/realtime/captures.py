# SPDX-License-Identifier: BSD-2-Clause
"""A real-time run's Transfer, built from its two captures and its endpoints' logs."""

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
#     with the emulator does not apply (its consistency says ``applicable: false``);
#   * no determinism: seed is 0 and meaningless, randomness is real.

from __future__ import annotations

from pathlib import Path
from typing import Optional

from satemu.quic.transfer import Delivery, PacketRecord, Transfer
from satemu.quic.afpacket import align_log, read_capture
from satemu.quic.packets import CLIENT, SERVER

F_CLK = 1_000_000_000                   # cycle = CLOCK_MONOTONIC nanoseconds


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
