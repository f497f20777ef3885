# SPDX-License-Identifier: BSD-2-Clause
"""Sweeps of QUIC downloads: points as pure functions of their parameters, run in parallel."""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import itertools
import json
import os
import re
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

from .profile import (ProfileError, load_profile, override_profile, override_value,
                      parse_profile, read_profile_text)
from .quic.cosim import ENGINES
from .quic.settings import CONTROLLERS

__all__ = ["Point", "plan", "run_point", "run_sweep", "release_board", "split_values",
           "parse_sets", "record_of", "RECORD", "CCS", "PRESETS"]

CCS = CONTROLLERS
RECORD = "point.json"           # in a point's run directory: its key and figures, once done
CAPTURE = "capture.pcapng"      # in a point's run directory, with --pcap
# The summary's figures each row of results.csv carries (satemu.report.metrics.summarize).
FIGURES = ("completed", "error", "outcome", "completion_s", "goodput_mbps", "forward_packets",
           "forward_bytes", "return_packets", "return_bytes", "return_share_pct",
           "ack_only_packets", "ack_ratio", "return_pps", "consistent", "virtual_s", "wall_s",
           "speed")


# `satemu experiment KIND`: each kind's options, where the command line leaves them at their
# defaults. ``constrained-return`` is the constrained-return-link study (docs/profiles.md,
# "Presets"): the geo-testbed link (8.5 / 1.5 Mbit/s, 600 ms RTT) with its return rate cut from
# 1.5 Mbit/s to 1% of the forward, 10 MB downloads, ACK 1:2 and 1:10, Reno and BBR, QUIC
# packets of 1280 B (quicly) and 1352 B (Chromium). The client is aioquic, whose receiver
# applies the ratio policies; the server is quinn, which has BBR.
PRESETS = {
    "ack-policy": {},
    "constrained-return": {
        "profile": ["geo-testbed"],
        "set": ["return.rate=1.5Mbit/s,750kbit/s,375kbit/s,200kbit/s,85kbit/s",
                "endpoint.max_datagram=1280,1352"],
        "sizes": "10MB", "policies": "ratio:2,ratio:10", "cc": "reno,bbr",
        "stack": "aioquic/quinn", "engine": "model",
    },
}


def split_values(text: str) -> list[str]:
    """``text`` split at the commas outside quotes and brackets: ``a,"b,c",[d, e]``."""
    out, depth, quote, cur = [], 0, "", ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        cur += ch
    out.append(cur.strip())
    return out


def parse_sets(sets) -> list[tuple[str, list[str]]]:
    """``--set FIELD=V1,V2`` options as (field, values), in the order given."""
    out: list[tuple[str, list[str]]] = []
    for text in sets or ():
        field, eq, values = text.partition("=")
        field = field.strip()
        if not eq or not field:
            raise ProfileError(f"--set {text!r}: expected FIELD=V1,V2,... such as "
                               f"return.rate=100kbit/s,1.5Mbit/s")
        vals = split_values(values)
        if not all(vals):
            raise ProfileError(f"--set {text!r}: an empty value")
        if field in (f for f, _ in out):
            raise ProfileError(f"--set {field}: given twice; list its values in one --set")
        out.append((field, vals))
    return out


def _safe(text: str) -> str:
    """A value as part of a file name: no spaces, '/' as 'p', '%' as 'pct'."""
    text = text.replace(" ", "").replace("/", "p").replace("%", "pct")
    return re.sub(r"[^A-Za-z0-9._=-]", "_", text)


def derived_name(base: str, overrides) -> str:
    """The name of profile ``base`` with ``overrides``: ``short-asym+return.rate=100kbitps``."""
    return base + "".join(f"+{field}={_safe(value)}" for field, value in overrides)


# Run-directory suffixes of endpoint settings that differ from the defaults.
_LEAF = {"max_datagram": "dg", "initial_window": "iw", "initial_rtt_ms": "irtt",
         "stream_window": "sw", "conn_window": "cw", "max_ack_delay_ms": "mad"}


