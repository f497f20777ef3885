# SPDX-License-Identifier: BSD-2-Clause
"""A scenario in real time: each terminal's host in a namespace of its own behind the client's
interface, every flow's server behind the server's, and the run's ScenarioRun from captures."""

# The namespaces (satemu.quic.netns.Namespaces with ``hosts``): the server's holds the server
# interface and every flow's server address; the client's holds the client interface, up and
# without an address; each host (a MAC: a terminal's, or the one host of a profile without
# terminals) has a namespace with a macvlan of the client interface carrying that MAC and its
# flows' client addresses. So every frame a terminal's flows send leaves with the terminal's
# source MAC, which is how the box tells terminals apart.
#
# Processes (python -m satemu.quic.realtime ...): a capture on each interface (the client's sees
# every host's frames: a macvlan sends and receives through it); one ``flows --role server``
# with every flow's server connections; one ``flows --role client`` per host with its flows.
# Each binds its sockets, says ``ready``, and waits for the ``go`` file, which holds the run's
# origin (CLOCK_MONOTONIC ns, shared by every namespace): every flow's start counts from it.
# A client process says ``done`` once its flows are done or failed and answers its peers until
# it is stopped; when every client is done (or at the time limit) the run settles, stops the
# endpoints (each writes its record), then the captures.

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from satemu.box.device import Device, DeviceError
from satemu.quic.afpacket import align_log, read_capture
from satemu.quic.boxrun import load_link, read_bod, read_counters
from satemu.quic.netns import Namespaces, RealtimeError
from satemu.quic.realtime.captures import F_CLK
from satemu.quic.realtime.supervise import (MODULE, _child_env, _Processes, _Run, _say, _tail,
    start_captures, wait_ready)
from satemu.quic.transfer import Delivery, PacketRecord
from satemu.quic.workload import ObjectTimes

__all__ = ["run_realtime_scenario", "scenario_hosts", "build_scenario_run"]

STARTUP_TIMEOUT_S = 30.0        # captures ready, every endpoint process bound
GO_LEAD_NS = 20_000_000         # the origin, after the go file is written
SETTLE_S = 0.5                  # after the flows: frames in flight land


def scenario_hosts(sc) -> list[tuple[str, tuple[str, ...], list[int], Optional[int]]]:
    """The scenario's client hosts: (MAC as aa:bb:.., its addresses, its flows, its VLAN ID or
    None) each, in the order their first flow comes; a host is a MAC, on a VLAN if the
    terminals are told apart by VLAN. RealtimeError if one address is on two hosts, or a
    client address is also a server's."""
    hosts: dict[tuple, tuple[list, list]] = {}
    owner: dict[str, tuple] = {}
    servers = {f.server.ipv4 for f in sc.flows}
    for i, f in enumerate(sc.flows):
        key, ip = (f.client.mac, f.client.vlan), f.client.ipv4
        if owner.setdefault(ip, key) != key:
            raise RealtimeError(f"flow.{i + 1}.client_ip: {ip} is also a host's on another "
                                "terminal: one address, one host")
        if ip in servers:
            raise RealtimeError(f"flow.{i + 1}.client_ip: {ip} is also a server's address")
        addrs, flows = hosts.setdefault(key, ([], []))
        if ip not in addrs:
            addrs.append(ip)
        flows.append(i)
    return [(mac.hex(":"), tuple(a), fl, vlan) for (mac, vlan), (a, fl) in hosts.items()]


@dataclass
class RecordedClient:
    """A connection's client as its real-time process recorded it (a FlowRun's ``clients``)."""
    started_at: Optional[float]
    handshake_at: Optional[float]
    done: bool
    error: Optional[str]
    app: object
    stats: dict = field(default_factory=dict)


@dataclass
class _App:
    objects: list


def _recorded(c: dict) -> RecordedClient:
    objects = [ObjectTimes(o["index"], o["method"], o["size"], o["stream_id"],
                           o["requested_s"], o["first_byte_s"], o["completed_s"],
                           error=o["error"]) for o in c["objects"]]
    error = c["error"] if c["started"] else "never started"
    return RecordedClient(c["started_at"], c["handshake_at"], bool(c["done"]), error,
                          _App(objects), c["stats"])


def _connections(sc) -> dict:
    """(client address, server address) -> (connection index, flow index), in the order
    satemu.quic.scenario.flow_pairs makes the connections."""
    conns = {}
    for i, f in enumerate(sc.flows):
        for j in range(len(f.workload.connections())):
            conns[f.client_at(j).addr, f.server.addr] = (len(conns), i)
    return conns


