# SPDX-License-Identifier: BSD-2-Clause
"""A PNG of a profile's timeline: each channel's rate, delay and loss as the box applies them."""

from __future__ import annotations

from pathlib import Path

__all__ = ["plot_timeline", "plot_link_timeline"]

COLORS = {"forward": "tab:blue", "return": "tab:orange"}


def _panels():
    """A figure of three panels (rate, delay, loss) over one time axis."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(9, 7.5), dpi=100)
    FigureCanvasAgg(fig)
    return fig, fig.subplots(3, 1, sharex=True)


def _finish(fig, axes, ylabels, xlabel: str, title: str, path: Path) -> Path:
    for ax, ylabel in zip(axes, ylabels):
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper right", fontsize="small")
    axes[-1].set_xlabel(xlabel)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, format="png")
    return path


def _held(points, end: float, value) -> tuple[list[float], list[float]]:
    """x, y of ``value(step)`` held from each (time, step) of ``points`` to the next, the last
    to ``end``: a step plot (None, an unshaped rate: a gap)."""
    xs = [at for at, _ in points] + [end]
    ys = [value(step) for _, step in points]
    ys = [float("nan") if y is None else y for y in ys]
    return [x for a, b in zip(xs, xs[1:]) for x in (a, b)], [y for y in ys for _ in (0, 1)]


def _rate(step, name):
    rate = step[name]["rate_bps"]
    return None if rate is None else rate / 1e6


def plot_timeline(profile, compiled, f_clk: int, path: Path) -> Path:
    """Three panels (rate, one-way delay, loss) of both channels over one lap of the timeline
    (satemu.link.timeline.timeline_dict at clock ``f_clk``): what the box applies."""
    from satemu.link.timeline import timeline_dict
    tl = timeline_dict(profile, compiled, 0, f_clk)
    points = [(s["at_s"], s) for s in tl["steps"]]
    last = points[-1][0]
    end = tl["period_s"] or last + max(1.0, last / 10)
    fig, axes = _panels()
    for name, color in COLORS.items():
        axes[0].plot(*_held(points, end, lambda s: _rate(s, name)), color=color,
                     label=f"{name} rate")
        axes[1].plot(*_held(points, end, lambda s: s[name]["delay_s"] * 1e3), color=color,
                     label=f"{name} delay")
        axes[2].plot(*_held(points, end, lambda s: s[name]["loss"] * 100), color=color,
                     label=f"{name} loss")
    return _finish(fig, axes, ("rate (Mbit/s)", "one-way delay (ms)", "loss (%)"),
                   "time since the timeline's start (s)",
                   f"{profile.name}: the link's timeline", path)


def plot_link_timeline(t, path: Path) -> Path:
    """A transfer over a link with a timeline (``t.timeline``, satemu.link.timeline.timeline_dict):
    the forward rate the link allowed against the forward goodput delivered, the link's RTT
    (the two channels' delays) against the sender's RTT estimate, and each channel's loss,
    over the transfer's time."""
    from satemu.report.metrics import bin_width, binned, duration_s, origin_cycle, seconds
    tl = t.timeline
    origin = origin_cycle(t)
    shift = seconds(t, tl["start_cycle"], origin)
    end = duration_s(t)
    # The steps laid out over the transfer: lap after lap of a repeating timeline.
    points = []
    lap = 0
    while True:
        base = shift + lap * tl["period_s"]
        first = 1 if lap else 0              # the profile's settings hold only before lap 0
        for s in tl["steps"][first:]:
            points.append((base + s["at_s"], s))
        if not tl["period_s"] or base + tl["period_s"] > end:
            break
        lap += 1
    # Drawn from the transfer's start to its end: the settings in force at 0 first.
    before = [(0.0, s) for at, s in points if at <= 0]
    points = before[-1:] + [p for p in points if 0 < p[0] < end]

    fig, axes = _panels()
    ms, label = bin_width(t)
    goodput = binned(t, [d for d in t.delivered if d.direction == "forward"], lambda d: d.size)
    bin_s = ms / 1000
    axes[0].stairs([b * 8 / bin_s / 1e6 for b in goodput],
                   [i * bin_s for i in range(len(goodput) + 1)], fill=True,
                   color="tab:green", alpha=0.5, label=f"forward delivered ({label} bins)")
    axes[0].plot(*_held(points, end, lambda s: _rate(s, "forward")), color=COLORS["forward"],
                 label="forward rate (link)")
    axes[1].plot(*_held(points, end,
                        lambda s: (s["forward"]["delay_s"] + s["return"]["delay_s"]) * 1e3),
                 color=COLORS["forward"], label="link RTT (both delays)")
    if t.rtt:
        axes[1].plot([seconds(t, c, origin) for c, _ in t.rtt], [ms for _, ms in t.rtt],
                     ".", markersize=2, color="tab:red", label="sender's RTT estimate")
    for name, color in COLORS.items():
        axes[2].plot(*_held(points, end, lambda s: s[name]["loss"] * 100), color=color,
                     label=f"{name} loss")
    return _finish(fig, axes, ("Mbit/s", "ms", "loss (%)"),
                   "time since the client's first Initial (s)",
                   f"{t.profile}: the link's timeline over the transfer (ack {t.ack})", path)
