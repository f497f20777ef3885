# SPDX-License-Identifier: BSD-2-Clause
"""The lab console's HTTP API (FastAPI): boxes, their live state, profiles and the files they
name. ``create_app`` makes it; ``satemu serve`` runs it on uvicorn (``satemu.cli.serve``).

Every error is JSON ``{"error": one line}`` with a status that says whose fault it is: 400 a
request that cannot be read or a profile that does not validate (with ``errors``, each at its
field), 401/403 a missing or wrong token, 404 an unknown box, profile or file, 409 a box held by
another client or busy, 413 a body over the limit, 503 a box that does not answer."""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass, field
from typing import Literal
from pathlib import Path

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from satemu import __version__
from satemu.base.boards import BOARDS, DEFAULT_BOARD
from satemu.box.bod_trace import csv_text
from satemu.box.control import NoBod, load_into, read_bod
from satemu.box.device import DeviceError
from satemu.box.flash import PROGRAMMERS, FlashError, plan_flash, run_flash
from satemu.box.log_capture import capture_box_log
from satemu.link.profile import (MAX_BYTES, ProfileError, builtin_profiles, field_error,
    parse_profile, profile_errors)
from satemu.report.show import show_hardware, show_lines
from satemu.serve.auth import Tokens
from satemu.quic.scenario import (MAX_SCENARIO_BYTES, ScenarioError, builtin_scenarios,
    parse_scenario)
from satemu.serve.boxes import Box, BoxError
from satemu.serve.experiments import ExperimentError, Experiments
from satemu.serve.store import NAME, named_files, save_toml, saved_file, write_atomic

STATIC = Path(__file__).resolve().parent / "static"
# The largest body a request may carry: a profile at its longest, with JSON's escapes.
MAX_BODY = 2 * MAX_BYTES + 4096
# The largest file a client may store (a trace, a jitter table, a demand trace).
MAX_FILE = 4 << 20


@dataclass
class Console:
    """What the app serves: its boxes by name, the data folder (saved profiles under
    ``profiles/``, the files they name under ``files/``), the token, and whether reading needs
    the token too."""
    boxes: dict[str, Box]
    data: Path
    tokens: Tokens
    open_reads: bool = True
    started: float = field(default_factory=time.time)
    experiments: Experiments | None = None

    def __post_init__(self):
        for name, box in self.boxes.items():
            if box.memory is None:          # the last load through the console, kept
                box.memory = self.data / "boxes" / f"{name}.json"
        if self.experiments is None:
            self.experiments = Experiments(self.data / "experiments", self.profiles_dir,
                                           self.files_dir, self.scenarios_dir)

    @property
    def profiles_dir(self) -> Path:
        return self.data / "profiles"

    @property
    def files_dir(self) -> Path:
        return self.data / "files"

    @property
    def scenarios_dir(self) -> Path:
        return self.data / "scenarios"


class ApiError(Exception):
    def __init__(self, status: int, message: str, **extra):
        super().__init__(message)
        self.status, self.extra = status, extra


class LoadRequest(BaseModel):
    """A profile to load: a saved or built-in one by ``profile``, or its TOML ``text``."""
    profile: str | None = Field(None, max_length=200)
    text: str | None = Field(None, max_length=MAX_BYTES)
    reseed: bool = False
    start_in: float = Field(1.0, ge=0, le=86400)
    session: str | None = Field(None, max_length=64)


class ProfileText(BaseModel):
    text: str = Field(..., max_length=MAX_BYTES)
    board: str = DEFAULT_BOARD


class ScenarioText(BaseModel):
    text: str = Field(..., max_length=MAX_SCENARIO_BYTES)


class ExperimentRequest(BaseModel):
    """``satemu experiment``'s fields: its kind, the scenario of kind ``scenario`` (built-in or
    saved here), profiles (built-in or saved here), sizes,
    policies, congestion controllers, seeds, engine, stack, --set values, jobs, a Dask
    scheduler and the time limit of a run."""
    kind: str = "ack-policy"
    scenario: str | None = None
    profile: list[str] | None = None
    sizes: str | None = None
    policies: str | None = None
    cc: str | None = None
    seeds: str | None = None
    engine: str | None = "model"
    stack: str | None = None
    set: list[str] | None = None
    jobs: int | None = None
    dask: str | None = None
    max_time: float | None = None