def build_scenario_run(sc, *, client_capture, server_capture, clients: list[dict],
                       server: Optional[dict], origin_ns: int, end_ns: int, wall_s: float,
                       errors: Optional[dict] = None):
    """The :class:`satemu.quic.scenario.ScenarioRun` of a real-time run (cycle = CLOCK_MONOTONIC
    ns, f_clk = 1e9, engine ``realtime``), and a dict of diagnostics.

    ``sent``: each connection's frames captured leaving the sender's interface, ACK-only from
    the sender's record (matched by order and size, satemu.quic.afpacket.align_log);
    ``delivered``: those captured arriving at the receiver's interface, with their flow (-1 for
    a frame between the run's hosts that is no connection's); ``delays``: each datagram sent
    matched with its arrival by a digest of its UDP payload (QUIC's are unique), its one-way
    delay, or counted lost if it never arrived. ``clients``: the client
    processes' records; ``server``: the server's (None if it wrote none); ``errors``: a flow
    index -> error for flows whose client wrote no record."""
    from satemu.quic.scenario import FlowRun, ScenarioRun
    conns = _connections(sc)
    pairs = {(f.client.ipv4, f.server.ipv4) for f in sc.flows}
    at_client, meta_c = read_capture(client_capture, pairs=pairs)
    at_server, meta_s = read_capture(server_capture, pairs=pairs)
    logs: dict[tuple[int, str], list] = {}
    records: dict[int, dict] = {}
    for rec, direction in [(c, "return") for c in clients] + [(server or {}, "forward")]:
        for c in rec.get("connections", ()):
            logs[c["pair"], direction] = c["datagrams"]
            if direction == "return":
                records[c["pair"]] = c

    def whose(f, direction: str):
        key = (((f.dst, f.dport), (f.src, f.sport)) if direction == "forward"
               else ((f.src, f.sport), (f.dst, f.dport)))
        return conns.get(key)

    sent, delivered, unrouted = [], [], 0
    counts = {}
    delays = {i: {"forward": [], "return": [], "lost": {"forward": 0, "return": 0}}
              for i in range(len(sc.flows))}
    for direction, out_frames, in_frames in (
            ("forward", [f for f in at_server if f.outgoing], [f for f in at_client
                                                               if not f.outgoing]),
            ("return", [f for f in at_client if f.outgoing], [f for f in at_server
                                                              if not f.outgoing])):
        arrived: dict[bytes, list[int]] = {}
        for f in in_frames:
            if f.digest is not None:
                arrived.setdefault(f.digest, []).append(f.t_ns)
        by_conn: dict[int, list] = {}
        for f in out_frames:
            c = whose(f, direction)
            if c is not None:
                by_conn.setdefault(c, []).append(f)
        for (pair, flow), frames in sorted(by_conn.items()):
            logged = logs.get((pair, direction), [])
            flags, n = align_log(frames, logged)
            counts[f"{direction}/{pair}"] = {"logged": len(logged), "captured_out": len(frames),
                                             **n}
            sent += [PacketRecord(f.t_ns, direction, f.size, f.udp_size, flag, flow)
                     for f, flag in zip(frames, flags)]
            for f in frames:                    # the same datagram, by its payload's digest
                times = arrived.get(f.digest) if f.digest is not None else None
                if times:
                    delays[flow][direction].append(times.pop(0) - f.t_ns)
                else:
                    delays[flow]["lost"][direction] += 1
        for f in in_frames:
            c = whose(f, direction)
            if c is None:
                unrouted += 1
            delivered.append(Delivery(f.t_ns, direction, f.size, c[1] if c else -1))
    sent.sort(key=lambda r: r.cycle)
    delivered.sort(key=lambda d: d.cycle)

    flows = []
    for i, spec in enumerate(sc.flows):
        run = FlowRun(spec, [], [], [])
        for (pair, flow) in sorted(conns.values()):
            if flow != i:
                continue
            run.pairs.append(pair)
            if pair in records:
                run.clients.append(_recorded(records[pair]))
            else:
                why = (errors or {}).get(i, "its client process wrote no record")
                run.clients.append(RecordedClient(None, None, False, why, _App([])))
        flows.append(run)
    capture = {"client": str(client_capture), "server": str(server_capture),
               "frames": {"client": meta_c["frames"], "server": meta_s["frames"]},
               "other": {"client": meta_c["other"], "server": meta_s["other"]},
               "kernel_drops": {k: (m["trailer"] or {}).get("kernel_drops")
                                for k, m in (("client", meta_c), ("server", meta_s))}}
    run = ScenarioRun(sc, "realtime", F_CLK, origin_ns, (end_ns - origin_ns) / 1e9, wall_s,
                      flows, sent, delivered, {}, undecodable=meta_c["undecodable_in"]
                      + meta_s["undecodable_in"], unrouted=unrouted, capture=capture,
                      delays=delays)
    info = {"connections": counts, "captures": {"client": meta_c, "server": meta_s},
            "unrouted_at_endpoints": {"server": (server or {}).get("unrouted"),
                                      "clients": sum(c.get("unrouted", 0) for c in clients)},
            "send_errors": sum(r.get("send_errors", 0) for r in clients + [server or {}])}
    return run, info


