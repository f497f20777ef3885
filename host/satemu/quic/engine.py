# SPDX-License-Identifier: BSD-2-Clause
"""The engine seam: what a co-simulation drives, one download run on any engine, and the
registry the engines are found in.

An engine is the frame path between the two endpoints (``Engine``). ``model`` is the reference
models of the board (``satemu.model.board.BoardModel``, here); ``board`` is the simulated board
in Verilator, which the checkout's ``sim`` distribution supplies (``sim.engine.BoardEngine``).
Each registers under the entry-point group ``satemu.engines`` (pyproject.toml, sim/pyproject.toml),
as Glasgow registers its applets: the host package never imports the checkout, and a host tool
installed without one says in one line that it has no ``board`` engine.

:func:`run_transfer` is the one sequence every engine shares: the profile loaded onto the engine,
the endpoints made and run in lock-step with it (``satemu.quic.cosim.CoSim``), the engine
settled and read, the Transfer record, its capture.
"""

from __future__ import annotations

import io
import time
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from importlib import metadata
from typing import Callable, Protocol, runtime_checkable

from satemu.link.profile import Profile, load_profile
from satemu.quic.cosim import CoSim, bod_dict, endpoints, make_transfer, write_run_capture
from satemu.quic.transfer import Transfer

__all__ = ["ENGINES", "GROUP", "Engine", "EngineError", "Loaded", "Outcome", "ModelEngine",
           "engine_class", "make_engine", "terminal_counters", "run_transfer",
           "run_model_transfer", "model_twin", "twin_engine"]

GROUP = "satemu.engines"
ENGINES = ("board", "model")         # the engines the tool knows; `--engine` takes these


class EngineError(RuntimeError):
    """An engine that is not to be had here; the message says why, in one line."""


@runtime_checkable
class Wire(Protocol):
    """What ``CoSim`` drives: frames onto a port's wire from a cycle on, the engine run to a
    cycle, and ``traffic`` (``satemu.model.board.Traffic``): what entered and left each port."""
    traffic: object

    def now(self) -> int: ...

    def run(self, until: int) -> int: ...

    def send(self, port: int, wire: bytes, cycle: int) -> None: ...


@dataclass
class Loaded:
    """A link in force on an engine, for one transfer."""
    wire: Wire
    f_clk: int
    timeline: dict | None = None        # satemu.link.timeline.timeline_dict of a timeline run


@dataclass
class Outcome:
    """What an engine says of a finished transfer: both channels' counters, the return
    channel's BoD records (``bod_dict``) if it is BoD-served, the model's own check, and each
    terminal's counters where the profile declares terminals."""
    stats: dict
    bod: dict | None = None
    exactness: dict | None = None
    # With a terminal table: each channel's counters of each terminal with frames, by its
    # index as text, and of the frames of no terminal under "none" (terminal_counters).
    terminals: dict | None = None


@runtime_checkable
class Engine(Protocol):
    """One engine of the frame path. ``load(link, max_seconds)`` puts ``link`` in force (with its
    timeline, for as many laps as ``max_seconds`` may take) and opens the wire for the ``with``
    block; ``settle(sim)``, inside it after the run, lets every frame leave or be dropped and
    reads the engine's counters."""
    name: str

    def load(self, link: Profile, max_seconds: float) -> AbstractContextManager[Loaded]: ...

    def settle(self, sim: CoSim) -> Outcome: ...


