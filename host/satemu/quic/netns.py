# SPDX-License-Identifier: BSD-2-Clause
"""Two network namespaces joined by a link for the real-time mode, and the ``ip`` helpers.

Every namespace this module creates is named ``{prefix}-c{pid}-{n}`` (client),
``{prefix}-s{pid}-{n}`` (server) or ``{prefix}-t{pid}-{n}-{k}`` (a scenario's host ``k``, behind the
client's interface): ``prefix`` is ``satemu`` unless a caller chooses another, ``pid``
the process that owns it, ``n`` a serial within that process. The name is the only record of a
run: :func:`sweep_leftovers` reads it to remove what a run that died without cleaning up (SIGKILL,
a crash, a power cut of the process) left behind, and never touches a namespace whose owner still
runs."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Optional

from satemu.quic.packets import CLIENT, SERVER

__all__ = ["RealtimeError", "Namespaces", "NS_PREFIX", "namespace_owner", "sweep_leftovers",
           "remove_namespace"]

PREFIX_LEN = 24
IP_SEARCH = ("/usr/sbin", "/sbin", "/usr/bin", "/bin")
NS_PREFIX = "satemu"
RETURN_WAIT_S = 2.0         # for an interface a swept namespace gives back to this one


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


def _list_namespaces(ip: str) -> list[str]:
    """The names ``ip netns list`` shows (each line is ``NAME`` or ``NAME (id: N)``)."""
    done = subprocess.run([ip, "netns", "list"], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True)
    return [line.split()[0] for line in done.stdout.splitlines() if line.strip()]


def namespace_owner(name: str, prefix: str = NS_PREFIX) -> Optional[int]:
    """The PID in ``name`` if it is one of ours (``{prefix}-c{pid}-{n}``,
    ``{prefix}-s{pid}-{n}`` or ``{prefix}-t{pid}-{n}-{k}``), else None."""
    m = re.fullmatch(rf"{re.escape(prefix)}-(?:[cs]([0-9]+)-[0-9]+|t([0-9]+)-[0-9]+-[0-9]+)",
                     name)
    if m:
        return int(m.group(1) or m.group(2))
    return None


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (a zombie runs nothing and holds no
    namespace). When /proc cannot tell, it counts as alive: a sweep then leaves it alone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[:1] not in (["Z"], ["X"])


def remove_namespace(ip: str, name: str) -> Optional[str]:
    """Delete namespace ``name`` after SIGKILLing every process still in it (a process keeps a
    namespace, and the interfaces in it, alive past ``ip netns del``). Returns None when it is
    gone (also when it was not there), else what went wrong."""
    pids = subprocess.run([ip, "netns", "pids", name], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True)
    for word in pids.stdout.split() if pids.returncode == 0 else ():
        if word.isdigit() and int(word) != os.getpid():
            try:
                os.kill(int(word), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    done = subprocess.run([ip, "netns", "del", name], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True)
    if done.returncode == 0 or name not in _list_namespaces(ip):
        return None
    return f"deleting namespace {name}: {(done.stderr or done.stdout).strip()}"


def sweep_leftovers(prefix: str = NS_PREFIX, ip: Optional[str] = None) -> list[str]:
    """Remove the namespaces named as this module names them (``{prefix}-c{pid}-{n}``,
    ``{prefix}-s{pid}-{n}``) whose owner ``pid`` is no longer alive (gone, or a zombie), with
    the processes still in them; the interfaces inside go with them (a veth is destroyed, a NIC
    returns to this namespace). Returns the names this call removed.

    A namespace whose owner is alive is never touched, whatever it is doing; nor is one this
    process owns, nor one whose name does not parse. Needs root; two runs sweeping at once do
    not conflict (each reports only what it removed). PIDs are this PID namespace's: a reused
    PID keeps a leftover until that process ends, which errs on the side of keeping."""
    ip = ip or _ip_binary()
    removed = []
    for name in _list_namespaces(ip):
        owner = namespace_owner(name, prefix)
        if owner is None or owner == os.getpid() or _alive(owner):
            continue
        if remove_namespace(ip, name) is None:
            removed.append(name)
    return removed


class Namespaces:
    """Two network namespaces joined by a link: ``client_if`` and ``server_if`` moved into them.

    On entry: first sweeps what dead runs left (:func:`sweep_leftovers` with the same
    ``prefix``; the names removed are in ``swept``), then creates namespaces
    ``{prefix}-c{pid}-{n}`` (client) and ``{prefix}-s{pid}-{n}`` (server), moves each interface
    into its namespace, brings it and ``lo`` up, assigns 10.0.0.2/24 (client) and 10.0.0.1/24
    (server), and waits up to ``link_timeout`` seconds for carrier on both, calling ``check``
    meanwhile (it may raise to give up). On exit (and on any failure during entry) it deletes
    the namespaces: :meth:`close`.

    What happens to the interfaces then: a physical NIC returns to the root namespace, down and
    without addresses; a TAP (the simulated board's bridge) is moved back to this process's
    namespace first, down and without addresses, so the board can carry another run; a veth
    (or other virtual) interface is destroyed along with its namespace,
    and with it its peer. Processes still running in a namespace keep it alive past
    ``ip netns del``: stop them gracefully first (run_realtime() does); whatever is still in a
    namespace when it is deleted gets SIGKILL.

    With ``hosts`` (a scenario's client hosts: (MAC, its IPv4 addresses, VLAN ID or None)
    each), the client's namespace keeps ``client_if`` up without an address, and each host gets
    a namespace of its own, ``{prefix}-t{pid}-{n}-{k}`` (``host_namespaces``), holding a macvlan
    of ``client_if`` with the host's MAC, or for a host on a VLAN an 802.1Q interface of it with
    that MAC and VLAN ID: a frame a host sends leaves by ``client_if`` with its own source
    address or tag, as a terminal's would. The server's namespace then has an 802.1Q interface
    of ``server_if`` for each VLAN, with the server's addresses. Addresses are /32, with a route
    on the link (or the VLAN) to every address of the other side (the server's:
    ``server_ips``); IPv6 is left off these links (``addrgenmode none``) so that no router
    solicitation crosses the box.

    Raises :class:`RealtimeError` when not root, when ``ip`` is missing, when an interface does
    not exist, or when any ``ip`` step fails; it never leaves a namespace behind.
    """

    def __init__(self, client_if: str, server_if: str, prefix: str = NS_PREFIX, *,
                 client_ip: str = CLIENT.ipv4, server_ip: str = SERVER.ipv4,
                 link_timeout: float = 10.0, check: Callable[[], None] = lambda: None,
                 hosts: Optional[list[tuple[str, tuple[str, ...], Optional[int]]]] = None,
                 server_ips: tuple[str, ...] = ()) -> None:
        if client_if == server_if:
            raise RealtimeError(f"client and server interface are both {client_if!r}: they must "
                                "be the two ends of the link")
        self.client_if, self.server_if = client_if, server_if
        self.client_ip, self.server_ip = client_ip, server_ip
        serial = f"{os.getpid()}-{next(_ns_serial)}"
        self.prefix = prefix
        self.client = f"{prefix}-c{serial}"
        self.server = f"{prefix}-s{serial}"
        self.link_timeout = link_timeout
        self.hosts = list(hosts) if hosts is not None else None
        self.server_ips = tuple(server_ips) or (server_ip,)
        self.host_namespaces = [f"{prefix}-t{serial}-{k}" for k in range(len(hosts or ()))]
        self.check = check
        self.ip = ""
        self.swept: list[str] = []
        self.deleted: list[str] = []            # by close(), in order
        self._created: list[str] = []

    def __enter__(self) -> "Namespaces":
        _require_root()
        self.ip = _ip_binary()
        self.swept = sweep_leftovers(self.prefix, self.ip)
        # an interface a swept namespace held comes back (a NIC) a moment after the sweep
        deadline = time.monotonic() + (RETURN_WAIT_S if self.swept else 0.0)
        for ifname in (self.client_if, self.server_if):
            while subprocess.run([self.ip, "-o", "link", "show", "dev", ifname],
                                 stdin=subprocess.DEVNULL, capture_output=True).returncode != 0:
                if time.monotonic() >= deadline:
                    raise RealtimeError(f"network interface {ifname!r} does not exist (in this "
                                        "namespace)")
                time.sleep(0.05)
        try:
            if self.hosts is None:
                for ns, ifname, addr in ((self.client, self.client_if, self.client_ip),
                                         (self.server, self.server_if, self.server_ip)):
                    self._move(ns, ifname)
                    _run([self.ip, "-n", ns, "addr", "add", f"{addr}/{PREFIX_LEN}", "dev",
                          ifname], f"{ns}: address {addr} on {ifname}")
                    _run([self.ip, "-n", ns, "link", "set", "dev", ifname, "up"],
                         f"{ns}: {ifname} up")
            else:
                self._hosts()
            self._wait_carrier()
        except BaseException:
            self._delete()
            raise
        return self

    def _move(self, ns: str, ifname: str) -> None:
        """Create namespace ``ns`` (:meth:`_add`), move ``ifname`` into it, clear its
        addresses."""
        self._add(ns)
        _run([self.ip, "link", "set", "dev", ifname, "netns", ns],
             f"moving {ifname} into namespace {ns}")
        _run([self.ip, "-n", ns, "addr", "flush", "dev", ifname], f"{ns}: flush {ifname}")

    def _add(self, ns: str) -> None:
        """Create namespace ``ns`` with ``lo`` up."""
        self._created.append(ns)        # first: an exception mid-way still deletes it
        _run([self.ip, "netns", "add", ns], f"creating network namespace {ns}")
        _run([self.ip, "-n", ns, "link", "set", "dev", "lo", "up"], f"{ns}: lo up")

    def _up(self, ns: str, ifname: str, addrs: tuple[str, ...], peers: tuple[str, ...]) -> None:
        """``ifname`` in ``ns`` up with ``addrs`` (/32) and a route on it to each of
        ``peers``, without IPv6."""
        _run([self.ip, "-n", ns, "link", "set", "dev", ifname, "addrgenmode", "none"],
             f"{ns}: no IPv6 address on {ifname}")
        for addr in addrs:
            _run([self.ip, "-n", ns, "addr", "add", f"{addr}/32", "dev", ifname],
                 f"{ns}: address {addr} on {ifname}")
        _run([self.ip, "-n", ns, "link", "set", "dev", ifname, "up"], f"{ns}: {ifname} up")
        for peer in peers:
            _run([self.ip, "-n", ns, "route", "replace", f"{peer}/32", "dev", ifname],
                 f"{ns}: route to {peer} on {ifname}")

    def _hosts(self) -> None:
        vlans: dict[Optional[int], set] = {}
        for _mac, addrs, vlan in self.hosts:
            vlans.setdefault(vlan, set()).update(addrs)
        self._move(self.server, self.server_if)
        self._up(self.server, self.server_if, () if None not in vlans else self.server_ips,
                 tuple(sorted(vlans.get(None, ()))))
        for vlan, addrs in sorted((v, a) for v, a in vlans.items() if v is not None):
            link = f"satemu-v{vlan}"
            try:
                _run([self.ip, "-n", self.server, "link", "add", "link", self.server_if,
                      "name", link, "type", "vlan", "id", str(vlan)],
                     f"{self.server}: VLAN {vlan} on {self.server_if}")
            except RealtimeError as e:
                if "Unknown device type" not in str(e):
                    raise
                raise RealtimeError("this kernel has no 802.1Q VLAN interfaces "
                                    "(CONFIG_VLAN_8021Q, module 8021q): terminals told apart by "
                                    "VLAN need them in real time") from None
            self._up(self.server, link, self.server_ips, tuple(sorted(addrs)))
        self._move(self.client, self.client_if)
        self._up(self.client, self.client_if, (), ())
        for k, ((mac, addrs, vlan), ns) in enumerate(zip(self.hosts, self.host_namespaces)):
            link = f"satemu-h{k}"
            self._add(ns)
            kind = ["macvlan", "mode", "bridge"] if vlan is None else ["vlan", "id", str(vlan)]
            _run([self.ip, "-n", self.client, "link", "add", "link", self.client_if, "name",
                  link, "address", mac, "type", *kind],
                 f"{self.client}: a {kind[0]} of {self.client_if} for {mac}")
            _run([self.ip, "-n", self.client, "link", "set", "dev", link, "netns", ns],
                 f"moving {link} into namespace {ns}")
            self._up(ns, link, tuple(addrs), self.server_ips)

    def __exit__(self, *exc: Any) -> None:
        problems = self.close()
        if problems and exc[0] is None:
            raise RealtimeError("; ".join(problems))

    def close(self) -> list[str]:
        """Delete the namespaces created so far (:func:`remove_namespace`), newest first, adding
        their names to ``deleted``; returns what could not be deleted. Idempotent: a namespace
        leaves the list only once it is gone (or could not be deleted), so a second call only
        finishes what an exception cut short."""
        return self._delete()

    def _wait_carrier(self) -> None:
        deadline = time.monotonic() + self.link_timeout
        for ns, ifname in ((self.client, self.client_if), (self.server, self.server_if)):
            while True:
                flags = _run([self.ip, "-n", ns, "-o", "link", "show", "dev", ifname],
                             f"{ns}: {ifname} state")
                if "LOWER_UP" in flags:
                    break
                self.check()
                if time.monotonic() > deadline:
                    raise RealtimeError(f"{ifname} has no carrier after {self.link_timeout:g} s "
                                        "(is the link cabled and the peer interface up?)")
                time.sleep(0.05)

    def _give_back(self, ns: str) -> None:
        """A TAP in ``ns`` (the client's or the server's) back to this process's namespace,
        down and without addresses: deleting ``ns`` would destroy it. Best effort: what fails
        here leaves the TAP to go with the namespace."""
        ifname = {self.client: self.client_if, self.server: self.server_if}.get(ns)
        if ifname is None:
            return
        shown = subprocess.run([self.ip, "-n", ns, "-d", "-o", "link", "show", "dev", ifname],
                               stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if shown.returncode != 0 or " tun type tap " not in f" {shown.stdout} ":
            return
        for argv in (["-n", ns, "addr", "flush", "dev", ifname],
                     ["-n", ns, "link", "set", "dev", ifname, "down"],
                     ["-n", ns, "link", "set", "dev", ifname, "netns", str(os.getpid())]):
            subprocess.run([self.ip, *argv], stdin=subprocess.DEVNULL, capture_output=True)

    def _delete(self) -> list[str]:
        problems = []
        while self._created:
            self._give_back(self._created[-1])
            problem = remove_namespace(self.ip, self._created[-1])
            ns = self._created.pop()
            if problem:
                problems.append(problem)
            else:
                self.deleted.append(ns)
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
