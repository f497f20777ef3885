# SPDX-License-Identifier: BSD-2-Clause
"""The lab console (``satemu serve``) on the simulated board: its API loads a profile, its live
state moves as frames cross the board, a second writer and a request without the token are
refused; and a real browser (Debian's Chromium, driven by Playwright) uses its page: an error
shown beside its field, a profile loaded from the editor, the dashboard's counters moving while
frames cross, a small experiment run to its table and plots. Screenshots of each step are left
in the test's output folder."""

import re
import socket
import threading
import time
from pathlib import Path

import pytest

from satemu.base.ether import to_wire
from satemu.serve.app import Console, create_app
from satemu.serve.auth import Tokens, hash_token
from satemu.serve.boxes import Box
from satemu.model.board import PORT_A, PORT_B
from sim.frames import EthPorts

TOKEN = "console-system-test"
CHROMIUM = Path("/usr/bin/chromium")
# Chromium as root, headless, with nothing that reaches outside this machine.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def frames(n: int, size: int = 200) -> list[bytes]:
    """``n`` Ethernet frames of ``size`` bytes before the FCS, of the local experimental
    EtherType (no terminal table is in force: any frame crosses)."""
    head = bytes.fromhex("025341540001" "025341540002" "88b5")
    return [to_wire(head + bytes([i & 0xFF]) * (size - len(head))) for i in range(n)]


def send(eth_port: int, n: int) -> None:
    """``n`` frames into each port, back to back; the board runs freely while they cross."""
    with EthPorts(eth_port) as eth:
        for wire in frames(n):
            eth.send(PORT_B, wire)
            eth.send(PORT_A, wire)
        eth.now()                   # every frame sent has reached the board's wire


