# SPDX-License-Identifier: BSD-2-Clause
"""The lab console's API (satemu.serve) over a fake box (the firmware's Python references behind
a serial port, tests/host/test_bod_profiles.FakeBox, with counters that move): the token, the
session lock, profile validation at each field, hostile names and bodies, the live stream, and
a box that stops answering. tests/system/test_serve_board.py runs it on the simulated board."""

import json
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from satemu.base import protocol as P
from satemu.box import device as device_mod
from satemu.serve.app import Console, create_app
from satemu.serve.auth import Tokens, hash_token, new_token, verify
from satemu.serve.boxes import Box

from test_bod_profiles import FakeBox

TOKEN = "lab-token-for-tests"


class LiveBox(FakeBox):
    """A box whose counters move: each GET_STATS finds 10 more frames in and out."""

    def __init__(self, **kwargs):
        super().__init__(bod=False, **kwargs)
        self.frames = 0
        self.silent = False

    def write(self, data: bytes):
        if not self.silent:
            super().write(data)

    def answer(self, op: int, p: bytes) -> bytes:
        if op == P.Op.GET_STATS:
            self.frames += 10
            values = dict.fromkeys(P.STATS_FIELDS, 0)
            values.update(rx_frames=self.frames, tx_frames=self.frames,
                          snapshot_cycle=1000 * self.frames)
            return bytes([P.Status.OK]) + P.STATS.pack(*values.values())
        if op == P.Op.RESET_STATS:
            self.frames = 0
            return bytes([P.Status.OK])
        return super().answer(op, p)


@pytest.fixture
def console(monkeypatch, tmp_path):
    fake = LiveBox()
    monkeypatch.setattr(device_mod.serial, "serial_for_url", lambda url, **kw: fake)
    box = Box("bench", "fake://bench", poll_s=0.02, timeout=0.3)
    hashed = hash_token(TOKEN)
    c = Console({"bench": box}, tmp_path / "data", Tokens(hashed))
    client = TestClient(create_app(c))
    client.fake = fake
    client.console = c
    yield client
    box.close()
    c.experiments.close()


def auth(token=TOKEN):
    return {"Authorization": f"Bearer {token}"}


def wait_up(client, name="bench"):
    deadline = time.monotonic() + 10
    while client.get(f"/api/boxes/{name}").json()["state"] != "up":
        assert time.monotonic() < deadline, client.get(f"/api/boxes/{name}").json()
        time.sleep(0.02)


def test_the_token_is_kept_hashed_and_checked(tmp_path):
    token = new_token(tmp_path)
    stored = (tmp_path / "token.scrypt").read_text()
    assert token not in stored and stored.startswith("scrypt$")
    assert (tmp_path / "token.scrypt").stat().st_mode & 0o777 == 0o600
    assert verify(token, stored) and not verify(token + "x", stored)
    assert Tokens.from_folder(tmp_path).check(token)
    assert not Tokens.from_folder(tmp_path / "none").configured


def test_changes_need_the_token_and_reads_do_not(console):
    wait_up(console)
    assert console.get("/api/boxes").json()[0]["hello"]["f_clk"] > 0
    r = console.post("/api/boxes/bench/load", json={"profile": "short-asym"})
    assert r.status_code == 401 and "Bearer" in r.json()["error"]
    r = console.post("/api/boxes/bench/load", json={"profile": "short-asym"},
                     headers=auth("wrong"))
    assert r.status_code == 403
    assert console.fake.commits == 0
    r = console.post("/api/boxes/bench/load", json={"profile": "short-asym"}, headers=auth())
    assert r.status_code == 200, r.json()
    assert console.fake.commits == 1
    assert r.json()["profile"] == "short-asym"
    assert r.json()["lines"][0].startswith("loaded short-asym into fake://bench")
    assert console.get("/api/boxes/bench").json()["loaded"]["profile"] == "short-asym"


def test_a_console_without_a_token_changes_nothing(console):
    console.console.tokens = Tokens(None)
    r = console.post("/api/boxes/bench/load", json={"profile": "short-asym"}, headers=auth())
    assert r.status_code == 403 and "--new-token" in r.json()["error"]
    assert console.fake.commits == 0


def test_reads_can_be_closed(console):
    console.console.open_reads = False
    assert console.get("/api/boxes").status_code == 401
    assert console.get("/api/boxes", headers=auth()).status_code == 200


