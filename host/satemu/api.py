# SPDX-License-Identifier: BSD-2-Clause
"""satemu from Python: link profiles, a box, and QUIC downloads across a link, the same calls
the command line and the lab console make. ``docs/api.md`` is written from these docstrings
(``python -m satemu.api``), and their examples run as tests (tests/host/test_api.py).

A profile, by name or from TOML text, and every error of a bad one, each at its field:

>>> from satemu.api import Profile, profile_errors, run_transfer
>>> p = Profile.named("short-asym")
>>> p.name, p.channels()[0][0]
('short-asym', 'forward')
>>> [e["field"] for e in profile_errors('[forward]\\nrate = "fast"\\n[return]\\ndelay = -3\\n')]
['forward.rate', 'return.delay']

What a profile means for a board, as ``satemu show`` says it:

>>> print(Profile.named("short-asym").describe("versa-ecp5")[2])
  board: versa-ecp5 (the Lattice ECP5 Versa-5G), 55 MHz, ports at 1 Gbit/s

A download of 20 KB across it, on the model engine (the board's frame path, exactly):

>>> run = run_transfer("short-asym", "20KB", ack="ratio:10")
>>> run["completed"], run["ack"], run["consistency"]["consistent"]
(True, 'ratio:10', True)
>>> run["return_packets"] < 10
True

A box (a board on a serial port, ``rfc2217://`` or a simulated board's ``socket://``) is
:class:`Box`: ``with Box(url) as box: box.load("geo-testbed-bod"); box.snapshot();
box.bod_trace().rows``.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from satemu.base.boards import BOARDS, DEFAULT_BOARD
from satemu.base.units import parse_size
from satemu.box.control import BodReading, LoadReport, NoBod, load_into, read_bod, snapshot
from satemu.box.device import Device, DeviceError
from satemu.box.log_capture import BoxCapture, capture_box_log
from satemu.link.profile import (Profile as _Profile, ProfileError, builtin_profiles,
    load_profile, parse_profile, profile_errors)
from satemu.report.show import show_hardware, show_lines

__all__ = ["Profile", "ProfileError", "profile_errors", "Box", "DeviceError", "NoBod",
           "run_transfer", "BOARDS"]


class Profile(_Profile):
    """A link profile (``satemu.link.profile.Profile``): both channels, its timeline and its
    terminals, read once and checked against a board on demand."""

    @classmethod
    def named(cls, name_or_path: str) -> Profile:
        """A built-in profile by name, or a TOML file by path; ProfileError, one line that
        starts with the field's path, for one that cannot be read."""
        return cls._of(load_profile(name_or_path))

    @classmethod
    def from_text(cls, text: str, name: str = "", base_dir: Path | None = None) -> Profile:
        """The profile in TOML ``text``; files it names (traces, jitter tables) are found in
        ``base_dir``."""
        return cls._of(parse_profile(text, name, base_dir=base_dir))

    @staticmethod
    def builtins() -> list[str]:
        """The built-in profiles' names.

        >>> "geo-testbed" in Profile.builtins()
        True
        """
        return list(builtin_profiles())

    def describe(self, board: str = DEFAULT_BOARD) -> list[str]:
        """What the profile means for ``board``'s hardware, line by line, as ``satemu show``
        prints it; ProfileError if it does not fit that board."""
        hw, lines = show_hardware(board)
        return show_lines(self, hw, lines)

    @classmethod
    def _of(cls, p: _Profile) -> Profile:
        out = cls.__new__(cls)
        out.__dict__.update(p.__dict__)
        return out


class Box:
    """A box over its UART: a real board on a serial port or at ``rfc2217://HOST:PORT``, or the
    simulated board at ``socket://HOST:PORT``. One connection; use it in a ``with`` block. Every
    error answer is DeviceError, one line."""

    def __init__(self, url: str, timeout: float = 5.0):
        self.url = url
        self.device = Device(url, timeout=timeout)
        self.info = self.device.hello()

    def __enter__(self) -> Box:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.device.close()

    @property
    def hardware(self):
        """The box's hardware as it reports itself: clock, memory, limits, build options."""
        return self.device.hardware()

    def load(self, profile: str | _Profile, reseed: bool = False,
             start_in: float = 1.0) -> LoadReport:
        """Check ``profile`` (a name, a path or a Profile) against the box and apply it, with
        its timeline from ``start_in`` seconds of box time on, by one commit: the whole of it,
        or on failure none of it."""
        p = profile if isinstance(profile, _Profile) else load_profile(profile)
        return load_into(self.device, p, reseed=reseed, start_in=start_in)

    def snapshot(self) -> dict:
        """Every counter and gauge of both channels, each terminal's, and the timeline's run."""
        return snapshot(self.device, self.info)

    def reset_counters(self) -> None:
        self.device.reset_stats()

    def capture(self, path: str | Path) -> BoxCapture:
        """The frame log of both channels into the pcapng ``path`` (boxes built with a log)."""
        return capture_box_log(self.device, path, self.url)

    def bod_trace(self, first: int = 0, profile: str | _Profile | None = None) -> BodReading:
        """The return channel's BoD records from superframe ``first`` on, as ``satemu
        bod-trace`` writes them (``.rows``, a dict per superframe, or per terminal and
        superframe; ``.lines()`` says what was read): requests, grants by type, slots used and
        the backlog. ``profile`` (the one loaded) gives each superframe its shape where its
        timeline changed it. NoBod (a DeviceError) for a box without BoD, or with it off."""
        p = profile if profile is None or isinstance(profile, _Profile) \
            else load_profile(profile)
        return read_bod(self.device, first, p)