def run_realtime_scenario(client_if: str, server_if: str, sc, *, max_seconds: float = 600.0,
                          outdir: "str | Path | None" = None, netem: Optional[str] = None,
                          box: Optional[str] = None, say: Callable[[str], None] = _say):
    """Run scenario ``sc`` in real time across whatever joins ``client_if`` (port A's side)
    and ``server_if`` (port B's): each host of the scenario (:func:`scenario_hosts`) in a
    namespace of its own, with its terminal's MAC; the flows start at their ``start`` from a
    common origin and run until all are done or failed, or ``max_seconds`` passed. Returns the
    ScenarioRun (:func:`build_scenario_run`).

    ``outdir`` receives the captures (client.pcapng, server.pcapng, with the clients' TLS
    secrets), plan.json (the flows as the processes made them), the endpoints' records
    (server.json, client-K.json a host), their output (*.log) and realtime.json (per
    connection and direction: logged, captured, matched; the namespaces); None uses a
    temporary directory removed afterwards. ``netem`` (e.g. "delay 10ms") adds a netem qdisc
    on both interfaces. With ``box`` (the box's UART URL: a board's serial port,
    ``rfc2217://``, or the simulated board's ``socket://``), the scenario's profile is loaded
    into it first, and the run carries its counters (``board_stats``, each terminal's
    ``terminal_stats``), its BoD records (``bod``, in box cycles: its ``f_clk``) and, in
    realtime.json, how its counters compare with the captures (``box_check``). Set-up problems
    raise :class:`RealtimeError`;
    signals, clean-up and sweeping are as in :func:`satemu.quic.realtime.run_realtime`."""
    hosts = scenario_hosts(sc)
    servers = tuple(dict.fromkeys(f.server.ipv4 for f in sc.flows))
    the_box = _Box(box) if box else None
    if the_box is not None:
        the_box.load(sc.profile, max_seconds)
    with _Run(say) as res:
        if outdir is None:
            res.tmp = tempfile.TemporaryDirectory(prefix="satemu-realtime-")
        out = Path(res.tmp.name if res.tmp is not None else outdir).resolve()
        out.mkdir(parents=True, exist_ok=True)
        for old in {*out.glob("client-*.*"), *out.glob("*.ready"), *out.glob("*.done")}:
            old.unlink(missing_ok=True)
        for name in ("client.pcapng", "server.pcapng", "server.json", "keys.log", "go"):
            (out / name).unlink(missing_ok=True)
        plan = out / "plan.json"
        plan.write_text(json.dumps({"scenario": sc.name,
                                    "flows": [f.to_plan() for f in sc.flows]}, indent=1)
                        + "\n", encoding="utf-8")
        py = [sys.executable, "-m", MODULE]
        res.ns = Namespaces(client_if, server_if, check=res.check,
                            hosts=[(mac, addrs, vlan) for mac, addrs, _, vlan in hosts],
                            server_ips=servers)
        res.procs = _Processes(_child_env(), check=res.check)
        with res.ns as ns, res.procs as procs:
            captures = start_captures(res, ns, procs, out, netem, STARTUP_TIMEOUT_S)
            common = ["flows", "--plan", str(plan), "--go", str(out / "go"),
                      "--until", repr(float(max_seconds))]
            server = procs.start(ns.exec_argv(ns.server, py + common + [
                "--role", "server", "--out", str(out / "server.json"),
                "--ready", str(out / "server.ready")]), out / "server.log")
            clients = []
            for k, ((_mac, _addrs, flows, _vlan), name) in enumerate(zip(hosts,
                                                                         ns.host_namespaces)):
                clients.append(procs.start(ns.exec_argv(name, py + common + [
                    "--role", "client", "--flows", ",".join(map(str, flows)),
                    "--out", str(out / f"client-{k}.json"),
                    "--ready", str(out / f"client-{k}.ready"),
                    "--done", str(out / f"client-{k}.done"),
                    "--keylog", str(out / f"client-{k}.keys")]), out / f"client-{k}.log"))
            waiting = {"the server": (server, out / "server.ready", out / "server.log")}
            waiting.update({f"host {k}'s client": (p, out / f"client-{k}.ready",
                                                   out / f"client-{k}.log")
                            for k, p in enumerate(clients)})
            wait_ready(res, procs, waiting, STARTUP_TIMEOUT_S)
            if the_box is not None:
                the_box.mark_origin()
            origin = time.monotonic_ns() + GO_LEAD_NS
            (out / "go.tmp").write_text(str(origin), encoding="ascii")
            (out / "go.tmp").replace(out / "go")
            started = time.monotonic()
            deadline = origin / 1e9 + max_seconds + 5.0
            while not all((out / f"client-{k}.done").exists() or procs.exited(p)
                          for k, p in enumerate(clients)):
                res.check()
                if time.monotonic() > deadline:
                    break
                time.sleep(0.02)
            time.sleep(SETTLE_S)                # the last ACKs cross
            end = time.monotonic_ns()
            wall = time.monotonic() - started
            for p in clients + [server]:
                procs.stop(p, grace=10.0)       # each writes its record as it stops
            time.sleep(SETTLE_S)                # frames in flight reach the captures
            res.check()
            readout = box_error = None
            if the_box is not None:
                try:
                    readout = the_box.read()
                except (DeviceError, OSError) as e:     # the run stands; the box's part not
                    box_error = f"--port {box}: reading the box after the run: {e}"
                    say(box_error)
            for p in captures.values():
                procs.stop(p, grace=10.0)

        records, errors = [], {}
        for k, (_mac, _addrs, flows, _vlan) in enumerate(hosts):
            path = out / f"client-{k}.json"
            if path.exists():
                records.append(json.loads(path.read_text(encoding="utf-8")))
            else:
                why = (f"host {k}'s client wrote no record: "
                       f"{_tail(out / f'client-{k}.log') or 'no output'}")
                errors.update({i: why for i in flows})
        server_record = None
        if (out / "server.json").exists():
            server_record = json.loads((out / "server.json").read_text(encoding="utf-8"))
        for role in ("client", "server"):
            if not (out / f"{role}.pcapng").exists():
                raise RealtimeError(f"the {role} capture wrote nothing: "
                                    f"{_tail(out / f'{role}-capture.log')}")
        keys = b"".join(p.read_bytes() for p in sorted(out.glob("client-*.keys")))
        (out / "keys.log").write_bytes(keys)
        if keys:
            from satemu.base.pcapng import PcapngError, embed_secrets
            for role in ("client", "server"):
                with contextlib.suppress(PcapngError):  # a cut file: read_capture says so
                    embed_secrets(out / f"{role}.pcapng", keys)
        run, info = build_scenario_run(sc, client_capture=out / "client.pcapng",
                                       server_capture=out / "server.pcapng", clients=records,
                                       server=server_record, origin_ns=origin, end_ns=end,
                                       wall_s=wall, errors=errors)
        if box_error is not None:
            info["box_check"] = {"error": box_error, "url": box}
        if readout is not None:
            stats, run.bod, run.terminal_stats, empty = readout
            run.board_stats = stats
            run.timeline = the_box.timeline
            info["box_check"] = dict(_box_check(sc, stats, run.terminal_stats,
                                                out / "client.pcapng", the_box.read_ns),
                                     emptied=empty,
                                     url=box, origin_cycle=the_box.origin)
        info.update(client_if=client_if, server_if=server_if, swept=ns.swept,
                    namespaces={"client": ns.client, "server": ns.server,
                                "hosts": ns.host_namespaces},
                    hosts=[{"mac": mac, "addresses": list(addrs), "flows": flows, "vlan": vlan}
                           for mac, addrs, flows, vlan in hosts],
                    netem=netem, server_record=server_record is not None,
                    client_errors=errors)
        (out / "realtime.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n",
                                           encoding="utf-8")
        return run