def test_a_session_holds_the_box_against_other_writers(console):
    wait_up(console)
    s = console.post("/api/boxes/bench/session", json={"who": "alice"}, headers=auth()).json()
    # a second claim and a change without the session are refused, and change nothing
    r = console.post("/api/boxes/bench/session", json={"who": "bob"}, headers=auth())
    assert r.status_code == 409 and "alice" in r.json()["error"]
    r = console.post("/api/boxes/bench/load", json={"profile": "geo-testbed"}, headers=auth())
    assert r.status_code == 409 and "nothing was changed" in r.json()["error"]
    assert console.post("/api/boxes/bench/reset-stats", json={},
                        headers=auth()).status_code == 409
    assert console.fake.commits == 0
    assert console.get("/api/boxes/bench").json()["session"]["who"] == "alice"
    r = console.post("/api/boxes/bench/load", json={"profile": "geo-testbed",
                                                    "session": s["session"]}, headers=auth())
    assert r.status_code == 200 and console.fake.commits == 1
    r = console.post("/api/boxes/bench/load", json={"profile": "geo-testbed",
                                                    "session": "not-hers"}, headers=auth())
    assert r.status_code == 409
    assert console.delete(f"/api/boxes/bench/session?session={s['session']}",
                          headers=auth()).status_code == 200
    r = console.post("/api/boxes/bench/load", json={"profile": "short-asym"}, headers=auth())
    assert r.status_code == 200 and console.fake.commits == 2


def test_a_change_under_way_refuses_a_second(console):
    wait_up(console)
    box = console.console.boxes["bench"]
    with box.change(None):          # another request's change, under way
        r = console.post("/api/boxes/bench/load", json={"profile": "short-asym"},
                         headers=auth())
    assert r.status_code == 409 and "another request" in r.json()["error"]
    assert console.fake.commits == 0


def test_validation_gives_every_error_at_its_field(console):
    text = ('[forward]\nrate = "fast"\nbogus = 2\n[return]\nrate = "1 Mbit/s"\ndelay = -3\n'
            '[[timeline]]\nat = "1 s"\nforward = { rate = "z" }\n')
    r = console.post("/api/profiles/validate", json={"text": text})
    assert r.status_code == 200
    body = r.json()
    assert not body["ok"]
    assert [e["field"] for e in body["errors"]] == ["forward.bogus", "forward.rate",
                                                   "return.delay", "timeline[0].forward.rate"]
    assert all(e["message"].startswith(e["field"] + ": ") for e in body["errors"])
    # each at the line that sets it, for the page to show it beside
    assert [e["line"] for e in body["errors"]] == [3, 2, 6, 9]
    # TOML that does not read: one error, for the text
    r = console.post("/api/profiles/validate", json={"text": "[forward]\nrate =\n"})
    assert r.json()["errors"][0]["field"] == "" and "not valid TOML" in \
        r.json()["errors"][0]["message"]
    assert r.json()["errors"][0]["line"] == 2
    # a profile that reads but does not fit the board
    big = '[forward]\nrate = "1 Gbit/s"\ndelay = "5 s"\n[return]\n'
    r = console.post("/api/profiles/validate", json={"text": big, "board": "colorlight-5a-75b"})
    assert r.json()["errors"][0]["field"] == "forward"
    ok = console.post("/api/profiles/validate", json={"text": '[forward]\nrate = "2 Mbit/s"\n'
                                                              '[return]\n'}).json()
    assert ok["ok"] and any("board: sim" in line for line in ok["show"])


def test_profiles_are_saved_shown_and_loaded(console):
    wait_up(console)
    text = 'name = "mine"\n[forward]\nrate = "2 Mbit/s"\ndelay = "100 ms"\n[return]\n'
    assert console.put("/api/profiles/mine", json={"text": text},
                       headers=auth()).status_code == 200
    names = {p["name"]: p for p in console.get("/api/profiles").json()}
    assert names["mine"]["saved"] and not names["geo-testbed"]["saved"]
    shown = console.get("/api/profiles/mine").json()
    assert shown["text"] == text and any("forward" in line for line in shown["show"])
    # the same text as `satemu show` says, for a built-in
    from satemu.report.show import show_hardware, show_lines
    from satemu.link.profile import builtin_profiles
    hw, lines = show_hardware("sim")
    assert console.get("/api/profiles/geo-testbed").json()["show"] == \
        show_lines(builtin_profiles()["geo-testbed"], hw, lines)
    r = console.post("/api/boxes/bench/load", json={"profile": "mine"}, headers=auth())
    assert r.status_code == 200 and r.json()["profile"] == "mine"
    # a bad profile is not saved; a built-in's name is not taken
    r = console.put("/api/profiles/bad", json={"text": '[forward]\nrate = "x"\n[return]\n'},
                    headers=auth())
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "forward.rate"
    assert console.put("/api/profiles/geo-testbed", json={"text": text},
                       headers=auth()).status_code == 409
    assert console.delete("/api/profiles/mine", headers=auth()).status_code == 200
    assert console.get("/api/profiles/mine").status_code == 404


