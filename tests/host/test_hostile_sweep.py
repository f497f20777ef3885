# SPDX-License-Identifier: BSD-2-Clause
"""Sweeps and reports against hostile inputs: duplicated settings, false schedulers, dead links."""

from __future__ import annotations

import csv
import json

import pytest

from satemu.cli import main
from satemu.profile import ProfileError
from satemu.quic.settings import SETTING_NAMES, EndpointSettings
from satemu.sweep import plan

ONE = [("10KB", 10_000)]

# -- 1. a --set endpoint.NAME and NAME's own option ------------------------------------------

# Per setting: what its option says (as plan takes it: the base settings, the stacks or the
# ccs), the --set values, and how the points' value of it reads.
OPTION_AND_SET = {
    "max_datagram": ({"endpoint": EndpointSettings(max_datagram=1300)}, "1280,1352",
                     {1280, 1352}),
    "initial_window": ({"endpoint": EndpointSettings(initial_window=20)}, "default,5",
                       {None, 5}),
    "initial_rtt": ({"endpoint": EndpointSettings(initial_rtt_ms=100.0)}, "50,200",
                    {50.0, 200.0}),
    "cc": ({"ccs": ["reno", "cubic"]}, "bbr", {"bbr"}),
    "stream_window": ({"endpoint": EndpointSettings(stream_window=1 << 20)}, "2MiB,4MiB",
                      {2 << 20, 4 << 20}),
    "conn_window": ({"endpoint": EndpointSettings(conn_window=1 << 20)}, "2MiB,4MiB",
                    {2 << 20, 4 << 20}),
    "max_ack_delay": ({"endpoint": EndpointSettings(max_ack_delay_ms=10.0),
                       "stacks": ("aioquic", "aioquic")}, "20,30", {20.0, 30.0}),
    "stack": ({"stacks": ("aioquic", "aioquic")}, "quinn,aioquic/quinn",
              {("quinn", "quinn"), ("aioquic", "quinn")}),
}


def _value(point, name):
    if name == "stack":
        return point.stacks
    return getattr(point.settings, SETTING_NAMES[name][0])


def test_every_endpoint_setting_has_its_case():
    assert set(OPTION_AND_SET) == set(SETTING_NAMES)


@pytest.mark.parametrize("name", sorted(OPTION_AND_SET))
def test_an_endpoint_set_wins_over_the_setting_s_option(name):
    option, values, expected = OPTION_AND_SET[name]
    kwargs = {"endpoint": option.get("endpoint"),
              "stacks": option.get("stacks", ("quinn", "quinn"))}
    points = plan("model", ["short-asym"], ONE, ["default"], option.get("ccs", ["reno"]), [0],
                  [(f"endpoint.{name}", values.split(","))], **kwargs)
    # One point per --set value: the option's value is replaced, not crossed with them.
    assert len(points) == len(expected)
    assert {_value(p, name) for p in points} == expected
    # The other settings stay as the option gave them.
    if option.get("endpoint") is not None:
        for p in points:
            for attr, value in option["endpoint"].to_dict().items():
                if attr != SETTING_NAMES[name][0]:
                    assert getattr(p.settings, attr) == value


def test_endpoint_cc_with_the_default_cc_plans_one_point_per_value():
    # The campaign's case: --cc's default (reno) and --set endpoint.cc=bbr gave TypeError.
    points = plan("model", ["short-asym"], ONE, ["default"], ["reno"], [0],
                  [("endpoint.cc", ["bbr", "cubic"])], stacks=("quinn", "quinn"))
    assert [(p.cc, p.settings.cc) for p in points] == [("bbr", "bbr"), ("cubic", "cubic")]
    assert points[0].run_rel.name == "default-bbr-quinn"
    with pytest.raises(ProfileError, match="congestion controller 'bbr' is not in aioquic"):
        plan("model", ["short-asym"], ONE, ["default"], ["reno"], [0],
             [("endpoint.cc", ["bbr"])])


def test_endpoint_cc_on_the_command_line(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["experiment", "ack-policy", "--engine", "model", "--profile", "short-asym",
                 "--sizes", "10KB", "--policies", "default", "--max-time", "5", "--jobs", "1",
                 "--stack", "quinn", "--cc", "cubic", "--set", "endpoint.cc=bbr",
                 "--out", str(out)]) == 0
    with open(out / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["cc"], r["completed"]) for r in rows] == [("bbr", "True")]
    result = json.loads((out / rows[0]["run_dir"] / "result.json").read_text())
    assert result["settings"]["cc"] == "bbr" and result["cc"] == "bbr"
