# SPDX-License-Identifier: BSD-2-Clause
"""Shared pieces of the delay-line block benches: exact checks that name the signal and cycle,
stream sources that keep an offer until it is taken, and a watch on an output's offers."""

from simbench import run as simulate    # noqa: F401 (the benches run through this)


class Mismatch(AssertionError):
    """The block and its reference model disagree on a signal in a cycle."""


def expect(t: int, name: str, got, want) -> None:
    """Fail, naming the signal and the cycle, unless ``got == want``."""
    if got != want:
        fmt = (lambda v: f"{v:#x}") if isinstance(got, int) and isinstance(want, int) else repr
        raise Mismatch(f"cycle {t}: {name} is {fmt(got)}, the model says {fmt(want)}")


def expect_ports(ctx, dut, t: int, want: dict, perturb=None) -> None:
    """``expect`` for each of ``want``'s ports (dotted names under ``dut``, e.g.
    ``"source.valid"``) against its value this cycle; ``perturb(t, want)`` first alters the
    expectation (the tests that prove a bench can fail use it)."""
    if perturb:
        perturb(t, want)
    for name, value in want.items():
        port = dut
        for part in name.split("."):
            port = getattr(port, part)
        expect(t, name, raw(ctx, port), value)


def raw(ctx, payload) -> int:
    """A stream payload (plain or a struct view) as an integer."""
    return int(ctx.get(payload.as_value() if hasattr(payload, "as_value") else payload))


class Source:
    """Drives an input stream from a queue of payloads at a random pace, as the stream rules
    want: an offer, once made, stays (same payload) until the block takes it."""

    def __init__(self, ctx, port, rng, pace: float, items=()):
        self.ctx, self.port, self.rng, self.pace = ctx, port, rng, pace
        self.items = list(items)[::-1]      # popped from the end
        self.offer = None

    def push(self, item) -> None:
        self.items.insert(0, item)

    def drive(self) -> None:
        """Set this cycle's ``valid`` and payload."""
        if self.offer is None and self.items and self.rng.random() < self.pace:
            self.offer = self.items.pop()
        self.ctx.set(self.port.valid, self.offer is not None)
        if self.offer is not None:
            value = self.offer
            payload = self.port.payload
            self.ctx.set(payload.as_value() if hasattr(payload, "as_value") else payload, value)

    def took(self):
        """The payload the block took this cycle, or None (call after the cycle settles)."""
        if self.offer is not None and self.ctx.get(self.port.ready):
            item, self.offer = self.offer, None
            return item
        return None


class Held:
    """Checks an output stream keeps an offer it made and was not yet granted: ``valid`` stays
    and the payload does not change until the transfer."""

    def __init__(self, name: str):
        self.name, self.pending = name, None

    def see(self, t: int, valid: bool, payload: int, ready: bool) -> None:
        if self.pending is not None:
            expect(t, f"{self.name}.valid (an offer withdrawn)", int(valid), 1)
            expect(t, f"{self.name}.payload (an offer changed)", payload, self.pending)
        self.pending = payload if valid and not ready else None
