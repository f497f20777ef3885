# SPDX-License-Identifier: BSD-2-Clause
"""A PNG of a profile's timeline: each channel's rate, delay and loss as the box applies them."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

__all__ = ["timeline_series", "plot_timeline", "plot_link_timeline"]


def timeline_series(profile, compiled, laps: int = 1) -> dict:
    """Per channel, the settings in force over time as (seconds, rate bit/s or None, delay s,
    loss) points: the profile from 0, then each step at its cycle's time (``laps`` laps of a
    repeating timeline). Times are the steps' cycles over the clock, so what the box applies."""
    out = {}
    for name, ch in profile.channels():
        points = [(Fraction(0), ch.rate, ch.delay, ch.loss)]
        for lap in range(laps if compiled.period else 1):
            for s in compiled.steps:
                p = s.profiles[name]
                at = s.at + (lap * _period_s(profile) if compiled.period else 0)
                points.append((at, p.rate, p.delay, p.loss))
        out[name] = points
    return out


def _period_s(profile) -> Fraction:
    return profile.timeline.repeat or Fraction(0)


def _steps(points, index, end):
    """x, y of a step plot of column ``index`` held until ``end`` (an unshaped rate: a gap)."""
    xs, ys = [], []
    for (t, *values), nxt in zip(points, points[1:] + [(end,)]):
        v = values[index - 1]
        v = float("nan") if v is None else float(v)
        xs += [float(t), float(nxt[0])]
        ys += [v, v]
    return xs, ys


def plot_timeline(profile, compiled, path: Path, laps: int = 1, overlay=None) -> Path:
    """Three panels (rate, one-way delay, loss) of both channels over time; ``overlay``, if
    given, is a list of (label, panel, xs, ys) drawn over them (a transfer's throughput on the
    rate panel, say)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    series = timeline_series(profile, compiled, laps)
    last = max(float(p[-1][0]) for p in series.values())
    end = Fraction(last) + (_period_s(profile) - compiled.steps[-1].at
                            if compiled.period else max(Fraction(1), Fraction(last) / 10))
    fig = Figure(figsize=(9, 7), dpi=100)
    FigureCanvasAgg(fig)
    axes = fig.subplots(3, 1, sharex=True)
    colors = {"forward": "tab:blue", "return": "tab:orange"}
    for name, points in series.items():
        xs, ys = _steps(points, 1, end)
        axes[0].plot(xs, [y / 1e6 for y in ys], color=colors[name], label=f"{name} rate")
        xs, ys = _steps(points, 2, end)
        axes[1].plot(xs, [y * 1e3 for y in ys], color=colors[name], label=f"{name} delay")
        xs, ys = _steps(points, 3, end)
        axes[2].plot(xs, [y * 100 for y in ys], color=colors[name], label=f"{name} loss")
    for label, panel, xs, ys in overlay or ():
        axes[panel].plot(xs, ys, color="tab:green", alpha=0.7, label=label)
    axes[0].set_ylabel("rate (Mbit/s)")
    axes[1].set_ylabel("one-way delay (ms)")
    axes[2].set_ylabel("loss (%)")
    axes[2].set_xlabel("time since the timeline's start (s)")
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper right", fontsize="small")
    fig.suptitle(f"{profile.name}: the link's timeline")
    fig.tight_layout()
    fig.savefig(path, format="png")
    return path


def plot_link_timeline(t, path: Path) -> Path:
    """A transfer over a link with a timeline (``t.timeline``, satemu.timeline.timeline_dict):
    the forward rate the link allowed against the forward goodput delivered, the link's RTT
    (the two channels' delays) against the sender's RTT estimate, and each channel's loss,
    over the transfer's time."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from .metrics import bin_width, binned, duration_s, origin_cycle, seconds
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
    before = [p for p in points if p[0] <= 0]
    points = before[-1:] + [p for p in points if 0 < p[0] < end]
    xs = [max(at, 0.0) for at, _ in points] + [end]

    def line(key):
        ys = [key(s) for _, s in points]
        return [x for a, b in zip(xs, xs[1:]) for x in (a, b)], [y for y in ys for _ in (0, 1)]

    fig = Figure(figsize=(9, 7.5), dpi=100)
    FigureCanvasAgg(fig)
    axes = fig.subplots(3, 1, sharex=True)
    ms, label = bin_width(t)
    goodput = binned(t, [d for d in t.delivered if d.direction == "forward"], lambda d: d.size)
    bin_s = ms / 1000
    axes[0].bar([i * bin_s for i in range(len(goodput))],
                [b * 8 / bin_s / 1e6 for b in goodput], width=bin_s, align="edge",
                color="tab:green", alpha=0.5, label=f"forward delivered ({label} bins)")
    x, y = line(lambda s: (s["forward"]["rate_bps"] or float("nan")) / 1e6)
    axes[0].plot(x, y, color="tab:blue", label="forward rate (link)")
    x, y = line(lambda s: (s["forward"]["delay_s"] + s["return"]["delay_s"]) * 1e3)
    axes[1].plot(x, y, color="tab:blue", label="link RTT (both delays)")
    if t.rtt:
        axes[1].plot([seconds(t, c, origin) for c, _ in t.rtt], [ms for _, ms in t.rtt],
                     ".", markersize=2, color="tab:red", label="sender's RTT estimate")
    for name, color in (("forward", "tab:blue"), ("return", "tab:orange")):
        x, y = line(lambda s, name=name: s[name]["loss"] * 100)
        axes[2].plot(x, y, color=color, label=f"{name} loss")
    axes[0].set_ylabel("Mbit/s")
    axes[1].set_ylabel("ms")
    axes[2].set_ylabel("loss (%)")
    axes[2].set_xlabel("time since the client's first Initial (s)")
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper right", fontsize="small")
    fig.suptitle(f"{t.profile}: the link's timeline over the transfer (ack {t.ack})")
    fig.tight_layout()
    fig.savefig(path, format="png")
    return path
