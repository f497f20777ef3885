# SPDX-License-Identifier: BSD-2-Clause
"""One simulated board for the whole system-test session (built once, booted once).

Where the tests may (root, /dev/net/tun), the board's ports are also bridged to two TAP
interfaces for the real-time test. They stay down, so the kernel sends nothing on them, until
that test moves them into its namespaces; it runs last (test_tap.py), and nothing else uses
the board after it. One board for the session: `make test` runs the data-path points' board in
a session beside this one (scripts/test.sh), one board a core.

Real-time tests (network namespaces, veth, TAP) need root with CAP_NET_ADMIN; the TAP test also
/dev/net/tun. Without them they skip through the fixtures here (``realtime_ip``, ``tap_ready``)
with a :class:`RealtimeSkip` naming what is missing. A skip is not a pass: when the environment
has CI=true, such a skip fails the run, unless SATEMU_ALLOW_SKIP=1 says skipping is accepted.
SATEMU_TEST_AS_UNPRIVILEGED=1 makes these fixtures act as if not root (to test that rule)."""

import os
import shutil
import subprocess
from typing import Optional

import pytest

from sim import board

ALLOW_SKIP = "SATEMU_ALLOW_SKIP"
AS_UNPRIVILEGED = "SATEMU_TEST_AS_UNPRIVILEGED"
CAP_NET_ADMIN = 12                      # bit in /proc/self/status CapEff (linux/capability.h)
IP_SEARCH = ("/usr/sbin", "/sbin", "/usr/bin", "/bin")


class RealtimeSkip(pytest.skip.Exception):
    """A real-time test cannot run here; the message says what is missing."""


def _has_cap_net_admin() -> bool:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> CAP_NET_ADMIN & 1)
    except (OSError, ValueError):
        pass
    return False


def realtime_missing(tun: bool = False) -> Optional[str]:
    """What keeps real-time tests from running here (root, CAP_NET_ADMIN, iproute2, and with
    ``tun`` /dev/net/tun), in words; None when nothing does."""
    if os.environ.get(AS_UNPRIVILEGED) == "1" or os.geteuid() != 0:
        return "root: real-time mode creates network namespaces (this runs as uid " \
            f"{os.geteuid()}{', acting unprivileged' if os.environ.get(AS_UNPRIVILEGED) else ''})"
    if not _has_cap_net_admin():
        return "CAP_NET_ADMIN: root here lacks it (a container without --cap-add=NET_ADMIN?)"
    if shutil.which("ip", path=os.pathsep.join([os.environ.get("PATH", ""), *IP_SEARCH])) \
            is None:
        return "iproute2's 'ip' command"
    if tun and not os.path.exists("/dev/net/tun"):
        return "/dev/net/tun (TAP interfaces)"
    return None


def _ci_strict() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1") \
        and os.environ.get(ALLOW_SKIP) != "1"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI=true without SATEMU_ALLOW_SKIP=1, a real-time skip is reported as a failure."""
    report = yield
    if report.skipped and call.excinfo is not None \
            and call.excinfo.errisinstance(RealtimeSkip) and _ci_strict():
        report.outcome = "failed"
        report.longrepr = (f"{call.excinfo.value.msg}. CI=true: a skipped real-time test fails "
                           "the run. Run the suite as root with CAP_NET_ADMIN (and /dev/net/tun "
                           f"for the TAP test), or set {ALLOW_SKIP}=1 to let it skip.")
    return report


@pytest.fixture(scope="module")
def veth(realtime_ip):
    """A factory of fresh veth pairs (client end, server end); each real-time run consumes one
    (a veth dies with the namespace it was moved into). At the module's end every pair and
    every namespace of this process's runs (satemu.quic.netns.namespace_owner) is removed."""
    import itertools
    from satemu.quic.netns import namespace_owner
    ip, pid = realtime_ip, os.getpid()
    serial = itertools.count()
    made = []

    def run(*argv):
        return subprocess.run([ip, *argv], stdin=subprocess.DEVNULL, capture_output=True,
                              text=True)

    def make():
        n = next(serial)
        a, b = f"sc{pid % 10000}x{n}", f"ss{pid % 10000}x{n}"
        done = run("link", "add", a, "type", "veth", "peer", "name", b)
        assert done.returncode == 0, done.stderr
        made.append(a)
        return a, b

    yield make
    for a in made:
        run("link", "del", a)                   # normally gone with its namespace already
    for line in run("netns", "list").stdout.splitlines():
        if line.split() and namespace_owner(line.split()[0]) == pid:
            run("netns", "del", line.split()[0])


@pytest.fixture(scope="session")
def realtime_ip():
    """iproute2's ``ip``, once root, CAP_NET_ADMIN and ``ip netns add`` are known to work here;
    else a :class:`RealtimeSkip`."""
    missing = realtime_missing()
    if missing:
        raise RealtimeSkip(f"real-time test needs {missing}")
    ip = shutil.which("ip", path=os.pathsep.join([os.environ.get("PATH", ""), *IP_SEARCH]))
    probe = f"satemu-probe{os.getpid()}"
    done = subprocess.run([ip, "netns", "add", probe], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RealtimeSkip("real-time test needs working network namespaces ('ip netns add' "
                           f"failed: {done.stderr.strip()}; CAP_SYS_ADMIN?)")
    subprocess.run([ip, "netns", "del", probe], stdin=subprocess.DEVNULL, capture_output=True)
    return ip


@pytest.fixture(scope="session")
def tap_ready():
    """Nothing, once the TAP test can run here (root, CAP_NET_ADMIN, iproute2, /dev/net/tun);
    else a :class:`RealtimeSkip`. Request it before ``board_state``."""
    missing = realtime_missing(tun=True)
    if missing:
        raise RealtimeSkip(f"TAP test needs {missing}")


def _taps():
    if realtime_missing(tun=True):
        return None
    return (f"sa{os.getpid() % 10000}", f"sb{os.getpid() % 10000}")


_running: dict = {}          # the board while it runs: "state"


def _boards_built(config) -> None:
    """Wait until the session's background builds (tests/conftest.py), which build this board
    first, have built it or ended."""
    import time
    proc = getattr(config, "satemu_boards", None)
    built = board.build_dir() / ".built"
    while proc is not None and proc.poll() is None and not built.exists():
        time.sleep(1)


def _stop_board() -> None:
    state = _running.pop("state", None)
    if state is not None:
        board.kill(state)


@pytest.fixture(scope="session")
def board_state(request):
    """The running board: its UART ``url``, the Ethernet module's ``eth_port`` and ``taps``.
    It stops after the last test that uses it (``pytest_runtest_teardown``) or at the
    session's end, whichever comes first. The session's background build of it
    (tests/conftest.py) ends first, so that the two never build one board at once."""
    _boards_built(request.config)
    _running["state"] = state = board.launch(taps=_taps())
    yield state
    _stop_board()


def pytest_runtest_teardown(item, nextitem):
    """Stop the board once no later test uses it. An idle board runs freely, holding a core
    that the tests after the system tests (the data-path boards, the bitstream's build) need."""
    if "state" not in _running or "board_state" not in item.fixturenames:
        return
    items = item.session.items
    later = items[items.index(item) + 1:]
    if not any("board_state" in i.fixturenames for i in later):
        _stop_board()


@pytest.fixture(scope="session")
def url(board_state):
    return board_state["url"]
