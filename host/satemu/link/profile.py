# SPDX-License-Identifier: BSD-2-Clause
"""Link profiles: TOML with units, validated against the hardware, turned into channel registers.

A profile has a ``[forward]`` (gateway → terminal, port B → A) and a ``[return]`` (A → B) table::

    name = "geo-testbed"
    [forward]
    rate = "8.5 Mbit/s"        # what the shaper counts: frame bytes (no FCS) + overhead
    delay = "300 ms"           # one way, departure from the queue to egress
    queue = "640 KB"           # or "50 packets", or both: ["50 packets", "640 KB"]
    loss = "1%"                # Bernoulli; or gilbert_elliott = {p, r, loss_good, loss_bad}
    [return]
    rate = "1.5 Mbit/s"
    delay = "300 ms"
    queue = "50 packets"

Optional per channel: ``overhead`` (bytes added per frame for serialisation, default "0 B"),
``seed``, ``min_len`` and ``max_len`` (bytes). A channel without ``rate`` is not shaped. A
channel without ``queue`` gets one bandwidth-delay product, rate × (forward + return delay).

A channel with a Bandwidth-on-Demand block (the return channel) may instead be served in the
timeslots a DVB-RCS2-style allocator grants it (satemu.model.bod, docs/bod.md)::

    [return.bod]
    superframe = "26.5 ms"     # made whole cycles: slots x round(superframe x f_clk / slots)
    slots = 140                # timeslots per superframe on the shared return carrier
    slot_bytes = 188           # payload bytes per timeslot (a number or a size)
    cra = "100 kbit/s"         # constant rate assignment (default 0)
    rbdc_max = "1.5 Mbit/s"    # rate-based dynamic capacity, at most (default: none)
    rbdc_timeout = 8           # superframes an RBDC request holds (default 0: until replaced)
    vbdc_max = "64 KB"         # volume-based dynamic capacity outstanding, at most (default: none)
    fca = false                # free capacity assignment of the slots left over
    request_period = 1         # superframes between capacity requests
    latency = 26               # superframes from a request to its grant
    background = 0.5           # share of the slots other terminals take, or a schedule:
                               # [{level = 0.2, duration = "10 s"}, ...] (at most 8 levels)
    background_repeat = false  # the schedule repeats; otherwise its last level holds

Rates become slots per superframe x 256. Such a channel has no ``rate`` (its grants pace it);
without ``queue`` it gets one bandwidth-delay product at ``rbdc_max``, or at the carrier's rate.
Every error names the field and the range it must lie in, in one line (ProfileError). A
profile file is UTF-8 TOML; every number in it is finite and 0 or ``1e-30 .. 1e30`` in
magnitude as written (``satemu.base.units.MAGNITUDE``: nan, inf, 1e400 and "1e9999999 s" are refused
before anything is computed of them). Its text is at most ``MAX_BYTES`` (16 MiB) and its
``[[timeline]]`` tables at most ``satemu.link.timeline.MAX_STEPS``, both refused before the TOML is
read.
"""

from __future__ import annotations

import copy
import re
import tomllib
from dataclasses import dataclass, field, replace
from fractions import Fraction
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from satemu.base.params import ChannelRegs, ConfigError
from satemu.link.channel import (CHANNEL_KEYS, BodProfile, ChannelProfile, check_meaning, explain,
                                 parse_channel)
from satemu.link.tables import ProfileError, toml_key, toml_key_bare, toml_value
from satemu.link.netem import NetemError, netem_channel
from satemu.base.protocol import Status
from satemu.base.units import UnitError, parse_time, shown
from satemu.base.hardware import Hardware
from satemu.base.validate import profile_fields, validate
from satemu.link.traces import MAX_STEPS
from satemu.link.terminals import Terminals, parse_terminals
from satemu.base.terminals import TerminalTable
from satemu.link import timeline as _timeline

if TYPE_CHECKING:
    from satemu.link.timeline import Timeline

__all__ = ["ProfileError", "BodProfile", "ChannelProfile", "Profile", "load_profile",
           "builtin_profiles", "parse_profile", "override_profile", "override_value",
           "read_profile_text"]

