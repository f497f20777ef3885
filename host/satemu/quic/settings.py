# SPDX-License-Identifier: BSD-2-Clause
"""The endpoint settings of one transfer, shared by every QUIC stack and every engine.

One :class:`EndpointSettings` describes both endpoints; only the stack is chosen per side
(``client_stack``, ``server_stack``). Every value is checked here, once, so the command line,
the sweeps and each stack's driver refuse the same things with the same one-line message.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Callable, Optional

from satemu.quic.packets import MAX_UDP_PAYLOAD

__all__ = ["STACKS", "CONTROLLERS", "MIN_DATAGRAM", "EndpointSettings", "STACK_CONTROLLERS",
           "DEFAULT_INITIAL_RTT_MS", "DEFAULT_STACKS", "SETTINGS", "SETTING_NAMES", "Setting",
           "VARINT_MAX", "ACK_N_MAX", "parse_setting", "parse_stacks"]

MIB = 1 << 20
# The largest QUIC variable-length integer (RFC 9000 section 16), the bound of every transport
# parameter and frame field here; host/quinn/src/conn.rs (VARINT_MAX, Settings::check) refuses
# more on the Rust side.
VARINT_MAX = (1 << 62) - 1
# The largest N of the ACK policies ratio:N and ack-frequency:N, for every stack. ack-frequency:N
# goes on the wire as ACK_FREQUENCY's ack-eliciting threshold N - 1, a varint (aioquic's
# Buffer.push_uint_var and quinn's VarInt take at most VARINT_MAX); ratio:N counts ack-eliciting
# packets, of which a packet-number space holds at most 2^62, so a larger N is never reached.
ACK_N_MAX = VARINT_MAX + 1
STACKS = ("aioquic", "quinn")
# The congestion controllers each stack offers, by satemu's name for them.
STACK_CONTROLLERS = {"aioquic": ("reno", "cubic"), "quinn": ("reno", "cubic", "bbr")}
CONTROLLERS = ("reno", "cubic", "bbr")
# The ECN field of the datagrams the endpoints send (RFC 3168): its codepoint by setting.
ECN_CODEPOINTS = {"off": 0, "ect1": 1, "ect0": 2}
QUINN_MAX_ACK_DELAY_MS = 25.0    # quinn-proto 0.11 advertises this, and nothing else
MIN_DATAGRAM = 1200              # RFC 9000 section 14: QUIC's smallest maximum datagram size
# RFC 9002 section 6.2.2's recommendation; docs/architecture.md ("Endpoint settings") gives the
# measurements behind choosing it over aioquic's 100 ms for GEO paths.
DEFAULT_INITIAL_RTT_MS = 333.0
# Each setting's range, inclusive: EndpointSettings.check holds every stack to it, and the quinn
# extension takes it as given (quinn_limits), so neither side has a range of its own.
DATAGRAM_RANGE = (MIN_DATAGRAM, MAX_UDP_PAYLOAD)      # bytes: QUIC's minimum .. a full frame's
INITIAL_WINDOW_RANGE = (2, 1000)                      # packets (RFC 9002's minimum window: 2)
INITIAL_RTT_RANGE_MS = (1.0, 10_000.0)
WINDOW_RANGE = (1200, VARINT_MAX)                     # bytes of flow-control credit


def quinn_limits() -> dict[str, tuple[int, int]]:
    """The ranges above as the quinn extension takes them (``satemu_quinn.Endpoint(...,
    limits=)``, host/quinn/src/conn.rs ``Limits``): its units, integers."""
    return {"max_datagram": DATAGRAM_RANGE,
            "initial_window_bytes": (INITIAL_WINDOW_RANGE[0] * MIN_DATAGRAM,
                                     INITIAL_WINDOW_RANGE[1] * MAX_UDP_PAYLOAD),
            "initial_rtt_ns": tuple(round(ms * 1e6) for ms in INITIAL_RTT_RANGE_MS),
            "window": WINDOW_RANGE}


@dataclass(frozen=True)
class EndpointSettings:
    """Both endpoints' settings.

    * ``max_datagram``: the largest UDP payload an endpoint sends (bytes, 1200..1472; 1472 fills
      a 1518-byte Ethernet frame; QUIC packets of 1280 B, as quicly sends, are ``1280``).
    * ``initial_window``: the initial congestion window in packets of ``max_datagram`` bytes;
      None keeps the stack's own (aioquic: 10 packets; quinn's Reno and Cubic: 12,000 bytes,
      RFC 9002's min(10 x 1200, max(14720, 2 x 1200)) for its 1200-byte base; quinn's BBR:
      200 x 1200 bytes).
    * ``initial_rtt_ms``: the RTT assumed before the first sample (RFC 9002 section 6.2.2).
    * ``cc``: the congestion controller of the server, which sends the data; one of its
      stack's (:data:`STACK_CONTROLLERS`). The client runs it too where its stack has it, else
      Reno.
    * ``stream_window``/``conn_window``: the flow-control credit each endpoint grants its peer
      per stream (initial_max_stream_data) and per connection (initial_max_data), in bytes.
    * ``max_ack_delay_ms``: the max_ack_delay each endpoint advertises (quinn: 25 ms only).
    * ``ecn``: the ECN field of every datagram the endpoints send: ``off`` (Not-ECT), ``ect0``
      or ``ect1`` (:data:`ECN_CODEPOINTS`), for a link's ECN marking to mark; neither stack
      reacts to CE (aioquic keeps no ECN counts, quinn is not told), so it measures the marks.
    """

    max_datagram: int = MAX_UDP_PAYLOAD
    initial_window: Optional[int] = None
    initial_rtt_ms: float = DEFAULT_INITIAL_RTT_MS
    cc: str = "reno"
    stream_window: int = 64 * MIB
    conn_window: int = 64 * MIB
    max_ack_delay_ms: float = 25.0
    ecn: str = "off"

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Raise ValueError (one line, naming the setting) for a value no stack can take."""
        lo, hi = DATAGRAM_RANGE
        if isinstance(self.max_datagram, bool) or not isinstance(self.max_datagram, int) or \
                not lo <= self.max_datagram <= hi:
            raise ValueError(f"max datagram {self.max_datagram!r} B is outside "
                             f"{lo}..{hi} B (QUIC's minimum .. the "
                             f"largest UDP payload of a 1518-byte frame)")
        lo, hi = INITIAL_WINDOW_RANGE
        if self.initial_window is not None and (
                isinstance(self.initial_window, bool) or not isinstance(self.initial_window, int)
                or not lo <= self.initial_window <= hi):
            raise ValueError(f"initial window {self.initial_window!r} packets is outside "
                             f"{lo}..{hi} (RFC 9002's minimum window is 2 packets)")
        lo, hi = INITIAL_RTT_RANGE_MS
        if not _finite(self.initial_rtt_ms) or not lo <= self.initial_rtt_ms <= hi:
            raise ValueError(f"initial RTT {self.initial_rtt_ms!r} ms is outside "
                             f"{lo:g}..{hi:g} ms")
        if self.cc not in CONTROLLERS:
            raise ValueError(f"congestion controller {self.cc!r}: one of "
                             f"{', '.join(CONTROLLERS)}")
        for name in ("stream_window", "conn_window"):
            v = getattr(self, name)
            lo, hi = WINDOW_RANGE
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise ValueError(f"{name.replace('_', ' ')} {v!r} B is outside 1200 B .. 2^62-1 B")
        if not _finite(self.max_ack_delay_ms) or not 0 < self.max_ack_delay_ms < 1 << 14:
            raise ValueError(f"max_ack_delay {self.max_ack_delay_ms!r} ms is outside "
                             f"(0, 16384) ms")
        if self.ecn not in ECN_CODEPOINTS:
            raise ValueError(f"ecn {self.ecn!r}: one of {', '.join(ECN_CODEPOINTS)}")

    def check_stack(self, stack: str, server: bool = True) -> None:
        """Raise ValueError if ``stack`` is unknown or cannot take these settings as the server
        (``server``) or as the client. The controller is the server's, the data sender's: a
        client whose stack lacks it runs Reno (:meth:`client_cc`)."""
        if stack not in STACKS:
            raise ValueError(f"QUIC stack {stack!r}: one of {', '.join(STACKS)}")
        if server and self.cc not in STACK_CONTROLLERS[stack]:
            raise ValueError(f"congestion controller {self.cc!r} is not in {stack} (it has "
                             f"{', '.join(STACK_CONTROLLERS[stack])})")
        if stack == "quinn" and self.max_ack_delay_ms != QUINN_MAX_ACK_DELAY_MS:
            raise ValueError(f"max_ack_delay {self.max_ack_delay_ms:g} ms: quinn always "
                             f"advertises {QUINN_MAX_ACK_DELAY_MS:g} ms (its 0.11 transport "
                             f"configuration has no setting for it)")

    def check_stacks(self, stacks: tuple[str, str]) -> None:
        """:meth:`check_stack` for a (client stack, server stack) pair."""
        self.check_stack(stacks[0], server=False)
        self.check_stack(stacks[1])

    def client_cc(self, stack: str) -> str:
        """The controller a client of ``stack`` runs: ``cc`` if its stack has it, else Reno."""
        return self.cc if self.cc in STACK_CONTROLLERS[stack] else "reno"

    def initial_window_bytes(self) -> Optional[int]:
        return None if self.initial_window is None else self.initial_window * self.max_datagram

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "EndpointSettings":
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    def but(self, **changes: Any) -> "EndpointSettings":
        return replace(self, **changes)