class _Box:
    """The box between the interfaces, at UART ``url``: the scenario's profile loaded into it
    before the run (satemu.quic.boxrun.load_link: its timeline and terminal table too), its
    cycle at the run's origin, and after the run (once it holds no frame) both channels'
    counters, each terminal's and the return channel's BoD records."""

    EMPTY_WAIT_S = 60.0
    QUIET_S = 0.5           # how long the counters must hold still to be read (_still)

    def __init__(self, url: str) -> None:
        self.url = url
        self.origin = 0

    def load(self, profile, max_seconds: float) -> None:
        try:
            with Device(self.url) as dev:
                self.loaded = load_link(dev, profile, max_seconds)
        except (DeviceError, OSError, ValueError) as e:
            raise RealtimeError(f"--port {self.url}: {e}") from None
        t = self.loaded.timeline
        self.timeline = dict(t, clock="box cycles") if t is not None else None

    def mark_origin(self) -> None:
        try:
            with Device(self.url) as dev:
                self.origin = dev.now()
        except (DeviceError, OSError) as e:
            raise RealtimeError(f"--port {self.url}: {e}") from None

    def read(self) -> tuple[dict, Optional[dict], Optional[dict], bool]:
        """(counters by direction, BoD dict or None, counters by terminal or None, whether
        the box emptied)."""
        regs = self.loaded.regs
        with Device(self.url) as dev:
            empty = dev.wait_empty(self.EMPTY_WAIT_S, poll=0.2)
            stats, terminals = self._still(dev, regs)
            bod = read_bod(dev, regs["return"], self.origin, self.loaded.commits)
        if bod is not None:
            bod["f_clk"] = self.loaded.f_clk
        return stats, bod, terminals, empty

    def _still(self, dev, regs) -> tuple[dict, Optional[dict]]:
        """The counters once they hold still: read again QUIET_S after each reading until two
        agree (frames in and out of both channels, and each terminal's). The host's kernel may
        send a frame of its own (an IPv6 router solicitation, say) at any time: a frame counted
        between the channels' reading and the terminals', or captured before the reading but
        counted after it, would set the capture and the box apart. Two equal readings mean
        nothing arrived in between, so every frame captured before the first one ended
        (``read_ns``) had been counted by it, and only those."""
        def key(stats, terminals):
            return ({d: (c["rx_frames"], c["tx_frames"]) for d, c in stats.items()},
                    terminals)
        reading = read_counters(dev, regs)
        at = time.monotonic_ns()
        deadline = time.monotonic() + self.EMPTY_WAIT_S
        while True:
            time.sleep(self.QUIET_S)
            again = read_counters(dev, regs)
            if key(*again) == key(*reading) or time.monotonic() > deadline:
                self.read_ns = at
                return reading
            reading, at = again, time.monotonic_ns()