@dataclass(frozen=True)
class Profile:
    name: str
    forward: ChannelProfile
    ret: ChannelProfile
    description: str = ""
    source: str = ""
    path: Path | None = field(default=None, compare=False)
    timeline: "Timeline | None" = None     # the link's changes over time (satemu.link.timeline)
    terminals: Terminals | None = None     # the terminals behind port A (satemu.link.terminals)

    def channels(self):
        return (("forward", self.forward), ("return", self.ret))

    def check(self, hw: Hardware) -> dict[str, ChannelRegs]:
        """Validate against ``hw`` as the box's firmware will (``satemu.base.validate``); returns the
        registers of both channels. An error names the profile's key, in its units."""
        regs = {}
        for name, ch in self.channels():
            check_meaning(name, ch, self.terminals is not None)
            regs[name] = ch.registers(hw, name)
        if self.terminals is not None:
            self.terminals.check(self.ret, regs, hw)
            tables = self.tables(hw)
            regs = {name: replace(r, **tables[name].registers()) for name, r in regs.items()}
        for index, (name, ch) in enumerate(self.channels()):
            verdict = validate(profile_fields(regs[name]), hw, index)
            if verdict.status != Status.OK:
                raise ProfileError(explain(name, ch, hw, verdict))
        return regs

    def jitter_tables(self) -> dict[str, tuple[int, ...]]:
        """The jitter table of each channel that has jitter, in the profile or in a step of its
        timeline: its distribution's entries (``ChannelProfile.jitter_table``), which a load
        writes into a bank of the channel's table before the commit."""
        out = {}
        for name, ch in self.channels():
            steps = self.timeline.steps if self.timeline is not None else ()
            if ch.jitter or any(s.changes.get(name, {}).get("jitter") for s in steps):
                out[name] = ch.jitter_table()
        return out

    def tables(self, hw: Hardware) -> dict[str, TerminalTable] | None:
        """Each channel's terminal table at ``hw``'s clock (``satemu.link.terminals``), or None
        for a profile without terminals; only the conversion (``check`` validates them)."""
        return None if self.terminals is None else self.terminals.tables(self.ret, hw)