def test_hostile_names_paths_and_bodies_are_refused(console, tmp_path):
    secret = tmp_path / "secret.csv"
    secret.write_text("0,1000000\n")
    for name in ("..", ".hidden", "a b", "x" * 65, "a.tmp"):
        r = console.put(f"/api/profiles/{name}", json={"text": "[forward]\n[return]\n"},
                        headers=auth())
        assert r.status_code in (400, 404, 405), (name, r.status_code)
    assert console.put("/api/profiles/..%2F..%2Fescape", json={"text": "[forward]\n[return]\n"},
                       headers=auth()).status_code in (400, 404)
    assert not list((tmp_path / "data").rglob("*escape*"))
    # a profile naming a file outside the console's files folder
    for ref in (str(secret), "../secret.csv", "sub/x.csv"):
        text = f'[forward]\ntrace = "{ref}"\n[return]\n'
        r = console.post("/api/profiles/validate", json={"text": text})
        assert r.json()["errors"][0]["field"] == "forward.trace", ref
        r = console.post("/api/boxes/bench/load", json={"text": text}, headers=auth())
        assert r.status_code == 400
    assert console.fake.commits == 0
    # a file stored here may be named
    assert console.put("/api/files/rates.csv", content=b"time,rate\n0 s,2 Mbit/s\n1 s,1 Mbit/s\n",
                       headers=auth()).status_code == 200
    ok = console.post("/api/profiles/validate",
                      json={"text": '[forward]\ntrace = "rates.csv"\n[return]\n'}).json()
    assert ok["ok"], ok
    assert console.put("/api/files/bin", content=b"\xff\xfe", headers=auth()).status_code == 400
    # malformed JSON, a wrong type, an oversized body: one line each
    r = console.post("/api/profiles/validate", content=b"{not json",
                     headers={"content-type": "application/json"})
    assert r.status_code == 400 and "\n" not in r.json()["error"]
    r = console.post("/api/profiles/validate", json={"text": 3})
    assert r.status_code == 400 and r.json()["error"].startswith("text:")
    r = console.post("/api/profiles/validate", content=b"x" * (40 << 20),
                     headers={"content-type": "application/json"})
    assert r.status_code == 413
    r = console.get("/api/boxes/nope")
    assert r.status_code == 404 and "bench" in r.json()["error"]
    assert console.post("/api/boxes/bench/load", json={"profile": "a", "text": "b"},
                        headers=auth()).status_code == 400


def test_the_live_stream_carries_moving_counters(console):
    wait_up(console)
    readings = []
    with console.stream("GET", "/api/boxes/bench/live?max_updates=5") as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if line.startswith("data: "):
                readings.append(json.loads(line[6:]))
    assert len(readings) == 5
    frames = [d["reading"]["channels"]["forward"]["rx_frames"] for d in readings]
    assert frames == sorted(frames) and frames[-1] > frames[0]
    assert set(readings[0]["reading"]["channels"]) == {"forward", "return"}
    assert "timeline" in readings[0]["reading"]


def test_a_box_that_stops_answering_is_reported_and_the_console_goes_on(console):
    wait_up(console)
    console.fake.silent = True
    deadline = time.monotonic() + 10
    while console.get("/api/boxes/bench").json()["state"] != "down":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    d = console.get("/api/boxes/bench").json()
    assert d["error"] and "\n" not in d["error"]
    seq, live = console.console.boxes["bench"].live()
    assert live["error"] and live["reading"] is None
    r = console.post("/api/boxes/bench/load", json={"profile": "short-asym"}, headers=auth())
    assert r.status_code == 503
    console.fake.silent = False                 # it answers again: the poller finds it
    wait_up(console)
    assert console.get("/api/openapi.json").json()["info"]["title"] == "satemu lab console"