def _frames_by_source(path, until_ns: int) -> dict[str, int]:
    """The frames a capture saw leaving its interface up to ``until_ns`` (CLOCK_MONOTONIC), by
    source MAC (aa:bb:..), and the tagged ones by VLAN too ("vlan N")."""
    from satemu.base.pcapng import OUTBOUND, read_pcapng
    cap = read_pcapng(path, allow_truncated=True)
    offset = int(json.loads(cap.comments[0])["realtime_offset_ns"])
    out: dict[str, int] = {}
    for p in cap.packets:
        if p.direction == OUTBOUND and len(p.data) >= 12 and cap.time_ns(p) - offset <= until_ns:
            keys = [p.data[6:12].hex(":")]
            if p.data[12:14] == b"\x81\x00" and len(p.data) >= 16:
                keys.append(f"vlan {int.from_bytes(p.data[14:16], 'big') & 0xFFF}")
            for key in keys:
                out[key] = out.get(key, 0) + 1
    return out


def _box_check(sc, stats: dict, terminals: Optional[dict], client_capture,
               read_ns: int) -> dict:
    """The box's return-channel counters against the frames captured leaving the client's
    interface before they were read (``read_ns``): in all, and by terminal, by its MAC or VLAN
    (every frame, ARP included)."""
    by_mac = _frames_by_source(client_capture, read_ns)
    check = {"captured_out": sum(n for k, n in by_mac.items() if not k.startswith("vlan")),
             "box_received": stats["return"]["rx_frames"]}
    check["agrees"] = check["captured_out"] == check["box_received"]
    terms = sc.profile.terminals
    if terms is not None and terminals is not None:
        rows = {}
        for index, t in enumerate(terms.terminals):
            if t.synthetic:
                continue
            key = f"vlan {t.key}" if terms.match == "vlan" else t.key.to_bytes(6, "big").hex(":")
            box = (terminals["return"].get(str(index)) or {}).get("rx_frames")
            rows[t.name] = {"key": key, "captured_out": by_mac.get(key, 0), "box_received": box}
        check["terminals"] = rows
        check["agrees"] = check["agrees"] and all(r["captured_out"] == r["box_received"]
                                                  for r in rows.values())
    return check