@dataclass(frozen=True)
class Point:
    """One download of a sweep, everything it depends on; picklable, so it runs anywhere."""

    engine: str
    base: str                       # the base profile's name
    overrides: tuple                # ((field, value text), ...), sorted by field
    name: str                       # the profile's name in the results
    size: int
    size_text: str
    ack: str
    cc: str
    seed: int
    endpoint: tuple                 # ((EndpointSettings attribute, value), ...) but cc, sorted
    stacks: tuple                   # (client stack, server stack)
    max_time: float                 # s of link time
    profile: str                    # a built-in profile's name, or "" when ``toml`` holds it
    toml: str = ""                  # the profile's TOML text (a file's, or with overrides)
    sha: str = ""                   # of the profile's text: an edited profile is a new point
    # Also write the run's capture.pcapng. Not part of the key: the same run, with a file more
    # (a point done without it is run again when one is asked for: record_of).
    pcap: bool = False

    @property
    def settings(self):
        from .quic.settings import EndpointSettings
        return EndpointSettings(cc=self.cc, **dict(self.endpoint))

    def key(self) -> dict:
        """What makes the point: equal keys, equal results."""
        endpoint = dict(self.endpoint)
        return {"engine": self.engine, "profile": self.base,
                "overrides": ";".join(f"{f}={v}" for f, v in self.overrides),
                "size": self.size, "ack": self.ack, "cc": self.cc, "seed": self.seed,
                "stacks": "/".join(self.stacks), **endpoint,
                "max_time_s": self.max_time, "profile_sha": self.sha}

    @property
    def id(self) -> str:
        return hashlib.sha256(json.dumps(self.key(), sort_keys=True).encode()).hexdigest()[:16]

    @property
    def run_rel(self) -> Path:
        """Its run directory under the sweep's: ``profile/size/policy``, the policy with
        ``-cc``, ``-STACK`` (or ``-CLIENT-SERVER``), ``-seedN`` and each endpoint setting
        (``-dg1280``, ``-irtt100``, ``-mad10``, ...) when those differ from the defaults."""
        from .quic.settings import EndpointSettings
        leaf = self.ack.replace(":", "")
        if self.cc != "reno":
            leaf += f"-{self.cc}"
        if self.stacks != ("aioquic", "aioquic"):
            leaf += "-" + (self.stacks[0] if self.stacks[0] == self.stacks[1]
                           else "-".join(self.stacks))
        if self.seed != 0:
            leaf += f"-seed{self.seed}"
        default = EndpointSettings()
        for attr, value in self.endpoint:
            if value != getattr(default, attr):
                leaf += f"-{_LEAF[attr]}{value:g}" if isinstance(value, float) else \
                    f"-{_LEAF[attr]}{value}"
        return Path(self.name) / self.size_text / leaf

    def label(self) -> str:
        from .quic.settings import EndpointSettings
        stacks = "" if self.stacks == ("aioquic", "aioquic") else f", {'/'.join(self.stacks)}"
        default = EndpointSettings()
        extra = "".join(f", {attr} {value}" for attr, value in self.endpoint
                        if value != getattr(default, attr))
        return (f"{self.name}, {self.size_text}, ACK {self.ack}, {self.cc}{stacks}{extra}, "
                f"seed {self.seed}")


def _builtin_text(name: str) -> str | None:
    for entry in resources.files("satemu").joinpath("profiles").iterdir():
        if entry.name.endswith(".toml"):
            text = entry.read_text()
            if entry.name[:-5] == name or parse_profile(text, entry.name[:-5]).name == name:
                return text
    return None


