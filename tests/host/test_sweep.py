# SPDX-License-Identifier: BSD-2-Clause
"""satemu experiment as a sweep: parallel, on Dask, resumable, with one-line errors."""

from __future__ import annotations

import csv
import json

import pytest

from satemu.cli import main

BASE = ["experiment", "ack-policy", "--engine", "model", "--profile", "short-asym",
        "--sizes", "30KB", "--max-time", "20"]
# Four points: two return rates x two ACK policies.
SWEEP = BASE + ["--policies", "ratio:2,ratio:10", "--set", "return.rate=500kbit/s,1.5Mbit/s"]
TIMING = {"wall_s", "speed"}             # what may differ between two runs of one point


def rows(out) -> list[dict]:
    with open(out / "results.csv", newline="") as f:
        return list(csv.DictReader(f))


def figures(out) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows(out)]


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    out = tmp_path_factory.mktemp("serial")
    assert main(SWEEP + ["--jobs", "1", "--out", str(out)]) == 0
    return out


def test_serial_sweep_writes_a_row_per_point(serial):
    got = rows(serial)
    assert len(got) == 4
    assert {(r["return.rate"], r["ack"]) for r in got} == {
        (rate, ack) for rate in ("500kbit/s", "1.5Mbit/s") for ack in ("ratio:2", "ratio:10")}
    assert {r["profile"] for r in got} == {"short-asym+return.rate=500kbitps",
                                           "short-asym+return.rate=1.5Mbitps"}
    assert {r["return_rate_bps"] for r in got} == {"500000.0", "1500000.0"}
    for r in got:
        assert r["completed"] == "True" and r["consistent"] == "True"
        assert float(r["goodput_mbps"]) > 0
        result = json.loads((serial / r["run_dir"] / "result.json").read_text())
        assert result["profile"] == r["profile"] and result["ack"] == r["ack"]
        assert result["return_bytes"] == int(r["return_bytes"])
    # The return link's rate shows in the figures: slower, later.
    by = {(r["return.rate"], r["ack"]): float(r["completion_s"]) for r in got}
    assert by["500kbit/s", "ratio:2"] > by["1.5Mbit/s", "ratio:2"]
    data = json.loads((serial / "results.json").read_text())
    assert len(data["rows"]) == 4 and data["failed"] == []
    report = (serial / "report.md").read_text()
    assert "(sweep_return_bytes.png)" in report
    assert "(sweep_goodput_vs_return_rate.png)" in report
    # Each run's plots, the packets' too, linked where drawn.
    for r in got:
        for name in ("forward_goodput", "return_size_cdf", "ack_sizes"):
            assert (serial / r["run_dir"] / f"{name}.png").exists()
            assert f"({r['run_dir']}/{name}.png)" in report
    assert (serial / "sweep_return_bytes.png").stat().st_size > 1000
    assert (serial / "sweep_goodput_vs_return_rate.png").stat().st_size > 1000


def test_two_jobs_give_the_serial_rows(serial, tmp_path):
    assert main(SWEEP + ["--jobs", "2", "--out", str(tmp_path)]) == 0
    assert figures(tmp_path) == figures(serial)


def test_a_local_dask_cluster_gives_the_serial_rows(serial, tmp_path):
    assert main(SWEEP + ["--dask", "local", "--jobs", "2", "--out", str(tmp_path)]) == 0
    assert figures(tmp_path) == figures(serial)