def test_a_field_is_found_at_its_line():
    from satemu.serve.app import line_of
    text = ('[forward]\nrate = "fast"\n[return]\ndelay = -3\n[return.bod]\ncra = "x"\n'
            '[[timeline]]\nat = "1 s"\n[[timeline]]\nat = "2 s"\nforward = { rate = "z" }\n')
    assert line_of(text, "forward.rate") == 2
    assert line_of(text, "return.delay") == 4
    assert line_of(text, "return.bod.superframe") == 5       # missing: its table's header
    assert line_of(text, "timeline[1].forward.rate") == 11   # within an inline table
    assert line_of(text, "timeline[0]") == 7
    assert line_of(text, "terminals") is None


def test_the_command_line(tmp_path, capsys):
    from satemu.cli import main
    assert main(["serve", "--data", str(tmp_path), "--new-token"]) == 0
    token = capsys.readouterr().out.strip().splitlines()[-1]
    assert Tokens.from_folder(tmp_path).check(token)
    assert main(["serve", "--data", str(tmp_path)]) == 2
    assert "no box to serve" in capsys.readouterr().err
    assert main(["serve", "--data", str(tmp_path), "--box", "a=socket://127.0.0.1:1",
                 "--listen", "nowhere"]) == 2
    assert "--listen" in capsys.readouterr().err
    assert main(["serve", "--data", str(tmp_path), "--box", "a/b=socket://127.0.0.1:1"]) == 2
    assert "box name" in capsys.readouterr().err
    (tmp_path / "token.scrypt").write_text("garbage\n")
    assert main(["serve", "--data", str(tmp_path), "--box", "a=socket://127.0.0.1:1"]) == 2
    assert "not a token hash" in capsys.readouterr().err


def wait_status(client, ident, timeout=240):
    deadline = time.monotonic() + timeout
    while True:
        d = client.get(f"/api/experiments/{ident}").json()
        if d["status"] != "running":
            return d
        assert time.monotonic() < deadline, d
        time.sleep(0.2)


def test_an_experiment_runs_to_its_results_and_files(console):
    fields = {"profile": ["short-asym"], "sizes": "20KB", "policies": "ratio:2,ratio:10",
              "engine": "model", "jobs": 1}
    assert console.post("/api/experiments", json=fields).status_code == 401
    r = console.post("/api/experiments", json=fields, headers=auth())
    assert r.status_code == 200, r.json()
    ident = r.json()["id"]
    d = wait_status(console, ident)
    assert d["status"] == "done" and d["exit"] == 0, d
    assert d["points"] == d["done"] == 2
    assert {"results.csv", "results.json", "report.md"} <= set(d["files"])
    rows = console.get(f"/api/experiments/{ident}/results").json()["rows"]
    assert sorted(row["ack"] for row in rows) == ["ratio:10", "ratio:2"]
    assert all(row["completed"] for row in rows)
    report = console.get(f"/api/experiments/{ident}/files/report.md")
    assert report.status_code == 200 and "ACK policy" in report.text
    plot = next(Path(console.console.experiments.get(ident).folder).rglob("*.png"))
    rel = plot.relative_to(console.console.experiments.get(ident).folder).as_posix()
    got = console.get(f"/api/experiments/{ident}/files/{rel}")
    assert got.status_code == 200 and got.content[:4] == b"\x89PNG"
    for bad in ("../request.json", "..%2F..%2Fetc%2Fpasswd", "/etc/passwd", "nope.csv"):
        assert console.get(f"/api/experiments/{ident}/files/{bad}").status_code == 404, bad


def test_a_console_started_later_lists_the_experiments_as_they_ended(console, tmp_path):
    """Experiments outlive their console: a new one on the same folder lists each as it ended
    (status.json), one that was running when its console went as interrupted, and serves their
    results and files."""
    r = console.post("/api/experiments", json={"profile": ["short-asym"], "sizes": "20KB",
                                               "policies": "ratio:2", "engine": "model",
                                               "jobs": 1}, headers=auth())
    done = wait_status(console, r.json()["id"])
    assert done["status"] == "done"
    r = console.post("/api/experiments", json={"profile": ["geo-testbed"], "sizes": "50MB",
                                               "policies": "ratio:2", "engine": "model",
                                               "jobs": 1}, headers=auth())
    running = r.json()["id"]
    c = console.console
    folder = c.experiments.folder
    lost = folder / "20260101-000000-abcdef"         # its console died with it running
    lost.mkdir()
    (lost / "request.json").write_text('{"profile": ["geo-testbed"]}')
    (folder / "not-an-experiment").mkdir()
    c.experiments.close()                            # as the console stops: cancelled
    again = Console({}, c.data, Tokens(hash_token(TOKEN)))
    client = TestClient(create_app(again))
    listed = {e["id"]: e for e in client.get("/api/experiments").json()}
    assert set(listed) == {done["id"], running, lost.name}
    assert (listed[done["id"]]["status"], listed[done["id"]]["exit"]) == ("done", 0)
    assert listed[done["id"]]["points"] == listed[done["id"]]["done"] == 1
    assert listed[running]["status"] == "cancelled"
    assert listed[lost.name]["status"] == "interrupted"
    rows = client.get(f"/api/experiments/{done['id']}/results").json()["rows"]
    assert [row["ack"] for row in rows] == ["ratio:2"]
    assert client.get(f"/api/experiments/{done['id']}/files/report.md").status_code == 200
    assert "status.json" not in listed[done["id"]]["files"]