def _endpoint_axes(base, stacks, ccs, sets) -> list[tuple[tuple, tuple, str]]:
    """Every (endpoint items but cc, stacks, cc) of the ``endpoint.*`` --set axes x ccs over
    ``base`` (EndpointSettings) and ``stacks``, each checked against its stacks; ProfileError
    if one fails. An ``endpoint.NAME`` axis replaces what ``base``, ``stacks`` or ``ccs`` say
    of NAME: ``endpoint.cc`` the ccs, ``endpoint.stack`` the stacks."""
    from .quic.settings import parse_setting
    axes = []
    for field, values in sets:
        name = field[len("endpoint."):]
        try:
            axes.append([parse_setting(name, v) for v in values])
        except ValueError as e:
            raise ProfileError(f"--set {field}: {e}") from None
    out = []
    for combo in itertools.product(*axes):
        changes = dict(combo)
        pair = tuple(changes.pop("stacks", stacks))
        for cc in [changes.pop("cc")] if "cc" in changes else ccs:
            try:
                settings = base.but(**changes, cc=cc)
                settings.check_stacks(pair)
            except ValueError as e:
                raise ProfileError(str(e)) from None
            items = tuple(sorted((k, v) for k, v in settings.to_dict().items() if k != "cc"))
            out.append((items, pair, cc))
    return out


TRACE_FIELDS = ("forward.trace", "return.trace")


def _traces(text: str) -> dict[str, str]:
    """The trace files profile TOML ``text`` names, by field (``TRACE_FIELDS``)."""
    import tomllib
    doc = tomllib.loads(text) if text else {}
    tables = {field: doc.get(field.split(".")[0]) for field in TRACE_FIELDS}
    return {field: t["trace"] for field, t in tables.items()
            if isinstance(t, dict) and isinstance(t.get("trace"), str)}


def _placed_traces(text: str, folder: Path) -> tuple:
    """Overrides that name profile ``text``'s trace files by their absolute paths (they are
    relative to ``folder``, the profile's own), so that a point's TOML, run from elsewhere and
    rewritten by ``--set``, still finds them."""
    return tuple((field, _absolute(folder / file)) for field, file in _traces(text).items())


def _placed_sets(overrides) -> tuple:
    """``--set`` values as ``override_profile`` takes them, a trace file given relative to the
    working folder made absolute."""
    return tuple((field, _absolute(Path(str(override_value(value)).strip())))
                 if field in TRACE_FIELDS else (field, value) for field, value in overrides)


def _absolute(path: Path) -> str:
    """``path`` made absolute, as an override's TOML string."""
    return json.dumps(str(path.resolve()))


def _trace_bytes(toml: str) -> bytes:
    """The content of the trace files profile ``toml`` names (absolute paths): an edited trace
    makes a new point."""
    data = b""
    for file in _traces(toml).values():
        with contextlib.suppress(OSError):
            data += Path(file).read_bytes()
    return data