def parse_stacks(text: str) -> tuple[str, str]:
    """``S`` (both sides) or ``CLIENT/SERVER`` -> (client stack, server stack)."""
    parts = [p.strip() for p in str(text).split("/")]
    if len(parts) == 1:
        parts *= 2
    if len(parts) != 2 or any(p not in STACKS for p in parts):
        raise ValueError(f"stack {text!r}: one of {', '.join(STACKS)}, or CLIENT/SERVER such as "
                         f"aioquic/quinn")
    return parts[0], parts[1]


def _ms(text: str, what: str) -> float:
    t = str(text).strip()
    t = t[:-2] if t.endswith("ms") else t
    try:
        v = float(t)
    except ValueError:
        raise ValueError(f"{what} {text!r}: a number of milliseconds, such as 333") from None
    if not _finite(v):
        raise ValueError(f"{what} {text!r}: a finite number of milliseconds")
    return v


def _count(text: str, what: str, unit: str) -> int:
    t = str(text).strip()
    t = t[:-len(unit)].strip() if unit and t.endswith(unit) else t
    if not t.isdigit():
        raise ValueError(f"{what} {text!r}: a whole number{' of ' + unit if unit else ''}")
    return int(t)


def _bytes(text: str, what: str) -> int:
    from satemu.base.units import UnitError, parse_size
    t = str(text).strip()
    try:
        v = int(t) if t.isdigit() else parse_size(t)
    except UnitError as e:
        raise ValueError(f"{what} {text!r}: {e}") from None
    if v != int(v):
        raise ValueError(f"{what} {text!r}: a whole number of bytes")
    return int(v)


