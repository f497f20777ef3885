# SPDX-License-Identifier: BSD-2-Clause
"""Experiments the lab console runs: each is ``satemu experiment`` with the fields a client
gave, as a process of its own (so a cancel stops it and its workers, and a failure stays in it),
writing into ``DATA/experiments/<id>/``. The profiles and scenario it runs that were saved on the
console are copied into its ``inputs/`` first, with the files they name, so that it reads
nothing outside its folder and keeps what it ran. The sweep's points run on the server's cores
(``jobs``) or on a Dask scheduler (``dask``), on the model engine or on simulated boards of
their own; the boxes the console serves are not used. Progress is the points whose
``result.json`` has been written, of those the sweep planned."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from satemu.serve.store import copy_profile, saved_file, write_atomic

# The kinds of `satemu experiment` the console runs ("scenario": a scenario, built-in or saved
# on the console, swept over ``set`` and ``seeds``).
KINDS = ("ack-policy", "constrained-return", "shared-return", "satcom-objects", "scenario")
# A value a client may give a field: no newline, no NUL, at most this long. Each goes to the
# command as one argument of its own: no shell reads it.
MAX_VALUE = 512
# The plots an experiment's description lists at most (each run draws several).
MAX_PLOTS = 200
# An experiment's id: when it was submitted, and 6 hex digits.
_IDENT = re.compile(r"\d{8}-\d{6}-[0-9a-f]{6}")
# The planned points, as the sweep's first line on stderr says them.
_PLANNED = re.compile(r"^(\d+) (?:point|run)s?\b")


class ExperimentError(ValueError):
    """A request for an experiment that cannot be run as given; one line."""


@dataclass
class Experiment:
    id: str
    fields: dict
    folder: Path
    argv: list[str]
    proc: subprocess.Popen | None = None
    started: float = field(default_factory=time.time)
    ended: float | None = None
    status: str = "running"          # running, done, failed, cancelled, interrupted
    planned: int | None = None
    exit: int | None = None

    def progress(self) -> dict:
        done = sum(1 for p in self.folder.rglob("result.json") if p.parent != self.folder)
        return {"points": self.planned, "done": done}

    def describe(self) -> dict:
        return {"id": self.id, "fields": self.fields, "status": self.status,
                "started": self.started, "ended": self.ended, "exit": self.exit,
                **self.progress(), "log_tail": self.log_tail(),
                "files": [p.relative_to(self.folder).as_posix()
                          for p in sorted(self.folder.glob("*")) if p.is_file()
                          and p.name not in ("console.log", "status.json")],
                "plots": [p.relative_to(self.folder).as_posix()
                          for p in sorted(self.folder.rglob("*.png"))][:MAX_PLOTS]}

    def record(self) -> None:
        """Its end in ``status.json``, so that a console started later lists it as it ended."""
        state = {"status": self.status, "exit": self.exit, "started": self.started,
                 "ended": self.ended, "planned": self.planned}
        write_atomic(self.folder / "status.json", json.dumps(state) + "\n")

    def log_tail(self, lines: int = 8) -> list[str]:
        path = self.folder / "console.log"
        if not path.exists():
            return []
        text = path.read_bytes()[-8192:].decode("utf-8", "replace")
        # the folder as the client knows it: the experiment's files, by their paths there
        text = text.replace(f"{self.folder}/", "").replace(str(self.folder), ".")
        # the progress bar's carriage returns: the last state of each line
        return [ln.rpartition("\r")[2] for ln in text.splitlines() if ln.strip()][-lines:]


class Experiments:
    """The experiments of one console, running or finished, by id."""

    def __init__(self, folder: Path, profiles: Path, files: Path, scenarios: Path,
                 satemu: list[str] | None = None):
        self.folder, self.profiles, self.files, self.scenarios = folder, profiles, files, scenarios
        self.satemu = satemu or [sys.executable, "-m", "satemu.cli"]
        self.runs: dict[str, Experiment] = {}
        self._lock = threading.Lock()
        self._recall()

    def _recall(self) -> None:
        """The experiments of earlier consoles on this folder, as they ended (``status.json``);
        one that has none was running when its console stopped: ``interrupted``."""
        if not self.folder.is_dir():
            return
        for sub in sorted(self.folder.iterdir()):
            request = sub / "request.json"
            if not (_IDENT.fullmatch(sub.name) and request.is_file()):
                continue
            try:
                fields = json.loads(request.read_text())
                state = json.loads((sub / "status.json").read_text()) \
                    if (sub / "status.json").is_file() else {"status": "interrupted"}
            except (OSError, ValueError):
                continue
            run = Experiment(sub.name, fields, sub, [], started=state.get("started") or
                             request.stat().st_mtime, ended=state.get("ended"),
                             status=state.get("status", "interrupted"),
                             planned=state.get("planned"), exit=state.get("exit"))
            self.runs[run.id] = run

    def argv(self, fields: dict, out: Path) -> tuple[list[str], list[tuple[str, str]]]:
        """``satemu experiment``'s command line for ``fields``, and the saved profiles and
        scenario it runs (("profile" or "scenario", name)), to copy into ``out/inputs/``
        (``inputs``): each value checked, a profile or scenario named by a built-in's name or
        one saved on the console, nothing else."""
        from satemu.link.profile import builtin_profiles
        from satemu.quic.scenario import builtin_scenarios
        kind = fields.get("kind", "ack-policy")
        if kind not in KINDS:
            raise ExperimentError(f"kind: {str(kind)[:40]!r} is not one of {', '.join(KINDS)}")
        argv = [*self.satemu, "experiment", kind, "--out", str(out)]
        inputs: list[tuple[str, str]] = []
        if (kind == "scenario") != bool(fields.get("scenario")):
            raise ExperimentError("scenario: give one with kind scenario, and only then")
        if kind == "scenario":
            name = _value("scenario", fields["scenario"])
            if saved_file(self.scenarios, name, ".toml") is not None:
                argv += ["--scenario", str(out / "inputs" / f"{name}.toml")]
                inputs.append(("scenario", name))
                ref = _scenario_profile(self.scenarios / f"{name}.toml")
                if ref and ref.endswith(".toml"):
                    inputs.append(("profile", ref[:-5]))
            elif name in builtin_scenarios():
                argv += ["--scenario", name]
            else:
                raise ExperimentError(f"scenario: no scenario named {name[:64]!r} (built-in "
                                      f"or saved on the console)")
        builtins = builtin_profiles()
        profiles = fields.get("profile") or []
        if isinstance(profiles, str):
            profiles = [profiles]
        if profiles:
            argv.append("--profile")
            for name in profiles:
                name = _value("profile", name)
                if saved_file(self.profiles, name, ".toml") is not None:
                    argv.append(str(out / "inputs" / f"{name}.toml"))
                    inputs.append(("profile", name))
                elif name in builtins:
                    argv.append(name)
                else:
                    raise ExperimentError(f"profile: no profile named {name[:64]!r} (built-in "
                                          f"or saved on the console)")
        options = {"sizes": "--sizes", "policies": "--policies", "cc": "--cc",
                   "seeds": "--seeds", "engine": "--engine", "stack": "--stack",
                   "dask": "--dask"}
        for key, option in options.items():
            if fields.get(key) not in (None, ""):
                argv += [option, _value(key, fields[key])]
        for text in fields.get("set") or []:
            argv += ["--set", _value("set", text)]
        for key, option, lo, hi in (("jobs", "--jobs", 1, os.cpu_count() or 1),
                                    ("max_time", "--max-time", 1, 86400)):
            if fields.get(key) is not None:
                value = fields[key]
                if not isinstance(value, (int, float)) or not lo <= value <= hi:
                    raise ExperimentError(f"{key}: a number in {lo} .. {hi}")
                argv += [option, str(value)]
        unknown = set(fields) - {"kind", "scenario", "profile", *options, "set", "jobs",
                                 "max_time"}
        if unknown:
            raise ExperimentError(f"{sorted(unknown)[0][:40]}: not a field of an experiment")
        return argv, inputs

    def submit(self, fields: dict) -> Experiment:
        ident = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)
        out = self.folder / ident
        argv, inputs = self.argv(fields, out)
        out.mkdir(parents=True)
        for what, name in inputs:
            if what == "scenario":
                (out / "inputs").mkdir(exist_ok=True)
                shutil.copyfile(self.scenarios / f"{name}.toml", out / "inputs" / f"{name}.toml")
            else:
                try:
                    copy_profile(self.profiles, self.files, name, out / "inputs")
                except FileNotFoundError:
                    pass        # the scenario's check (in the sweep) says it is missing
        (out / "request.json").write_text(json.dumps(fields, indent=2) + "\n")
        log = open(out / "console.log", "wb")
        run = Experiment(ident, fields, out, argv)
        run.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True,
                                    env={**os.environ, "PYTHONUNBUFFERED": "1"})
        log.close()
        with self._lock:
            self.runs[ident] = run
        threading.Thread(target=self._watch, args=(run,), daemon=True).start()
        return run

    def _watch(self, run: Experiment) -> None:
        while run.proc.poll() is None:
            if run.planned is None:
                for line in run.log_tail(50):
                    m = _PLANNED.match(line)
                    if m:
                        run.planned = int(m.group(1))
            time.sleep(0.5)
        for line in run.log_tail(200):
            m = _PLANNED.match(line)
            if m and run.planned is None:
                run.planned = int(m.group(1))
        run.exit, run.ended = run.proc.returncode, time.time()
        if run.status == "running":
            run.status = "done" if run.exit == 0 else "failed"
        run.record()

    def get(self, ident: str) -> Experiment:
        run = self.runs.get(ident)
        if run is None:
            raise KeyError(ident)
        return run

    def cancel(self, ident: str) -> Experiment:
        run = self.get(ident)
        if run.proc is not None and run.proc.poll() is None:
            run.status = "cancelled"
            try:
                os.killpg(run.proc.pid, signal.SIGTERM)    # the sweep and its workers
            except ProcessLookupError:
                pass
            try:
                run.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(run.proc.pid, signal.SIGKILL)
                run.proc.wait()
        return run

    def file(self, ident: str, rel: str) -> Path:
        """A file of experiment ``ident``'s folder, by its path there; KeyError if there is no
        such file within it (a path that would leave it is none)."""
        run = self.get(ident)
        if "\0" in rel or len(rel) > 512:
            raise KeyError(rel)
        path = (run.folder / rel).resolve()
        if not path.is_relative_to(run.folder.resolve()) or not path.is_file():
            raise KeyError(rel)
        return path

    def close(self) -> None:
        """Stop the experiments still running, each recorded as cancelled."""
        for ident, run in list(self.runs.items()):
            if run.status == "running":
                self.cancel(ident)
                run.exit, run.ended = run.proc.returncode, time.time()
                run.record()


def _scenario_profile(path: Path) -> str | None:
    """The ``profile`` a scenario file names, if it can be read."""
    import tomllib
    try:
        ref = tomllib.loads(path.read_text(errors="replace")).get("profile")
    except (tomllib.TOMLDecodeError, ValueError, RecursionError):
        return None
    return ref if isinstance(ref, str) else None


def _value(key: str, value) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value or len(value) > MAX_VALUE or \
            any(c in value for c in "\n\r\0"):
        raise ExperimentError(f"{key}: expected text of one line, at most {MAX_VALUE} "
                              f"characters")
    if value.startswith("-"):
        raise ExperimentError(f"{key}: {value[:40]!r} may not start with '-'")
    return value