def plan(engine: str, profiles, sizes, policies, ccs, seeds, sets=(), *, endpoint=None,
         stacks=("aioquic", "aioquic"), max_time: float = 600.0,
         hardware=None, pcap: bool = False) -> list[Point]:
    """Every point of the sweep profiles x profile --set values x sizes x policies x endpoint
    --set values (``endpoint.NAME``: satemu.quic.settings.SETTING_NAMES) x ccs x seeds, over
    the endpoint settings ``endpoint`` (EndpointSettings; its defaults if None) and ``stacks``.
    An ``endpoint.NAME`` --set sweeps NAME in place of its single value in ``endpoint`` (or
    ``stacks``, for ``endpoint.stack``), and ``endpoint.cc`` in place of ``ccs``: the --set
    wins over the option of the same setting (--max-datagram, --stack, --cc, ...).
    Each profile is parsed and checked against ``hardware`` (the simulated board's) first and
    each endpoint combination against its stacks: a bad engine, field or value raises
    ProfileError before anything runs. ``sizes`` are (text, bytes) pairs, ``sets`` (field,
    [values]) pairs."""
    from .boards import BOARDS, DEFAULT_BOARD
    from .quic.settings import EndpointSettings
    if engine not in ENGINES:
        raise ProfileError(f"--engine {engine!r}: one of {', '.join(ENGINES)}")
    for cc in ccs:
        if cc not in CCS:
            raise ProfileError(f"--cc {cc!r}: one of {', '.join(CCS)}")
    endpoints = _endpoint_axes(endpoint or EndpointSettings(), tuple(stacks), ccs,
                               [(f, v) for f, v in sets if f.startswith("endpoint.")])
    sets = [(f, v) for f, v in sets if not f.startswith("endpoint.")]
    hw = hardware or BOARDS[DEFAULT_BOARD].hardware
    links = []          # (base name, overrides, name, builtin name or "", toml)
    for given in profiles:
        base = load_profile(given)
        builtin = given if base.path is None else ""
        text = _builtin_text(base.name) if builtin else read_profile_text(base.path)
        folder = Path(str(resources.files("satemu").joinpath("profiles"))) if builtin \
            else base.path.parent
        placed = _placed_traces(text, folder)
        fields = [f for f, _ in sets]
        for combo in itertools.product(*(values for _, values in sets)):
            overrides = tuple(sorted(zip(fields, combo)))
            if overrides or (placed and not builtin):
                name = derived_name(base.name, overrides)
                try:
                    toml = override_profile(text, placed + _placed_sets(overrides), name)
                except ProfileError as e:
                    raise ProfileError(f"--set on {base.name}: {e}") from None
                link = parse_profile(toml, name)
            else:
                name, toml, link = base.name, "" if builtin else text, base
            try:
                link.check(hw)
            except ProfileError as e:
                raise ProfileError(f"{name}: {e}") from None
            sha = hashlib.sha256((toml or text).encode() + _trace_bytes(toml)).hexdigest()[:16]
            links.append((base.name, overrides, name, "" if overrides else builtin, toml, sha))
    for ack in policies:                # a quinn client applies only some receiver policies
        if any(pair[0] == "quinn" for _, pair, _ in endpoints):
            from .quic.quinn import quinn_policy
            try:
                quinn_policy(ack)
            except ValueError as e:
                raise ProfileError(f"--policies with a quinn client: {e}") from None
    names = [link[2] for link in links]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise ProfileError(f"{dup}: two profiles of the sweep would have that name; give "
                           f"profiles and --set values that differ in name")
    return [Point(engine=engine, base=base, overrides=overrides, name=name, size=size,
                  size_text=size_text, ack=ack, cc=cc, seed=seed, endpoint=items, stacks=pair,
                  max_time=max_time, profile=builtin, toml=toml, sha=sha, pcap=pcap)
            for base, overrides, name, builtin, toml, sha in links
            for size_text, size in sizes for ack in policies
            for items, pair, cc in endpoints for seed in seeds]


# -- a worker's simulated board --------------------------------------------------------------

_board: dict | None = None
_board_lock = threading.Lock()


def release_board() -> bool:
    """Stop the simulated board this process launched for its points, if any."""
    global _board
    with _board_lock:
        state, _board = _board, None
    if state is None:
        return False
    from sim import board
    with contextlib.suppress(Exception):
        board.kill(state)
    return True


def _on_sigterm(signum, frame):
    release_board()
    os._exit(128 + signum)


def _worker_board() -> dict:
    """The board this worker process runs its points on: launched on its first point."""
    global _board
    from .checkout import use_checkout
    use_checkout("satemu experiment --engine board")
    from sim import board
    with _board_lock:
        if _board is not None and board.alive(_board["pid"]):
            return _board
    release_board()
    try:
        state = board.launch()
    except board.BoardError as e:
        raise RuntimeError(str(e)) from None
    with _board_lock:
        _board = state
    atexit.register(release_board)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
    return state


