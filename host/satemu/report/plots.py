# SPDX-License-Identifier: BSD-2-Clause
"""PNG plots of a QUIC transfer and of BoD demand against grants (matplotlib, no pyplot)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Sequence

from satemu.base.records import BodRecord
from satemu.box.bod_trace import records_to_rows
from satemu.report.fates import delivered_records, first_ack_cycle, known_fates
from satemu.report.metrics import bin_width, binned, origin_cycle, seconds

__all__ = ["PLOT_NAMES", "PACKET_PLOT_NAMES", "plot_transfer", "transfer_figures",
           "packet_figures", "plot_demand_grant"]

PLOT_NAMES = ("forward_goodput", "return_pps", "return_sizes", "sender_sequence")
# Plots of what each packet became, written where there is something to plot
# (:func:`packet_figures`).
PACKET_PLOT_NAMES = ("return_size_cdf", "ack_sizes")

# Ethernet II + IPv4 (no options) + UDP headers: a frame's bytes beyond its UDP payload.
FRAME_OVERHEAD = 14 + 20 + 8


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
    """Write the four PNGs of one transfer into ``outdir`` (and those of
    :data:`PACKET_PLOT_NAMES` that have something to plot; over a BoD return link the demand
    against the grants too, over a link with a timeline the timeline against the goodput and
    the RTT); returns their paths, :data:`PLOT_NAMES` first."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    paths = [_save(fig, outdir / f"{name}.png")
             for name, fig in transfer_figures(t) + packet_figures(t)]
    if getattr(t, "bod", None):
        b = t.bod
        rows = records_to_rows([BodRecord(**r) for r in b["records"]], b["start"],
                               b["superframe_cycles"], t.f_clk, b["slot_bytes"],
                               b.get("segments"))
        paths.append(plot_demand_grant(rows, outdir / "demand_grant.png",
                                       f"BoD return link: demand against grant ({_tag(t)})"))
    if getattr(t, "timeline", None):
        from satemu.report.timeline_plot import plot_link_timeline
        paths.append(plot_link_timeline(t, outdir / "link_timeline.png"))
    return paths