def run_transfer(profile: str | _Profile, size: int | str, ack: str = "default",
                 engine: str = "model", seed: int = 0, cc: str = "reno",
                 stacks: str = "aioquic", max_seconds: float = 600.0,
                 out: str | Path | None = None, board: dict | None = None) -> dict:
    """Download ``size`` bytes (or text such as "1MB") with QUIC from the server behind port B
    to the client behind port A, across ``profile`` on ``engine`` ("model", or "board" with
    ``board`` the simulated board's ``{"url", "eth_port"}``), the client ACKing by ``ack``.
    Returns the run's figures as result.json holds them; with ``out``, writes result.json,
    packets.csv and the plots there too."""
    from satemu.quic.ackpolicy import AckPolicy
    from satemu.quic.engine import run_transfer as run
    from satemu.quic.settings import EndpointSettings
    from satemu.report.files import write_transfer
    from satemu.report.metrics import summarize
    nbytes = parse_size(size) if isinstance(size, str) else Fraction(size)
    if nbytes < 1 or nbytes != int(nbytes):
        raise ValueError(f"size {size!r}: a whole number of bytes, at least 1")
    t = run(engine, profile, int(nbytes), ack=str(AckPolicy.parse(ack)), seed=seed,
            max_seconds=max_seconds, settings=EndpointSettings(cc=cc), stacks=stacks,
            board=board)
    return write_transfer(t, Path(out)) if out is not None else summarize(t)


def _markdown(doc: str) -> str:
    """A docstring as Markdown: its examples (``>>>`` lines and what they print) as code."""
    out, code = [], False
    for line in doc.splitlines():
        if line.startswith(">>>"):
            code = True
        elif not line.strip():
            code = False
        out.append(("    " + line) if code else line)
    return "\n".join(out)


def _signature(fn) -> str:
    import inspect
    sig = inspect.signature(fn, eval_str=True)
    params = [p for p in sig.parameters.values() if p.name not in ("self", "cls")]
    text = str(sig.replace(parameters=params))
    return text.replace("satemu.link.profile.", "").replace("satemu.api.", "") \
        .replace("pathlib.", "").replace("satemu.box.control.", "") \
        .replace("satemu.box.log_capture.", "").replace("_Profile", "Profile")


def reference() -> str:
    """docs/api.md: this module's reference, from its docstrings."""
    import inspect
    lines = ["# satemu's Python API", "",
             "Written from `host/satemu/api.py`'s docstrings by `python -m satemu.api`; "
             "tests/host/test_api.py holds the two equal and runs the examples.", "",
             _markdown(inspect.cleandoc(__doc__)), ""]
    for name in ("Profile", "Box", "run_transfer"):
        obj = globals()[name]
        if inspect.isclass(obj):
            init = "" if obj is Profile else _signature(obj)     # made by named, from_text
            lines += [f"## class `{name}{init}`", "",
                      _markdown(inspect.cleandoc(obj.__doc__)), ""]
            for attr, member in obj.__dict__.items():
                fn = member.__func__ if isinstance(member, (classmethod, staticmethod)) \
                    else member
                if attr.startswith("_") or not callable(fn) and not isinstance(member,
                                                                                property):
                    continue
                doc = _markdown(inspect.getdoc(member) or "")
                if isinstance(member, property):
                    lines += [f"### `{name}.{attr}`", "", doc, ""]
                else:
                    lines += [f"### `{name}.{attr}{_signature(fn)}`", "", doc, ""]
        else:
            lines += [f"## `{name}{_signature(obj)}`", "", _markdown(inspect.getdoc(obj)), ""]
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    import sys
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else \
        Path(__file__).resolve().parents[2] / "docs" / "api.md"
    from satemu import api          # this module by its name, not as __main__
    target.write_text(api.reference())
    print(f"wrote {target}")