class ModelEngine:
    """The ``model`` engine: ``satemu.model.board.BoardModel`` of the default board, loaded with
    the link as the simulated board's firmware loads it. ``bod_phase``: how many cycles before
    the transfer's start a BoD channel's superframe 0 began (on the board: since the profile's
    commit); ``bod_superframes``: how many superframe records it keeps at least (the board's ring
    goes on recording after the transfer); a timeline starts ``timeline_offset`` cycles after
    the transfer (before it, if negative)."""
    name = "model"

    def __init__(self, bod_phase: int = 0, bod_superframes: int = 0, timeline_offset: int = 0):
        if bod_phase < 0:
            raise ValueError("bod_phase is a number of cycles, at least 0")
        self.bod_phase, self.bod_superframes = bod_phase, bod_superframes
        self.timeline_offset = timeline_offset

    @contextmanager
    def load(self, link: Profile, max_seconds: float):
        from satemu.base.boards import BOARDS, DEFAULT_BOARD
        from satemu.model.board import FORWARD, RETURN, BoardModel
        board = BOARDS[DEFAULT_BOARD]
        regs = link.check(board.hardware)           # as the firmware checks and loads it
        self.regs = {FORWARD: regs["forward"], RETURN: regs["return"]}
        # A timeline starts with the transfer (the model's first cycle after bod_phase), its
        # steps committed as the firmware commits them, for as many laps as it may last.
        self.commits, timeline = {}, None
        if link.timeline is not None:
            from satemu.link.timeline import compile_timeline, timeline_dict
            compiled = compile_timeline(link, board.hardware)
            start = self.bod_phase + 1 + self.timeline_offset
            laps = compiled.laps_within(round(max_seconds * board.f_clk))
            self.commits = {ch: compiled.commits(start, name, laps)
                            for ch, name in ((FORWARD, "forward"), (RETURN, "return"))}
            timeline = timeline_dict(link, compiled, start, board.f_clk)
        tables = link.tables(board.hardware)
        # The load writes a channel's jitter table into the bank it then names: here both
        # banks hold it, whichever the board's load would take.
        jitter = {ch: (table, table) for ch, name in ((FORWARD, "forward"), (RETURN, "return"))
                  for table in [link.jitter_tables().get(name)] if table is not None}
        self.model = BoardModel(self.regs, cycle=self.bod_phase, bod_start=1, board=board,
                                commits=self.commits,
                                tables=tables and {FORWARD: tables["forward"],
                                                   RETURN: tables["return"]},
                                jitter=jitter)
        yield Loaded(self.model, board.f_clk, timeline)

    def settle(self, sim: CoSim) -> Outcome:
        from satemu.model.board import FORWARD, RETURN
        self.model.finish(self.bod_superframes)
        sim.record_rest()
        stats = {"forward": self.model.stats(FORWARD), "return": self.model.stats(RETURN)}
        bod = None
        if self.regs[RETURN].bod:
            bod = bod_dict(1, sim.origin, self.regs[RETURN], self.model.results[RETURN].bod,
                           commits=self.commits.get(RETURN, ()))
        terminals = None
        if self.model.tables:
            terminals = {name: terminal_counters(self.model.results[ch].terminals)
                         for ch, name in ((FORWARD, "forward"), (RETURN, "return"))}
        return Outcome(stats, bod, self.model.exactness(), terminals)


def terminal_counters(by_terminal: dict) -> dict:
    """A channel's counters by terminal (index, or None for the frames of no terminal) as
    Outcome.terminals holds them: by the index as text, and "none"."""
    return {"none" if who is None else str(who): dict(c) for who, c in by_terminal.items()}


def _entry_point(name: str):
    found = [e for e in metadata.entry_points(group=GROUP) if e.name == name]
    if not found:
        raise EngineError("the board engine, the simulated board, is not installed here: it needs "
                          "a satemu source checkout, whose make installs its sim/ beside the host "
                          "tool; or use --engine model" if name == "board" else
                          f"no {name!r} engine is registered here; the engines are "
                          f"{', '.join(sorted(e.name for e in metadata.entry_points(group=GROUP)))}")
    try:
        return found[0].load()
    except ImportError as e:
        raise EngineError(f"the {name} engine is registered but does not load ({e}); run make "
                          f"in its checkout") from None


def engine_class(name: str) -> type:
    """The class registered for engine ``name`` (EngineError, one line, if there is none)."""
    return _entry_point(name)


def make_engine(engine: "Engine | str", board: dict | None = None) -> Engine:
    """``engine`` itself, or the engine of that name: ``board`` runs on the simulated board
    whose UART URL and Ethernet port ``board`` holds (``url``, ``eth_port``)."""
    if not isinstance(engine, str):
        return engine
    cls = engine_class(engine)
    if engine == "board":
        if not board:
            raise ValueError("the board engine needs a running simulated board")
        return cls(board["url"], board["eth_port"])
    return cls()


