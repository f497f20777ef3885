# SPDX-License-Identifier: BSD-2-Clause
"""Scenarios: several QUIC flows across one link in one virtual time, each on a terminal of
the profile, with its own stacks, ACK policy, endpoint settings, seed, start time and workload
(a TOML file, ``satemu quic --scenario``); and the run of one on any engine.

A scenario file::

    name = "two-terminals"
    profile = "geo-shared-bod"        # a built-in profile, or a file beside the scenario
    seed = 1                          # each flow's seed unless it says (seed + its index)

    [[flow]]
    name = "download"
    terminal = "client"               # a terminal of the profile, with frames
    ack = "ratio:10"
    cc = "cubic"                      # any endpoint setting, by its command-line name
    workload = {kind = "bulk", size = "1 MB"}

    [[flow]]
    terminal = "neighbour"
    start = "2 s"
    workload = {kind = "objects", sizes = ["40 KB", "290 KB"], order = "parallel"}

Each flow's client host sits behind port A on its terminal: the terminal's MAC address, the address
10.0.T.2 (T: the terminal's index among those with frames; ``client_ip`` says otherwise) and UDP
port 50000 + 100 x the flow's index (+ the connection's, for objects over connections of their own).
Where the profile tells terminals apart by VLAN, each host has MAC 02:53:41:54:00:02 and its frames,
both ways, carry the terminal's 802.1Q tag. The servers sit behind port B at 10.0.0.1:4433
(``server_ip``, ``server_port``). A profile without terminals has one host behind port A (MAC
02:53:41:54:00:02), which every flow shares.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Callable

from satemu.base.units import UnitError, parse_time
from satemu.link.profile import Profile, load_profile
from satemu.link.tables import ProfileError, shown
from satemu.quic.packets import CLIENT, SERVER, Endpoint
from satemu.quic.settings import ECN_CODEPOINTS, SETTING_NAMES, EndpointSettings, parse_setting
from satemu.quic.workload import MAX_OBJECTS, Workload, parse_workload

__all__ = ["ScenarioError", "FlowSpec", "Scenario", "parse_scenario", "load_scenario",
           "run_scenario", "scenario_twin", "read_scenario_text", "builtin_scenarios",
           "ScenarioRun", "FlowRun", "MAX_FLOWS", "MAX_SCENARIO_BYTES"]

MAX_FLOWS = 64
MAX_SCENARIO_BYTES = 1 << 16
CLIENT_PORT, PORT_STRIDE = 50000, 100
TOP_KEYS = {"name", "description", "profile", "seed", "flow"}
FLOW_KEYS = {"name", "terminal", "ack", "seed", "start", "workload", "client_ip", "client_port",
             "server_ip", "server_port"} | set(SETTING_NAMES)
SEED_LIMIT = 1 << 64


class ScenarioError(ValueError):
    """A scenario that cannot be run; the message is one line and names the key."""


@dataclass(frozen=True)
class FlowSpec:
    """One flow: its endpoints' addresses (of its first connection), stacks, policy,
    settings, seed, start (s from the run's start) and workload."""
    name: str
    terminal: str | None
    client: Endpoint
    server: Endpoint
    stacks: tuple[str, str]
    ack: str
    settings: EndpointSettings
    seed: int
    start: Fraction
    workload: Workload

    def client_at(self, j: int) -> Endpoint:
        """The client's address for the flow's connection ``j``."""
        return Endpoint(self.client.mac, self.client.ipv4, self.client.port + j,
                        self.client.vlan)

    def to_dict(self) -> dict:
        return {"name": self.name, "terminal": self.terminal,
                "client": f"{self.client.ipv4}:{self.client.port}",
                "server": f"{self.server.ipv4}:{self.server.port}", "vlan": self.client.vlan,
                "stacks": {"client": self.stacks[0], "server": self.stacks[1]},
                "ack": self.ack, "settings": self.settings.to_dict(), "seed": self.seed,
                "start_s": float(self.start), "workload": self.workload.to_dict()}

    def to_plan(self) -> dict:
        """Everything the flow's endpoints are made from, exactly, as JSON values
        (:meth:`from_plan` reads it back): what a real-time run hands its endpoint
        processes."""
        return {"name": self.name, "terminal": self.terminal,
                "client": [self.client.mac.hex(), self.client.ipv4, self.client.port,
                           self.client.vlan],
                "server": [self.server.mac.hex(), self.server.ipv4, self.server.port,
                           self.server.vlan],
                "stacks": list(self.stacks), "ack": self.ack,
                "settings": self.settings.to_dict(), "seed": self.seed,
                "start": [self.start.numerator, self.start.denominator],
                "workload": self.workload.to_dict()}

    @classmethod
    def from_plan(cls, d: dict) -> "FlowSpec":
        w = d["workload"]
        return cls(d["name"], d["terminal"],
                   *(Endpoint(bytes.fromhex(e[0]), e[1], int(e[2]), e[3])
                     for e in (d["client"], d["server"])),
                   tuple(d["stacks"]), d["ack"], EndpointSettings.from_dict(d["settings"]),
                   int(d["seed"]), Fraction(*d["start"]),
                   Workload(w["kind"], tuple(w["sizes"]), w["order"], w["over"],
                            w["protocol"]))


@dataclass(frozen=True)
class Scenario:
    name: str
    profile: Profile
    flows: tuple[FlowSpec, ...]
    seed: int = 0
    description: str = ""
    path: Path | None = None

    def check_time(self, max_seconds: float) -> None:
        """ScenarioError if a flow starts at or after ``max_seconds`` (the run's limit)."""
        for i, f in enumerate(self.flows):
            if f.start >= Fraction(max_seconds):
                raise ScenarioError(f"flow.{i + 1}.start: {float(f.start):g} s is not before the "
                                    f"run's time limit (--max-time {max_seconds:g} s)")


def _int(path: str, value, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ScenarioError(f"{path}: a whole number {lo}..{hi}, not {shown(value)}")
    return value


def _text(path: str, value, what: str) -> str:
    if not isinstance(value, str) or not value or len(value) > 200 or not value.isprintable():
        raise ScenarioError(f"{path}: {what}, as a string")
    return value


def _endpoint(path: str, mac: bytes, ip, port, vlan: int | None = None) -> Endpoint:
    try:
        return Endpoint(mac, ip, port, vlan)
    except ValueError as e:
        raise ScenarioError(f"{path}: {e}") from None


def _flow(i: int, table, profile: Profile, seed: int) -> FlowSpec:
    path = f"flow.{i + 1}"
    if not isinstance(table, dict):
        raise ScenarioError(f"{path}: a table ([[flow]])")
    unknown = sorted(set(table) - FLOW_KEYS)
    if unknown:
        raise ScenarioError(f"{path}.{unknown[0][:40]}: unknown key (known: "
                            f"{', '.join(sorted(FLOW_KEYS))})")
    name = _text(f"{path}.name", table.get("name", f"flow{i + 1}"), "the flow's name")
    terms = profile.terminals
    terminal, mac, host, vlan = None, CLIENT.mac, 0, None
    if terms is None:
        if "terminal" in table:
            raise ScenarioError(f"{path}.terminal: profile {profile.name} declares no terminals")
    else:
        if "terminal" not in table:
            raise ScenarioError(f"{path}.terminal: profile {profile.name} declares terminals; "
                                f"name the flow's (one of "
                                f"{', '.join(t.name for t in terms.framed)})")
        terminal = _text(f"{path}.terminal", table["terminal"], "a terminal's name")
        found = [t for t in terms.terminals if t.name == terminal]
        if not found:
            raise ScenarioError(f"{path}.terminal: {shown(terminal)} is not a terminal of "
                                f"profile {profile.name} (those with frames: "
                                f"{', '.join(t.name for t in terms.framed)})")
        if found[0].synthetic:
            raise ScenarioError(f"{path}.terminal: {terminal} is synthetic: it carries no frames")
        host = [t.name for t in terms.framed].index(terminal)
        if terms.match == "vlan":
            vlan = found[0].key
        else:
            mac = found[0].key.to_bytes(6, "big")
    client = _endpoint(f"{path}.client_ip", mac, table.get("client_ip", f"10.0.{host}.2"),
                       _int(f"{path}.client_port", table.get("client_port",
                                                             CLIENT_PORT + PORT_STRIDE * i),
                            1, 65535), vlan)
    server = _endpoint(f"{path}.server_ip", SERVER.mac, table.get("server_ip", SERVER.ipv4),
                       _int(f"{path}.server_port", table.get("server_port", SERVER.port),
                            1, 65535))
    values = {}
    try:
        for key in sorted(set(table) & set(SETTING_NAMES)):
            attr, value = parse_setting(key, str(table[key]))
            values[attr] = value
        stacks = values.pop("stacks", ("aioquic", "aioquic"))
        settings = EndpointSettings(**values)
        settings.check_stacks(stacks)
    except ValueError as e:
        raise ScenarioError(f"{path}: {e}") from None
    from satemu.quic.ackpolicy import AckPolicy
    ack = table.get("ack", "default")
    try:
        ack = str(AckPolicy.parse(_text(f"{path}.ack", ack, "an ACK policy")))
        if stacks[0] == "quinn":
            from satemu.quic.quinn import quinn_policy
            quinn_policy(ack)
    except ValueError as e:
        raise ScenarioError(f"{path}.ack: {e}") from None
    fseed = _int(f"{path}.seed", table.get("seed", (seed + i) % SEED_LIMIT), 0, SEED_LIMIT - 1)
    try:
        start = parse_time(table.get("start", "0 s"))
    except (UnitError, TypeError) as e:
        raise ScenarioError(f"{path}.start: {e}") from None
    if start < 0:
        raise ScenarioError(f"{path}.start: a time from the run's start, at least 0")
    try:
        workload = parse_workload(f"{path}.workload", table.get("workload",
                                                                {"kind": "bulk",
                                                                 "size": "1 MB"}))
    except ValueError as e:
        raise ScenarioError(str(e)) from None
    if workload.protocol == "h3" and "quinn" in stacks:
        raise ScenarioError(f"{path}.workload.protocol: HTTP/3 runs on aioquic only (quinn "
                            "offers none here); stack = \"aioquic\"")
    if client.port + len(workload.connections()) - 1 > 65535:
        raise ScenarioError(f"{path}.client_port: its connections' ports pass 65535")
    return FlowSpec(name, terminal, client, server, stacks, ack, settings, fseed, start,
                    workload)


def parse_scenario(text: str, where: str = "scenario", base_dir: Path | None = None,
                   resolve: Callable[[str], Profile] | None = None) -> Scenario:
    """The scenario in TOML ``text``; ScenarioError (one line, naming the key) for anything it
    cannot be. Its profile is found by name, or as a path relative to ``base_dir``; or, with
    ``resolve``, is what ``resolve(ref)`` gives (ProfileError or ScenarioError if none)."""
    import tomllib
    if len(text) > MAX_SCENARIO_BYTES:
        raise ScenarioError(f"{where}: longer than {MAX_SCENARIO_BYTES} bytes")
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{where}: not valid TOML: {e}") from None
    except ValueError:
        raise ScenarioError(f"{where}: not valid TOML: an integer too long to read") from None
    unknown = sorted(set(doc) - TOP_KEYS)
    if unknown:
        raise ScenarioError(f"{unknown[0][:40]}: unknown top-level key (known: "
                            f"{', '.join(sorted(TOP_KEYS))})")
    name = _text("name", doc.get("name", Path(where).stem or "scenario"), "the scenario's name")
    description = doc.get("description", "")
    if not isinstance(description, str):
        raise ScenarioError("description: a string")
    if "profile" not in doc:
        raise ScenarioError("profile: a scenario names its link profile (a built-in name or a "
                            "TOML file)")
    ref = _text("profile", doc["profile"], "a profile's name or file")
    if base_dir is not None and resolve is None and (ref.endswith(".toml") or "/" in ref):
        candidate = base_dir / ref
        ref = str(candidate) if candidate.exists() or not Path(ref).exists() else ref
    try:
        profile = (resolve or load_profile)(ref)
    except (ScenarioError, ProfileError) as e:
        raise ScenarioError(f"profile: {e}") from None
    seed = _int("seed", doc.get("seed", 0), 0, SEED_LIMIT - 1)
    flows = doc.get("flow")
    if not isinstance(flows, list) or not flows:
        raise ScenarioError("flow: a scenario has at least one [[flow]]")
    if len(flows) > MAX_FLOWS:
        raise ScenarioError(f"flow: {len(flows)} flows, at most {MAX_FLOWS}")
    specs = tuple(_flow(i, t, profile, seed) for i, t in enumerate(flows))
    names, seen = set(), {}
    for i, f in enumerate(specs):
        if f.name in names:
            raise ScenarioError(f"flow.{i + 1}.name: {shown(f.name)} names two flows")
        names.add(f.name)
        for j in range(len(f.workload.connections())):
            c = f.client_at(j)
            if c.addr in seen:
                raise ScenarioError(f"flow.{i + 1}: its client at {c.ipv4}:{c.port} is also flow "
                                    f"{seen[c.addr]}'s: two flows on one address and port")
            seen[c.addr] = f.name
    if sum(len(f.workload.connections()) for f in specs) > MAX_FLOWS * MAX_OBJECTS:
        raise ScenarioError("flow: too many connections in all")
    return Scenario(name, profile, specs, seed, description)


def builtin_scenarios() -> dict[str, str]:
    """The scenarios shipped in ``satemu/scenarios/``: name -> TOML text."""
    from importlib import resources
    folder = resources.files("satemu").joinpath("scenarios")
    return {e.name[:-5]: e.read_text(encoding="utf-8")
            for e in sorted(folder.iterdir(), key=lambda e: e.name) if e.name.endswith(".toml")}


def read_scenario_text(path: Path) -> str:
    """The text of scenario file ``path`` (ScenarioError, one line, if it cannot be read, is
    longer than MAX_SCENARIO_BYTES, read no further, or is not UTF-8)."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_SCENARIO_BYTES + 1)
    except (OSError, ValueError) as e:
        raise ScenarioError(f"{path}: cannot read it: {getattr(e, 'strerror', None) or e}") \
            from None
    if len(data) > MAX_SCENARIO_BYTES:
        raise ScenarioError(f"{path}: longer than {MAX_SCENARIO_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ScenarioError(f"{path}: not UTF-8 text") from None


def load_scenario(path) -> Scenario:
    """The scenario in file ``path``, or a built-in one by name (ScenarioError, one line, if it
    cannot be read or run)."""
    path = Path(path)
    if not path.exists() and path.suffix != ".toml":
        builtins = builtin_scenarios()
        if str(path) in builtins:
            return parse_scenario(builtins[str(path)], str(path))
        raise ScenarioError(f"{path}: no such file, nor a built-in scenario (those: "
                            f"{', '.join(builtins)})")
    sc = parse_scenario(read_scenario_text(path), str(path), path.parent)
    return Scenario(sc.name, sc.profile, sc.flows, sc.seed, sc.description, path)


# ---------------------------------------------------------------------------------------------
# running one


@dataclass
class FlowRun:
    """A flow's outcome: its spec, its connections' clients, and the records that are its."""
    spec: FlowSpec
    clients: list
    servers: list
    pairs: list[int]

    @property
    def started_at(self):
        return min((c.started_at for c in self.clients if c.started_at is not None),
                   default=None)

    @property
    def done(self) -> bool:
        return all(c.done for c in self.clients)

    @property
    def error(self):
        return next((c.error for c in self.clients if c.error is not None), None)

    def objects(self) -> list[dict]:
        out = []
        for c in self.clients:
            out += [o.to_dict() for o in c.app.objects]
        return sorted(out, key=lambda o: o["index"])


@dataclass
class ScenarioRun:
    """What a scenario's run did: every datagram and delivery (each with its flow's index),
    the flows, both channels' counters, the return channel's BoD records, the engine's own
    check."""
    scenario: Scenario
    engine: str
    f_clk: int
    origin: int
    virtual_s: float
    wall_s: float
    flows: list[FlowRun]
    sent: list
    delivered: list
    board_stats: dict
    bod: dict | None = None
    exactness: dict | None = None
    undecodable: int = 0
    unrouted: int = 0
    timeline: dict | None = None
    capture: dict | None = None
    rtts: dict = field(default_factory=dict)
    terminal_stats: dict | None = None      # each channel's counters by terminal
    # Real time: each flow's datagrams' one-way delays (ns, by direction) and those sent but
    # never captured arriving ("lost"), from the two captures (satemu.quic.realtime.scenario).
    delays: dict | None = None
    # (satemu.report.metrics reads a run's span from its records where this is None)
    completion_s = None


def flow_pairs(specs, f_clk: int, keylog=None, seeded: bool = True):
    """The connections of every flow of ``specs`` (CoSim pairs) and the flows' records, the
    endpoints made with each flow's seed; with ``seeded`` False (real time), aioquic's
    randomness is the system's (no satemu.quic.determinism block needed)."""
    import contextlib
    from satemu.quic.cosim import Pair
    from satemu.quic.determinism import drawing_from
    from satemu.quic.flows import flow_client, flow_server
    pairs, flows = [], []
    for i, f in enumerate(specs):
        run = FlowRun(f, [], [], [])
        conns = f.workload.connections()
        for j, reqs in enumerate(conns):
            rng = random.Random(f.seed if j == 0 else f"{f.seed}/{j}")
            qseed = (f.seed + j * 0x9E3779B97F4A7C15) % SEED_LIMIT
            local = f.client_at(j)
            with drawing_from(rng) if seeded else contextlib.nullcontext():
                client = flow_client(f.stacks[0], f.settings, reqs,
                                     f.workload.parallel, f.ack, qseed, local, f.server,
                                     f.stacks[1], keylog, f.workload.protocol)
                server = flow_server(f.stacks[1], f.settings, f.ack, qseed, f.server, local,
                                     f.workload.protocol)
            sequential = j > 0 and not f.workload.parallel
            pairs.append(Pair(client, server, flow=i,
                              start=round(f.start * f_clk),
                              after=len(pairs) - 1 if sequential else None,
                              rng=rng if seeded else None, ecn=ECN_CODEPOINTS[f.settings.ecn]))
            run.clients.append(client)
            run.servers.append(server)
            run.pairs.append(len(pairs) - 1)
        flows.append(run)
    return pairs, flows


def run_scenario(engine, sc: Scenario, *, max_seconds: float = 600.0,
                 progress: Callable | None = None, board: dict | None = None,
                 pcap=None) -> ScenarioRun:
    """Run scenario ``sc`` across ``engine`` (an Engine, or ``model``/``board`` as
    satemu.quic.engine.run_transfer takes it) until every flow is done, one failed, or
    ``max_seconds`` of virtual time passed."""
    import io
    from satemu.quic.cosim import CoSim, write_run_capture
    from satemu.quic.determinism import deterministic
    from satemu.quic.engine import make_engine
    sc.check_time(max_seconds)
    engine = make_engine(engine, board)
    keylog = io.StringIO() if pcap is not None else None
    with engine.load(sc.profile, max_seconds) as loaded, deterministic(sc.seed):
        pairs, flows = flow_pairs(sc.flows, loaded.f_clk, keylog)
        t0 = time.monotonic()
        sim = CoSim(loaded.wire, loaded.f_clk, pairs=pairs, capture=pcap is not None,
                    read_wire=False)
        sim.run(sim.finished, max_seconds, progress)
        wall = time.monotonic() - t0
        outcome = engine.settle(sim)
    run = ScenarioRun(sc, engine.name, loaded.f_clk, sim.origin, sim.time(sim.now_cycle), wall,
                      flows, sim.sent, sim.delivered, outcome.stats, outcome.bod,
                      outcome.exactness, sim.undecodable, sim.unrouted, loaded.timeline,
                      rtts={i: list(v) for i, v in sim.rtts.items()},
                      terminal_stats=outcome.terminals)
    if pcap is not None:
        for f in flows:
            for c in f.clients:
                if getattr(c, "stack", "") == "quinn":
                    keylog.write(c.endpoint.key_log().decode())
        terms = sc.profile.terminals
        run.capture = write_run_capture(sim, pcap, keylog.getvalue(), engine.name,
                                        sc.profile.name, outcome.stats,
                                        terms.whose() if terms else None)
    return run


def scenario_twin(run: ScenarioRun, max_seconds: float = 600.0, pcap=None) -> ScenarioRun:
    """The model engine's run of the board's scenario run ``run``, as it ran there (its BoD
    phase and timeline start), for ``satemu.quic.cosim.differences``."""
    from satemu.quic.engine import twin_engine
    return run_scenario(twin_engine(run), run.scenario, max_seconds=max_seconds, pcap=pcap)
