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
Every error names the field and the range it must lie in.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from fractions import Fraction
from importlib import resources
from pathlib import Path

from .channel_model import ChannelParams, ChannelRegs, channel_registers, delay_line_budget
from .units import (UnitError, format_rate, format_size, format_time, parse_probability,
                    parse_queue, parse_rate, parse_size, parse_time)

__all__ = ["ProfileError", "Hardware", "ChannelProfile", "Profile", "load_profile",
           "builtin_profiles", "parse_profile"]

CHANNEL_KEYS = {"rate", "delay", "queue", "loss", "gilbert_elliott", "overhead", "seed",
                "min_len", "max_len"}
GE_KEYS = {"p", "r", "loss_good", "loss_bad"}


class ProfileError(ValueError):
    """A profile that cannot be loaded: the message starts with the field's path."""


@dataclass(frozen=True)
class Hardware:
    """What a profile is checked against. Defaults describe the reference build; a connected box
    reports its own values (HELLO)."""

    f_clk: int = 75_000_000            # Hz: the cycle every register counts
    mem_words: int = 6 << 20           # delay-line words per channel (48 MiB of 64-bit words)
    port_bps: int = 1_000_000_000      # line rate of the ports: bounds an unshaped channel
    params: ChannelParams = ChannelParams()

    @property
    def max_rate(self) -> Fraction:
        return Fraction(64 * self.f_clk)          # 8 bytes per cycle: the datapath width

    @property
    def max_delay(self) -> Fraction:
        return Fraction((1 << 40) - 1, self.f_clk)


@dataclass(frozen=True)
class ChannelProfile:
    rate: Fraction | None = None       # bit/s; None: not shaped
    delay: Fraction = Fraction(0)      # seconds
    queue_frames: int | None = None
    queue_bytes: int | None = None
    loss: Fraction = Fraction(0)
    gilbert_elliott: tuple[Fraction, Fraction, Fraction, Fraction] | None = None
    overhead: int = 0
    seed: int = 1
    min_len: int = 60
    max_len: int = 1518

    def budget_words(self, hw: Hardware) -> int:
        """Delay-line words this channel can need at worst (``delay_line_budget``), the bound
        the firmware applies too."""
        return delay_line_budget(self.registers(hw), hw.params, hw.f_clk, hw.port_bps)

    def registers(self, hw: Hardware, mem_base: int = 0) -> ChannelRegs:
        return channel_registers(
            f_clk=hw.f_clk, rate_bps=self.rate, overhead=self.overhead, delay_s=self.delay,
            queue_frames=self.queue_frames, queue_bytes=self.queue_bytes, loss=self.loss,
            gilbert_elliott=self.gilbert_elliott, seed=self.seed, min_len=self.min_len,
            max_len=self.max_len, mem_base=mem_base, mem_size=hw.mem_words, params=hw.params)

    def describe(self, hw: Hardware | None = None) -> str:
        parts = [format_rate(self.rate) if self.rate else "unshaped",
                 f"{format_time(self.delay)} one way"]
        queue = [f"{self.queue_frames} packets"] if self.queue_frames else []
        queue += [format_size(self.queue_bytes)] if self.queue_bytes else []
        if hw is not None and not self.queue_frames:
            queue.append(f"{hw.params.queue_depth} packets (hardware cap)")
        parts.append("queue " + (" or ".join(queue) if queue else "hardware depth")
                     + (", whichever fills first" if len(queue) > 1 else ""))
        if self.gilbert_elliott:
            p, r, kg, kb = self.gilbert_elliott
            parts.append(f"Gilbert-Elliott p={float(p):g} r={float(r):g} "
                         f"loss {float(kg):.3g}/{float(kb):.3g}")
        elif self.loss:
            parts.append(f"{float(self.loss) * 100:g}% loss")
        return ", ".join(parts)


@dataclass(frozen=True)
class Profile:
    name: str
    forward: ChannelProfile
    ret: ChannelProfile
    description: str = ""
    source: str = ""
    path: Path | None = field(default=None, compare=False)

    def channels(self):
        return (("forward", self.forward), ("return", self.ret))

    def check(self, hw: Hardware = Hardware()) -> dict[str, ChannelRegs]:
        """Validate against ``hw``; returns the registers of both channels."""
        regs = {}
        for name, ch in self.channels():
            _check_channel(name, ch, hw)
            try:
                regs[name] = ch.registers(hw)
            except ValueError as e:            # ConfigError: a bound the registers enforce
                raise ProfileError(f"{name}: {e}") from None
            need = delay_line_budget(regs[name], hw.params, hw.f_clk, hw.port_bps)
            if need > hw.mem_words:
                raise ProfileError(
                    f"{name}: delay x rate needs {need} delay-line words "
                    f"({format_size(need * 8)}) at worst, the channel has {hw.mem_words} "
                    f"({format_size(hw.mem_words * 8)}); lower the delay, the rate or the queue")
        return regs