@dataclass(frozen=True)
class Setting:
    """One endpoint setting as the command line (``--NAME`` with ``-`` for ``_``) and the sweeps
    (``--set endpoint.NAME=...``) name it: the attribute of EndpointSettings it sets (``stacks``:
    the (client, server) pair), how its text is read (ValueError, one line, if it does not), and
    what its value is (for messages: "a congestion controller"), and its option's help
    (argparse's ``%(default)s`` is :meth:`default`) and metavar."""

    name: str
    attr: str
    read: Callable[[str], Any]
    what: str
    help: str
    metavar: Optional[str] = None

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")

    def default(self) -> str:
        """The default as the option's text, from EndpointSettings' own (or DEFAULT_STACKS):
        what :attr:`read` reads back as that default."""
        value = DEFAULT_STACKS if self.attr == "stacks" else getattr(EndpointSettings, self.attr)
        if value is None:
            return "default"
        if isinstance(value, tuple):
            return value[0] if value[0] == value[1] else "/".join(value)
        if isinstance(value, float):
            return f"{value:g}"
        if isinstance(value, int) and value >= MIB and value % MIB == 0:
            return f"{value // MIB}MiB"
        return str(value)


# The (client, server) stacks of a transfer that names none.
DEFAULT_STACKS = ("aioquic", "aioquic")