def _worker_init() -> None:
    """A pool worker: Ctrl-C is the sweep's to handle (it terminates the workers); SIGTERM
    stops the worker's board first."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_sigterm)


def _log_of(state: dict | None) -> str | None:
    if state and state.get("run_dir"):
        return str(Path(state["run_dir"]) / "sim.log")
    return None


def run_point(point: Point, board: dict | None = None, progress=None) -> dict:
    """Run ``point`` and return its outcome: ``ok``, the summary and the run directory's
    files (result.json, packets.csv, plots) as bytes, so that the caller writes them wherever
    it runs; or ``ok`` False with ``error`` and the board's ``log``. With the board engine,
    ``board`` is the simulated board to use; without it, this process's own (launched on its
    first point, relaunched after a failure). ``progress(virtual_s, bytes)`` is called as the
    transfer runs."""
    from .quic.cosim import run_transfer
    from .report.files import write_transfer
    t0 = time.monotonic()
    own = point.engine == "board" and board is None
    state = board
    try:
        if own:
            state = _worker_board()
        with tempfile.TemporaryDirectory(prefix="satemu-point-") as tmp:
            profile = point.profile
            if not profile:
                profile = str(Path(tmp) / f"{point.name}.toml")
                Path(profile).write_text(point.toml, encoding="utf-8")
            run = Path(tmp) / "run"
            t = run_transfer(point.engine, profile, point.size, ack=point.ack,
                             seed=point.seed, max_seconds=point.max_time,
                             settings=point.settings, stacks=point.stacks, board=state,
                             progress=progress and (lambda sim: progress(
                                 sim.time(sim.now_cycle), sim.client.received)),
                             pcap=run / CAPTURE if point.pcap else None)
            summary = write_transfer(t, run)
            files = {p.name: p.read_bytes() for p in sorted(run.iterdir()) if p.is_file()}
    except Exception as e:                  # the sweep goes on; a rerun retries the point
        log = _log_of(state)
        if own:
            release_board()
        return {"ok": False, "error": f"{type(e).__name__}: {e}".strip(), "log": log,
                "pid": os.getpid()}
    return {"ok": True, "summary": summary, "files": files, "pid": os.getpid(),
            "point_wall_s": time.monotonic() - t0}


# -- records on disk -------------------------------------------------------------------------

def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def record_of(point: Point, out: Path) -> dict | None:
    """The record of ``point`` under ``out`` if it is done (same key), else None."""
    path = Path(out) / point.run_rel / RECORD
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if record.get("id") != point.id or record.get("key") != point.key():
        return None
    if not (path.parent / "result.json").exists():
        return None
    if point.pcap and not (path.parent / CAPTURE).exists():
        return None
    return record


def row_of(point: Point, summary: dict, link=None) -> dict:
    """The point's row of results.csv: its parameters, then the summary's figures."""
    row = {"point": point.id, **{k: v for k, v in point.key().items() if k != "profile_sha"}}
    row["profile"] = point.name
    row["base_profile"] = point.base
    row["size_text"] = point.size_text
    for field, value in point.overrides:
        row[field] = value
    if link is not None:
        row["forward_rate_bps"] = float(link.forward.rate) if link.forward.rate else None
        row["return_rate_bps"] = float(link.ret.rate) if link.ret.rate else None
    for name in FIGURES:
        row[name] = (summary["consistency"]["consistent"] if name == "consistent"
                     else summary.get(name))
    row["run_dir"] = point.run_rel.as_posix()
    return row


def _store(point: Point, out: Path, outcome: dict) -> dict:
    """Write a finished point's files, then its record (atomically, last: it marks the point
    done)."""
    run = Path(out) / point.run_rel
    run.mkdir(parents=True, exist_ok=True)
    (run / RECORD).unlink(missing_ok=True)
    for name, data in outcome["files"].items():
        _write_atomic(run / name, data)
    link = parse_profile(point.toml, point.name) if point.toml else load_profile(point.profile)
    record = {"id": point.id, "key": point.key(), "point": asdict(point) | {"toml": None},
              "row": row_of(point, outcome["summary"], link), "finished": time.time()}
    _write_atomic(run / RECORD, (json.dumps(record, indent=2, sort_keys=True, default=str)
                                 + "\n").encode())
    return record


# -- running ---------------------------------------------------------------------------------

@dataclass
class Outcome:
    """What a sweep did: every point's record (None: not done), the points it ran this time
    and those that failed, with (error, log)."""

    points: list
    records: dict
    ran: list
    failed: dict


def _serial(points, board, ticker):
    for p in points:
        yield p, run_point(p, board, ticker(p))


def _terminate(pool) -> None:
    """Stop a pool now: its workers get SIGTERM (and stop their boards), then SIGKILL."""
    procs = list((getattr(pool, "_processes", None) or {}).values())   # shutdown() drops them
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.terminate()
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.join(10)
            if proc.is_alive():
                proc.kill()
                proc.join(5)


def _pool(points, jobs):
    """Points on ``jobs`` worker processes. A worker that dies breaks the pool: the points in
    it then are retried once in a new pool, and reported failed if it breaks again."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool
    tries: dict = {}
    pending = list(points)
    while pending:
        pool = ProcessPoolExecutor(min(jobs, len(pending)),
                                   mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_worker_init)
        clean = False
        try:
            futures = {pool.submit(run_point, p): p for p in pending}
            pending = []
            for f in as_completed(futures):
                p = futures[f]
                try:
                    yield p, f.result()
                except BrokenProcessPool:
                    tries[p] = tries.get(p, 0) + 1
                    if tries[p] < 2:
                        pending.append(p)
                    else:
                        yield p, {"ok": False, "error": "its worker process died", "log": None}
                except Exception as e:
                    yield p, {"ok": False, "error": f"{type(e).__name__}: {e}", "log": None}
            clean = not pending
            if pending:
                yield None, {"notice": f"a worker process died; the {len(pending)} points "
                                       f"that were in its pool run again in a new one"}
        finally:
            if clean:
                pool.shutdown(wait=True)
            else:
                _terminate(pool)