def run_transfer(engine: Engine | str, profile, size: int, *, ack: str = "default",
                 seed: int = 0, max_seconds: float = 600.0, settings=None, stacks="aioquic",
                 progress: Callable[[CoSim], None] | None = None, qlog_dir=None,
                 board: dict | None = None, pcap=None) -> Transfer:
    """Download ``size`` bytes from the server (port B) to the client (port A) across
    ``engine``: an Engine, or a name (``board`` then runs on the simulated board whose UART URL
    and Ethernet port ``board`` holds, ``url`` and ``eth_port``). ``profile``: a name, a path or
    a Profile. ``pcap``: where to write the run's capture (``write_run_capture``)."""
    from satemu.quic.settings import ECN_CODEPOINTS, EndpointSettings
    engine = make_engine(engine, board)
    settings = settings or EndpointSettings()
    link = profile if isinstance(profile, Profile) else load_profile(profile)
    keylog = io.StringIO() if pcap is not None else None
    with engine.load(link, max_seconds) as loaded, \
            endpoints(size, ack, seed, settings, stacks, qlog_dir, keylog) as (client, server,
                                                                              policy):
        t0 = time.monotonic()
        sim = CoSim(loaded.wire, loaded.f_clk, client, server, capture=pcap is not None,
                    ecn=ECN_CODEPOINTS[settings.ecn])
        sim.run(lambda: client.done or client.error is not None, max_seconds, progress)
        wall = time.monotonic() - t0
        outcome = engine.settle(sim)
    t = make_transfer(sim, link, size, policy, settings, seed, loaded.f_clk, outcome.stats,
                      outcome.bod, wall, engine.name)
    t.exactness = outcome.exactness
    t.terminal_stats = outcome.terminals
    if pcap is not None:
        t.capture = write_run_capture(sim, pcap, keylog.getvalue(), engine.name, link.name,
                                      outcome.stats,
                                      link.terminals.whose() if link.terminals else None)
    t.timeline = loaded.timeline
    return t


def run_model_transfer(profile, size: int, ack: str = "default", seed: int = 0,
                       max_seconds: float = 600.0, settings=None, stacks="aioquic",
                       progress: Callable[[CoSim], None] | None = None, qlog_dir=None,
                       bod_phase: int = 0, bod_superframes: int = 0, pcap=None,
                       timeline_offset: int = 0) -> Transfer:
    """``run_transfer`` on a ``ModelEngine`` of these settings."""
    return run_transfer(ModelEngine(bod_phase, bod_superframes, timeline_offset), profile,
                        size, ack=ack, seed=seed, max_seconds=max_seconds, settings=settings,
                        stacks=stacks, progress=progress, qlog_dir=qlog_dir, pcap=pcap)


def twin_engine(t) -> ModelEngine:
    """The model engine that runs as the board ran ``t`` (a Transfer or a scenario's run): the
    board's BoD phase, as many superframe records as it read, and where its timeline started."""
    phase = t.bod["phase"] if t.bod else 0
    superframes = max((r["sf"] for r in t.bod["records"]), default=-1) + 1 if t.bod else 0
    offset = t.timeline["start_cycle"] - t.origin if t.timeline else 0
    return ModelEngine(phase, superframes, offset)


def model_twin(t: Transfer, profile, max_seconds: float = 600.0, pcap=None) -> Transfer:
    """The model engine's run of board transfer ``t`` (the same profile, size, policy, seed,
    endpoint settings and stacks, the board's BoD phase and where its timeline started), for
    ``satemu.quic.cosim.differences``; with its capture at ``pcap``."""
    from satemu.quic.settings import EndpointSettings
    return run_transfer(twin_engine(t), profile, t.size, ack=t.ack, seed=t.seed,
                        max_seconds=max_seconds,
                        settings=EndpointSettings.from_dict(t.settings),
                        stacks=(t.stacks["client"], t.stacks["server"]), pcap=pcap)