class FlashRequest(BaseModel):
    """``satemu flash``'s options: the board the box is (checked against its HELLO), SRAM or
    SPI flash, and the programmer. The bitstream is the board's last build; no path is taken."""
    board: str = Field(..., max_length=64)
    mode: Literal["sram", "spi"] = "sram"
    verify: bool = False
    force: bool = False
    dry_run: bool = False
    cable: str | None = Field(None, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    ftdi_serial: str | None = Field(None, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    freq: int | None = Field(None, ge=1, le=100_000_000)
    session: str | None = Field(None, max_length=64)


class Claim(BaseModel):
    who: str = Field("", max_length=64)


class SessionRef(BaseModel):
    session: str | None = Field(None, max_length=64)


def one_line(text: str) -> str:
    return "; ".join(part.strip() for part in str(text).splitlines() if part.strip())


class BodyLimit:
    """ASGI middleware: a body longer than ``limit`` bytes is refused (413) before it is read
    whole, whether or not it declared its length."""

    def __init__(self, app, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            return await _refuse(send, 413, f"the body is over {self.limit:,} bytes")
        seen = 0

        async def counted():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise ApiError(413, f"the body is over {self.limit:,} bytes")
            return message
        try:
            await self.app(scope, counted, send)
        except ApiError as e:
            await _refuse(send, e.status, str(e))


async def _refuse(send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def create_app(console: Console) -> FastAPI:
    """The console's app over ``console``'s boxes and data folder."""
    app = FastAPI(title="satemu lab console", version=__version__,
                  description="Boxes, their live state and link profiles, over HTTP. "
                              "Changes need the token (Authorization: Bearer TOKEN).",
                  docs_url=None, redoc_url=None, openapi_url="/api/openapi.json")
    app.state.console = console
    app.add_middleware(BodyLimit, limit=MAX_BODY)

    @app.exception_handler(ApiError)
    async def _api_error(request, e: ApiError):
        return JSONResponse({"error": one_line(str(e)), **e.extra}, status_code=e.status)

    @app.exception_handler(BoxError)
    async def _box_error(request, e: BoxError):
        return JSONResponse({"error": one_line(str(e))}, status_code=e.status)

    @app.exception_handler(RequestValidationError)
    async def _bad_request(request, e: RequestValidationError):
        first = e.errors()[0] if e.errors() else {}
        where = ".".join(str(x) for x in first.get("loc", ()) if x != "body")
        msg = first.get("msg", "a request that cannot be read")
        return JSONResponse({"error": one_line(f"{where}: {msg}" if where else msg)},
                            status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request, e: StarletteHTTPException):
        return JSONResponse({"error": one_line(str(e.detail))}, status_code=e.status_code)

    def reader(request: Request) -> None:
        if not console.open_reads:
            _check_token(console, request)

    def writer(request: Request) -> None:
        _check_token(console, request)

    def box_of(name: str) -> Box:
        box = console.boxes.get(name)
        if box is None:
            raise ApiError(404, f"no box named {name[:64]!r}; the boxes are "
                                f"{', '.join(console.boxes) or 'none'}")
        return box

    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        """The web page: the dashboard and the profile editor (static/, no outside scripts)."""
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    # ---- the console ------------------------------------------------------------------------

    @app.get("/api", dependencies=[Depends(reader)])
    def about() -> dict:
        """The console: its version, its boxes, the boards a profile can be checked against."""
        return {"satemu": __version__, "boxes": list(console.boxes), "boards": list(BOARDS),
                "token_configured": console.tokens.configured,
                "open_reads": console.open_reads}

    # ---- boxes --------------------------------------------------------------------------------

    @app.get("/api/boxes", dependencies=[Depends(reader)])
    def boxes() -> list[dict]:
        """Every box, with its state (up, down, stopped), its HELLO and its session."""
        return [b.describe() for b in console.boxes.values()]

    @app.get("/api/boxes/{name}", dependencies=[Depends(reader)])
    def box(name: str) -> dict:
        return box_of(name).describe()

    @app.get("/api/boxes/{name}/state", dependencies=[Depends(reader)])
    def state(name: str) -> dict:
        """The newest reading of everything the box counts (as the live stream sends it)."""
        return box_of(name).live()[1]

    @app.get("/api/boxes/{name}/live", dependencies=[Depends(reader)])
    async def live(name: str, request: Request, max_updates: int = 0):
        """Server-sent events: each new reading of the box (every counter and gauge of each
        channel and terminal, the timeline's run, the BoD records written since the last), as
        the console's poller takes them (10 a second), or an error when the box stops
        answering. ``max_updates`` ends the stream after that many (0: never)."""
        b = box_of(name)

        async def events():
            last, sent = -1, 0
            while True:
                if await request.is_disconnected():
                    return
                seq, data = b.live()
                if seq != last:
                    last = seq
                    yield f"id: {seq}\ndata: {json.dumps(data)}\n\n"
                    sent += 1
                    if max_updates and sent >= max_updates:
                        return
                await asyncio.sleep(b.poll_s / 4)
        return StreamingResponse(events(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store"})

    @app.get("/api/boxes/{name}/capture.pcapng", dependencies=[Depends(reader)])
    def capture(name: str) -> FileResponse:
        """The box's frame log (both channels, every frame's arrival, fate and egress) as
        pcapng, read over its UART now (as ``satemu capture`` does); 409 for a box built
        without a log. The readings wait while it is read."""
        b = box_of(name)
        folder = console.data / "captures"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{b.name}-{time.strftime('%Y%m%d-%H%M%S')}.pcapng"
        try:
            cap = b.call(lambda dev: capture_box_log(dev, path, b.url))
        except BoxError as e:
            if "no frame log" in str(e):
                raise ApiError(409, str(e)) from None
            raise
        headers = {"X-Satemu-Records": str(cap.records)}
        if cap.problems:
            headers["X-Satemu-Partial"] = "; ".join(cap.problems)[:500]
        return FileResponse(path, filename=path.name, media_type="application/octet-stream",
                            headers=headers)

    @app.get("/api/boxes/{name}/bod-trace.csv", dependencies=[Depends(reader)])
    def bod_trace(name: str, first: int = Query(0, alias="from", ge=0, le=0xFFFF_FFFF),
                  profile: str | None = Query(None, max_length=200)) -> Response:
        """The return channel's BoD records from superframe ``from`` on, as ``satemu bod-trace``
        writes them (a row a superframe, or a terminal a superframe): requests, grants by type,
        slots used and the backlog. ``profile`` (built-in or saved here; by default the one
        the console last loaded into the box) gives each superframe its shape where a timeline
        changed it. 409 for a box without BoD, or with it off."""
        b = box_of(name)
        if profile is None and b.loaded is not None:
            profile = b.loaded["profile"]
        link = None if profile is None else _profile_of(console, profile, None)

        def read(dev):
            try:
                return read_bod(dev, first, link)
            except NoBod as e:
                raise BoxError(409, f"box {b.name}: {one_line(str(e))}") from None
            except ValueError as e:         # the profile does not fit the box, or has no BoD
                raise ApiError(400, f"profile {one_line(str(e))}") from None
        got = b.call(read)
        t = got.trace
        headers = {"Content-Disposition": f'attachment; filename="{b.name}-bod-trace.csv"',
                   "X-Satemu-Superframes": str(t.count), "X-Satemu-Start-Cycle": str(t.start),
                   "X-Satemu-Shaped": "yes" if got.shaped else "no"}
        if t.lost:
            headers["X-Satemu-Lost"] = str(t.lost_count)
        return Response(csv_text(got.rows), media_type="text/csv", headers=headers)

    @app.post("/api/boxes/{name}/session", dependencies=[Depends(writer)])
    def claim(name: str, body: Claim) -> dict:
        """Hold the box: until let go, or SESSION_S after its last change, changes from others
        are refused. Give the session's id with each change."""
        return box_of(name).claim(body.who)

    @app.delete("/api/boxes/{name}/session", dependencies=[Depends(writer)])
    def release(name: str, session: str | None = None) -> dict:
        box_of(name).release(session)
        return {"released": True}

    @app.post("/api/boxes/{name}/load", dependencies=[Depends(writer)])
    def load(name: str, body: LoadRequest) -> dict:
        """Load a profile and commit it, with its timeline: checked against the box first, then
        applied by one commit (a refused or failed load leaves the profile in force)."""
        b = box_of(name)
        p = _profile_of(console, body.profile, body.text)
        with b.change(body.session):
            try:
                report = b.call(lambda dev: load_into(dev, p, reseed=body.reseed,
                                                      start_in=body.start_in))
            except ProfileError as e:
                raise ApiError(400, str(e), errors=[field_error(e)]) from None
            b.after_load({"profile": p.name, "at": time.time(), "lines": report.lines(b.url)})
        return b.loaded

    @app.post("/api/boxes/{name}/reset-stats", dependencies=[Depends(writer)])
    def reset_stats(name: str, body: SessionRef) -> dict:
        """Every counter of both channels from 0 again."""
        b = box_of(name)
        with b.change(body.session):
            b.call(lambda dev: dev.reset_stats())
        return {"reset": True}

    @app.post("/api/boxes/{name}/start", dependencies=[Depends(writer)])
    def start(name: str, body: SessionRef) -> dict:
        """A simulated board the console runs: start it (built first, if need be)."""
        b = box_of(name)
        with b.change(body.session):
            return b.start()

    @app.post("/api/boxes/{name}/stop", dependencies=[Depends(writer)])
    def stop(name: str, body: SessionRef) -> dict:
        b = box_of(name)
        with b.change(body.session):
            b.stop()
        return {"stopped": True}

    @app.post("/api/boxes/{name}/flash", dependencies=[Depends(writer)])
    def flash(name: str, body: FlashRequest) -> dict:
        """Program the board's last build into its FPGA's SRAM or SPI flash with
        openFPGALoader, as ``satemu flash`` does (``dry_run``: only the command). The box must
        answer as ``board`` if it answers at all; its connection is closed meanwhile and opened
        afresh after. Its output's last lines, and its exit status, come back."""
        import tempfile
        b = box_of(name)
        if b.sim:
            raise ApiError(409, f"box {b.name} is a simulated board the console runs: it has "
                                f"no bitstream to flash")
        if body.board not in PROGRAMMERS:
            raise ApiError(400, f"board: {body.board[:64]!r} cannot be flashed; the boards "
                                f"with a programmer are {', '.join(sorted(PROGRAMMERS))}")
        options = dict(cable=body.cable, ftdi_serial=body.ftdi_serial, freq=body.freq,
                       verify=body.verify, force=body.force)
        with b.change(body.session):
            if b.info is not None:
                want = BOARDS[body.board].hardware.limits()
                if any(b.info.get(k) != v for k, v in want.items()):
                    raise ApiError(409, f"box {b.name} answers as another board than "
                                        f"{body.board} (its HELLO's limits differ); nothing "
                                        f"was flashed")
            try:
                command = plan_flash(body.board, body.mode, **options)
                if body.dry_run:
                    return {"command": command, "dry_run": True}

                def program():
                    with tempfile.TemporaryFile("w+") as out:
                        status = run_flash(body.board, body.mode, output=out, **options)
                        out.seek(0)
                        return status, out.read()
                status, output = b.offline(program)
            except FlashError as e:
                raise ApiError(400, one_line(str(e))) from None
        return {"command": command, "exit": status,
                "output": [ln.rpartition("\r")[2] for ln in output.splitlines()][-40:]}

    # ---- profiles -----------------------------------------------------------------------------

    @app.get("/api/profiles", dependencies=[Depends(reader)])
    def profiles() -> list[dict]:
        """The built-in profiles and those saved here."""
        out = [{"name": n, "description": p.description, "saved": False}
               for n, p in builtin_profiles().items()]
        for path in sorted(console.profiles_dir.glob("*.toml")):
            try:
                desc = parse_profile(path.read_text(), path.stem,
                                     base_dir=console.files_dir).description
            except (ProfileError, OSError, UnicodeDecodeError) as e:
                desc = f"(does not load: {one_line(str(e))})"
            out.append({"name": path.stem, "description": desc, "saved": True})
        return out

    @app.get("/api/profiles/{name}", dependencies=[Depends(reader)])
    def profile(name: str, board: str = DEFAULT_BOARD) -> dict:
        """A profile's TOML and, as ``satemu show`` says it, what it means for ``board``."""
        text, saved = _profile_text(console, name)
        hw, lines = show_hardware(_board(board))
        p = _parse(console, text, name) if saved else builtin_profiles()[name]
        try:
            shown = show_lines(p, hw, lines)
        except ProfileError as e:
            shown = [f"does not fit {board}: {one_line(str(e))}"]
        return {"name": name, "saved": saved, "text": text, "show": shown}

    @app.post("/api/profiles/validate", dependencies=[Depends(reader)])
    def validate(body: ProfileText) -> dict:
        """Every error of a profile's TOML, each at its field (checked against ``board``'s
        hardware once it loads); with none, what it means for that board."""
        hw, lines = show_hardware(_board(body.board))
        errors = _errors(console, body.text, hw)
        if errors:
            return {"ok": False, "errors": errors}
        p = _parse(console, body.text, "")
        return {"ok": True, "errors": [], "name": p.name, "show": show_lines(p, hw, lines)}

    @app.put("/api/profiles/{name}", dependencies=[Depends(writer)])
    def save(name: str, body: ProfileText) -> dict:
        """Save a profile under ``name`` once it validates (against ``board``); a built-in's
        name is refused."""
        _name(name, "a profile")
        if name in builtin_profiles():
            raise ApiError(409, f"{name} is a built-in profile; save under another name")
        hw, _ = show_hardware(_board(body.board))
        errors = _errors(console, body.text, hw)
        if errors:
            raise ApiError(400, errors[0]["message"], errors=errors)
        save_toml(console.profiles_dir, name, body.text)
        return {"saved": name}

    @app.delete("/api/profiles/{name}", dependencies=[Depends(writer)])
    def delete(name: str) -> dict:
        return _delete(console.profiles_dir, name, "profile")

    # ---- files a profile names ----------------------------------------------------------------

    @app.get("/api/files", dependencies=[Depends(reader)])
    def files() -> list[dict]:
        """The files saved here that profiles may name (traces, jitter tables, demand traces),
        by their bare names."""
        folder = console.files_dir
        return [{"name": p.name, "bytes": p.stat().st_size}
                for p in sorted(folder.glob("*")) if p.is_file()] if folder.is_dir() else []

    @app.put("/api/files/{name}", dependencies=[Depends(writer)])
    async def put_file(name: str, request: Request) -> dict:
        """Store a file (the body, UTF-8 text, at most MAX_FILE bytes) for profiles to name. It
        is read as a profile that names it reads it: by ``validate`` and ``load``."""
        _name(name, "a file")
        data = await request.body()
        if len(data) > MAX_FILE:
            raise ApiError(413, f"{name}: over {MAX_FILE:,} bytes")
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise ApiError(400, f"{name}: not UTF-8 text") from None
        write_atomic(console.files_dir / name, data)
        return {"saved": name, "bytes": len(data)}

    # ---- scenarios ------------------------------------------------------------------------------

    @app.get("/api/scenarios", dependencies=[Depends(reader)])
    def scenarios() -> list[dict]:
        """The built-in scenarios and those saved here, each with its profile and flows."""
        out = []
        texts = [(n, t, False) for n, t in builtin_scenarios().items()]
        folder = console.scenarios_dir
        texts += [(p.stem, p.read_text(errors="replace"), True)
                  for p in sorted(folder.glob("*.toml"))] if folder.is_dir() else []
        for name, text, saved in texts:
            try:
                out.append({**_scenario_summary(_scenario(console, text, name)),
                            "saved": saved})
            except ScenarioError as e:
                out.append({"name": name, "saved": saved,
                            "description": f"(does not load: {one_line(str(e))})"})
        return out

    @app.get("/api/scenarios/{name}", dependencies=[Depends(reader)])
    def scenario(name: str) -> dict:
        """A scenario's TOML, its profile and its flows."""
        text, saved = _scenario_text(console, name)
        try:
            summary = _scenario_summary(_scenario(console, text, name))
        except ScenarioError as e:
            summary = {"name": name, "error": one_line(str(e))}
        return {**summary, "saved": saved, "text": text}

    @app.post("/api/scenarios/validate", dependencies=[Depends(reader)])
    def validate_scenario(body: ScenarioText) -> dict:
        """A scenario's error at its key (with its line), or its profile and flows. Its profile
        is a built-in one by name, or one saved here as ``NAME.toml``."""
        try:
            sc = _scenario(console, body.text, "scenario")
        except ScenarioError as e:
            return {"ok": False, "errors": [_scenario_error(console, body.text, e)]}
        return {"ok": True, "errors": [], **_scenario_summary(sc)}

    @app.put("/api/scenarios/{name}", dependencies=[Depends(writer)])
    def save_scenario(name: str, body: ScenarioText) -> dict:
        """Save a scenario under ``name`` once it validates; a built-in's name is refused."""
        _name(name, "a scenario")
        if name in builtin_scenarios():
            raise ApiError(409, f"{name} is a built-in scenario; save under another name")
        try:
            _scenario(console, body.text, name)
        except ScenarioError as e:
            error = _scenario_error(console, body.text, e)
            raise ApiError(400, error["message"], errors=[error]) from None
        save_toml(console.scenarios_dir, name, body.text)
        return {"saved": name}

    @app.delete("/api/scenarios/{name}", dependencies=[Depends(writer)])
    def delete_scenario(name: str) -> dict:
        return _delete(console.scenarios_dir, name, "scenario")

    # ---- experiments ----------------------------------------------------------------------------

    def run_of(ident: str):
        try:
            return console.experiments.get(ident)
        except KeyError:
            raise ApiError(404, f"no experiment {ident[:40]!r}") from None

    @app.post("/api/experiments", dependencies=[Depends(writer)])
    def submit(body: ExperimentRequest) -> dict:
        """Start a sweep, as ``satemu experiment`` with these fields (the model engine unless
        ``engine`` says board); its id, status and progress."""
        fields = {k: v for k, v in body.model_dump().items() if v is not None}
        try:
            return console.experiments.submit(fields).describe()
        except ExperimentError as e:
            raise ApiError(400, str(e)) from None

    @app.get("/api/experiments", dependencies=[Depends(reader)])
    def experiments() -> list[dict]:
        return [r.describe() for r in console.experiments.runs.values()]

    @app.get("/api/experiments/{ident}", dependencies=[Depends(reader)])
    def experiment(ident: str) -> dict:
        """Its status (running, done, failed, cancelled), points done of those planned, the
        last lines it printed and its files."""
        return run_of(ident).describe()

    @app.post("/api/experiments/{ident}/cancel", dependencies=[Depends(writer)])
    def cancel(ident: str) -> dict:
        run_of(ident)
        return console.experiments.cancel(ident).describe()

    @app.get("/api/experiments/{ident}/results", dependencies=[Depends(reader)])
    def results(ident: str) -> dict:
        """results.json of a finished experiment: a row a point, and the points that failed."""
        try:
            path = console.experiments.file(run_of(ident).id, "results.json")
        except KeyError:
            raise ApiError(404, f"experiment {ident[:40]} has no results yet") from None
        return json.loads(path.read_text())

    @app.get("/api/experiments/{ident}/files/{rel:path}", dependencies=[Depends(reader)])
    def download(ident: str, rel: str) -> FileResponse:
        """A file an experiment wrote (results.csv, report.md, a run's plots, result.json,
        packets.csv, capture.pcapng), by its path in the experiment's folder."""
        try:
            path = console.experiments.file(run_of(ident).id, rel)
        except KeyError:
            raise ApiError(404, f"experiment {ident[:40]} has no file {rel[:80]!r}") from None
        return FileResponse(path, filename=path.name)

    return app


# ---- helpers ------------------------------------------------------------------------------------

def _check_token(console: Console, request: Request) -> None:
    if not console.tokens.configured:
        raise ApiError(403, "this console has no token, so nothing can be changed through it: "
                            "make one with satemu serve --new-token")
    auth = request.headers.get("authorization", "")
    token = auth[7:].strip() if auth.lower().startswith("bearer ") else None
    if token is None:
        raise ApiError(401, "this needs the console's token: Authorization: Bearer TOKEN")
    if not console.tokens.check(token):
        raise ApiError(403, "the token is not this console's")


def _name(name: str, what: str) -> str:
    if not NAME.fullmatch(name) or name.endswith(".tmp"):
        raise ApiError(400, f"{name[:64]!r}: not a name for {what} (letters, digits, '.', '_' "
                            f"and '-', at most 64, starting with a letter or digit)")
    return name


def _board(board: str) -> str:
    if board not in BOARDS:
        raise ApiError(400, f"board: {board[:64]!r} is not a board; the boards are "
                            f"{', '.join(BOARDS)}")
    return board


def _profile_text(console: Console, name: str) -> tuple[str, bool]:
    """A saved profile's text, else a built-in's (the file shipped with the package)."""
    path = saved_file(console.profiles_dir, name, ".toml")
    if path is not None:
        return path.read_text(errors="replace"), True
    if name in builtin_profiles():
        from importlib import resources
        return resources.files("satemu").joinpath("profiles", f"{name}.toml").read_text(), False
    raise ApiError(404, f"no profile named {name[:64]!r} (built-in or saved here)")


def _file_refs(console: Console, text: str) -> list[dict]:
    """The errors of the files ``text`` names: each must be a bare name of a file saved here,
    so that no profile reads outside the console's files folder."""
    return [{"field": where, "message": f"{where}: {v[:64]!r} is not a file saved on this "
             f"console (PUT /api/files/NAME; a bare name, no folder)"}
            for where, v in named_files(text) if saved_file(console.files_dir, v) is None]


def _delete(folder: Path, name: str, what: str) -> dict:
    """Delete the saved ``what`` (a profile, a scenario) ``name``: 404 if there is none."""
    path = saved_file(folder, _name(name, f"a {what}"), ".toml")
    if path is None:
        raise ApiError(404, f"no saved {what} named {name}")
    path.unlink()
    return {"deleted": name}


def _scenario_text(console: Console, name: str) -> tuple[str, bool]:
    """A saved scenario's text, else a built-in's."""
    path = saved_file(console.scenarios_dir, name, ".toml")
    if path is not None:
        return path.read_text(errors="replace"), True
    builtins = builtin_scenarios()
    if name in builtins:
        return builtins[name], False
    raise ApiError(404, f"no scenario named {name[:64]!r} (built-in or saved here)")


def _scenario(console: Console, text: str, name: str):
    """Scenario ``text`` parsed as the console runs it: its profile a built-in one by name, or
    one saved here as ``NAME.toml`` (reading only the files saved here); nothing else."""
    def resolve(ref: str):
        if ref.endswith(".toml"):
            path = saved_file(console.profiles_dir, ref[:-5], ".toml")
            if path is not None:
                return _parse(console, path.read_text(errors="replace"), ref[:-5])
        elif ref in (builtins := builtin_profiles()):
            return builtins[ref]
        raise ScenarioError(f"{ref[:64]!r} is neither a built-in profile's name nor "
                            f"NAME.toml of a profile saved on this console")
    try:
        return parse_scenario(text, name, resolve=resolve)
    except ApiError as e:                   # the saved profile no longer validates
        raise ScenarioError(f"profile: {e}") from None


def _scenario_summary(sc) -> dict:
    return {"name": sc.name, "description": sc.description, "profile": sc.profile.name,
            "flows": [{"name": f.name, "terminal": f.terminal, "ack": f.ack,
                       "workload": f.workload.kind} for f in sc.flows]}


def _scenario_error(console: Console, text: str, e: ScenarioError) -> dict:
    """A ScenarioError as a client gets it: its key (the message's first word, when it names
    one), the message, and the key's line."""
    message = _bare(console, one_line(str(e)))
    head = message.split(":", 1)[0]
    key = head if re.fullmatch(r"[A-Za-z_][\w.\[\]-]*", head) else ""
    return {"field": key, "message": message, "line": line_of(text, key, message)}


def _errors(console: Console, text: str, hw) -> list[dict]:
    return _located(console, text, _file_refs(console, text) or
                    profile_errors(text, base_dir=console.files_dir, hw=hw))


def _located(console: Console, text: str, errors: list[dict]) -> list[dict]:
    """Errors of profile ``text`` as a client gets them: each message without the console's
    folders (``_bare``), each with the ``line`` of its field (``line_of``)."""
    out = []
    for e in errors:
        message = _bare(console, e["message"])
        out.append({**e, "message": message, "line": line_of(text, e["field"], message)})
    return out


_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\"'.-]+?)\s*=")


def line_of(text: str, field: str, message: str = "") -> int | None:
    """The line (from 1) of ``text`` where ``field`` (a ProfileError's path: ``forward.rate``,
    ``return.bod.cra``, ``timeline[2].forward.rate``) is set, or its table's header, or the
    nearest line that sets a table holding it; None if none does (a missing table). Without a
    field, the line TOML's reader named in ``message``, if it did."""
    if not field:
        m = re.search(r"\(at line (\d+), column \d+\)", message)
        return int(m.group(1)) if m else None
    want = re.sub(r"\[(\d+)\]", r".[\1]", field).split(".")
    table: list[str] = []
    counts: dict[str, int] = {}
    best, best_len = None, 0
    for number, line in enumerate(text.splitlines(), 1):
        m = _HEADER.match(line)
        if m:
            name = [k.strip().strip("\"'") for k in m.group(2).split(".")]
            if m.group(1) == "[[":
                key = ".".join(name)
                counts[key] = counts.get(key, -1) + 1
                name = name + [f"[{counts[key]}]"]
            table = name
            path = table
        else:
            k = _KEY.match(line)
            if not k:
                continue
            path = table + [p.strip().strip("\"'") for p in k.group(1).split(".")]
        n = 0
        while n < min(len(path), len(want)) and path[n] == want[n]:
            n += 1
        if n == len(path) and n > best_len:
            best, best_len = number, n
    return best


def _bare(console: Console, message: str) -> str:
    """A message with the console's files folder left out of the paths it names: a client
    names a file by its bare name, and the server's folders are not its business."""
    return message.replace(f"{console.files_dir}/", "")


def _parse(console: Console, text: str, name: str):
    errors = _file_refs(console, text)
    if not errors:
        try:
            return parse_profile(text, name, base_dir=console.files_dir)
        except ProfileError as e:
            errors = [field_error(e)]
    errors = _located(console, text, errors)
    raise ApiError(400, errors[0]["message"], errors=errors)


def _profile_of(console: Console, name: str | None, text: str | None):
    if (name is None) == (text is None):
        raise ApiError(400, "give a profile's name or its text, one of them")
    if text is None:
        text, saved = _profile_text(console, name)
        if not saved:
            return builtin_profiles()[name]
    return _parse(console, text, name or "")


__all__ = ["Console", "create_app", "DeviceError"]
