# SPDX-License-Identifier: BSD-2-Clause
"""Sweeps of scenarios (satemu.sweep.scenarios, `satemu experiment scenario|shared-return|
satcom-objects`): the presets' points, --set on a flow's key and on joined fields, one-line
refusals, and both presets end to end on the model engine at a reduced size."""

import csv
import json

import pytest

from satemu.cli import main
from satemu.sweep import parse_sets
from satemu.sweep.errors import SweepError
from satemu.sweep.scenarios import SCENARIO_PRESETS, plan_scenarios


def _plan(kind, sets=None):
    preset = SCENARIO_PRESETS[kind]
    return plan_scenarios("model", preset["scenario"],
                          parse_sets(preset["set"] if sets is None else sets), None)


def test_the_presets_points():
    shared = _plan("shared-return")
    assert len(shared) == 6 and len({p.id for p in shared}) == 6
    assert {dict(p.overrides)["flow.1.ack"] for p in shared} == \
        {"ratio:2", "ratio:10", "ack-frequency:10"}
    objects = _plan("satcom-objects")
    assert len(objects) == 40 and len({p.run_rel for p in objects}) == 40
    # a joined field sets each of its fields: the RTT pairs both delays, the settings all three
    p = objects[-1]
    assert 'initial_window = 120' in p.scenario and 'stream_window = "6MB"' in p.scenario
    assert 'delay = "50ms"' in p.profile_toml.split("[return]")[0]
    assert 'delay = "50ms"' in p.profile_toml.split("[return]")[1]
    assert all(len(part) <= 100 for part in p.run_rel.parts)


@pytest.mark.parametrize("sets, error", [
    (["flow.9.ack=ratio:2"], "no flow '9'"),
    (["flow.fetch=ratio:2"], "flow.N.KEY"),
    (["endpoint.cc=bbr"], "give flow.N.cc"),
    (["flow.1.initial_window+flow.1.stream_window=[32]"], "1 values for 2 fields"),
    (["flow.1.ack=ratio:0"], "ack"),
    (["forward.rate=fast"], "forward.rate"),
    (["flow.1.workload={kind=\"objects\",sizes=[\"0 B\"]}"], "at least 1"),
])
def test_bad_sets(sets, error):
    with pytest.raises(SweepError, match=error) as e:
        _plan("satcom-objects", sets)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("argv, error", [
    (["experiment", "shared-return", "--cc", "bbr"], "--cc: a scenario's flows"),
    (["experiment", "shared-return", "--max-datagram", "1280"], "--max-datagram"),
    (["experiment", "scenario"], "needs --scenario"),
    (["experiment", "ack-policy", "--scenario", "shared-return"], "experiment scenario"),
    (["experiment", "shared-return", "--scenario", "x.toml"], "is its own scenario"),
    (["quic", "--scenario", "shared-return", "--ack", "ratio:3"], "--ack: a scenario's"),
    (["quic", "--scenario", "shared-return", "--profile", "geo-testbed"], "not with --profile"),
    (["quic", "--scenario", "nowhere", "--engine", "model"], "built-in scenario"),
    (["quic", "--scenario", "shared-return", "--client-if", "a"], "--client-if: only with "
     "--realtime"),
    (["quic", "--scenario", "shared-return", "--realtime", "--client-if", "a"],
     "--realtime needs --client-if and --server-if"),
    (["quic", "--scenario", "shared-return", "--realtime", "--client-if", "a", "--server-if",
      "b", "--compare"], "--compare: not with --realtime"),
    (["quic", "--scenario", "shared-return", "--realtime", "--client-if", "a", "--server-if",
      "b", "--engine", "model"], "not with --realtime"),
    (["quic", "--scenario", "shared-return", "--client-cmd", "x"], "--client-cmd: not with "
     "--scenario"),
])
def test_refused_in_one_line(argv, error, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert error in err and "\n" not in err, err


def _rows(path):
    with open(path) as fh:
        return list(csv.DictReader(fh))


def test_shared_return_end_to_end_reduced(tmp_path, capsys):
    out = tmp_path / "sr"
    small = ['flow.1.workload={kind="bulk",size="150 KB"}',
             'flow.2.workload={kind="upload",size="60 KB"}',
             'flow.3.workload={kind="objects",sizes=["20 KB"],count=2}',
             "return.bod.slots=140", "flow.1.ack=ratio:2,ratio:10"]
    argv = ["experiment", "shared-return", "--jobs", "1", "--out", str(out)]
    for s in small:
        argv += ["--set", s]
    assert main(argv) == 0
    runs = _rows(out / "results.csv")
    assert len(runs) == 2 and all(r["completed"] == "True" for r in runs)
    flows = _rows(out / "flows.csv")
    assert len(flows) == 6 and {f["flow"] for f in flows} == \
        {"varying", "neighbour-upload", "neighbour-objects"}
    by = {(f["overrides"].split("flow.1.ack=")[1].split(";")[0], f["flow"]): f for f in flows}
    # the ACK policy is what differs: 1:10 sends fewer return packets for the same download
    assert int(by["ratio:10", "varying"]["return_packets"]) < \
        int(by["ratio:2", "varying"]["return_packets"])
    report = (out / "report.md").read_text()
    assert "What varying takes from the others" in report
    for r in runs:
        s = json.loads((out / r["run_dir"] / "result.json").read_text())
        assert s["fairness"]["slots_granted_jain"] is not None
        for plot in ("flows_goodput", "objects", "demand_grant"):
            assert (out / r["run_dir"] / f"{plot}.png").stat().st_size > 10_000
    capsys.readouterr()
    assert main(argv) == 0                      # resumed: nothing runs again
    assert "(0 run now, 2 from before)" in capsys.readouterr().out


def test_satcom_objects_end_to_end_reduced(tmp_path):
    out = tmp_path / "so"
    argv = ["experiment", "satcom-objects", "--jobs", "1", "--out", str(out),
            "--set", 'flow.1.workload={kind="objects",sizes=["40 KB","20 KB"],order="parallel"}',
            "--set", "forward.delay+return.delay=50ms"]
    assert main(argv) == 0
    flows = _rows(out / "flows.csv")
    assert len(flows) == 2 and all(f["completed"] == "True" for f in flows)
    for r in _rows(out / "results.csv"):
        s = json.loads((out / r["run_dir"] / "result.json").read_text())
        objects = s["flows"][0]["objects"]
        assert [o["size"] for o in objects] == [40_000, 20_000]
        assert all(o["requested_s"] == 0 for o in objects)          # in parallel
        iw = s["flows"][0]["settings"]["initial_window"]
        assert iw in (32, 120)
