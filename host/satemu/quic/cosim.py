# SPDX-License-Identifier: BSD-2-Clause
"""Virtual-time co-simulation: two sans-I/O QUIC endpoints exchange real Ethernet/IPv4/UDP frames
across an engine of the board's frame path, in lock-step with its clock.

Every engine's wire has one surface (``satemu.quic.engine.Wire``: ``send``, ``run``, ``now``,
``traffic``): the simulated board's in Verilator (``sim.engine``) and the reference models' of
the same path (``satemu.model.board.BoardModel``), which the board equals frame for frame
(docs/architecture.md, "Two engines"). ``satemu.quic.engine.run_transfer`` runs one download.

The client (terminal) sits on port A, the server (gateway) on port B. The engine runs until the
next instant at which an endpoint may act: a frame has finished leaving a port (it is delivered
to the endpoint on that port), or an endpoint's timer is due. The endpoints act at that cycle,
and the datagrams they produce go onto their port's wire from that cycle on, back to back at the
wire's rate (as a host's NIC sends them). The engine never runs past such an instant, so the
endpoints see the link exactly as the channels shape, queue, drop and delay it.

Time: cycle ``c`` is ``(c - origin) / f_clk`` seconds on the endpoints' clock, where ``origin``
is the cycle the transfer started. A datagram is delivered in the cycle after the last beat of
its frame left the port.
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Callable

from satemu.base.ether import PREAMBLE, to_wire
from satemu.quic.ackpolicy import TIMER_RESOLUTION
from satemu.quic.transfer import Delivery, PacketRecord, Transfer
from satemu.quic.packets import build_frame, ecn_of, parse_frame

__all__ = ["CoSim", "Pair", "PacketFate", "endpoints", "make_transfer", "packet_fates",
           "bod_dict", "write_run_capture", "differences"]

IDLE_STEP = 1 << 22          # how far the engine may run when no endpoint has a timer (cycles)
PORT_A, PORT_B = 0, 1
WIRE_HEAD = len(PREAMBLE) + 1    # a frame's first wire bytes: its preamble and SFD, and one


@dataclass
class Pair:
    """One connection's client (port A) and server (port B), of flow ``flow``. It starts
    ``start`` cycles after the run's origin, or, with ``after``, when the client of pair
    ``after`` is done (a flow's connections in sequence). With ``rng``, aioquic's random bytes
    come from it while its endpoints act (``satemu.quic.determinism.drawing_from``)."""
    client: object
    server: object
    flow: int = 0
    start: int = 0
    after: int | None = None
    rng: object = None
    started: bool = False
    ecn: int = 0                # its datagrams' ECN field (satemu.quic.settings.ECN_CODEPOINTS)

    def acting(self):
        if self.rng is None:
            return nullcontext()
        from satemu.quic.determinism import drawing_from
        return drawing_from(self.rng)


def pair_failed(pairs: list[Pair], i: int) -> bool:
    """Pair ``i`` failed (its client's ``error``), or never will start: the pair it waits for
    failed."""
    p = pairs[i]
    if p.started:
        return p.client.error is not None
    return p.after is not None and pair_failed(pairs, p.after)


def pairs_finished(pairs: list[Pair], which) -> bool:
    """Each of pairs ``which`` has a client done or failed (:func:`pair_failed`)."""
    return all(pairs[i].client.done or pair_failed(pairs, i) for i in which)


@dataclass(frozen=True)
class PacketFate:
    """What became of one datagram of a co-simulation (``Transfer.sent``'s record of the same
    index, :func:`packet_fates`), and what its sender's stack told of its QUIC packets."""
    fate: str                   # "delivered"; "undecodable": it left the box with bytes that
                                # fail a check (corruption's), which the host discards; or
                                # "dropped:CAUSE", CAUSE as satemu.box.port_capture.CAUSES names it
    delivered: int | None       # the cycle it reached the host behind the port (its Delivery's);
                                # None: the box dropped it
    # Told by an aioquic sender, or read from a quinn sender's bytes with the connection's TLS
    # secrets (satemu.quic.wire; None where they could not be): its packets' numbers and types
    # (qlog's names), each packet's frame types ("ack+stream"; aioquic's: the frames it tracks
    # for delivery, which are all but PADDING, CONNECTION_CLOSE and PATH_RESPONSE; read ones:
    # all but PADDING; "-": none of those), and the largest packet number its ACK frames
    # acknowledge (None: it carries none).
    numbers: tuple[int, ...] | None = None
    types: str | None = None    # packets separated by spaces, as in ``frames``
    frames: str | None = None
    largest_acked: int | None = None
    # Where duplication copied it (None: not copied): its copy's fate, as ``fate`` says one,
    # and the cycle the copy reached the host (None: dropped).
    copy: str | None = None
    copy_delivered: int | None = None
    # The ECN field it (and its copy) arrived with, as satemu.quic.packets.ecn_of names it
    # ("ce": the link marked it); None where it did not arrive decodable.
    ecn: str | None = None
    copy_ecn: str | None = None


def decoded(e):
    """(source, destination, payload) of a frame that left a port (an Egress), or None where it
    left undecodable: a bad FCS, or a check of parse_frame failed (corruption)."""
    if not e.wire_ok:
        return None
    try:
        return parse_frame(e.frame)
    except ValueError:
        return None


@dataclass
class CoSim:
    """Drives ``client`` (on port A) and ``server`` (on port B), objects with the surface of
    ``satemu.quic.bulk.BulkClient``/``BulkServer``: ``transmit(now)``, ``timer(now)``,
    ``handle_timer(now)``, ``receive(data, now)``, and ``local``/``remote`` addressing, across
    ``eth``, an engine's wire (``satemu.quic.engine.Wire``); or, in their place, several
    ``pairs`` (a scenario's flows), each frame that leaves a port handed to the endpoint it is
    addressed to: a client by its destination address, a server by both addresses.

    In a step only the pairs that acted (a datagram in, a timer due, a start) are asked for
    datagrams and timers, so a step costs what happens in it, not the number of pairs. This
    holds because an endpoint changes only when called, and its ``timer(now)`` is
    ``max(T, now + TIMER_RESOLUTION)`` for a T that only its actions change (both stacks')."""

    eth: object
    f_clk: int
    client: object = None
    server: object = None
    sent: list[PacketRecord] = field(default_factory=list)
    delivered: list[Delivery] = field(default_factory=list)
    undecodable: int = 0
    unrouted: int = 0                # frames addressed to no endpoint of the run
    origin: int = 0
    now_cycle: int = 0
    steps: int = 0
    # With ``capture``, every frame put on a port's wire is kept (preamble to FCS), in order,
    # for :meth:`write_capture`; without it, its first WIRE_HEAD bytes, all of a frame that
    # satemu.box.port_capture.fates_of reads (:func:`packet_fates`).
    capture: bool = False
    wires: dict[int, list[bytes]] = field(default_factory=lambda: {PORT_A: [], PORT_B: []})
    # For each record of ``sent``, what its sender's stack told of its QUIC packets:
    # (numbers, types, frames, largest acknowledged) as in PacketFate, or None (quinn's, until
    # :meth:`read_untold` reads them from the wire).
    told: list = field(default_factory=list)
    # With ``read_wire``, the datagrams whose stack told nothing: (index in ``sent``, pair,
    # sent by its client, bytes), for :meth:`read_untold`; and each pair's client's first
    # datagram (its Initial), by pair. (A scenario's run, which lists no datagram's packets,
    # keeps none.)
    read_wire: bool = True
    untold: list = field(default_factory=list)
    first: dict = field(default_factory=dict)
    # The data sender's (the first pair's server's) RTT estimate each time it changed:
    # (cycle, ms); ``rtts``: every pair's.
    rtt: list[tuple[int, float]] = field(default_factory=list)
    pairs: list[Pair] = field(default_factory=list)
    rtts: dict[int, list[tuple[int, float]]] = field(default_factory=dict)
    ecn: int = 0                     # the ECN field of ``client`` and ``server``'s datagrams

    def __post_init__(self) -> None:
        if not self.pairs:
            if self.client is None or self.server is None:
                raise ValueError("CoSim needs a client and a server, or pairs")
            self.pairs = [Pair(self.client, self.server, ecn=self.ecn)]
        self.client, self.server = self.pairs[0].client, self.pairs[0].server
        self.rtts = {i: (self.rtt if i == 0 else []) for i in range(len(self.pairs))}
        clients, servers = {}, {}
        for i, p in enumerate(self.pairs):
            a, b = p.client.local.addr, p.server.local.addr
            if a in clients:
                raise ValueError(f"two connections' clients at {a[0]}:{a[1]}")
            clients[a] = i
            servers[a, b] = i
        self._clients, self._servers = clients, servers

    def read_untold(self) -> str | None:
        """What the datagrams of stacks that tell nothing (quinn) carried, into ``told``, read
        from their bytes with the connection's TLS secrets (satemu.quic.wire; the key log of
        the pair's quinn endpoint). None, or why some could not be read (one line; those stay
        None)."""
        from satemu.quic.wire import WireError, WireReader
        readers: dict[int, WireReader] = {}
        problem = None
        for index, i, from_client, data in self.untold:
            if i not in readers:
                p = self.pairs[i]
                logs = [e.endpoint.key_log().decode() for e in (p.client, p.server)
                        if hasattr(getattr(e, "endpoint", None), "key_log")]
                readers[i] = WireReader(logs[0] if logs else "", self.first.get(i))
            try:
                self.told[index] = readers[i].read(data, from_client).astuple()
            except WireError as e:
                problem = problem or f"datagram {index} (connection {i}): {e}"
        self.untold.clear()
        return problem

    def time(self, cycle: int) -> float:
        return (cycle - self.origin) / self.f_clk

    def cycle_of(self, t: float) -> int:
        return self.origin + max(0, math.ceil(round(t * self.f_clk, 6)))

    def start(self) -> None:
        """Enter lock-step at the engine's present cycle and start the clients due then."""
        self.now_cycle = self.origin = self.eth.run(self.eth.now() + 1)
        self._seen = {ch: len(self.eth.traffic.egress[ch]) for ch in (0, 1)}
        self._ip_id = {PORT_A: 0, PORT_B: 0}
        self._timers: dict[int, tuple] = {}
        self._acted: set[int] = set()
        self._start_due()
        self._transmit()

    def _start_due(self) -> None:
        for i, p in enumerate(self.pairs):
            if p.started:
                continue
            if p.after is not None:
                if not self.pairs[p.after].client.done:
                    continue
            elif self.origin + p.start > self.now_cycle:
                continue
            p.started = True
            self._acted.add(i)
            with p.acting():
                p.client.start(self.time(self.now_cycle))

    def _transmit(self) -> None:
        """The datagrams of the pairs that acted in this step onto their ports' wires (in the
        pairs' order), then each such pair's timers as they now stand."""
        now = self.time(self.now_cycle)
        for i in sorted(self._acted):
            p = self.pairs[i]
            for peer, port, direction in ((p.client, PORT_A, "return"),
                                          (p.server, PORT_B, "forward")):
                with p.acting():
                    out = peer.transmit(now)
                for data, info in out:
                    self._ip_id[port] = (self._ip_id[port] + 1) & 0xFFFF
                    frame = build_frame(peer.local, peer.remote, data, self._ip_id[port],
                                        p.ecn)
                    wire = to_wire(frame)
                    self.eth.send(port, wire, self.now_cycle)
                    self.wires[port].append(wire if self.capture else wire[:WIRE_HEAD])
                    self.sent.append(PacketRecord(self.now_cycle, direction, len(frame),
                                                  len(data), bool(info.ack_only), p.flow))
                    told = getattr(info, "told", None)
                    if self.read_wire:
                        if told is None:                # quinn's: read from the wire after
                            self.untold.append((len(self.sent) - 1, i, port == PORT_A, data))
                        if port == PORT_A and i not in self.first:
                            self.first[i] = data
                    self.told.append(told)
            with p.acting():
                self._timers[i] = tuple(None if t is None else self.cycle_of(t)
                                        for t in (p.client.timer(now), p.server.timer(now)))
        self._acted.clear()

    def _route(self, ch: int, src, dst) -> int | None:
        """The pair a frame leaving channel ``ch`` is for (None: no endpoint's)."""
        if ch == 0:
            return self._clients.get(dst.addr)
        return self._servers.get((src.addr, dst.addr))

    def step(self) -> None:
        """Run the engine to the next instant an endpoint may act, and let the endpoints act."""
        now = self.time(self.now_cycle)
        # Each pair's timers as of its last action, at ``now``: an endpoint's timer(now) is
        # max(T, now + TIMER_RESOLUTION), T changing only when it acts (see the class); kept as
        # cycles (cycle_of is monotonic, so it keeps max).
        floor = self.cycle_of(now + TIMER_RESOLUTION)
        due = {i: tuple(None if c is None else max(c, floor) for c in cs)
               for i, cs in self._timers.items()}
        timers = [c for cs in due.values() for c in cs if c is not None]
        timers += [self.origin + p.start for p in self.pairs
                   if not p.started and p.after is None]
        limit = max(min(timers) if timers else self.now_cycle + IDLE_STEP, self.now_cycle + 1)
        self.now_cycle = self.eth.run(limit)
        self.steps += 1
        now = self.time(self.now_cycle)
        # Frames that left a port: port A's (forward channel) to a client, port B's to a server.
        for ch, direction in ((0, "forward"), (1, "return")):
            out = self.eth.traffic.egress[ch]
            for e in out[self._seen[ch]:]:
                frame, parsed = e.frame, decoded(e)
                if parsed is None:
                    # (a frame corruption left with a bad checksum: it left the box and reached
                    # the host, which discards it)
                    self.undecodable += 1
                    self.delivered.append(Delivery(self.now_cycle, direction, len(frame), -1))
                    continue
                src, dst, payload = parsed
                i = self._route(ch, src, dst)
                if i is None or not self.pairs[i].started:
                    self.unrouted += 1
                    self.delivered.append(Delivery(self.now_cycle, direction, len(frame), -1))
                    continue
                p = self.pairs[i]
                self.delivered.append(Delivery(self.now_cycle, direction, len(frame), p.flow))
                self._acted.add(i)
                with p.acting():
                    (p.client if ch == 0 else p.server).receive(payload, now)
            self._seen[ch] = len(out)
        for i in sorted(self._acted):
            p = self.pairs[i]
            rtt = p.server.rtt_ms()
            seen = self.rtts[i]
            if rtt is not None and (not seen or seen[-1][1] != rtt):
                seen.append((self.now_cycle, rtt))
        for i, (tc, ts) in due.items():
            p = self.pairs[i]
            for peer, t in ((p.client, tc), (p.server, ts)):
                if t is not None and t <= self.now_cycle:
                    self._acted.add(i)
                    with p.acting():
                        peer.handle_timer(now)
        self._start_due()
        self._transmit()

    def finished(self) -> bool:
        """Every pair's client is done or failed (one that waits for a failed pair never
        starts): the other flows run on when one fails."""
        return pairs_finished(self.pairs, range(len(self.pairs)))

    def run(self, done: Callable[[], bool], max_seconds: float,
            progress: Callable[["CoSim"], None] | None = None, every: float = 1.0) -> bool:
        """Step until ``done()`` or ``max_seconds`` of virtual time; returns ``done()``.
        ``progress`` is called about every ``every`` wall seconds."""
        self.start()
        end = self.origin + round(max_seconds * self.f_clk)
        last = time.monotonic()
        while not done() and self.now_cycle < end:
            self.step()
            if progress and time.monotonic() - last >= every:
                last = time.monotonic()
                progress(self)
        return done()

    def record_rest(self) -> None:
        """After the endpoints stopped: the frames that left the engine since are recorded as
        delivered, at the cycle after their last beat, though no endpoint reads them."""
        for ch, direction in ((0, "forward"), (1, "return")):
            for e in self.eth.traffic.egress[ch][self._seen[ch]:]:
                try:
                    src, dst, _ = parse_frame(e.frame)
                    i = self._route(ch, src, dst)
                except ValueError:
                    i = None
                flow = -1 if i is None else self.pairs[i].flow
                self.delivered.append(Delivery(e.end, direction, len(e.frame), flow))
            self._seen[ch] = len(self.eth.traffic.egress[ch])

    def write_capture(self, path, keylog: bytes | None = None, comment: str = "",
                      whose=None) -> dict:
        """The pcapng of the run (``satemu.box.port_capture``), once every frame has left the engine or
        been dropped (``record_rest``): the four interfaces of the two ports, each frame's fate,
        timestamps from the cycles counted from ``origin``, and ``keylog`` (TLS secrets) in a
        Decryption Secrets Block. The engine's traffic must be this run's alone."""
        from satemu.box.port_capture import write_capture
        if not self.capture:
            raise ValueError("this co-simulation kept no frames (capture=False)")
        traffic = self.eth.traffic
        wires = {}
        for port, sent in self.wires.items():
            starts = traffic.wire_in[port]
            if len(starts) != len(sent):
                raise ValueError(f"port {port}: {len(sent)} frames sent, the engine reported "
                                 f"{len(starts)} on the wire")
            wires[port] = list(zip(starts, sent))
        return write_capture(path, traffic, wires, self.f_clk, self.origin, keylog, comment,
                             whose)


@contextmanager
def endpoints(size: int, ack: str, seed: int, settings=None, stacks="aioquic", qlog_dir=None,
              keylog=None):
    """The client and server of one download, each of its stack (``stacks``: one name for both,
    or (client, server)), with ``settings`` (EndpointSettings) and every source of randomness
    seeded; yields (client, server, policy) and writes the aioquic endpoints' qlogs into
    ``qlog_dir`` (if given) afterwards. ``keylog`` (a text file object) receives the
    connection's TLS secrets as SSLKEYLOGFILE lines, from the client: aioquic's as it derives
    them, quinn's when the transfer ends. Settings or a policy a stack cannot take raise
    ValueError before anything runs."""
    from satemu.quic.ackpolicy import AckPolicy
    from satemu.quic.bulk import BulkClient, BulkServer, make_configs
    from satemu.quic.determinism import deterministic
    from satemu.quic.settings import EndpointSettings

    settings = settings or EndpointSettings()
    pair = (stacks, stacks) if isinstance(stacks, str) else tuple(stacks)
    if len(pair) != 2:
        raise ValueError("stacks: one name, or (client stack, server stack)")
    settings.check_stacks(pair)             # each name too
    client_stack, server_stack = pair
    policy = AckPolicy.parse(ack)
    server_policy = policy if policy.asks_peer else "default"
    if "quinn" in (client_stack, server_stack):
        from satemu.quic.quinn import QuinnClient, QuinnServer
    configs = []
    with deterministic(seed):
        client_cfg, server_cfg = make_configs(settings, qlog=qlog_dir is not None,
                                              server=server_stack == "aioquic") \
            if "aioquic" in (client_stack, server_stack) else (None, None)
        if client_stack == "aioquic":
            client_cfg.secrets_log_file = keylog
            client = BulkClient(client_cfg, size, policy=policy)
            configs.append(("client", client_cfg))
        else:
            client = QuinnClient(settings, size, policy=policy, seed=seed)
        if server_stack == "aioquic":
            server = BulkServer(server_cfg, policy=server_policy)
            configs.append(("server", server_cfg))
        else:
            server = QuinnServer(settings, policy=server_policy, seed=seed)
        yield client, server, policy
    if keylog is not None and client_stack == "quinn":
        keylog.write(client.endpoint.key_log().decode())
    if qlog_dir is not None:
        import json
        from pathlib import Path
        Path(qlog_dir).mkdir(parents=True, exist_ok=True)
        for name, cfg in configs:
            (Path(qlog_dir) / f"{name}.qlog").write_text(json.dumps(cfg.quic_logger.to_dict()))


def packet_fates(sim: CoSim) -> list[PacketFate]:
    """What became of each datagram of ``sim.sent`` (in its order), once every frame has left
    the engine or been dropped (``record_rest``): each port's frames matched with what the
    engine reported by satemu.box.port_capture.fates_of, as the capture matches them. The k-th
    frame that left a channel is ``sim.delivered``'s k-th of its direction. ValueError where
    the engine's reports do not add up, or its traffic is not this run's alone."""
    from satemu.box.port_capture import CAUSES, fates_of
    from satemu.model.board import CHANNEL_INTO
    traffic = sim.eth.traffic
    out: list = [None] * len(sim.sent)
    for port, direction in ((PORT_A, "return"), (PORT_B, "forward")):
        ch = CHANNEL_INTO[port]
        mine = [i for i, r in enumerate(sim.sent) if r.direction == direction]
        came = [d for d in sim.delivered if d.direction == direction]
        left = {id(e): k for k, e in enumerate(traffic.egress[ch])}
        if len(mine) != len(sim.wires[port]) or len(left) != len(came):
            raise ValueError(f"the {direction} direction: {len(mine)} datagrams sent and "
                             f"{len(came)} delivered, {len(sim.wires[port])} frames on the "
                             f"wire and {len(left)} out of the engine")
        def became(f) -> tuple[str, int | None, str | None]:
            if f.egress is None:
                return f"dropped:{CAUSES[f.fate][0]}", None, None
            # (a frame handed to an endpoint, or routed to one, was decoded: parse again only
            # those addressed to no endpoint, whose frames may fail to decode)
            d = came[left[id(f.egress)]]
            bad = not f.egress.wire_ok or d.flow == -1 and decoded(f.egress) is None
            if bad:
                return "undecodable", d.cycle, None
            return "delivered", d.cycle, ecn_of(f.egress.frame)

        for i, f in zip(mine, fates_of(traffic, port, sim.wires[port])):
            told = sim.told[i] or (None,) * 4
            fate, at, ecn = became(f)
            copy, copy_at, copy_ecn = became(f.copy) if f.copy is not None else (None,) * 3
            out[i] = PacketFate(fate, at, *told, copy, copy_at, ecn, copy_ecn)
    return out


def make_transfer(sim: CoSim, link, size: int, policy, settings, seed: int, f_clk: int,
                  board: dict, bod: dict | None, wall_s: float, engine: str) -> Transfer:
    """The Transfer record of a finished co-simulation, with ``fates`` (:func:`packet_fates`;
    None, and ``fates_error`` why, where the engine's reports do not add up)."""
    client, server = sim.client, sim.server
    t = Transfer(
        profile=link.name, size=size, ack=str(policy), cc=settings.cc, seed=seed, f_clk=f_clk,
        completed=client.done,
        completion_s=(client.completed_at - client.started_at) if client.done else None,
        handshake_s=(client.handshake_at - client.started_at) if client.handshake_at else None,
        sent=sim.sent, delivered=sim.delivered,
        client_stats=client.stats_dict(), server_stats=server.stats_dict(),
        board_stats=board, undecodable=sim.undecodable,
        max_ack_delay_advertised_ms=settings.max_ack_delay_ms,
        max_ack_delay_used_ms=server.max_ack_delay_used_ms(),
        wall_s=wall_s, virtual_s=sim.time(sim.now_cycle), error=client.error, bod=bod,
        engine=engine, origin=sim.origin, settings=settings.to_dict(),
        stacks={"client": client.stack, "server": server.stack},
        rtt=[list(sample) for sample in sim.rtt])
    t.wire_error = sim.read_untold()         # quinn's datagrams: what they carried
    try:
        t.fates, t.fates_error = packet_fates(sim), None
    except ValueError as e:
        t.fates, t.fates_error = None, str(e)
    return t


def bod_dict(start: int, origin: int, regs, records, lost=(), commits=()) -> dict:
    """The BoD section of a Transfer: superframe 0's start cycle, the transfer's phase within
    the superframes (``origin - start`` cycles), superframe 0's cycles and slot bytes, the
    records (as dicts), the superframe ranges the box's ring lost, and ``segments``: the
    stretches of superframes of one shape (``satemu.box.bod_trace.superframe_segments``, from the
    profile ``regs`` and a timeline's ``commits`` on the return channel)."""
    from satemu.box.bod_trace import superframe_segments
    segments = superframe_segments(regs, start, commits, records)
    return {"start": start, "phase": origin - start, "superframe_cycles": segments[0][2],
            "slot_bytes": segments[0][3], "records": [vars(r) for r in records],
            "lost": list(lost), "segments": [list(seg) for seg in segments]}


def write_run_capture(sim: CoSim, pcap, keylog: str, engine: str, profile: str,
                      stats: dict, whose=None) -> dict:
    """The run's capture at ``pcap`` (pcapng, the TLS secrets embedded) and ``keys.log`` beside
    it (SSLKEYLOGFILE), checked against the channels' counters ``stats``; returns the capture's
    summary for result.json (``satemu.box.port_capture.check_counts``'s findings in ``agrees``)."""
    from pathlib import Path
    from satemu.box.port_capture import check_counts
    pcap = Path(pcap)
    pcap.parent.mkdir(parents=True, exist_ok=True)
    keys = pcap.with_name("keys.log")
    keys.write_text(keylog)
    comment = (f"satemu co-simulation, {engine} engine, profile {profile}: timestamps are the "
               f"board's cycles from the transfer's start at {1e9 / sim.f_clk:g} ns a cycle "
               f"(origin: cycle {sim.origin})")
    summary = sim.write_capture(pcap, keylog.encode(), comment, whose)
    summary["path"], summary["keylog"] = pcap.name, keys.name     # beside result.json
    summary["disagreements"] = check_counts(summary, stats)
    return summary


def differences(a: Transfer, b: Transfer, limit: int = 10) -> list[str]:
    """Where two transfers of the same profile, size, policy and seed (or two runs of one
    scenario) differ (empty: they are equal frame for frame): every datagram sent (cycle from
    the start, direction, sizes, ACK-only, flow), every delivery, every counter of both
    channels but the read's cycle (each terminal's too), and every BoD record both hold. At
    most ``limit`` differences of each kind are listed."""
    out: list[str] = []

    def rows(t, records, fields):
        return [tuple([r.cycle - t.origin] + [getattr(r, f) for f in fields]) for r in records]

    for name, fields in (("sent", ("direction", "size", "udp_size", "ack_only", "flow")),
                         ("delivered", ("direction", "size", "flow"))):
        ra, rb = rows(a, getattr(a, name), fields), rows(b, getattr(b, name), fields)
        if len(ra) != len(rb):
            out.append(f"{name}: {len(ra)} records against {len(rb)}")
        bad = [i for i, (x, y) in enumerate(zip(ra, rb)) if x != y]
        out += [f"{name}[{i}]: {ra[i]} against {rb[i]}" for i in bad[:limit]]
    for d in ("forward", "return"):
        sa, sb = a.board_stats.get(d, {}), b.board_stats.get(d, {})
        for k in sorted(set(sa) | set(sb) - {"snapshot_cycle"}):
            if k != "snapshot_cycle" and sa.get(k) != sb.get(k):
                out.append(f"{d}.{k}: {sa.get(k)} against {sb.get(k)}")
    ta, tb = getattr(a, "terminal_stats", None) or {}, getattr(b, "terminal_stats", None) or {}
    for d in sorted(set(ta) | set(tb)):
        for who in sorted(set(ta.get(d, {})) | set(tb.get(d, {}))):
            x, y = ta.get(d, {}).get(who), tb.get(d, {}).get(who)
            if x != y:
                out.append(f"{d} terminal {who}: {x} against {y}")
    if (a.bod is None) != (b.bod is None):
        out.append("bod: only one of them has BoD records")
    elif a.bod is not None:
        for k in ("phase", "superframe_cycles", "slot_bytes", "segments"):
            if a.bod[k] != b.bod[k]:
                out.append(f"bod.{k}: {a.bod[k]} against {b.bod[k]}")
        # (a record a terminal a superframe, where the profile declares terminals)
        ra = {(r["sf"], r.get("terminal", 0)): r for r in a.bod["records"]}
        rb = {(r["sf"], r.get("terminal", 0)): r for r in b.bod["records"]}
        both = sorted(set(ra) & set(rb))
        bad = [k for k in both if ra[k] != rb[k]]
        out += [f"bod record {sf} of terminal {who}: {ra[sf, who]} against {rb[sf, who]}"
                for sf, who in bad[:limit]]
    return out