# Every endpoint setting, in EndpointSettings' order (the command line lists them so): a new
# setting is a field of EndpointSettings (its default, its check) and one entry here (its name,
# reader and help).
SETTINGS = (
    Setting("max_datagram", "max_datagram", lambda t: _count(t, "max datagram", "B"),
            "a datagram size",
            f"the largest UDP payload an endpoint sends, {MIN_DATAGRAM}..{MAX_UDP_PAYLOAD} "
            f"({MAX_UDP_PAYLOAD} fills a 1518-byte frame; quicly sends 1280, Chromium 1352) "
            "(default %(default)s)", "BYTES"),
    Setting("initial_window", "initial_window",
            lambda t: None if str(t).strip() == "default" else _count(t, "initial window", ""),
            "a window",
            "the initial congestion window in packets of --max-datagram bytes (default: the "
            "stack's, 10 packets in aioquic, 12000 B in quinn)", "PACKETS"),
    Setting("initial_rtt", "initial_rtt_ms", lambda t: _ms(t, "initial RTT"), "an RTT",
            "the RTT assumed before the first sample (default %(default)s ms, RFC 9002's; "
            "aioquic's own is 100 ms, see docs/architecture.md)", "MS"),
    Setting("cc", "cc", lambda t: str(t).strip(), "a congestion controller",
            "the congestion controller: reno, cubic, or bbr (quinn only) (default %(default)s)"),
    Setting("stream_window", "stream_window", lambda t: _bytes(t, "stream window"), "a window",
            "flow-control credit per stream (default %(default)s)", "BYTES"),
    Setting("conn_window", "conn_window", lambda t: _bytes(t, "connection window"), "a window",
            "flow-control credit per connection (default %(default)s)", "BYTES"),
    Setting("max_ack_delay", "max_ack_delay_ms", lambda t: _ms(t, "max_ack_delay"), "a delay",
            "max_ack_delay both endpoints advertise (default %(default)s ms)", "MS"),
    Setting("ecn", "ecn", lambda t: str(t).strip(), "an ECN codepoint",
            "the ECN field of the datagrams the endpoints send: off, ect0 or ect1, for the "
            "link's ecn_step to mark (no stack reacts to CE yet) (default %(default)s)",
            "off|ect0|ect1"),
    Setting("stack", "stacks", parse_stacks, "a stack",
            "the QUIC stack of both endpoints, or of the client and the server, e.g. quinn or "
            f"aioquic/quinn: {', '.join(STACKS)} (default %(default)s)", "S|CLIENT/SERVER"),
)

# The settings by their command-line and sweep name (``--set endpoint.NAME=...``): the
# attribute of EndpointSettings each sets, and how its text is read.
SETTING_NAMES = {s.name: (s.attr, s.read) for s in SETTINGS}


def parse_setting(name: str, text: str) -> tuple[str, Any]:
    """(attribute, value) of one endpoint setting given by its name (:data:`SETTING_NAMES`);
    ValueError (one line) for an unknown name or a value that does not read. The value is
    range-checked when the settings are built."""
    if name not in SETTING_NAMES:
        raise ValueError(f"endpoint setting {name!r}: one of {', '.join(SETTING_NAMES)}")
    attr, read = SETTING_NAMES[name]
    return attr, read(text)


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == x and \
        abs(x) != float("inf")
