# SPDX-License-Identifier: BSD-2-Clause
"""Transfer summaries as tables: aligned text for the terminal, Markdown for an experiment."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

__all__ = ["format_table", "experiment_markdown", "format_bytes"]


def format_bytes(n) -> str:
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
    ("size", "r", lambda s: format_bytes(s["size"])),
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


def _endpoints(s: dict) -> str:
    """The controller, stacks (client/server) and datagram size of a transfer's endpoints."""
    stacks = s.get("stacks") or {}
    settings = s.get("settings") or {}
    pair = "/".join(dict.fromkeys((stacks.get("client", "?"), stacks.get("server", "?"))))
    return f"{s['cc']}, {pair}, {settings.get('max_datagram', '?')} B"


ENDPOINT_COLUMN = ("endpoints", "l", _endpoints)


def _columns(summaries) -> list:
    """The table's columns: the endpoints' when the transfers' differ, the BoD ones too when
    some transfer ran over a BoD return link."""
    cols = list(COLUMNS)
    if len({_endpoints(s) for s in summaries}) > 1:
        cols.insert(3, ENDPOINT_COLUMN)
    return cols + (BOD_COLUMNS if any(s.get("bod") for s in summaries) else [])


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
                lines.append(f"* {format_bytes(size)}: only {base['ack']} was run.")
                continue
            for other in group[1:]:
                lines.append(f"* {format_bytes(size)}: {comparison(base, other)}")

    if any(not isinstance(r, dict) and r[1] for r in rows):
        lines += ["", "## Plots"]
        for r in rows:
            if isinstance(r, dict) or not r[1]:
                continue
            s, plots = r
            lines += ["", f"### {s['profile']}, {format_bytes(s['size'])}, {s['ack']}", ""]
            for name, rel in plots.items():
                lines.append(f"![{_title_of(name)}]({Path(rel).as_posix()})")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