def test_an_experiment_is_refused_or_cancelled(console):
    for fields, field in (({"kind": "rm -rf"}, "kind"), ({"profile": ["/etc/passwd"]}, "profile"),
                          ({"sizes": "--out=/tmp/x"}, "sizes"), ({"sizes": "1KB\n2KB"}, "sizes"),
                          ({"jobs": 10_000}, "jobs")):
        r = console.post("/api/experiments", json=fields, headers=auth())
        assert r.status_code == 400 and r.json()["error"].startswith(field), (fields, r.json())
    r = console.post("/api/experiments", json={"profile": ["geo-testbed"], "sizes": "50MB",
                                               "policies": "ratio:2", "engine": "model",
                                               "jobs": 1}, headers=auth())
    ident = r.json()["id"]
    time.sleep(1.0)
    d = console.post(f"/api/experiments/{ident}/cancel", headers=auth()).json()
    assert d["status"] == "cancelled"
    proc = console.console.experiments.get(ident).proc
    assert proc.poll() is not None
    assert wait_status(console, ident)["status"] == "cancelled"


def test_the_bod_trace_is_the_command_lines(monkeypatch, tmp_path, console):
    """GET bod-trace.csv gives the rows `satemu bod-trace` writes, shaped by the profile the
    console loaded; a box without BoD is a one-line 409."""
    from satemu.cli import main
    from test_bod_profiles import _model_records
    wait_up(console)            # (its connection open on its fake box, before this one's)
    records = _model_records()
    fake = FakeBox(history=records, count=len(records))
    monkeypatch.setattr(device_mod.serial, "serial_for_url", lambda url, **kw: fake)
    out = tmp_path / "bod.csv"
    assert main(["load", "geo-testbed-bod", "--port", "fake://bod"]) == 0
    assert main(["bod-trace", "--port", "fake://bod", "--out", str(out), "--from", "3",
                 "--profile", "geo-testbed-bod"]) == 0
    box = Box("bod", "fake://bod", poll_s=0.02, timeout=0.3)
    c = Console({"bod": box}, tmp_path / "data", Tokens(hash_token(TOKEN)))
    try:
        client = TestClient(create_app(c))
        wait_up(client, "bod")
        r = client.post("/api/boxes/bod/load", json={"profile": "geo-testbed-bod"},
                        headers=auth())
        assert r.status_code == 200, r.json()
        got = client.get("/api/boxes/bod/bod-trace.csv?from=3")
        assert got.status_code == 200 and got.headers["content-type"].startswith("text/csv")
        assert got.text == out.read_text()
        assert got.headers["x-satemu-shaped"] == "yes"
        assert got.headers["x-satemu-superframes"] == str(len(records))
        assert got.text.count("\n") == 1 + len(records) - 3
        assert client.get("/api/boxes/bod/bod-trace.csv?from=-1").status_code == 400
        assert client.get("/api/boxes/bod/bod-trace.csv?profile=nope").status_code == 404
        r = client.get("/api/boxes/bod/bod-trace.csv?profile=geo-testbed")
        assert r.status_code == 400 and "no BoD" in r.json()["error"], r.json()
    finally:
        box.close()
        c.experiments.close()
    r = console.get("/api/boxes/bench/bod-trace.csv")     # the fixture's box: no BoD hardware
    assert r.status_code == 409 and "no Bandwidth-on-Demand" in r.json()["error"], r.json()


SCENARIO = '''name = "mine"
profile = "traced.toml"
[[flow]]
ack = "ratio:2"
workload = {kind = "bulk", size = "20 KB"}
'''


