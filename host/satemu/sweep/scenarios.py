# SPDX-License-Identifier: BSD-2-Clause
"""A sweep of scenarios (satemu.quic.scenario): any field of a scenario's flows or of its
profile over values, and its seed, each run a point (docs/scenarios.md, "Sweeps")."""

from __future__ import annotations

import hashlib
import itertools
import json
import tempfile
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from satemu.link.profile import (ProfileError, load_profile, override_profile, override_value,
    read_profile_text)
from satemu.link.tables import toml_key_bare, toml_value
from satemu.quic.engine import ENGINES
from satemu.sweep.errors import SweepError
from satemu.sweep.points import _builtin_text, _placed_traces, _safe

__all__ = ["ScenarioPoint", "plan_scenarios", "scenario_text", "SCENARIO_PRESETS",
           "SCENARIO_FIGURES"]

# The figures of a scenario's summary (satemu.report.flows) each row of results.csv carries.
SCENARIO_FIGURES = ("completed", "flows", "flows_completed", "goodput_mbps_mean",
                    "goodput_jain", "slots_granted_jain", "return_bytes", "return_packets",
                    "virtual_s", "wall_s")
PROFILE_FILE = "profile.toml"         # a point's profile, beside its scenario, where it runs


def _objects(sizes: list[str], order: str) -> str:
    return "{kind=\"objects\",sizes=[" + ",".join(f'"{x}"' for x in sizes) + \
        f"],order=\"{order}\"}}"


# The object-fetch study's cases (docs/scenarios.md, "Presets"): ten short (40 KB), medium
# (290 KB) or long (4 MB) objects, two large (66 MB) ones, or all 31 mixed, each in sequence
# and in parallel.
_CASES = (["40 KB"] * 10, ["290 KB"] * 10, ["4 MB"] * 10, ["66 MB"] * 2,
          ["40 KB"] * 10 + ["290 KB"] * 10 + ["4 MB"] * 10 + ["66 MB"])
# `satemu experiment KIND` for the scenario studies: the built-in scenario and its axes, each
# replaced by a --set of the same field.
SCENARIO_PRESETS = {
    "scenario": {},
    "shared-return": {
        "scenario": "shared-return",
        "set": ["flow.1.ack=ratio:2,ratio:10,ack-frequency:10", "return.bod.slots=140,60"],
        "engine": "model",
    },
    "satcom-objects": {
        "scenario": "satcom-objects",
        "set": ["flow.1.workload=" + ",".join(_objects(c, o) for c in _CASES
                                              for o in ("sequence", "parallel")),
                "forward.delay+return.delay=300ms,50ms",
                "flow.1.initial_window+flow.1.stream_window+flow.1.conn_window="
                "[32,\"512KB\",\"6MB\"],[120,\"6MB\",\"12MB\"]"],
        "engine": "model",
    },
}


def scenario_text(given: str) -> tuple[str, Path | None]:
    """(TOML text, its folder) of a scenario: a built-in one by name, or a file."""
    from satemu.quic.scenario import builtin_scenarios
    builtins = builtin_scenarios()
    if given in builtins and not Path(given).exists():
        return builtins[given], None
    from satemu.quic.scenario import ScenarioError, read_scenario_text
    try:
        return read_scenario_text(Path(given)), Path(given).parent
    except ScenarioError as e:
        raise SweepError(f"--scenario: {e}" + ("" if given in builtins else
                         f" (built-in scenarios: {', '.join(builtins)})")) from None


def _flow_index(field: str, flows: list) -> tuple[int, str]:
    """(index, key) of a ``flow.N.KEY`` field: N the flow's number from 1, or its name."""
    parts = field.split(".", 2)
    if len(parts) != 3 or not parts[2]:
        raise SweepError(f"--set {field}: give flow.N.KEY, N a flow's number from 1 or its "
                         f"name")
    who = parts[1]
    names = [f.get("name", f"flow{i + 1}") if isinstance(f, dict) else "" for i, f in
             enumerate(flows)]
    if who.isdigit() and 1 <= int(who) <= len(flows):
        return int(who) - 1, parts[2]
    if who in names:
        return names.index(who), parts[2]
    raise SweepError(f"--set {field}: the scenario has no flow {who!r} (flows 1..{len(flows)}: "
                     f"{', '.join(names)})")


def _expand(joined: str, value: str) -> list[tuple[str, str]]:
    """A --set field and one of its values as (field, value text) pairs: ``A+B=V`` sets both
    A and B to V; ``A+B=[VA, VB]`` (a TOML array of as many values) each its own."""
    fields = joined.split("+")
    if len(fields) == 1:
        return [(joined, value)]
    read = override_value(value)
    if isinstance(read, list):
        if len(read) != len(fields):
            raise SweepError(f"--set {joined}: {value[:60]!r} has {len(read)} values for "
                             f"{len(fields)} fields")
        return [(f, toml_value(v)) for f, v in zip(fields, read)]
    return [(f, value) for f in fields]