# A --dask scheduler: how long connecting to it and its greeting may take, in all (s), and
# the largest greeting accepted (a scheduler's, its comm handshake, is about 100 bytes).
DASK_TIMEOUT = 30.0
GREETING_MAX = 1 << 16


def check_scheduler(address: str, timeout: float = DASK_TIMEOUT) -> None:
    """Return if a Dask scheduler answers at ``address`` (``tcp://HOST:PORT``, ``HOST:PORT``
    or ``tls://HOST:PORT``), else raise ProfileError (one line). Dask's client trusts its
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
        raise ProfileError(f"--dask {address}: not a Dask scheduler (no greeting within "
                           f"{timeout:g} s)")
    if "error" in box:
        raise box["error"]


def _greeting(address: str, timeout: float, ours: bytes, socks: list, box: dict) -> None:
    """check_scheduler's probe, in its thread: its ProfileError into ``box["error"]``."""
    try:
        _read_greeting(address, timeout, ours, socks)
    except ProfileError as e:
        box["error"] = e
    except Exception as e:              # anything unforeseen is still a refusal, in one line
        box["error"] = ProfileError(f"--dask {address}: not a Dask scheduler "
                                    f"({type(e).__name__}: {e})")


def _read_greeting(address: str, timeout: float, ours: bytes, socks: list) -> None:
    """Connect to ``address``, send ``ours`` (a client's greeting) and check the answer, in
    ``timeout`` s; ``socks`` gets each socket as it is opened."""
    import msgpack
    from distributed.comm.addressing import parse_address, parse_host_port
    deadline = time.monotonic() + timeout
    scheme, loc = parse_address(address)
    if scheme not in ("tcp", "tls"):
        raise ProfileError(f"--dask {address}: a tcp:// or tls:// scheduler address, or "
                           f"'local'")
    try:
        host, port = parse_host_port(loc)
    except ValueError as e:
        raise ProfileError(f"--dask {address}: {e}") from None
    if not 0 < port < 65536:
        raise ProfileError(f"--dask {address}: port {port} is outside 1..65535")
    context = None
    if scheme == "tls":
        from distributed.security import Security
        context = Security().get_connection_args("client").get("ssl_context")
        if context is None:
            raise ProfileError(f"--dask {address}: tls:// needs Dask's TLS settings "
                               f"(distributed.comm.tls in its configuration)")

    def left() -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        return remaining

    def refuse(why: str) -> ProfileError:
        return ProfileError(f"--dask {address}: not a Dask scheduler ({why})")

    try:
        conn = socket.create_connection((host, port), timeout=left())
    except TimeoutError:
        raise ProfileError(f"--dask {address}: no scheduler there (no connection within "
                           f"{timeout:g} s)") from None
    except OSError as e:
        raise ProfileError(f"--dask {address}: no scheduler there ({e})") from None
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
            raise ProfileError(f"--dask {address}: no scheduler there "
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


def _sigterm_raises():
    """SIGTERM as Ctrl-C in this (main) thread, so ``finally`` blocks stop what runs."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum, frame):
        raise KeyboardInterrupt
    return signal.signal(signal.SIGTERM, handler)


def run_sweep(points, out, *, jobs: int = 1, dask: str | None = None, force: bool = False,
              board: dict | None = None, echo=None,
              dask_timeout: float = DASK_TIMEOUT) -> Outcome:
    """Run the points of ``points`` not already done under ``out`` (all with ``force``):
    serially in this process (``jobs`` 1; ``board``, the simulated board for the board
    engine), on ``jobs`` worker processes, or on the Dask scheduler ``dask`` (ProfileError,
    before anything runs, if none answers there within ``dask_timeout`` s). Each finished
    point's files and record are written as it finishes; a failed point is reported and not
    recorded. A progress bar with an ETA goes to stderr (a line per point when not a TTY)."""
    from tqdm import tqdm
    out = Path(out)
    records = {p: None if force else record_of(p, out) for p in points}
    todo = [p for p in points if records[p] is None]
    if dask and dask != "local" and todo:       # before the bar: a refusal is one line
        check_scheduler(dask, dask_timeout)
    tty = sys.stderr.isatty()
    bar = tqdm(total=len(points), initial=len(points) - len(todo), unit="point",
               file=sys.stderr, disable=not tty, dynamic_ncols=True)
    say = echo or (lambda line: bar.write(line, file=sys.stderr) if tty
                   else print(line, file=sys.stderr, flush=True))
    if len(todo) < len(points):
        say(f"{len(points) - len(todo)} of {len(points)} points already done under {out} "
            f"(--force runs them again)")
    ran, failed = [], {}

    def ticker(p: Point):
        """Progress within a point run here: on the bar, or a line every 30 s in a log."""
        last = [time.monotonic()]

        def tick(virtual_s: float, received: int) -> None:
            now = time.monotonic()
            if now - last[0] < (1.0 if tty else 30.0):
                return
            last[0] = now
            text = f"{virtual_s:.2f} s of link time, {100 * received / p.size:.0f}%"
            if tty:
                bar.set_postfix_str(text)
            else:
                say(f"  {p.label()}: {text}")
        return tick

    if dask:
        runs = _dask(todo, dask, jobs, dask_timeout)
    elif jobs > 1 and len(todo) > 1:
        runs = _pool(todo, jobs)
    else:
        runs = _serial(todo, board, ticker)
    old = _sigterm_raises()
    try:
        with contextlib.closing(runs):
            for p, outcome in runs:
                if p is None:
                    say(outcome["notice"])
                    continue
                done = len(points) - len(todo) + len(ran) + len(failed) + 1
                if outcome["ok"]:
                    records[p] = _store(p, out, outcome)
                    ran.append(p)
                    r = records[p]["row"]
                    what = (f"{r['completion_s']:.3f} s, {r['goodput_mbps']:.3f} Mbit/s, "
                            f"return {r['return_bytes']} B" if r["completed"]
                            else f"NOT completed ({r['outcome'] or r['error']})")
                    say(f"[{done}/{len(points)}] {p.label()}: {what} "
                        f"({outcome.get('point_wall_s', 0):.1f} s wall)")
                else:
                    failed[p] = (outcome["error"], outcome.get("log"))
                    log = f"; log: {outcome['log']}" if outcome.get("log") else ""
                    say(f"[{done}/{len(points)}] {p.label()}: FAILED: {outcome['error']}{log}")
                bar.update(1)
    finally:
        bar.close()
        if old is not None:
            signal.signal(signal.SIGTERM, old)
    return Outcome(list(points), records, ran, failed)