def test_a_scenario_is_saved_checked_and_swept(console):
    """A scenario saved on the console, naming a profile saved there that names a file saved
    there, is swept as `satemu experiment scenario`: the three are copied into the experiment's
    inputs/, and nothing outside the console's folders is read."""
    rates = b"time,rate\n0 s,4 Mbit/s\n1 s,2 Mbit/s\n"
    assert console.put("/api/files/rates.csv", content=rates, headers=auth()).status_code == 200
    profile = ('name = "traced"\n[forward]\ntrace = "rates.csv"\ndelay = "20 ms"\n'
               '[return]\nrate = "2 Mbit/s"\ndelay = "20 ms"\n')
    r = console.put("/api/profiles/traced", json={"text": profile}, headers=auth())
    assert r.status_code == 200, r.json()
    for ref in ("../profiles/traced.toml", "/etc/passwd", "traced", "nope.toml"):
        r = console.post("/api/scenarios/validate",
                         json={"text": SCENARIO.replace("traced.toml", ref)}).json()
        assert not r["ok"] and r["errors"][0]["field"] == "profile", (ref, r)
        assert r["errors"][0]["line"] == 2
    r = console.post("/api/scenarios/validate",
                     json={"text": SCENARIO.replace('"ratio:2"', '"sometimes"')}).json()
    assert not r["ok"] and r["errors"][0]["field"].startswith("flow.1"), r
    ok = console.post("/api/scenarios/validate", json={"text": SCENARIO}).json()
    assert ok["ok"] and ok["profile"] == "traced" and ok["flows"][0]["workload"] == "bulk", ok
    assert console.put("/api/scenarios/mine", json={"text": SCENARIO}).status_code == 401
    assert console.put("/api/scenarios/shared-return", json={"text": SCENARIO},
                       headers=auth()).status_code == 409
    assert console.put("/api/scenarios/mine", json={"text": SCENARIO},
                       headers=auth()).status_code == 200
    listed = {s["name"]: s for s in console.get("/api/scenarios").json()}
    assert listed["mine"]["saved"] and not listed["shared-return"]["saved"]
    assert listed["shared-return"]["profile"] == "geo-shared-bod"
    assert console.get("/api/scenarios/mine").json()["text"] == SCENARIO
    for fields, field in (({"kind": "scenario"}, "scenario"),
                          ({"scenario": "mine"}, "scenario"),
                          ({"kind": "scenario", "scenario": "../mine"}, "scenario")):
        r = console.post("/api/experiments", json=fields, headers=auth())
        assert r.status_code == 400 and r.json()["error"].startswith(field), (fields, r.json())
    r = console.post("/api/experiments", json={"kind": "scenario", "scenario": "mine",
                                               "set": ["flow.1.ack=ratio:2,ratio:10"],
                                               "engine": "model", "jobs": 1}, headers=auth())
    assert r.status_code == 200, r.json()
    ident = r.json()["id"]
    d = wait_status(console, ident)
    assert d["status"] == "done" and d["exit"] == 0, d
    assert d["points"] == d["done"] == 2
    folder = console.console.experiments.get(ident).folder
    assert sorted(p.name for p in (folder / "inputs").iterdir()) == \
        ["mine.toml", "rates.csv", "traced.toml"]
    assert (folder / "inputs" / "rates.csv").read_bytes() == rates
    # a saved profile that names a file runs in a plain sweep too, from its copy
    r = console.post("/api/experiments", json={"profile": ["traced"], "sizes": "20KB",
                                               "policies": "ratio:2", "engine": "model",
                                               "jobs": 1}, headers=auth())
    d = wait_status(console, r.json()["id"])
    assert d["status"] == "done" and d["points"] == d["done"] == 1, d
    assert console.delete("/api/scenarios/mine", headers=auth()).status_code == 200
    assert console.get("/api/scenarios/mine").status_code == 404