def auth():
    return {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def console(board_state, tmp_path):
    box = Box("sim", board_state["url"], poll_s=0.1)
    c = Console({"sim": box}, tmp_path / "console", Tokens(hash_token(TOKEN)))
    yield c
    box.close()                     # the UART is the next test's
    c.experiments.close()


def wait(predicate, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_the_api_on_the_simulated_board(console, board_state):
    from fastapi.testclient import TestClient
    client = TestClient(create_app(console))
    wait(lambda: client.get("/api/boxes/sim").json()["state"] == "up", "the box up")
    r = client.post("/api/boxes/sim/load", json={"profile": "short-asym"})
    assert r.status_code == 401
    r = client.post("/api/boxes/sim/load", json={"profile": "short-asym", "reseed": True},
                    headers=auth())
    assert r.status_code == 200, r.json()
    assert client.post("/api/boxes/sim/reset-stats", json={}, headers=auth()).status_code == 200
    before = wait(lambda: client.get("/api/boxes/sim/state").json()["reading"], "a reading")
    send(board_state["eth_port"], 20)
    moved = wait(lambda: (lambda s: s["reading"] and s["reading"]["channels"]["forward"]
                          ["tx_frames"] >= before["channels"]["forward"]["tx_frames"] + 20
                          and s)(client.get("/api/boxes/sim/state").json()),
                 "the forward channel's frames out")
    got = moved["reading"]["channels"]
    assert got["return"]["rx_frames"] >= 20 and got["forward"]["rx_frames"] >= 20
    assert moved["loaded"]["profile"] == "short-asym"
    # no timeline runs (a load stops one; an earlier test's may have ended, "done")
    assert moved["reading"]["timeline"]["state_name"] != "running"
    assert moved["reading"]["timeline"]["words"].startswith("timeline: ")
    # the box's frame log, as pcapng: every frame that crossed, in and out
    r = client.get("/api/boxes/sim/capture.pcapng")
    assert r.status_code == 200, r.text
    from satemu.base.pcapng import read_pcapng
    cap_path = console.data / "fetched.pcapng"
    cap_path.write_bytes(r.content)
    cap = read_pcapng(cap_path)
    assert int(r.headers["x-satemu-records"]) >= 40 and len(cap.packets) >= 40
    # a second writer, while a session holds the box, changes nothing
    s = client.post("/api/boxes/sim/session", json={"who": "alice"}, headers=auth()).json()
    r = client.post("/api/boxes/sim/load", json={"profile": "geo-testbed"}, headers=auth())
    assert r.status_code == 409
    prof = console.boxes["sim"].call(lambda dev: dev.get_profile(0))
    from satemu.link.profile import load_profile
    want = load_profile("short-asym").check(console.boxes["sim"].call(
        lambda dev: dev.hardware()))["forward"]
    assert prof["delay"] == want.delay          # still short-asym's
    r = client.post("/api/boxes/sim/load", json={"profile": "geo-testbed",
                                                 "session": s["session"]}, headers=auth())
    assert r.status_code == 200
    # a profile naming a file outside the console's folder
    r = client.post("/api/boxes/sim/load", json={"text": '[forward]\ntrace = "/etc/passwd"\n'
                                                         '[return]\n',
                                                 "session": s["session"]}, headers=auth())
    assert r.status_code == 400 and "forward.trace" in r.json()["error"]
    # the BoD records, as `satemu bod-trace` writes them, shaped by the profile loaded
    from satemu.box.bod_trace import COLUMNS
    r = client.post("/api/boxes/sim/load", json={"profile": "geo-testbed-bod",
                                                 "session": s["session"]}, headers=auth())
    assert r.status_code == 200, r.json()
    wait(lambda: client.get("/api/boxes/sim/bod-trace.csv").text.count("\n") > 3,
         "BoD records", 120)
    r = client.get("/api/boxes/sim/bod-trace.csv")
    assert r.headers["x-satemu-shaped"] == "yes"
    assert r.text.splitlines()[0] == ",".join(COLUMNS)


class Server:
    """The console's app on uvicorn, on a free port of this machine, in a thread."""

    def __init__(self, console):
        import uvicorn
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(create_app(console), host="127.0.0.1",
                                                    port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        wait(lambda: self.server.started, "the server up", 30)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(10)


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed "
                                                  "(make's set-up installs it)")
def test_a_browser_uses_the_page(console, board_state, tmp_path):
    from playwright.sync_api import expect, sync_playwright
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with Server(console) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(base + "/")
        expect(page.locator("#box-state")).to_contain_text("up", timeout=30_000)
        # the simulated board has a frame log and BoD: both are offered for download
        expect(page.locator("#dl-capture")).to_be_visible()
        expect(page.locator("#dl-bod")).to_be_visible()
        page.screenshot(path=shots / "1-dashboard.png")
        # the editor: a built-in opened, a field broken, the error beside its line
        page.click("nav .tab[data-view=profiles]")
        page.click("#profile-list li:has-text('short-asym')")
        expect(page.locator("#text")).to_have_value(re.compile(r"\[forward\]"))
        text = page.locator("#text").input_value()
        page.fill("#text", text.replace('rate = "8.5 Mbit/s"', 'rate = "fast"', 1))
        page.click("#validate")
        note = page.locator("#notes .note-line[data-field='forward.rate']")
        expect(note).to_contain_text("expected a rate")
        line = int(note.get_attribute("data-line"))
        assert page.locator("#text").input_value().splitlines()[line - 1].startswith("rate")
        expect(page.locator("#gutter .bad")).to_have_count(1)
        page.screenshot(path=shots / "2-error-beside-its-field.png")
        # fixed, and loaded into the box with the token
        page.fill("#text", text)
        page.fill("#token", TOKEN)
        page.dispatch_event("#token", "change")
        page.click("#load")
        expect(page.locator("#verdict")).to_contain_text("loaded", timeout=30_000)
        page.screenshot(path=shots / "3-loaded.png")
        # the dashboard's counters move while frames cross the board
        page.click("nav .tab[data-view=dashboard]")
        cell = page.locator("#counters tr[data-name=tx_frames] td[data-ch=forward]")
        expect(cell).not_to_have_text("", timeout=30_000)
        first = int(cell.inner_text())
        send(board_state["eth_port"], 30)
        page.wait_for_function(
            f"() => Number(document.querySelector("
            f"'#counters tr[data-name=tx_frames] td[data-ch=forward]').textContent) >= "
            f"{first + 30}", timeout=60_000)
        page.screenshot(path=shots / "4-counters-moving.png")
        # the box stops answering (its address now refuses): the page says so, and the
        # console goes on; once the box answers again, the page shows it up
        box = console.boxes["sim"]
        url = box.url
        with box.uart:
            box._drop()
            box.url = "socket://127.0.0.1:9"
        expect(page.locator("#box-error")).to_contain_text("cannot open", timeout=30_000)
        page.screenshot(path=shots / "4b-box-not-answering.png")
        with box.uart:
            box.url = url
        expect(page.locator("#box-error")).to_be_hidden(timeout=30_000)
        # a small experiment, run from the page to its table and plots
        page.click("nav .tab[data-view=experiments]")
        page.select_option("#exp-profile", ["short-asym"])
        page.fill("#exp-sizes", "20KB")
        page.fill("#exp-policies", "ratio:2,ratio:10")
        page.select_option("#exp-engine", "model")
        page.click("#exp-run")
        expect(page.locator("#exp-list td.status").first).to_have_text("done", timeout=180_000)
        page.click("#exp-list button:has-text('Show')")
        expect(page.locator("#exp-detail table tr")).to_have_count(3, timeout=30_000)
        image = page.locator("#exp-detail img[alt$='sweep_return_bytes.png']")
        expect(image).to_be_visible(timeout=30_000)
        page.wait_for_function("() => [...document.querySelectorAll('#exp-detail img')]"
                               ".every(i => i.complete && i.naturalWidth > 0)")
        page.screenshot(path=shots / "5-experiment.png", full_page=True)
        browser.close()
    assert sorted(p.name for p in shots.iterdir()) == [
        "1-dashboard.png", "2-error-beside-its-field.png", "3-loaded.png",
        "4-counters-moving.png", "4b-box-not-answering.png", "5-experiment.png"]