def _check_channel(name: str, ch: ChannelProfile, hw: Hardware):
    def bad(key, value, lo, hi):
        raise ProfileError(f"{name}.{key}: {value} is outside the allowed range {lo} .. {hi}")
    if ch.rate is not None and not (Fraction(8 * hw.f_clk, 1 << 32) < ch.rate <= hw.max_rate):
        bad("rate", format_rate(ch.rate), format_rate(Fraction(8 * hw.f_clk, 1 << 32)),
            f"{format_rate(hw.max_rate)} (8 bytes per cycle at {hw.f_clk / 1e6:g} MHz)")
    if not 0 <= ch.delay <= hw.max_delay:
        bad("delay", format_time(ch.delay), "0 s", format_time(hw.max_delay))
    if ch.queue_frames is not None and not 1 <= ch.queue_frames <= hw.params.queue_depth:
        bad("queue", f"{ch.queue_frames} packets", "1 packet", f"{hw.params.queue_depth} packets")
    if ch.queue_bytes is not None and not ch.min_len <= ch.queue_bytes < 1 << 32:
        bad("queue", format_size(ch.queue_bytes), format_size(ch.min_len), format_size((1 << 32) - 1))
    if not 0 <= ch.loss <= 1:
        bad("loss", float(ch.loss), 0, 1)
    if ch.gilbert_elliott:
        for key, v in zip(("p", "r", "loss_good", "loss_bad"), ch.gilbert_elliott):
            if not 0 <= v <= 1:
                bad(f"gilbert_elliott.{key}", float(v), 0, 1)
    if not 0 <= ch.overhead <= 255:
        bad("overhead", f"{ch.overhead} B", "0 B", "255 B")
    if not 0 <= ch.seed < 1 << 64:
        bad("seed", ch.seed, 0, (1 << 64) - 1)
    if not 1 <= ch.min_len <= ch.max_len:
        bad("min_len", ch.min_len, 1, ch.max_len)
    if not ch.max_len <= hw.params.max_frame:
        bad("max_len", ch.max_len, ch.min_len, hw.params.max_frame)


def _channel(name: str, table: dict, rtt: Fraction, default_seed: int) -> ChannelProfile:
    if not isinstance(table, dict):
        raise ProfileError(f"{name}: expected a table of channel settings")
    unknown = set(table) - CHANNEL_KEYS
    if unknown:
        raise ProfileError(f"{name}.{sorted(unknown)[0]}: unknown setting; "
                           f"known ones are {', '.join(sorted(CHANNEL_KEYS))}")

    def get(key, parse, default):
        if key not in table:
            return default
        try:
            return parse(table[key])
        except UnitError as e:
            raise ProfileError(f"{name}.{key}: {e}") from None

    def whole(key, default):
        value = table.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ProfileError(f"{name}.{key}: expected a whole number, got {value!r}")
        return value

    rate = get("rate", parse_rate, None)
    delay = get("delay", parse_time, Fraction(0))
    queues = table.get("queue")
    frames = nbytes = None
    for q in ([] if queues is None else queues if isinstance(queues, list) else [queues]):
        try:
            kind, value = parse_queue(q)
        except UnitError as e:
            raise ProfileError(f"{name}.queue: {e}") from None
        if kind == "frames":
            frames = value
        else:
            nbytes = value
    if queues is None and rate is not None:
        nbytes = max(int(rate * rtt / 8), 1518)     # one bandwidth-delay product
    ge = None
    if "gilbert_elliott" in table:
        g = table["gilbert_elliott"]
        if not isinstance(g, dict) or set(g) != GE_KEYS:
            raise ProfileError(f"{name}.gilbert_elliott: expected a table with exactly "
                               f"{', '.join(sorted(GE_KEYS))}")
        if "loss" in table:
            raise ProfileError(f"{name}.loss: give either loss or gilbert_elliott, not both")
        try:
            ge = tuple(parse_probability(g[k]) for k in ("p", "r", "loss_good", "loss_bad"))
        except UnitError as e:
            raise ProfileError(f"{name}.gilbert_elliott: {e}") from None
    overhead = get("overhead", parse_size, Fraction(0))
    if overhead.denominator != 1:
        raise ProfileError(f"{name}.overhead: must be a whole number of bytes")
    return ChannelProfile(rate=rate, delay=delay, queue_frames=frames, queue_bytes=nbytes,
                          loss=get("loss", parse_probability, Fraction(0)), gilbert_elliott=ge,
                          overhead=int(overhead), seed=whole("seed", default_seed),
                          min_len=whole("min_len", 60), max_len=whole("max_len", 1518))


def parse_profile(text: str, name: str = "", path: Path | None = None) -> Profile:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ProfileError(f"{path or name}: not valid TOML: {e}") from None
    unknown = set(doc) - {"name", "description", "source", "forward", "return"}
    if unknown:
        raise ProfileError(f"{sorted(unknown)[0]}: unknown top-level setting")
    for side in ("forward", "return"):
        if side not in doc:
            raise ProfileError(f"{side}: missing; a profile needs [forward] and [return]")
    try:
        rtt = sum((parse_time(doc[s].get("delay", "0 s")) for s in ("forward", "return")),
                  Fraction(0))
    except (UnitError, AttributeError):
        rtt = Fraction(0)        # the channel parser reports the bad delay with its path
    return Profile(name=doc.get("name", name), description=doc.get("description", ""),
                   source=doc.get("source", ""),
                   forward=_channel("forward", doc["forward"], rtt, 1),
                   ret=_channel("return", doc["return"], rtt, 2), path=path)


def builtin_profiles() -> dict[str, Profile]:
    """The profiles shipped in ``satemu/profiles/``, by name."""
    out = {}
    for entry in resources.files("satemu").joinpath("profiles").iterdir():
        if entry.name.endswith(".toml"):
            p = parse_profile(entry.read_text(), entry.name[:-5])
            out[p.name] = p
    return dict(sorted(out.items()))


def load_profile(name_or_path: str) -> Profile:
    """A built-in profile by name, or a TOML file by path."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        if not path.is_file():
            raise ProfileError(f"{name_or_path}: no such profile file")
        return parse_profile(path.read_text(), path.stem, path)
    builtins = builtin_profiles()
    if name_or_path not in builtins:
        raise ProfileError(f"{name_or_path}: no built-in profile of that name "
                           f"(see 'satemu profiles'), and no such file")
    return builtins[name_or_path]
