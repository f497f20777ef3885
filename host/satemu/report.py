# SPDX-License-Identifier: BSD-2-Clause
"""Result files, plots, experiment reports and a progress line for QUIC transfers across the box."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Callable, Iterable, Sequence, TextIO

__all__ = ["summarize", "write_packets_csv", "plot_transfer", "write_transfer",
           "experiment_markdown", "format_table", "ProgressLine", "bin_width", "binned",
           "PLOT_NAMES"]

DIRECTIONS = ("forward", "return")
PLOT_NAMES = ("forward_goodput", "return_pps", "return_sizes", "sender_sequence")

# Frames the port discarded before the channel saw them: they reach neither rx_frames nor rx_bytes.
PORT_DROPS = ("drop_overrun", "drop_preamble")
# Ethernet II + IPv4 (no options) + UDP headers: a frame's bytes beyond its UDP payload.
FRAME_OVERHEAD = 14 + 20 + 8


# ---------------------------------------------------------------------------------------------
# Time

def origin_cycle(t) -> int:
    """The cycle time is measured from: the first sent record's (the first delivery's if the
    transfer sent nothing, which only a failed start can produce)."""
    if t.sent:
        return t.sent[0].cycle
    if t.delivered:
        return t.delivered[0].cycle
    return 0


def _seconds(t, cycle: int, origin: int) -> float:
    return (cycle - origin) / t.f_clk


def _last_time(t) -> float:
    origin = origin_cycle(t)
    cycles = [r.cycle for r in t.sent] + [d.cycle for d in t.delivered]
    return _seconds(t, max(cycles), origin) if cycles else 0.0


def duration_s(t) -> float:
    """How long the transfer lasted: its completion time, or the last event if it never
    completed."""
    return t.completion_s if t.completion_s is not None else _last_time(t)


def bin_width(t) -> tuple[int, str]:
    """The time bin for rate plots as (milliseconds, label): 1 s for transfers longer than 10 s,
    100 ms otherwise."""
    return (1000, "1 s") if duration_s(t) > 10 else (100, "100 ms")


def binned(t, records: Iterable, value: Callable[[object], float] = lambda r: 1) -> list[float]:
    """Sum ``value(record)`` per time bin (:func:`bin_width`) over ``records``; index ``i`` covers
    ``[i*bin, (i+1)*bin)`` seconds. Bins are assigned with integer arithmetic on cycles, so a
    record exactly on a boundary always opens the next bin. The list covers every event of the
    transfer, so series of one transfer share their length."""
    ms, _ = bin_width(t)
    origin = origin_cycle(t)
    span = t.f_clk * ms            # cycles per bin, times 1000

    def index(cycle: int) -> int:
        return (cycle - origin) * 1000 // span

    cycles = [r.cycle for r in t.sent] + [d.cycle for d in t.delivered]
    n = index(max(cycles)) + 1 if cycles else 1
    out = [0] * n
    for r in records:
        out[index(r.cycle)] += value(r)
    return out


# ---------------------------------------------------------------------------------------------
# Summary

def _ratio(num, den):
    return num / den if den else None


def _consistency(t, sent_n, sent_bytes, delivered_n) -> dict:
    """Endpoints' view against the board's counters, per direction.

    * ``frames_in``: frames the endpoints sent == rx_frames + drop_overrun + drop_preamble (a frame
      the port discarded never reaches rx_frames; with no port drops this is rx_frames itself);
    * ``bytes_in``: frame bytes sent == rx_bytes (exact only without port drops, whose bytes no
      counter holds; a port drop therefore shows as a mismatch here);
    * ``frames_out``: frames delivered to the endpoints == tx_frames (a frame that left the board
      but could not be decoded, or was still in flight when the run stopped, shows here);
    * ``frames_dropped``: sent - delivered == the sum of every ``drop_*`` counter.

    Without board counters (the real-time mode) there is nothing to compare: ``applicable`` is
    False and ``consistent`` None.
    """
    if not any(t.board_stats.get(d) for d in DIRECTIONS):
        return {"applicable": False, "mismatches": [], "consistent": None}
    out: dict = {"applicable": True}
    mismatches = []
    for d in DIRECTIONS:
        board = t.board_stats.get(d) or {}

        def get(key):
            return board.get(key)

        drops = [v for k, v in board.items() if k.startswith("drop_")]
        rx = get("rx_frames")
        port = [get(k) or 0 for k in PORT_DROPS]
        pairs = {
            "frames_in": (sent_n[d], None if rx is None else rx + sum(port)),
            "bytes_in": (sent_bytes[d], get("rx_bytes")),
            "frames_out": (delivered_n[d], get("tx_frames")),
            "frames_dropped": (sent_n[d] - delivered_n[d], sum(drops) if board else None),
        }
        section = {}
        for name, (ours, theirs) in pairs.items():
            equal = theirs is not None and ours == theirs
            section[name] = {"endpoints": ours, "board": theirs, "equal": equal}
            if not equal:
                mismatches.append(f"{d}.{name}")
        out[d] = section
    out["mismatches"] = mismatches
    out["consistent"] = not mismatches
    return out


def summarize(t) -> dict:
    """The content of result.json for one transfer.

    ``t`` has the attributes of ``sim.cosim.Transfer`` (duck-typed). Time runs from the cycle of
    the first sent datagram (the client's first Initial): cycle ``c`` is ``(c - origin) / f_clk``
    seconds. Packet counts and bytes come from ``t.sent`` (what the endpoints put on the wire) and
    are Ethernet frame bytes without FCS, what the emulator counts, unless a key says ``udp`` or
    ``delivered``. Figures that cannot be computed (no completion, division by zero) are None.

    * ``goodput_mbps``: ``size * 8 / completion_s / 1e6``, application bytes over the time from
      the client's start to the last byte received.
    * ``return_share_pct``: return frame bytes as a percentage of forward frame bytes.
    * ``ack_ratio``: forward packets that are not ACK-only (the server's ack-eliciting packets:
      data and handshake) divided by all return packets, ACK-only or not (every return packet
      carries an ACK once the handshake has started). 2 means one return packet per two
      ack-eliciting forward packets.
    * ``forward_pps``/``return_pps``: packets sent in that direction / completion_s.
    * ``speed``: virtual_s / wall_s.
    * ``consistency``: see :func:`_consistency`.
    """
    sent_n = {d: 0 for d in DIRECTIONS}
    sent_bytes = {d: 0 for d in DIRECTIONS}
    sent_udp = {d: 0 for d in DIRECTIONS}
    delivered_n = {d: 0 for d in DIRECTIONS}
    delivered_bytes = {d: 0 for d in DIRECTIONS}
    ack_only_n = {d: 0 for d in DIRECTIONS}
    ack_only_bytes = {d: 0 for d in DIRECTIONS}
    for r in t.sent:
        sent_n[r.direction] += 1
        sent_bytes[r.direction] += r.size
        sent_udp[r.direction] += r.udp_size
        if r.ack_only:
            ack_only_n[r.direction] += 1
            ack_only_bytes[r.direction] += r.size
    for dv in t.delivered:
        delivered_n[dv.direction] += 1
        delivered_bytes[dv.direction] += dv.size

    c = t.completion_s if t.completion_s else None       # a zero completion time has no rate
    forward_eliciting = sent_n["forward"] - ack_only_n["forward"]
    return {
        "profile": t.profile, "size": t.size, "ack": t.ack, "cc": t.cc, "seed": t.seed,
        "f_clk": t.f_clk,
        "completed": t.completed, "error": t.error,
        "completion_s": t.completion_s, "handshake_s": t.handshake_s,
        "goodput_mbps": None if c is None else t.size * 8 / c / 1e6,
        "forward_packets": sent_n["forward"], "forward_bytes": sent_bytes["forward"],
        "forward_udp_bytes": sent_udp["forward"],
        "forward_ack_only_packets": ack_only_n["forward"],
        "return_packets": sent_n["return"], "return_bytes": sent_bytes["return"],
        "return_udp_bytes": sent_udp["return"],
        "return_share_pct": (None if not sent_bytes["forward"]
                             else 100 * sent_bytes["return"] / sent_bytes["forward"]),
        "ack_only_packets": ack_only_n["return"], "ack_only_bytes": ack_only_bytes["return"],
        "ack_ratio": _ratio(forward_eliciting, sent_n["return"]),
        "forward_pps": None if c is None else sent_n["forward"] / c,
        "return_pps": None if c is None else sent_n["return"] / c,
        "forward_delivered_packets": delivered_n["forward"],
        "forward_delivered_bytes": delivered_bytes["forward"],
        "return_delivered_packets": delivered_n["return"],
        "return_delivered_bytes": delivered_bytes["return"],
        "max_ack_delay_advertised_ms": t.max_ack_delay_advertised_ms,
        "max_ack_delay_used_ms": t.max_ack_delay_used_ms,
        "undecodable": t.undecodable,
        "board": {d: dict(v) for d, v in t.board_stats.items()},
        "client_stats": dict(t.client_stats), "server_stats": dict(t.server_stats),
        "consistency": _consistency(t, sent_n, sent_bytes, delivered_n),
        "wall_s": t.wall_s, "virtual_s": t.virtual_s,
        "speed": _ratio(t.virtual_s, t.wall_s),
        "bod": bod_summary(t),
    }


def bod_summary(t) -> dict | None:
    """What the BoD return link granted during the transfer, from the superframes that start
    between the transfer's first datagram (``origin``) and its end (``virtual_s``):

    * ``granted_slots``/``used_slots`` (a slot is used when it carried a byte), and their bytes;
    * ``slot_use_pct``: used as a percentage of granted;
    * ``time_to_first_grant_s``: from the first datagram to the start of the first superframe
      with RBDC or VBDC slots (demand-driven capacity; CRA and FCA come without asking);
    * ``lost``: superframes the ring overwrote before they were read (the figures then cover
      only what was read).
    """
    bod = getattr(t, "bod", None)
    if not bod:
        return None
    origin = origin_cycle(t)
    end = origin + round(t.virtual_s * t.f_clk)
    sf_cycles, slot_bytes = bod["superframe_cycles"], bod["slot_bytes"]
    window = [r for r in bod["records"] if origin <= bod["start"] + r["sf"] * sf_cycles < end]
    granted = sum(r["g_cra"] + r["g_rbdc"] + r["g_vbdc"] + r["g_fca"] for r in window)
    used = sum(r["used"] for r in window)
    first = next((r for r in window if r["g_rbdc"] + r["g_vbdc"] > 0), None)
    return {
        "superframes": len(window), "superframe_s": sf_cycles / t.f_clk, "slot_bytes": slot_bytes,
        "granted_slots": granted, "used_slots": used,
        "granted_bytes": granted * slot_bytes, "used_bytes": used * slot_bytes,
        "slot_use_pct": _ratio(100 * used, granted),
        "rbdc_slots": sum(r["g_rbdc"] for r in window),
        "vbdc_slots": sum(r["g_vbdc"] for r in window),
        "time_to_first_grant_s": None if first is None else
        (bod["start"] + first["sf"] * sf_cycles - origin) / t.f_clk,
        "lost": bod.get("lost", []),
    }


# ---------------------------------------------------------------------------------------------
# Files

def write_packets_csv(t, path) -> Path:
    """One row per sent datagram: ``time_s,direction,size,ack_only`` (size in frame bytes,
    ack_only 0/1), in the order the records were made."""
    path = Path(path)
    origin = origin_cycle(t)
    lines = ["time_s,direction,size,ack_only"]
    for r in t.sent:
        lines.append(f"{_seconds(t, r.cycle, origin):.9f},{r.direction},{r.size},"
                     f"{int(bool(r.ack_only))}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _figure():
    # Figure + the Agg canvas directly: no pyplot, so no global state and no GUI backend.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(8, 4.5), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.grid(True, alpha=0.3)
    return fig, ax


def _headroom(ax, top: float) -> None:
    """Start the y axis at 0 and leave room above the data for the legend."""
    ax.set_ylim(0, top * 1.25 if top > 0 else 1)


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, format="png")
    return path


def _tag(t) -> str:
    return f"{t.profile}, ack {t.ack}"


def plot_transfer(t, outdir) -> list[Path]:
    """Write the four PNGs of one transfer into ``outdir`` (five over a BoD return link: the
    demand against the grants too); returns their paths in :data:`PLOT_NAMES` order."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    origin = origin_cycle(t)
    ms, label = bin_width(t)
    bin_s = ms / 1000
    fwd_sent = [r for r in t.sent if r.direction == "forward"]
    ret_sent = [r for r in t.sent if r.direction == "return"]
    fwd_dlv = [d for d in t.delivered if d.direction == "forward"]
    paths = []

    # Forward goodput: frame bytes delivered to the client per bin.
    series = binned(t, fwd_dlv, lambda d: d.size)
    x = [i * bin_s for i in range(len(series))]
    fig, ax = _figure()
    ax.bar(x, [b * 8 / bin_s / 1e6 for b in series], width=bin_s, align="edge",
           color="tab:blue")
    _headroom(ax, max(series) * 8 / bin_s / 1e6)
    ax.set_title(f"Forward goodput per {label}, in Mbit/s ({_tag(t)})")
    ax.set_xlabel("time since the client's first Initial (s)")
    ax.set_ylabel(f"delivered frame bytes (Mbit/s, {label} bins)")
    paths.append(_save(fig, outdir / "forward_goodput.png"))

    # Return packets per second, ACK-only and other stacked.
    acks = binned(t, [r for r in ret_sent if r.ack_only])
    other = binned(t, [r for r in ret_sent if not r.ack_only])
    fig, ax = _figure()
    ax.bar(x, [n / bin_s for n in acks], width=bin_s, align="edge", color="tab:orange",
           label="ACK-only")
    ax.bar(x, [n / bin_s for n in other], width=bin_s, align="edge",
           bottom=[n / bin_s for n in acks],
           color="tab:green", label="other (carries more than ACKs)")
    ax.set_title(f"Return packets per second, per {label} ({_tag(t)})")
    ax.set_xlabel("time since the client's first Initial (s)")
    ax.set_ylabel(f"packets/s ({label} bins)")
    _headroom(ax, max(a + o for a, o in zip(acks, other)) / bin_s)
    ax.legend(loc="upper right")
    paths.append(_save(fig, outdir / "return_pps.png"))

    # Return packet sizes over time.
    fig, ax = _figure()
    for subset, colour, name in (([r for r in ret_sent if r.ack_only], "tab:orange", "ACK-only"),
                                 ([r for r in ret_sent if not r.ack_only], "tab:green", "other")):
        ax.scatter([_seconds(t, r.cycle, origin) for r in subset], [r.size for r in subset],
                   s=6, color=colour, label=f"{name} ({len(subset)})")
    _headroom(ax, max((r.size for r in ret_sent), default=0))
    ax.set_title(f"Return packet sizes ({_tag(t)})")
    ax.set_xlabel("time since the client's first Initial (s)")
    ax.set_ylabel("frame size (bytes, without FCS)")
    ax.legend(loc="upper right")
    paths.append(_save(fig, outdir / "return_sizes.png"))

    # Byte sequence at the sender against what reached the client, both in UDP payload bytes.
    fig, ax = _figure()
    sent_x, sent_y, total = [0.0], [0], 0
    for r in fwd_sent:
        total += r.udp_size
        sent_x.append(_seconds(t, r.cycle, origin))
        sent_y.append(total)
    overhead = Counter(r.size - r.udp_size for r in fwd_sent if r.size > 60)
    head = overhead.most_common(1)[0][0] if overhead else FRAME_OVERHEAD
    dlv_x, dlv_y, total = [0.0], [0], 0
    for d in fwd_dlv:
        total += max(d.size - head, 0)
        dlv_x.append(_seconds(t, d.cycle, origin))
        dlv_y.append(total)
    ax.step(sent_x, sent_y, where="post", color="tab:blue", label="sent by the server")
    ax.step(dlv_x, dlv_y, where="post", color="tab:red", label="delivered to the client")
    ax.set_title(f"Forward byte sequence ({_tag(t)})")
    ax.set_xlabel("time since the client's first Initial (s)")
    ax.set_ylabel("cumulative UDP payload (bytes)")
    ax.legend(loc="upper left")
    paths.append(_save(fig, outdir / "sender_sequence.png"))
    if getattr(t, "bod", None):
        from .bod_model import BodRecord
        from .bod_trace import plot_demand_grant, records_to_rows
        b = t.bod
        rows = records_to_rows([BodRecord(**r) for r in b["records"]], b["start"],
                               b["superframe_cycles"], t.f_clk, b["slot_bytes"])
        paths.append(plot_demand_grant(rows, outdir / "demand_grant.png",
                                       f"BoD return link: demand against grant ({_tag(t)})"))
    return paths


def write_transfer(t, outdir) -> dict:
    """result.json (indent 2, sorted keys), packets.csv and the plots into ``outdir``; returns
    the summary."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    summary = summarize(t)
    text = json.dumps(summary, indent=2, sort_keys=True, allow_nan=False, default=str)
    (outdir / "result.json").write_text(text + "\n", encoding="utf-8")
    write_packets_csv(t, outdir / "packets.csv")
    plot_transfer(t, outdir)
    return summary


# ---------------------------------------------------------------------------------------------
# Experiment tables and report

def _fmt_bytes(n) -> str:
    """Decimal units, up to three significant digits: 1500 -> "1.5 KB", 10**7 -> "10 MB"."""
    if n is None:
        return "n/a"
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


def _num(v, spec: str) -> str:
    return "n/a" if v is None else format(v, spec)


COLUMNS = [
    ("profile", "l", lambda s: str(s["profile"])),
    ("size", "r", lambda s: _fmt_bytes(s["size"])),
    ("ACK policy", "l", lambda s: str(s["ack"])),
    ("completion s", "r", lambda s: _num(s["completion_s"], ".3f")),
    ("goodput Mbit/s", "r", lambda s: _num(s["goodput_mbps"], ".3f")),
    ("return packets", "r", lambda s: str(s["return_packets"])),
    ("return bytes", "r", lambda s: str(s["return_bytes"])),
    ("return share %", "r", lambda s: _num(s["return_share_pct"], ".2f")),
    ("ACK-only packets", "r", lambda s: str(s["ack_only_packets"])),
    ("ACK ratio", "r", lambda s: _num(s["ack_ratio"], ".2f")),
    ("consistent", "l", lambda s: {True: "yes", False: "no", None: "n/a"}[
        s["consistency"]["consistent"]]),
]


BOD_COLUMNS = [
    ("granted slots", "r", lambda s: str(s["bod"]["granted_slots"]) if s.get("bod") else "n/a"),
    ("used slots", "r", lambda s: str(s["bod"]["used_slots"]) if s.get("bod") else "n/a"),
    ("first grant s", "r", lambda s: _num(s["bod"]["time_to_first_grant_s"], ".3f")
     if s.get("bod") else "n/a"),
]


def _columns(summaries) -> list:
    """The table's columns: the BoD ones too when some transfer ran over a BoD return link."""
    return COLUMNS + (BOD_COLUMNS if any(s.get("bod") for s in summaries) else [])


def _summaries(rows) -> list[dict]:
    """Rows may be summaries or (summary, plots) pairs."""
    return [r if isinstance(r, dict) else r[0] for r in rows]


def _cells(s: dict, columns=COLUMNS) -> list[str]:
    return [fn(s) for _, _, fn in columns]


def format_table(rows) -> str:
    """An aligned plain-text table of summaries (or (summary, plots) pairs) for the terminal."""
    summaries = _summaries(rows)
    columns = _columns(summaries)
    body = [_cells(s, columns) for s in summaries]
    heads = [name for name, _, _ in columns]
    widths = [max(len(x) for x in col) for col in zip(heads, *body)]

    def line(cells):
        return "  ".join(c.ljust(w) if a == "l" else c.rjust(w)
                         for c, w, (_, a, _) in zip(cells, widths, columns)).rstrip()

    out = [line(heads), "  ".join("-" * w for w in widths)]
    out += [line(c) for c in body]
    return "\n".join(out)


def _factor(base: int, other: int, what: str) -> str:
    """How ``other`` compares with ``base``: "2.5× fewer return packets" and so on."""
    if base == other:
        return f"as many {what} as"
    if other == 0:
        return f"no {what}, against"
    if base == 0:
        return f"{other} {what}, where none were sent by"
    if other < base:
        return f"{base / other:.1f}× fewer {what} than"
    return f"{other / base:.1f}× more {what} than"


def comparison(base: dict, other: dict) -> str:
    """One sentence: what ``other``'s ACK policy costs the return link and does to forward goodput,
    relative to ``base`` (same profile and size)."""
    a, b = other["ack"], base["ack"]
    if not other["completed"] or not base["completed"]:
        failed = [s for s in (other, base) if not s["completed"]]
        return " ".join(f"{s['ack']} did not complete ({s['error'] or 'no error recorded'})."
                        for s in failed)
    packets = _factor(base["return_packets"], other["return_packets"], "return packets")
    share_o, share_b = (_num(s["return_share_pct"], ".2f") for s in (other, base))
    text = (f"{a} sends {packets} {b} ({other['return_packets']} vs {base['return_packets']}; "
            f"return share {share_o}% vs {share_b}% of forward bytes)")
    go, gb = other["goodput_mbps"], base["goodput_mbps"]
    if go is not None and gb:
        text += (f" and its goodput is {100 * go / gb:.1f}% of {b}'s "
                 f"({go:.3f} vs {gb:.3f} Mbit/s)")
    return text + "."


def _md_table(summaries: Sequence[dict]) -> list[str]:
    columns = _columns(summaries)
    heads = [name for name, _, _ in columns]
    rule = ["---:" if a == "r" else "---" for _, a, _ in columns]
    out = ["| " + " | ".join(heads) + " |", "| " + " | ".join(rule) + " |"]
    out += ["| " + " | ".join(_cells(s, columns)) + " |" for s in summaries]
    return out


def _title_of(name: str) -> str:
    return name.replace("_", " ")


def experiment_markdown(rows, path, title: str) -> Path:
    """A Markdown report for a matrix of transfers (profiles × sizes × ACK policies).

    ``rows`` are (summary, {plot name: path relative to the report}) pairs. Per profile and size,
    every ACK policy is compared with the first policy listed for that profile and size.
    """
    path = Path(path)
    summaries = _summaries(rows)
    lines = [f"# {title}", "",
             "What each ACK policy costs the return link, and what it does to forward goodput: "
             "one QUIC download of `size` bytes per row, server to client across the emulator. "
             "Packets and bytes are Ethernet frames without FCS as the emulator counts them; "
             "return share is return bytes as a percentage of forward bytes; ACK ratio is "
             "forward packets that are not ACK-only per return packet; consistent says the "
             "endpoints' counts match the emulator's counters. Over a BoD return link, granted "
             "and used slots count the superframes of the transfer, and first grant is the time "
             "from the first datagram to the first superframe with RBDC or VBDC slots.", ""]
    lines += _md_table(summaries)

    profiles: dict[str, dict[int, list[dict]]] = {}
    for s in summaries:
        profiles.setdefault(s["profile"], {}).setdefault(s["size"], []).append(s)
    for profile, sizes in profiles.items():
        lines += ["", f"## {profile}", ""]
        for size, group in sizes.items():
            base = group[0]
            if len(group) == 1:
                lines.append(f"* {_fmt_bytes(size)}: only {base['ack']} was run.")
                continue
            for other in group[1:]:
                lines.append(f"* {_fmt_bytes(size)}: {comparison(base, other)}")

    if any(not isinstance(r, dict) and r[1] for r in rows):
        lines += ["", "## Plots"]
        for r in rows:
            if isinstance(r, dict) or not r[1]:
                continue
            s, plots = r
            lines += ["", f"### {s['profile']}, {_fmt_bytes(s['size'])}, {s['ack']}", ""]
            for name, rel in plots.items():
                lines.append(f"![{_title_of(name)}]({Path(rel).as_posix()})")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------
# Progress

class ProgressLine:
    """One status line for a running transfer.

    On a TTY the line is redrawn in place with ``\\r`` at every :meth:`update`; on anything else a
    full line is printed at most every ``every`` seconds (the first update always prints), so logs
    stay short. Virtual seconds per wall second are ``sim_cycles_per_s / f_clk`` when ``f_clk``
    is given, else the average since the line was made.
    """

    def __init__(self, total_bytes: int, stream: TextIO | None = None, every: float = 10.0,
                 width: int = 24, f_clk: int | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.total = total_bytes
        self.stream = stream if stream is not None else sys.stderr
        self.every = every
        self.width = width
        self.f_clk = f_clk
        self.clock = clock
        self.start = clock()
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(isatty and isatty())
        self._last_print: float | None = None
        self._pending: str | None = None      # rendered but not yet printed (non-TTY)
        self._drawn = 0                        # length of the line on screen (TTY)

    def render(self, virtual_s: float, bytes_done: int, sim_cycles_per_s: float) -> str:
        frac = min(max(bytes_done / self.total, 0.0), 1.0) if self.total else 0.0
        fill = int(frac * self.width)
        bar = "#" * fill + "." * (self.width - fill)
        if self.f_clk:
            speed = sim_cycles_per_s / self.f_clk
        else:
            wall = self.clock() - self.start
            speed = virtual_s / wall if wall > 0 else 0.0
        return (f"[{bar}] {virtual_s:8.3f} s  {_fmt_bytes(bytes_done)}/{_fmt_bytes(self.total)}"
                f"  {100 * frac:5.1f}%  {speed:.3f} s/s  {sim_cycles_per_s / 1e6:.2f} Mcycles/s")

    def update(self, virtual_s: float, bytes_done: int, sim_cycles_per_s: float) -> None:
        text = self.render(virtual_s, bytes_done, sim_cycles_per_s)
        if self.tty:
            pad = max(self._drawn - len(text), 0)
            self.stream.write("\r" + text + " " * pad)
            self._drawn = len(text)
            self.stream.flush()
            return
        now = self.clock()
        if self._last_print is None or now - self._last_print >= self.every:
            self.stream.write(text + "\n")
            self.stream.flush()
            self._last_print = now
            self._pending = None
        else:
            self._pending = text

    def finish(self) -> None:
        """End the line: a newline on a TTY; the latest state, if not yet shown, elsewhere."""
        if self.tty:
            if self._drawn:
                self.stream.write("\n")
                self._drawn = 0
        elif self._pending is not None:
            self.stream.write(self._pending + "\n")
            self._pending = None
        self.stream.flush()