def transfer_figures(t) -> list[tuple[str, object]]:
    """The figures of :data:`PLOT_NAMES`, by name, not yet drawn. The rate plots draw each
    series as one step outline over its time bins (satemu.report.metrics.bin_width: at most
    MAX_BINS)."""
    origin = origin_cycle(t)
    ms, label = bin_width(t)
    bin_s = ms / 1000
    fwd_sent = [r for r in t.sent if r.direction == "forward"]
    ret_sent = [r for r in t.sent if r.direction == "return"]
    figures = []

    # Forward rate: frame bytes delivered to the client per bin, by the time they arrived (a
    # filled step outline, stairs: one artist however many bins), and the frame bytes the
    # server sent per bin, by the time it sent them (a step line over it).
    fates = known_fates(t)
    arrived = delivered_records(t, "forward")
    series = binned(t, arrived, lambda d: d.size)
    sent_series = binned(t, fwd_sent, lambda r: r.size)
    edges = [i * bin_s for i in range(len(series) + 1)]
    fig, ax = _figure()
    mbps = [b * 8 / bin_s / 1e6 for b in series]
    sent_mbps = [b * 8 / bin_s / 1e6 for b in sent_series]
    lost = ""
    if fates is not None:
        fwd = [f.fate for r, f in zip(t.sent, fates) if r.direction == "forward"]
        dropped = sum(f.startswith("dropped:") for f in fwd)
        lost = f"; {dropped} dropped, {fwd.count('undecodable')} undecodable"
    ax.stairs(mbps, edges, fill=True, color="tab:blue",
              label=f"delivered to the client, when it arrived ({len(arrived)} frames{lost})")
    ax.plot(edges, sent_mbps + sent_mbps[-1:], drawstyle="steps-post", color="tab:red",
            linewidth=1.2, label=f"sent by the server, when it was sent ({len(fwd_sent)} frames)")
    _headroom(ax, max(mbps + sent_mbps))
    ax.set_title(f"Forward rate per {label}, sent and delivered ({_tag(t)})")
    ax.set_xlabel("time since the client's first Initial (s)")
    ax.set_ylabel(f"frame bytes (Mbit/s, {label} bins)")
    ax.legend(loc="upper right", fontsize="small")
    figures.append(("forward_goodput", fig))

    # Return packets per second, ACK-only and other stacked.
    acks = [n / bin_s for n in binned(t, [r for r in ret_sent if r.ack_only])]
    other = [n / bin_s for n in binned(t, [r for r in ret_sent if not r.ack_only])]
    both = [a + o for a, o in zip(acks, other)]
    fig, ax = _figure()
    ax.stairs(acks, edges, fill=True, color="tab:orange", label="ACK-only")
    ax.stairs(both, edges, baseline=acks, fill=True, color="tab:green",
              label="other (carries more than ACKs)")
    ax.set_title(f"Return packets per second, per {label} ({_tag(t)})")
    ax.set_xlabel("time since the client's first Initial (s)")
    ax.set_ylabel(f"packets/s ({label} bins)")
    _headroom(ax, max(both))
    ax.legend(loc="upper right")
    figures.append(("return_pps", fig))

    # Return packet sizes over time.
    fig, ax = _figure()
    for subset, colour, name in (([r for r in ret_sent if r.ack_only], "tab:orange", "ACK-only"),
                                 ([r for r in ret_sent if not r.ack_only], "tab:green", "other")):
        ax.scatter([seconds(t, r.cycle, origin) for r in subset], [r.size for r in subset],
                   s=6, color=colour, label=f"{name} ({len(subset)})")
    _headroom(ax, max((r.size for r in ret_sent), default=0))
    ax.set_title(f"Return packet sizes ({_tag(t)})")
    ax.set_xlabel("time since the client's first Initial (s)")
    ax.set_ylabel("frame size (bytes, without FCS)")
    ax.legend(loc="upper right")
    figures.append(("return_sizes", fig))

    # Byte sequence at the sender against what reached the client, both in UDP payload bytes.
    fig, ax = _figure()
    sent_x, sent_y, total = [0.0], [0], 0
    for r in fwd_sent:
        total += r.udp_size
        sent_x.append(seconds(t, r.cycle, origin))
        sent_y.append(total)
    overhead = Counter(r.size - r.udp_size for r in fwd_sent if r.size > 60)
    head = overhead.most_common(1)[0][0] if overhead else FRAME_OVERHEAD
    dlv_x, dlv_y, total = [0.0], [0], 0
    for d in arrived:
        total += max(d.size - head, 0)
        dlv_x.append(seconds(t, d.cycle, origin))
        dlv_y.append(total)
    ax.step(sent_x, sent_y, where="post", color="tab:blue", label="sent by the server")
    ax.step(dlv_x, dlv_y, where="post", color="tab:red", label="delivered to the client")
    ax.set_title(f"Forward byte sequence ({_tag(t)})")
    ax.set_xlabel("time since the client's first Initial (s)")
    ax.set_ylabel("cumulative UDP payload (bytes)")
    ax.legend(loc="upper left")
    figures.append(("sender_sequence", fig))
    return figures


