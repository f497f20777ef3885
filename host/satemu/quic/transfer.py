# SPDX-License-Identifier: BSD-2-Clause
"""What one QUIC transfer across the link did: the records the co-simulation and the real-time
mode both produce, and satemu.report reads."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PacketRecord:
    """One datagram an endpoint sent, as its frame went onto the sender's wire."""
    cycle: int              # the cycle it was queued on the wire (it starts as soon as the wire is free)
    direction: str          # "forward" (server -> client, B -> A) or "return" (client -> server)
    size: int               # frame bytes without FCS: what the channel counts
    udp_size: int           # UDP payload (QUIC datagram) bytes
    ack_only: bool
    flow: int = 0           # a scenario's flow (satemu.quic.scenario), else 0


@dataclass(frozen=True)
class Delivery:
    """One frame that left a port and was handed to the endpoint behind it."""
    cycle: int              # the cycle the endpoint received it
    direction: str
    size: int
    flow: int = 0           # a scenario's flow; -1: addressed to no endpoint of the run


@dataclass
class Transfer:
    """What one QuicTransfer across the board did."""
    profile: str
    size: int
    ack: str
    cc: str
    seed: int
    f_clk: int
    completed: bool
    completion_s: float | None
    handshake_s: float | None
    sent: list[PacketRecord]
    delivered: list[Delivery]
    client_stats: dict
    server_stats: dict
    board_stats: dict              # per direction, the channels' counters for this transfer
    undecodable: int
    max_ack_delay_advertised_ms: float
    max_ack_delay_used_ms: float | None
    wall_s: float
    virtual_s: float
    error: str | None = None
    # BoD return link: the ring read after the transfer (start cycle of superframe 0, the
    # transfer's phase within the superframes, superframe cycles, slot bytes, records as dicts,
    # superframes lost); None without BoD (satemu.quic.cosim.bod_dict).
    bod: dict | None = None
    engine: str = "board"          # what carried it: "board" (Verilator), "model", "realtime"
    origin: int = 0                # the cycle the transfer started at
    # The model engine: where the board could differ from it (satemu.model.board.exactness).
    exactness: dict | None = None
    # The endpoints: their settings (satemu.quic.settings.EndpointSettings as a dict) and each
    # side's QUIC stack.
    settings: dict | None = None
    stacks: dict | None = None
    # The run's pcapng capture, when one was written (satemu.box.port_capture.write_capture's summary:
    # its path, frames per interface and per fate, the key log's path, and where its counts
    # disagree with the channels' counters: nowhere, normally).
    capture: dict | None = None
    # The data sender's RTT estimate each time it changed: [cycle, ms] pairs.
    rtt: list | None = None
    # A profile with a timeline: where it started, from the transfer's start (s; negative:
    # before it), its period (s, 0: once) and the settings in force from each step on
    # (satemu.link.timeline.timeline_dict).
    timeline: dict | None = None
    # A profile with terminals: each channel's counters of each terminal (Outcome.terminals).
    terminal_stats: dict | None = None
    # What became of each datagram of ``sent`` (satemu.quic.cosim.PacketFate, same order), in
    # virtual time; None in real time, or where the engine's reports do not add up
    # (``fates_error`` says why).
    fates: list | None = None
    fates_error: str | None = None
    # Where a datagram of a stack that tells nothing of its packets (quinn) could not be read
    # from the wire with the connection's secrets (satemu.quic.wire): which, and why.
    wire_error: str | None = None
