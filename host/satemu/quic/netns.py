# SPDX-License-Identifier: BSD-2-Clause
"""Two network namespaces joined by a link for the real-time mode, and the ``ip`` helpers."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import time
from typing import Any

from .packets import CLIENT, SERVER

__all__ = ["RealtimeError", "Namespaces"]

PREFIX_LEN = 24
IP_SEARCH = ("/usr/sbin", "/sbin", "/usr/bin", "/bin")


class RealtimeError(Exception):
    """A real-time run cannot be set up or run; the message says why (no traceback needed)."""


_ns_serial = itertools.count()


def _ip_binary() -> str:
    path = os.pathsep.join([os.environ.get("PATH", ""), *IP_SEARCH])
    found = shutil.which("ip", path=path)
    if found is None:
        raise RealtimeError("the 'ip' command (iproute2) was not found: install iproute2")
    return found


def _require_root() -> None:
    if os.geteuid() != 0:
        raise RealtimeError("real-time mode creates network namespaces and needs root: run it "
                            "as root (e.g. with sudo)")


def _run(argv: list[str], what: str) -> str:
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip() or f"exit status {done.returncode}"
        raise RealtimeError(f"{what}: {detail}")
    return done.stdout


class Namespaces:
    """Two network namespaces joined by a link: ``client_if`` and ``server_if`` moved into them.

    On entry: creates namespaces ``{prefix}-c{pid}-{n}`` (client) and ``{prefix}-s{pid}-{n}``
    (server), moves each interface into its namespace, brings it and ``lo`` up, assigns
    10.0.0.2/24 (client) and 10.0.0.1/24 (server), and waits up to ``link_timeout`` seconds for
    carrier on both. On exit (and on any failure during entry) it deletes the namespaces.

    What happens to the interfaces then: a physical NIC returns to the root namespace, down and
    without addresses; a veth (or other virtual) interface is destroyed along with its namespace,
    and with it its peer. Processes still running in a namespace keep it alive past
    ``ip netns del``: stop them first (run_realtime() does).

    Raises :class:`RealtimeError` when not root, when ``ip`` is missing, when an interface does
    not exist, or when any ``ip`` step fails; it never leaves a namespace behind.
    """

    def __init__(self, client_if: str, server_if: str, prefix: str = "satemu", *,
                 client_ip: str = CLIENT.ipv4, server_ip: str = SERVER.ipv4,
                 link_timeout: float = 10.0) -> None:
        if client_if == server_if:
            raise RealtimeError(f"client and server interface are both {client_if!r}: they must "
                                "be the two ends of the link")
        self.client_if, self.server_if = client_if, server_if
        self.client_ip, self.server_ip = client_ip, server_ip
        serial = f"{os.getpid()}-{next(_ns_serial)}"
        self.client = f"{prefix}-c{serial}"
        self.server = f"{prefix}-s{serial}"
        self.link_timeout = link_timeout
        self.ip = ""
        self._created: list[str] = []

    def __enter__(self) -> "Namespaces":
        _require_root()
        self.ip = _ip_binary()
        for ifname in (self.client_if, self.server_if):
            done = subprocess.run([self.ip, "-o", "link", "show", "dev", ifname],
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True)
            if done.returncode != 0:
                raise RealtimeError(f"network interface {ifname!r} does not exist (in this "
                                    "namespace)")
        try:
            for ns, ifname, addr in ((self.client, self.client_if, self.client_ip),
                                     (self.server, self.server_if, self.server_ip)):
                _run([self.ip, "netns", "add", ns], f"creating network namespace {ns}")
                self._created.append(ns)
                _run([self.ip, "link", "set", "dev", ifname, "netns", ns],
                     f"moving {ifname} into namespace {ns}")
                _run([self.ip, "-n", ns, "link", "set", "dev", "lo", "up"], f"{ns}: lo up")
                _run([self.ip, "-n", ns, "addr", "flush", "dev", ifname], f"{ns}: flush {ifname}")
                _run([self.ip, "-n", ns, "addr", "add", f"{addr}/{PREFIX_LEN}", "dev", ifname],
                     f"{ns}: address {addr} on {ifname}")
                _run([self.ip, "-n", ns, "link", "set", "dev", ifname, "up"],
                     f"{ns}: {ifname} up")
            self._wait_carrier()
        except BaseException:
            self._delete()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        problems = self._delete()
        if problems and exc[0] is None:
            raise RealtimeError("; ".join(problems))

    def _wait_carrier(self) -> None:
        deadline = time.monotonic() + self.link_timeout
        for ns, ifname in ((self.client, self.client_if), (self.server, self.server_if)):
            while True:
                flags = _run([self.ip, "-n", ns, "-o", "link", "show", "dev", ifname],
                             f"{ns}: {ifname} state")
                if "LOWER_UP" in flags:
                    break
                if time.monotonic() > deadline:
                    raise RealtimeError(f"{ifname} has no carrier after {self.link_timeout:g} s "
                                        "(is the link cabled and the peer interface up?)")
                time.sleep(0.05)

    def _delete(self) -> list[str]:
        problems = []
        while self._created:
            ns = self._created.pop()
            done = subprocess.run([self.ip, "netns", "del", ns], stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True)
            if done.returncode != 0:
                problems.append(f"deleting namespace {ns}: {done.stderr.strip()}")
        return problems

    def exec_argv(self, ns: str, argv: list[str]) -> list[str]:
        """``argv`` run inside namespace ``ns``."""
        return [self.ip, "netns", "exec", ns, *argv]

    def netem(self, spec: str) -> None:
        """``tc qdisc replace dev IF root netem SPEC`` on both interfaces (e.g. "delay 10ms")."""
        tc = shutil.which("tc", path=os.pathsep.join([os.environ.get("PATH", ""), *IP_SEARCH]))
        if tc is None:
            raise RealtimeError("netem requested but 'tc' (iproute2) was not found")
        for ns, ifname in ((self.client, self.client_if), (self.server, self.server_if)):
            _run(self.exec_argv(ns, [tc, "qdisc", "replace", "dev", ifname, "root", "netem",
                                     *spec.split()]), f"{ns}: netem {spec} on {ifname}")