def _dump(doc: dict) -> str:
    """A scenario's document as TOML text."""
    lines = [f"{toml_key_bare(k)} = {toml_value(v)}" for k, v in doc.items() if k != "flow"]
    for flow in doc.get("flow", []):
        lines += ["", "[[flow]]"] + [f"{toml_key_bare(k)} = {toml_value(v)}"
                                     for k, v in flow.items()]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class ScenarioPoint:
    """One run of a scenario sweep, everything it depends on; picklable."""
    engine: str
    base: str                       # the scenario's name
    overrides: tuple                # ((field, value text), ...), in --set order
    name: str                       # the scenario's name with its overrides
    seed: int
    max_time: float
    scenario: str                   # its TOML text, the profile named PROFILE_FILE or built in
    profile_toml: str = ""          # the profile's TOML (with its overrides), or "" (built in)
    sha: str = ""
    pcap: bool = False
    kind = "scenario"

    def key(self) -> dict:
        return {"engine": self.engine, "scenario": self.base,
                "overrides": ";".join(f"{f}={v}" for f, v in self.overrides),
                "seed": self.seed, "max_time_s": self.max_time, "sha": self.sha}

    @property
    def id(self) -> str:
        return hashlib.sha256(json.dumps(self.key(), sort_keys=True).encode()).hexdigest()[:16]

    @property
    def run_rel(self) -> Path:
        """``scenario/FIELD=VALUE+...-seedN``, the part after the scenario shortened to 100
        characters (with a hash of it whole) where it is longer."""
        text = "+".join(f"{f}={_safe(v)}" for f, v in self.overrides) or "as-given"
        if len(text) > 100:
            text = f"{text[:80]}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"
        return Path(self.base) / f"{text}-seed{self.seed}"

    def label(self) -> str:
        sets = ", ".join(f"{f}={v}" for f, v in self.overrides)
        return f"{self.base}" + (f", {sets}" if sets else "") + f", seed {self.seed}"

    def load(self, folder: Path):
        """The point's Scenario, its profile written into ``folder`` if it has its own."""
        from satemu.quic.scenario import parse_scenario
        if self.profile_toml:
            (Path(folder) / PROFILE_FILE).write_text(self.profile_toml, encoding="utf-8")
        return parse_scenario(self.scenario, self.name, Path(folder))


def plan_scenarios(engine: str, given: str, sets, seeds, *, max_time: float = 600.0,
                   hardware=None, pcap: bool = False) -> list[ScenarioPoint]:
    """Every point of scenario ``given`` (a built-in name or a file) x its ``sets`` (``(field,
    [values])``: ``flow.N.KEY`` a flow's key, N its number from 1 or its name; a profile's
    field such as ``return.bod.cra``) x ``seeds`` (None: the scenario's own). Each point's
    scenario is read, and its profile checked against ``hardware``, before anything runs:
    SweepError (one line) otherwise."""
    from satemu.base.boards import BOARDS, DEFAULT_BOARD
    from satemu.quic.scenario import ScenarioError
    if engine not in ENGINES:
        raise SweepError(f"--engine {engine!r}: one of {', '.join(ENGINES)}")
    text, folder = scenario_text(given)
    try:
        doc = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError) as e:
        raise SweepError(f"--scenario {given}: not valid TOML: {e}") from None
    flows = doc.get("flow") if isinstance(doc.get("flow"), list) else []
    ref = doc.get("profile")
    if not isinstance(ref, str):
        raise SweepError(f"--scenario {given}: profile: a scenario names its link profile")
    try:
        where = Path(folder) / ref if folder is not None and (ref.endswith(".toml") or
                                                                "/" in ref) else Path(ref)
        profile = load_profile(str(where) if where.exists() else ref)
    except ProfileError as e:
        raise SweepError(f"--scenario {given}: profile: {e}") from None
    builtin = profile.path is None
    ptext = _builtin_text(profile.name) if builtin else read_profile_text(profile.path)
    pfolder = (Path(str(resources.files("satemu").joinpath("profiles"))) if builtin
               else profile.path.parent)
    placed = _placed_traces(ptext, pfolder)
    for joined, values in sets:
        for field in joined.split("+"):
            if field.startswith("flow."):
                _flow_index(field, flows)
            elif field.startswith("endpoint."):
                raise SweepError(f"--set {field}: a scenario's endpoint settings are its "
                                 f"flows': give flow.N.{field[len('endpoint.'):]}")
        for v in values:
            _expand(joined, v)
    hw = hardware or BOARDS[DEFAULT_BOARD].hardware
    base = doc.get("name", Path(given).stem) if isinstance(doc.get("name"), str) \
        else Path(given).stem
    points = []
    for combo in itertools.product(*(values for _, values in sets)):
        overrides = tuple((f, v) for (f, _), v in zip(sets, combo))
        mine = json.loads(json.dumps(doc))
        each = [pair for f, v in overrides for pair in _expand(f, v)]
        prof = [(f, v) for f, v in each if not f.startswith("flow.")]
        for f, v in each:
            if f.startswith("flow."):
                i, key = _flow_index(f, flows)
                mine["flow"][i][key] = override_value(v)
        name = base
        own = ""
        if prof or (placed and not builtin) or not builtin:
            try:
                own = override_profile(ptext, placed + tuple(prof), profile.name)
            except ProfileError as e:
                raise SweepError(f"--set on {profile.name}: {e}") from None
            mine["profile"] = PROFILE_FILE
        else:
            mine["profile"] = profile.name
        mine["name"] = name
        for seed in seeds if seeds else [mine.get("seed", 0)]:
            mine["seed"] = seed
            stext = _dump(mine)
            sha = hashlib.sha256((stext + own).encode()).hexdigest()[:16]
            p = ScenarioPoint(engine, base, overrides, name, seed, max_time, stext, own, sha,
                              pcap)
            with tempfile.TemporaryDirectory(prefix="satemu-plan-") as tmp:
                try:
                    sc = p.load(Path(tmp))
                    sc.check_time(max_time)
                    sc.profile.check(hw)
                except (ScenarioError, ProfileError) as e:
                    where = f" ({', '.join(f'{f}={v}' for f, v in overrides)})" if overrides \
                        else ""
                    raise SweepError(f"--scenario {given}{where}: {e}") from None
            points.append(p)
    return points
