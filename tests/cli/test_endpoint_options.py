# SPDX-License-Identifier: BSD-2-Clause
"""The endpoint options of ``satemu quic`` and ``satemu experiment`` are satemu.quic.settings'
table: one entry a setting, its name, default, help and reader said once."""

from __future__ import annotations

import pytest

from satemu.cli import build_parser, main
from satemu.cli.transfer import endpoint_settings
from satemu.quic.settings import (DEFAULT_STACKS, SETTING_NAMES, SETTINGS, EndpointSettings,
                                  parse_setting)

VERBS = [["quic"], ["experiment", "ack-policy"]]


def _actions(verb: str) -> dict:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return {o: a for a in sub.choices[verb]._actions for o in a.option_strings}


def test_every_setting_is_an_option_named_as_its_sweep_name():
    assert [s.name for s in SETTINGS] == list(SETTING_NAMES)
    for verb in ("quic", "experiment"):
        actions = _actions(verb)
        for s in SETTINGS:
            assert actions[s.option].dest == s.name, (verb, s.name)   # --set endpoint.NAME's


def test_the_options_defaults_are_the_settings_defaults():
    args = build_parser().parse_args(["quic"])
    assert endpoint_settings(args) == (EndpointSettings(), DEFAULT_STACKS)
    # The texts as --help shows them, each read back as its setting's default.
    assert {s.name: getattr(args, s.name) for s in SETTINGS} == {
        "cc": "reno", "max_ack_delay": "25", "stack": "aioquic", "max_datagram": "1472",
        "initial_window": "default", "initial_rtt": "333", "stream_window": "64MiB",
        "conn_window": "64MiB", "ecn": "off"}
    for s in SETTINGS:
        attr, value = parse_setting(s.name, s.default())
        expected = DEFAULT_STACKS if attr == "stacks" else getattr(EndpointSettings(), attr)
        assert value == expected, s.name


def test_the_help_shows_each_setting_with_its_default(capsys):
    with pytest.raises(SystemExit):
        main(["quic", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--initial-rtt MS the RTT assumed before the first sample (default 333 ms, " in text
    assert "--stream-window BYTES flow-control credit per stream (default 64MiB)" in text
    assert "1200..1472 (1472 fills a 1518-byte frame;" in text
    assert "e.g. quinn or aioquic/quinn: aioquic, quinn (default aioquic)" in text


def test_experiment_set_help_names_every_setting(capsys):
    # --cc takes the controllers; every other setting is named as a --set axis.
    with pytest.raises(SystemExit):
        main(["experiment", "--help"])
    text = "".join(capsys.readouterr().out.split())
    assert all(f"endpoint.{s.name}" in text for s in SETTINGS if s.name != "cc")


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.name)
def test_an_empty_endpoint_option_is_a_usage_error(verb, setting, capsys):
    with pytest.raises(SystemExit) as e:
        main(verb + ["--engine", "model", setting.option, " "])
    assert e.value.code == 2
    err = capsys.readouterr().err.splitlines()[-1]
    # (experiment's --cc is its own, a list of controllers)
    assert f": error: argument {setting.option}: ' ': " in err and err.endswith(", not empty"), err