def _toml(text: str, where) -> dict:
    """``text`` read as TOML; ProfileError (one line, starting with ``where``) if it is not, or
    if it nests too deeply or holds an integer too long for Python to read."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ProfileError(f"{where}: not valid TOML: {e}") from None
    except ValueError:                 # int() of more digits than Python reads
        raise ProfileError(f"{where}: not valid TOML: an integer too long to read (over 4300 "
                           "digits)") from None
    except RecursionError:
        raise ProfileError(f"{where}: not valid TOML: arrays or tables nested too deeply") from None


TOP_KEYS = {"name", "description", "source", "forward", "return", "timeline", "timeline_repeat",
            "terminals", "terminal"}
# A profile's text, at most: 64 bytes for each step of the longest timeline (MAX_STEPS), 16 MiB.
# A longer one is refused before it is read as TOML (about a second a megabyte here); a long
# timeline is better given as a trace file, which is read faster.
MAX_BYTES = 64 * MAX_STEPS
# A [[timeline]] table's header: a line of its own, so counted before the TOML is read.
_STEP_HEADER = re.compile(r"""^[ \t]*\[\[[ \t]*(?:timeline|"timeline"|'timeline')[ \t]*\]\]""",
                          re.MULTILINE)


def _too_long(where) -> ProfileError:
    return ProfileError(f"{where}: more than {MAX_BYTES:,} bytes; a profile has at most "
                        f"{MAX_BYTES:,} (64 for each of a timeline's {MAX_STEPS:,} steps at "
                        f"most; a longer timeline belongs in a trace file)")


def _check_text(text: str, where) -> None:
    """ProfileError (one line, starting with ``where``) if ``text`` is longer than a profile
    may be, or lists more [[timeline]] steps than a timeline may have: counted up to the first
    past the limit, before the TOML is read."""
    if len(text) > MAX_BYTES or (4 * len(text) > MAX_BYTES
                                 and len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES):
        raise _too_long(where)
    for count, _ in enumerate(_STEP_HEADER.finditer(text), start=1):
        if count > MAX_STEPS:
            raise ProfileError(f"timeline: more than {MAX_STEPS:,} steps ([[timeline]] tables); "
                               f"a timeline has at most {MAX_STEPS:,} (the entries of a box's "
                               f"timeline store, one or more a step)")


def parse_profile(text: str, name: str = "", path: Path | None = None,
                  base_dir: Path | None = None) -> Profile:
    """The profile in TOML ``text``, named ``name`` unless it names itself; ProfileError, a line
    that starts with the field's path, for anything it cannot be. Trace files are found
    relative to ``base_dir`` (default: the file's folder)."""
    _check_text(text, path or name)
    return _from_doc(_toml(text, path or name), name, path, base_dir)


def _from_doc(doc: dict, name: str, path: Path | None, base_dir: Path | None) -> Profile:
    """``parse_profile`` of the TOML document ``doc``, which it may change (a netem string is
    replaced by its table)."""
    unknown = set(doc) - TOP_KEYS
    if unknown:
        raise ProfileError(f"{toml_key(sorted(unknown)[0])}: unknown top-level setting; "
                           f"known ones are {', '.join(sorted(TOP_KEYS))}")
    for key in ("name", "description", "source"):
        if not isinstance(doc.get(key, ""), str):
            raise ProfileError(f"{key}: expected a string, got {shown(doc[key])}")
    for side in ("forward", "return"):
        if side not in doc:
            raise ProfileError(f"{side}: missing; a profile needs [forward] and [return]")
        if isinstance(doc[side], str):
            # A channel written as a tc-netem option string (satemu.link.netem).
            try:
                doc[side] = netem_channel(doc[side], side)
            except NetemError as e:
                raise ProfileError(str(e)) from None
    try:
        rtt = sum((parse_time(doc[s].get("delay", "0 s")) for s in ("forward", "return")),
                  Fraction(0))
    except (UnitError, AttributeError):
        rtt = Fraction(0)        # the channel parser reports the bad delay with its path
    if base_dir is None and path is not None:
        base_dir = path.parent
    forward = parse_channel("forward", doc["forward"], rtt, 1, base_dir)
    ret = parse_channel("return", doc["return"], rtt, 2, base_dir)
    return Profile(name=doc.get("name", name), description=doc.get("description", ""),
                   source=doc.get("source", ""), forward=forward, ret=ret, path=path,
                   timeline=_timeline.parse_timeline(doc, base_dir),
                   terminals=parse_terminals(doc, base_dir))


# The most errors ``profile_errors`` lists: past them a profile is better fixed and checked again.
MAX_ERRORS = 32
# A field's path as a ProfileError starts with it: keys joined by dots, a step's index in [].
_FIELD = re.compile(r"^((?:[A-Za-z0-9_-]+|\[\d+\])(?:\.[A-Za-z0-9_-]+|\[\d+\])*): ")


def profile_errors(text: str, name: str = "", base_dir: Path | None = None,
                   hw: Hardware | None = None) -> list[dict[str, str]]:
    """Every error of profile TOML ``text`` that can be told apart, each as {"field": its path
    (``forward.rate``, ``timeline[2].at``; "" for the text as a whole), "message": the line
    ``parse_profile`` says}; none if it loads (and, with ``hw``, fits that hardware: the errors
    of ``Profile.check``, whose fields are the channels'). The parser stops at its first error,
    so each field it names is taken out (a table for a key missing from it) and the rest
    parsed again, up to MAX_ERRORS."""
    try:
        _check_text(text, name)
        doc = _toml(text, name or "the profile")
    except ProfileError as e:
        return [field_error(e, name)]
    out: list[dict[str, str]] = []
    while len(out) < MAX_ERRORS:
        try:
            p = _from_doc(copy.deepcopy(doc), name, None, base_dir)
        except ProfileError as e:
            err = field_error(e, name)
            if any(_within(f["field"], err["field"]) for f in out):
                return out          # the table of a field taken out: what taking it out did
            out.append(err)
            if not err["field"] or not _take_out(doc, err["field"], "missing;" in err["message"]):
                return out
            continue
        if not out and hw is not None:
            try:
                p.check(hw)
            except (ProfileError, ConfigError) as e:
                out.append(field_error(e, name))
        return out
    return out


def _within(field: str, table: str) -> bool:
    """Whether ``field`` is ``table`` or lies within it."""
    return field == table or field.startswith(table + ".") or field.startswith(table + "[")


def field_error(e: Exception, name: str = "") -> dict[str, str]:
    """A ProfileError (or ConfigError) as {"field": the path its message starts with ("" for
    none, or for the profile ``name`` itself), "message": its message on one line}."""
    message = "; ".join(line.strip() for line in str(e).splitlines() if line.strip())
    m = _FIELD.match(message)
    field = m.group(1) if m and m.group(1) != name else ""
    return {"field": field, "message": message}


def _take_out(doc: dict, field: str, missing: bool) -> bool:
    """Removes ``field`` from ``doc`` (its table, if the field is missing); False if it is not
    a key of a table there, so that parsing again would say the same."""
    parts = [int(k[1:-1]) if k.startswith("[") else k
             for k in re.findall(r"\[\d+\]|[^.\[]+", field)]
    if missing:
        parts = parts[:-1]
    if not parts:
        return False
    node = doc
    for k in parts[:-1]:
        try:
            node = node[k]
        except (KeyError, IndexError, TypeError):
            return False
    last = parts[-1]
    if isinstance(node, dict) and last in node:
        del node[last]
        return True
    return False                    # (a whole step: taking it out would renumber the rest)


def override_value(raw: str):
    """An override's value as ``override_profile`` sets it: ``raw`` read as TOML (``3``,
    ``true``, ``["50 packets", "640 KB"]``), or else taken as a string, stripped."""
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except (ValueError, RecursionError):         # not TOML (or not readable as it): a string
        return raw.strip()


def override_profile(text: str, overrides, name: str) -> str:
    """The profile TOML ``text`` with each ``(field, value)`` of ``overrides`` set and its name
    made ``name``, as TOML text. A field is a channel's key by its path (``return.rate``,
    ``forward.loss``, ``return.bod.cra``); a value is read as TOML (``3``, ``true``,
    ``["50 packets", "640 KB"]``) or else taken as a string (``100 kbit/s``). The result is
    parsed here, so a bad field or value raises the parser's ProfileError, which names it."""
    _check_text(text, name)
    doc = _toml(text, name)
    for path, raw in overrides:
        parts = path.split(".")
        if parts[0] in ("forward", "return") and len(parts) == 1:
            value = override_value(raw)
            if not isinstance(value, str):
                raise ProfileError(f"{path}: a whole channel is a tc-netem option string, such "
                                   f"as \"delay 300ms 20ms loss 1%\"; got {shown(value)}")
            doc[path] = value
            continue
        if len(parts) < 2 or parts[0] not in ("forward", "return") or not all(parts):
            raise ProfileError(f"{path}: not a channel's field; give forward.KEY, return.KEY "
                               f"or return.bod.KEY (KEY one of {', '.join(sorted(CHANNEL_KEYS))})")
        table = doc
        for i, part in enumerate(parts[:-1]):
            table = table.setdefault(part, {})
            if not isinstance(table, dict):
                raise ProfileError(f"{'.'.join(parts[:i + 1])}: not a table, so it has no "
                                   f"{parts[i + 1]}")
        table[parts[-1]] = override_value(raw)
    doc["name"] = name
    lines = [f"{toml_key_bare(k)} = {toml_value(v)}" for k, v in doc.items()
             if not isinstance(v, dict)]
    for side, table in doc.items():
        if isinstance(table, dict):
            lines += ["", f"[{toml_key_bare(side)}]"] + [f"{toml_key_bare(k)} = {toml_value(v)}"
                                                         for k, v in table.items()]
    out = "\n".join(lines) + "\n"
    parse_profile(out, name)
    return out


def builtin_profiles() -> dict[str, Profile]:
    """The profiles shipped in ``satemu/profiles/``, by name."""
    out = {}
    folder = resources.files("satemu").joinpath("profiles")
    for entry in folder.iterdir():
        if entry.name.endswith(".toml"):
            p = parse_profile(entry.read_text(encoding="utf-8"), entry.name[:-5],
                              base_dir=Path(str(folder)))
            out[p.name] = p
    return dict(sorted(out.items()))


def read_profile_text(path: Path) -> str:
    """The text of profile file ``path``, which must be UTF-8; ProfileError (one line, naming
    the file) if it cannot be read, is not UTF-8 or is longer than ``MAX_BYTES`` (read no
    further than that)."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise ProfileError(f"{path}: cannot read it: {e.strerror or e}") from None
    if len(data) > MAX_BYTES:
        raise _too_long(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ProfileError(f"{path}: not UTF-8 text (byte {data[e.start]:#04x} at offset "
                           f"{e.start}); a profile is a UTF-8 TOML file") from None


def load_profile(name_or_path: str) -> Profile:
    """A built-in profile by name, or a TOML file by path."""
    path = Path(name_or_path)
    label = name_or_path if name_or_path.isprintable() else repr(name_or_path)
    if "\0" in name_or_path:                    # no file's name holds one: open() refuses it
        raise ProfileError(f"{label}: a file name cannot hold a NUL byte")
    if path.suffix == ".toml" or path.exists():
        if not path.is_file():
            raise ProfileError(f"{label}: no such profile file")
        return parse_profile(read_profile_text(path), path.stem, path)
    builtins = builtin_profiles()
    if name_or_path not in builtins:
        raise ProfileError(f"{label}: no built-in profile of that name "
                           f"(see 'satemu profiles'), and no such file")
    return builtins[name_or_path]