def test_a_board_is_flashed_through_the_console(monkeypatch, tmp_path):
    """POST flash runs `satemu flash`'s openFPGALoader command (a stand-in here) with the box's
    connection closed, and the box answers again after; a board the box does not answer as, a
    simulated board and a request without the token are refused, and nothing is run."""
    from satemu.base.boards import BOARDS
    from satemu.box import flash
    from test_flash import fake_loader, make_bit, write_report
    fake = LiveBox(hw=BOARDS["versa-ecp5"].hardware)
    monkeypatch.setattr(device_mod.serial, "serial_for_url", lambda url, **kw: fake)
    monkeypatch.setattr(flash, "RESULTS", tmp_path / "results")
    args = fake_loader(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    bit = make_bit(tmp_path / "build" / "top.bit")
    write_report(tmp_path / "results", bitstream=str(bit))
    box = Box("versa", "fake://versa", poll_s=0.02, timeout=0.3)
    sim = Box("simulated", sim=True, poll_s=0.02)
    c = Console({"versa": box, "simulated": sim}, tmp_path / "data", Tokens(hash_token(TOKEN)))
    try:
        client = TestClient(create_app(c))
        wait_up(client, "versa")
        assert client.post("/api/boxes/versa/flash",
                           json={"board": "versa-ecp5"}).status_code == 401
        r = client.post("/api/boxes/versa/flash", json={"board": "versa-ecp5", "dry_run": True},
                        headers=auth())
        assert r.status_code == 200 and r.json()["command"] == \
            ["openFPGALoader", "-c", "ft2232", "-m", str(bit)], r.json()
        assert not args.exists()
        for body, status in (({"board": "colorlight-5a-75b"}, 409), ({"board": "sim"}, 400),
                             ({"board": "versa-ecp5", "mode": "rom"}, 400),
                             ({"board": "versa-ecp5", "cable": "-x; rm"}, 400),
                             ({"board": "versa-ecp5", "verify": True}, 400)):
            r = client.post("/api/boxes/versa/flash", json=body, headers=auth())
            assert r.status_code == status and "\n" not in r.json()["error"], (body, r.json())
        r = client.post("/api/boxes/simulated/flash", json={"board": "versa-ecp5"},
                        headers=auth())
        assert r.status_code == 409 and "simulated" in r.json()["error"]
        assert not args.exists()
        hellos = fake.ops.count(P.Op.HELLO)
        r = client.post("/api/boxes/versa/flash", json={"board": "versa-ecp5", "mode": "spi",
                                                        "verify": True}, headers=auth())
        assert r.status_code == 200, r.json()
        assert r.json()["exit"] == 0 and r.json()["output"][-1] == "fake: programming"
        assert args.read_text().splitlines() == ["-c", "ft2232", "-f", "--verify", str(bit)]
        wait_up(client, "versa")
        deadline = time.monotonic() + 10
        while fake.ops.count(P.Op.HELLO) == hellos:        # its connection opened afresh
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        box.close()
        sim.close()
        c.experiments.close()


def test_the_bod_rows_start_over_when_the_block_restarts_elsewhere(monkeypatch, tmp_path):
    """The live stream's BoD rows follow a block restart the console did not cause (a load from
    the command line, a timeline's layout step): from superframe 0 of the new start."""
    from test_bod_profiles import _model_records
    records = _model_records(superframes=20)
    fake = FakeBox(history=records, count=10)
    monkeypatch.setattr(device_mod.serial, "serial_for_url", lambda url, **kw: fake)
    box = Box("bod", "fake://bod", poll_s=0.02, timeout=0.3)
    published, publish = [], box._publish
    box._publish = lambda reading: (published.append(reading), publish(reading))
    c = Console({"bod": box}, tmp_path / "data", Tokens(hash_token(TOKEN)))

    def rows_until(want_start, want_sf):
        """The superframes of the rows published with ``want_start``, once ``want_sf`` is."""
        deadline = time.monotonic() + 10
        while True:
            seen = [r["sf"] for reading in list(published) if reading and "bod" in reading
                    and reading["bod"]["start"] == want_start for r in reading["bod"]["rows"]]
            if want_sf in seen:
                return seen
            assert time.monotonic() < deadline, seen
            time.sleep(0.01)
    try:
        client = TestClient(create_app(c))
        wait_up(client, "bod")
        assert client.post("/api/boxes/bod/load", json={"profile": "geo-testbed-bod"},
                           headers=auth()).status_code == 200
        assert rows_until(fake.start, 9)[0] == 0
        fake.count, fake.start = 4, fake.start + 123_456     # restarted, by another hand
        assert rows_until(fake.start, 3) == [0, 1, 2, 3]
    finally:
        box.close()
        c.experiments.close()


def test_an_experiment_runs_on_dask(console):
    """The dask field: the sweep's points on a Dask cluster (a local one here, as `satemu
    experiment --dask local` makes), to the same results as on the server's cores."""
    fields = {"profile": ["short-asym"], "sizes": "20KB", "policies": "ratio:10",
              "engine": "model", "jobs": 1}
    rows = {}
    for dask in (None, "local"):
        r = console.post("/api/experiments", json={**fields, **({"dask": dask} if dask else {})},
                         headers=auth())
        assert r.status_code == 200, r.json()
        d = wait_status(console, r.json()["id"])
        assert d["status"] == "done" and d["points"] == d["done"] == 1, d
        got = console.get(f"/api/experiments/{d['id']}/results").json()["rows"]
        rows[dask] = sorted((row["ack"], row["return_packets"], row["completion_s"])
                            for row in got)
        log = "\n".join(d["log_tail"])
        assert ("Dask" in log) == (dask is not None), log
    assert rows[None] == rows["local"]
    r = console.post("/api/experiments", json={**fields, "dask": "inproc://x"}, headers=auth())
    d = wait_status(console, r.json()["id"])
    assert d["status"] == "failed" and "tcp://" in "\n".join(d["log_tail"]), d


def test_a_simulated_board_that_is_not_there_is_told_in_the_console_s_words(tmp_path):
    """A socket:// box that does not answer: the error says what to do in the console (start
    it, or let the console run one), not the command line's `satemu sim start`."""
    import socket
    with socket.socket() as s:                    # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    box = Box("gone", f"socket://127.0.0.1:{port}", poll_s=0.02, timeout=0.3)
    try:
        deadline = time.monotonic() + 10
        while box.describe()["error"] is None:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        error = box.describe()["error"]
        assert box.describe()["state"] == "down"
        assert "satemu serve --sim NAME" in error and "satemu sim start" not in error, error
    finally:
        box.close()


def test_the_last_load_is_kept_while_the_box_holds_it(monkeypatch, tmp_path):
    """A console started later on the same folder shows the last load through the console as
    in force if the box still holds the profiles it left, and not once something else was
    loaded."""
    from satemu.base.params import ChannelRegs
    fake = LiveBox()
    monkeypatch.setattr(device_mod.serial, "serial_for_url", lambda url, **kw: fake)

    def console_on(data):
        box = Box("bench", "fake://bench", poll_s=0.02, timeout=0.3)
        c = Console({"bench": box}, data, Tokens(hash_token(TOKEN)))
        client = TestClient(create_app(c))
        wait_up(client)
        return box, c, client

    def loaded_after_a_while(client):
        time.sleep(0.3)                         # some readings: the comparison is made
        return client.get("/api/boxes/bench").json()["loaded"]

    box, c, client = console_on(tmp_path / "data")
    assert client.post("/api/boxes/bench/load", json={"profile": "short-asym"},
                       headers=auth()).status_code == 200
    deadline = time.monotonic() + 10
    while not (tmp_path / "data" / "boxes" / "bench.json").exists():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    box.close()
    box, c, client = console_on(tmp_path / "data")
    got = loaded_after_a_while(client)
    assert got is not None and got["profile"] == "short-asym", got
    box.close()
    fake.regs[0] = ChannelRegs()                # loaded from elsewhere since
    box, c, client = console_on(tmp_path / "data")
    assert loaded_after_a_while(client) is None
    box.close()


def test_names_of_every_allowed_length_are_read_back(console):
    """A profile or scenario saved under a name of the longest length a client may give (64)
    is shown, named by a scenario, planned into an experiment and deleted: the store's ".toml"
    is not counted in the name."""
    long = "p" * 64
    profile = 'name = "x"\n[forward]\nrate = "2 Mbit/s"\ndelay = "20 ms"\n[return]\n'
    assert console.put(f"/api/profiles/{long}", json={"text": profile},
                       headers=auth()).status_code == 200
    assert console.get(f"/api/profiles/{long}").json()["saved"]
    scenario = SCENARIO.replace("traced.toml", f"{long}.toml")
    assert console.post("/api/scenarios/validate", json={"text": scenario}).json()["ok"]
    assert console.put(f"/api/scenarios/{'s' * 64}", json={"text": scenario},
                       headers=auth()).status_code == 200
    assert console.get(f"/api/scenarios/{'s' * 64}").json()["saved"]
    experiments = console.console.experiments
    argv, inputs = experiments.argv({"kind": "scenario", "scenario": "s" * 64},
                                    experiments.folder / "x")
    assert inputs == [("scenario", "s" * 64), ("profile", long)]
    assert console.delete(f"/api/scenarios/{'s' * 64}", headers=auth()).status_code == 200
    assert console.delete(f"/api/profiles/{long}", headers=auth()).status_code == 200