def test_a_rerun_runs_only_the_missing_points(tmp_path, capsys):
    # The "interrupted" sweep: only the first rate was done.
    assert main(BASE + ["--policies", "ratio:2,ratio:10", "--set", "return.rate=500kbit/s",
                        "--jobs", "1", "--out", str(tmp_path)]) == 0
    first = {r["point"]: r for r in rows(tmp_path)}
    capsys.readouterr()
    assert main(SWEEP + ["--jobs", "1", "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    ran = [line for line in err.splitlines() if line.startswith("[")]
    assert len(ran) == 2 and all("return.rate=1.5Mbitps" in line for line in ran), err
    assert "2 of 4 points already done" in err
    after = {r["point"]: r for r in rows(tmp_path)}
    assert len(after) == 4
    for point, r in first.items():         # kept as they were, wall time and all
        assert after[point] == r
    # A third run has nothing to do; --force runs everything again.
    assert main(SWEEP + ["--jobs", "1", "--out", str(tmp_path)]) == 0
    assert not [x for x in capsys.readouterr().err.splitlines() if x.startswith("[")]
    assert main(SWEEP + ["--jobs", "1", "--force", "--out", str(tmp_path)]) == 0
    assert len([x for x in capsys.readouterr().err.splitlines() if x.startswith("[")]) == 4


def test_a_point_without_its_record_is_run_again(serial, tmp_path, capsys):
    import shutil
    out = tmp_path / "copy"
    shutil.copytree(serial, out)
    victim = rows(out)[1]
    (out / victim["run_dir"] / "point.json").unlink()      # as if killed before its record
    capsys.readouterr()
    assert main(SWEEP + ["--jobs", "1", "--out", str(out)]) == 0
    ran = [x for x in capsys.readouterr().err.splitlines() if x.startswith("[")]
    assert len(ran) == 1 and victim["profile"] in ran[0] and victim["ack"] in ran[0]
    assert figures(out) == figures(serial)


@pytest.mark.parametrize("extra, message", [
    (["--set", "return.speed=1Mbit/s"], "return.speed: unknown setting"),
    (["--set", "return.rate=1Mbit/s,fast"], "return.rate: expected a rate"),
    (["--set", "forward.delay=100000s"], "forward.delay"),
    (["--set", "nonsense"], "--set 'nonsense': expected FIELD=V1,V2"),
    (["--engine", "fpga"], "--engine 'fpga': one of board, model"),
    (["--cc", "reno,vegas"], "--cc 'vegas': one of reno, cubic, bbr"),
    (["--cc", "reno,bbr"], "congestion controller 'bbr' is not in aioquic"),
    (["--set", "endpoint.max_datagram=1280,1100"], "max datagram 1100 B is outside 1200..1472"),
    (["--set", "endpoint.initial_rtt=fast"], "--set endpoint.initial_rtt: initial RTT 'fast'"),
    (["--set", "endpoint.colour=red"], "endpoint setting 'colour': one of max_datagram"),
    (["--set", "endpoint.stack=aioquic,msquic"], "stack 'msquic': one of aioquic, quinn"),
    (["--set", "endpoint.stack=quinn", "--policies", "ratio:2,adaptive"],
     "--policies with a quinn client: ACK policy adaptive"),
    (["--max-datagram", "1500"], "max datagram 1500 B is outside 1200..1472"),
    (["--seeds", "0,x"], "--seeds '0,x': whole numbers"),
    (["--policies", "ratio:2,sometimes"], "--ack"),
])
def test_bad_input_is_one_line_and_starts_nothing(tmp_path, capsys, extra, message):
    out = tmp_path / "out"
    assert main(BASE + extra + ["--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("satemu: ") and message in lines[0], lines
    assert not out.exists()


def test_a_profile_s_trace_files_are_found_from_any_folder(tmp_path, monkeypatch):
    """A profile whose trace is relative to its own folder, swept from another folder with
    and without --set (the point's TOML is run from elsewhere again), and a --set trace
    relative to the working folder: each point's TOML names the file by its absolute path,
    and an edited trace gives the point a new hash."""
    from satemu.link.profile import parse_profile
    from satemu.sweep import plan

    folder = tmp_path / "profiles"
    folder.mkdir()
    (folder / "fade.csv").write_text("time,rate,delay,loss\n0 s,10 Mbit/s,300 ms,0\n"
                                     "10 s,2 Mbit/s,300 ms,0\n")
    (folder / "p.toml").write_text('name = "tr"\n[forward]\nrate = "10 Mbit/s"\n'
                                   'delay = "300 ms"\ntrace = "fade.csv"\n[return]\n'
                                   'rate = "2 Mbit/s"\ndelay = "300 ms"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "other.csv").write_text("time,rate,delay,loss\n0 s,5 Mbit/s,250 ms,0\n"
                                         "20 s,1 Mbit/s,250 ms,0\n")
    monkeypatch.chdir(elsewhere)

    def points(sets=()):
        return plan("model", [str(folder / "p.toml")], [("30KB", 30_000)], ["default"],
                    ["reno"], [1], list(sets))

    plain, = points()
    setting, = points([("return.rate", ["1 Mbit/s"])])
    swapped, = points([("forward.trace", ["other.csv"])])
    assert setting.name == "tr+return.rate=1Mbitps"
    assert f'trace = "{(folder / "fade.csv").resolve()}"' in plain.toml
    assert f'trace = "{(elsewhere / "other.csv").resolve()}"' in swapped.toml
    monkeypatch.chdir(tmp_path)
    for point in (plain, setting, swapped):
        assert parse_profile(point.toml, point.name).timeline is not None
    (folder / "fade.csv").write_text("time,rate,delay,loss\n0 s,10 Mbit/s,300 ms,0\n"
                                     "10 s,3 Mbit/s,300 ms,0\n")
    monkeypatch.chdir(elsewhere)
    assert points()[0].sha != plain.sha