def packet_figures(t) -> list[tuple[str, object]]:
    """The figures of :data:`PACKET_PLOT_NAMES` that have something to plot, by name, not yet
    drawn (both need each datagram's fate, satemu.report.fates):

    * ``return_size_cdf``: the distribution (CDF) of the return packets' frame sizes from the
      moment the first ACK reached the client (the first RTT's end) on, when it sent any (where
      a few are over twice the 99th percentile, the axis ends there, and a note counts them);
    * ``ack_sizes``: the client's ACK-only datagrams of one 1-RTT packet, their size against
      the largest packet number they acknowledge (aioquic tells it; quinn's datagrams are read
      back, satemu.quic.wire). The
      size is the UDP payload's, the ACK frame with the packet's header and AEAD tag: the
      ACK frame's own size is not recorded."""
    fates = known_fates(t)
    if fates is None:
        return []
    figures = []
    first, _ = first_ack_cycle(t)
    after = [r for r in t.sent if r.direction == "return" and first is not None
             and r.cycle >= first]
    if after:
        fig, ax = _figure()
        for subset, colour, name, width in (
                (after, "black", "all", 2.0),
                ([r for r in after if r.ack_only], "tab:orange", "ACK-only", 1.2),
                ([r for r in after if not r.ack_only], "tab:green", "other", 1.2)):
            if subset:
                ordered = sorted(r.size for r in subset)
                n = len(ordered)
                ax.step([ordered[0]] + ordered, [0.0] + [(i + 1) / n for i in range(n)],
                        where="post", color=colour, linewidth=width,
                        label=f"{name} ({n} packets)")
        ax.set_ylim(0, 1.05)
        sizes = sorted(r.size for r in after)
        low, high = sizes[0], sizes[min(len(sizes) - 1, len(sizes) * 99 // 100)]
        if sizes[-1] > 2 * high:
            # A few large packets would squeeze the rest into one line: the axis ends at the
            # 99th percentile and a note counts those beyond it.
            ax.set_xlim(low - max(2, (high - low) / 20), high + max(2, (high - low) / 20))
            beyond = sum(size > high for size in sizes)
            ax.text(0.02, 0.66, f"{beyond} packet{'s' * (beyond != 1)} larger than {high} "
                    f"bytes (up to {sizes[-1]})\nbeyond the right edge", ha="left",
                    va="top", transform=ax.transAxes, fontsize="small",
                    bbox={"facecolor": "white", "edgecolor": "0.8"})
        ax.set_title(f"Return packet sizes after the first RTT ({_tag(t)})")
        ax.set_xlabel(f"frame size (bytes, without FCS), packets sent from "
                      f"{seconds(t, first, origin_cycle(t)):.3f} s on")
        ax.set_ylabel("fraction of return packets at or below the size")
        ax.legend(loc="upper left")            # (a CDF leaves the upper left empty)
        figures.append(("return_size_cdf", fig))

    acks = [(r, f) for r, f in zip(t.sent, fates)
            if r.direction == "return" and r.ack_only and f.largest_acked is not None
            and f.types == "1RTT"]
    if acks:
        fig, ax = _figure()
        for kind, colour, marker in (("delivered", "tab:blue", "o"),
                                     ("dropped", "tab:red", "x"),
                                     ("undecodable", "tab:orange", "s")):
            subset = [(r, f) for r, f in acks if f.fate.partition(":")[0] == kind]
            if subset:
                ax.scatter([f.largest_acked for _, f in subset],
                           [r.udp_size for r, _ in subset], s=10, color=colour,
                           marker=marker, label=f"{kind} ({len(subset)})")
        _headroom(ax, max(r.udp_size for r, _ in acks))
        ax.set_title(f"The client's ACK-only datagrams ({_tag(t)})")
        ax.set_xlabel("largest packet number acknowledged (the server's)")
        ax.set_ylabel("UDP payload (bytes): ACK frame + header + tag")
        ax.legend(loc="lower right")
        figures.append(("ack_sizes", fig))
    return figures


def _per_superframe(rows: Sequence[dict]) -> list[dict]:
    """The rows of several terminals summed per superframe (rates, slots and backlogs; the
    background is the pool's, the same in each)."""
    out: dict[int, dict] = {}
    for r in rows:
        s = out.get(r["sf"])
        if s is None:
            out[r["sf"]] = dict(r)
            continue
        for k, v in r.items():
            if k not in ("sf", "terminal", "cycle", "time_s", "background_slots"):
                s[k] += v
    return [out[sf] for sf in sorted(out)]


def plot_demand_grant(rows: Sequence[dict], path, title: str,
                      labels: dict | None = None) -> Path:
    """Requested capacity (RBDC rate plus the VBDC volume spread over its superframe) against
    the granted and the used rate per superframe, with the backlog on a second axis; a PNG.
    With several terminals' rows, the pool's sums, and below them each terminal's grants,
    stacked (``labels``: a name for each terminal's index, else "terminal N")."""
    path = Path(path)
    terminals = sorted({r.get("terminal", 0) for r in rows})
    if len(terminals) > 1:
        return _plot_pool(rows, terminals, path, title, labels or {})
    return _demand_grant(rows, path, title)


def _plot_pool(rows, terminals, path: Path, title: str, labels: dict) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(8, 7.5), dpi=100)
    FigureCanvasAgg(fig)
    from matplotlib import colormaps
    cmap = colormaps["tab20"]
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    _demand_grant_axes(top, _per_superframe(rows), f"{title}, the pool")
    top.set_xlabel("")
    sfs = sorted({r["sf"] for r in rows})
    time = {r["sf"]: r["time_s"] for r in rows}
    grid = {(r["terminal"], r["sf"]): r["granted_kbps"] for r in rows}
    bottom.stackplot([time[sf] for sf in sfs],
                     *([grid.get((t, sf), 0) for sf in sfs] for t in terminals),
                     labels=[labels.get(t, f"terminal {t}") for t in terminals], step="post",
                     colors=[cmap(i % 20) for i in range(len(terminals))])
    bottom.grid(True, alpha=0.3)
    _headroom(bottom, max((sum(grid.get((t, sf), 0) for t in terminals) for sf in sfs),
                          default=0))
    bottom.set_xlabel("time since superframe 0 began (s)")
    bottom.set_ylabel("granted kbit/s by terminal")
    bottom.legend(loc="upper right", ncol=min(len(terminals), 4), fontsize="small")
    return _save(fig, path)


def _demand_grant(rows: Sequence[dict], path: Path, title: str) -> Path:
    fig, ax = _figure()
    _demand_grant_axes(ax, rows, title)
    return _save(fig, path)


def _demand_grant_axes(ax, rows: Sequence[dict], title: str) -> None:
    ax.grid(True, alpha=0.3)
    # The superframe from the rows themselves: time_s is sf x superframe.
    late = max(rows, key=lambda r: r["sf"], default=None)
    superframe_s = late["time_s"] / late["sf"] if late and late["sf"] else 1.0
    t = [r["time_s"] for r in rows]
    demand = [r["rbdc_req_kbps"] + r["vbdc_req_bytes"] * 8 / superframe_s / 1000 for r in rows]
    granted = [r["granted_kbps"] for r in rows]
    used = [r["used_kbps"] for r in rows]
    ax.plot(t, demand, drawstyle="steps-post", color="tab:orange", label="requested (RBDC + VBDC)")
    ax.plot(t, granted, drawstyle="steps-post", color="tab:blue", label="granted")
    ax.plot(t, used, drawstyle="steps-post", color="tab:green", label="used")
    _headroom(ax, max(demand + granted + used, default=0))
    ax.set_xlabel("time since superframe 0 began (s)")
    ax.set_ylabel("kbit/s of slot payload per superframe")
    ax.set_title(title)
    backlog = ax.twinx()
    backlog.plot(t, [r["backlog_bytes"] / 1000 for r in rows], color="tab:red", alpha=0.6,
                 linewidth=1, label="backlog")
    _headroom(backlog, max((r["backlog_bytes"] / 1000 for r in rows), default=0))
    backlog.set_ylabel("backlog at the superframe's start (KB)")
    lines = ax.get_legend_handles_labels()
    more = backlog.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], loc="upper right")
