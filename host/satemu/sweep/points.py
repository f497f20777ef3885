# SPDX-License-Identifier: BSD-2-Clause
"""A sweep's points, each a pure function of its parameters, from profiles and --set."""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from satemu.link.profile import (ProfileError, load_profile, override_profile, override_value,
    parse_profile, read_profile_text)
from satemu.quic.engine import ENGINES
from satemu.quic.settings import CONTROLLERS
from satemu.sweep.errors import SweepError

CCS = CONTROLLERS


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
            raise SweepError(f"--set {text!r}: expected FIELD=V1,V2,... such as "
                               f"return.rate=100kbit/s,1.5Mbit/s")
        vals = split_values(values)
        if not all(vals):
            raise SweepError(f"--set {text!r}: an empty value")
        if field in (f for f, _ in out):
            raise SweepError(f"--set {field}: given twice; list its values in one --set")
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
        from satemu.quic.settings import EndpointSettings
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
        from satemu.quic.settings import EndpointSettings
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
        from satemu.quic.settings import EndpointSettings
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
    ``base`` (EndpointSettings) and ``stacks``, each checked against its stacks; SweepError
    if one fails. An ``endpoint.NAME`` axis replaces what ``base``, ``stacks`` or ``ccs`` say
    of NAME: ``endpoint.cc`` the ccs, ``endpoint.stack`` the stacks."""
    from satemu.quic.settings import parse_setting
    axes = []
    for field, values in sets:
        name = field[len("endpoint."):]
        try:
            axes.append([parse_setting(name, v) for v in values])
        except ValueError as e:
            raise SweepError(f"--set {field}: {e}") from None
    out = []
    for combo in itertools.product(*axes):
        changes = dict(combo)
        pair = tuple(changes.pop("stacks", stacks))
        for cc in [changes.pop("cc")] if "cc" in changes else ccs:
            try:
                settings = base.but(**changes, cc=cc)
                settings.check_stacks(pair)
            except ValueError as e:
                raise SweepError(str(e)) from None
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
    SweepError before anything runs. ``sizes`` are (text, bytes) pairs, ``sets`` (field,
    [values]) pairs."""
    from satemu.base.boards import BOARDS, DEFAULT_BOARD
    from satemu.quic.settings import EndpointSettings
    if engine not in ENGINES:
        raise SweepError(f"--engine {engine!r}: one of {', '.join(ENGINES)}")
    for cc in ccs:
        if cc not in CCS:
            raise SweepError(f"--cc {cc!r}: one of {', '.join(CCS)}")
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
                    raise SweepError(f"--set on {base.name}: {e}") from None
                link = parse_profile(toml, name)
            else:
                name, toml, link = base.name, "" if builtin else text, base
            try:
                link.check(hw)
            except ProfileError as e:
                raise SweepError(f"{name}: {e}") from None
            sha = hashlib.sha256((toml or text).encode() + _trace_bytes(toml)).hexdigest()[:16]
            links.append((base.name, overrides, name, "" if overrides else builtin, toml, sha))
    for ack in policies:                # a quinn client applies only some receiver policies
        if any(pair[0] == "quinn" for _, pair, _ in endpoints):
            from satemu.quic.quinn import quinn_policy
            try:
                quinn_policy(ack)
            except ValueError as e:
                raise SweepError(f"--policies with a quinn client: {e}") from None
    names = [link[2] for link in links]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise SweepError(f"{dup}: two profiles of the sweep would have that name; give "
                           f"profiles and --set values that differ in name")
    return [Point(engine=engine, base=base, overrides=overrides, name=name, size=size,
                  size_text=size_text, ack=ack, cc=cc, seed=seed, endpoint=items, stacks=pair,
                  max_time=max_time, profile=builtin, toml=toml, sha=sha, pcap=pcap)
            for base, overrides, name, builtin, toml, sha in links
            for size_text, size in sizes for ack in policies
            for items, pair, cc in endpoints for seed in seeds]
