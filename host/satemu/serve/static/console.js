// SPDX-License-Identifier: BSD-2-Clause
// The lab console's page: a dashboard per box fed by its live stream, and a profile editor.
// Everything it needs is served by `satemu serve`; it fetches nothing from elsewhere.
"use strict";

const $ = (sel) => document.querySelector(sel);
const WINDOW_S = 60;            // seconds of box time the charts show
const COLOURS = ["#1f6fd1", "#d1741f", "#2e9e4f", "#b3261e", "#7a4fc0", "#8c6d1f", "#17a2b8",
                 "#555"];
const DROPS = ["drop_loss", "drop_queue", "drop_mem", "drop_error", "drop_runt",
               "drop_oversize", "drop_overrun", "drop_preamble", "drop_unclassified", "late"];

// ---- the API -----------------------------------------------------------------------------------

const tokenInput = $("#token");
tokenInput.value = sessionStorage.getItem("satemu-token") || "";
tokenInput.addEventListener("change", () => {
  sessionStorage.setItem("satemu-token", tokenInput.value.trim());
});

async function api(method, path, body, raw) {
  const headers = {};
  const token = tokenInput.value.trim();
  if (token) headers["Authorization"] = "Bearer " + token;
  let payload;
  if (body !== undefined) {
    headers["Content-Type"] = raw ? "application/octet-stream" : "application/json";
    payload = raw ? body : JSON.stringify(body);
  }
  const r = await fetch(path, { method, headers, body: payload });
  let data = null;
  try { data = await r.json(); } catch (e) { data = { error: `${r.status} ${r.statusText}` }; }
  if (!r.ok) {
    const err = new Error(data.error || `${r.status}`);
    err.status = r.status;
    err.data = data;
    throw err;
  }
  return data;
}

function say(el, text, cls) {
  el.textContent = text;
  el.className = cls || "";
}

// ---- charts: lines on a canvas -----------------------------------------------------------------

class Chart {
  constructor(canvas, opts) {
    this.canvas = canvas;
    this.ctx = canvas.getContext("2d");
    this.series = new Map();          // label -> {colour, points: [[x, y], ...]}
    this.opts = Object.assign({ window: WINDOW_S, xlabel: "s of box time" }, opts || {});
  }
  clear() { this.series.clear(); this.draw(); }
  add(label, x, y) {
    if (!Number.isFinite(x) || !Number.isFinite(y)) return;
    if (!this.series.has(label)) {
      this.series.set(label, { colour: COLOURS[this.series.size % COLOURS.length], points: [] });
    }
    const pts = this.series.get(label).points;
    pts.push([x, y]);
    const from = x - this.opts.window;
    while (pts.length > 2 && pts[0][0] < from) pts.shift();
  }
  draw() {
    const { ctx, canvas } = this;
    const W = canvas.width, H = canvas.height, L = 48, B = 22, T = 8, R = 8;
    ctx.clearRect(0, 0, W, H);
    let xmin = Infinity, xmax = -Infinity, ymax = 0;
    for (const s of this.series.values()) {
      for (const [x, y] of s.points) {
        xmin = Math.min(xmin, x); xmax = Math.max(xmax, x); ymax = Math.max(ymax, y);
      }
    }
    ctx.strokeStyle = "#c8d0d8"; ctx.fillStyle = "#5b6876"; ctx.font = "11px sans-serif";
    ctx.strokeRect(L, T, W - L - R, H - T - B);
    if (!Number.isFinite(xmin)) {
      ctx.fillText("no data yet", L + 8, T + 16);
      return;
    }
    if (xmax - xmin < 1e-9) xmax = xmin + 1;
    ymax = ymax > 0 ? ymax * 1.1 : 1;
    const px = (x) => L + (x - xmin) / (xmax - xmin) * (W - L - R);
    const py = (y) => H - B - y / ymax * (H - T - B);
    for (let i = 0; i <= 4; i++) {
      const y = ymax * i / 4;
      ctx.fillText(fmt(y), 2, py(y) + 4);
    }
    ctx.fillText(`${fmt(xmin)} .. ${fmt(xmax)} ${this.opts.xlabel}`, L, H - 6);
    let lx = L + 8;
    for (const [label, s] of this.series) {
      ctx.strokeStyle = s.colour; ctx.lineWidth = 1.5; ctx.beginPath();
      s.points.forEach(([x, y], i) => (i ? ctx.lineTo(px(x), py(y)) : ctx.moveTo(px(x), py(y))));
      ctx.stroke();
      ctx.fillStyle = s.colour;
      const [lastX, lastY] = s.points[s.points.length - 1];      // the newest, as a dot
      ctx.beginPath();
      ctx.arc(px(lastX), py(lastY), 2.5, 0, 2 * Math.PI);
      ctx.fill();
      ctx.fillText(label, lx, T + 12);
      lx += ctx.measureText(label).width + 14;
    }
  }
}

function fmt(v) {
  if (Math.abs(v) >= 1e6) return (v / 1e6).toFixed(1) + "M";
  if (Math.abs(v) >= 1e4) return (v / 1e3).toFixed(0) + "k";
  if (Math.abs(v) >= 100) return v.toFixed(0);
  return v.toFixed(Math.abs(v) >= 10 ? 1 : 2);
}

const charts = {
  rate: new Chart($("#chart-rate")),
  queue: new Chart($("#chart-queue")),
  drops: new Chart($("#chart-drops")),
  bod: new Chart($("#chart-bod"), { window: 200, xlabel: "superframe" }),
};

// ---- the dashboard -----------------------------------------------------------------------------

let boxes = [];
let current = null;
let stream = null;
let previous = null;                   // the reading before, for rates
let session = null;                    // the session this page holds, {box, id}

async function refreshBoxes() {
  try {
    boxes = await api("GET", "/api/boxes");
  } catch (e) {
    say($("#box-error"), e.message, "error");
    $("#box-error").hidden = false;
    return;
  }
  const select = $("#box");
  const chosen = select.value || (boxes[0] && boxes[0].name);
  select.innerHTML = "";
  for (const b of boxes) {
    const o = document.createElement("option");
    o.value = b.name; o.textContent = b.name;
    select.appendChild(o);
  }
  select.value = chosen;
  $("#load-box").textContent = chosen || "the box";
  if (chosen !== current) watch(chosen);
  showBox();
}

function showBox() {
  const b = boxes.find((x) => x.name === current);
  if (!b) return;
  const st = $("#box-state");
  st.textContent = b.state + (b.url ? ` (${b.url})` : "");
  st.className = "state " + b.state;
  $("#start").hidden = !b.simulated || b.state !== "stopped";
  $("#stop").hidden = !b.simulated || b.state === "stopped";
  // the downloads the box's HELLO says it has: its frame log, its BoD records
  const has = (c) => b.state === "up" && b.capabilities.includes(c);
  const at = `/api/boxes/${encodeURIComponent(b.name)}`;
  $("#dl-capture").hidden = !has("frame_log");
  $("#dl-capture").href = `${at}/capture.pcapng`;
  $("#dl-bod").hidden = !has("bod");
  $("#dl-bod").href = `${at}/bod-trace.csv`;
  const held = session && session.box === b.name;
  $("#claim").hidden = held;
  $("#release").hidden = !held;
  $("#claim").title = b.session ? `held by ${b.session.who}` : "";
  if (b.session && !held) {
    $("#claim").textContent = `Held by ${b.session.who}`;
  } else {
    $("#claim").textContent = "Hold this box";
  }
}

function watch(name) {
  if (stream) stream.close();
  current = name;
  previous = null;
  Object.values(charts).forEach((c) => c.clear());
  if (!name) return;
  stream = new EventSource(`/api/boxes/${encodeURIComponent(name)}/live`);
  stream.onmessage = (ev) => update(JSON.parse(ev.data));
  stream.onerror = () => {
    say($("#box-error"), "the console does not answer; retrying", "error");
    $("#box-error").hidden = false;
  };
}

function update(live) {
  const errEl = $("#box-error");
  if (live.error || !live.reading) {
    say(errEl, live.error || "no reading yet", "error");
    errEl.hidden = false;
    $("#box-state").textContent = "down";
    $("#box-state").className = "state down";
    return;
  }
  errEl.hidden = true;
  const r = live.reading;
  const t = r.cycle / r.f_clk;
  $("#loaded").textContent = live.loaded ? live.loaded.lines.join("\n")
                                         : "none loaded through the console";
  $("#timeline").textContent = r.timeline ? r.timeline.words : "this box has no timelines";
  if (previous && r.cycle > previous.cycle) {
    const dt = (r.cycle - previous.cycle) / r.f_clk;
    for (const ch of ["forward", "return"]) {
      const bits = 8 * (r.channels[ch].tx_bytes - previous.channels[ch].tx_bytes);
      charts.rate.add(ch, t, bits / dt / 1e6);
    }
  }
  for (const ch of ["forward", "return"]) {
    charts.queue.add(ch, t, r.channels[ch].queue_frames_now);
    for (const cause of DROPS) {
      const v = r.channels[ch][cause] || 0;
      const label = `${ch} ${cause.replace("drop_", "")}`;
      if (v > 0 || charts.drops.series.has(label)) {
        if (!charts.drops.series.has(label) && previous) {   // from the reading before
          charts.drops.add(label, previous.cycle / previous.f_clk, previous.channels[ch][cause]);
        }
        charts.drops.add(label, t, v);
      }
    }
  }
  if (r.bod) {
    // the block restarted (a load, a timeline's layout step): its superframes from 0 again
    if (previous && previous.bod && previous.bod.start !== r.bod.start) charts.bod.clear();
    const bySf = new Map();
    for (const row of r.bod.rows) {
      const s = bySf.get(row.sf) || { req: 0, granted: 0, used: 0 };
      s.req += row.rbdc_req_kbps; s.granted += row.granted_kbps; s.used += row.used_kbps;
      bySf.set(row.sf, s);
    }
    for (const [sf, s] of bySf) {
      charts.bod.add("RBDC requested, kbit/s", sf, s.req);
      charts.bod.add("granted, kbit/s", sf, s.granted);
      charts.bod.add("used, kbit/s", sf, s.used);
    }
  }
  previous = r;
  Object.values(charts).forEach((c) => c.draw());
  counters(r);
  $("#rate-note").textContent =
    `box time ${t.toFixed(3)} s; reading ${live.seq} (the charts' time is the box's)`;
}

function counters(r) {
  const body = $("#counters tbody");
  const names = Object.keys(r.channels.forward).filter((k) => k !== "snapshot_cycle");
  if (body.children.length !== names.length) {
    body.innerHTML = "";
    for (const n of names) {
      const tr = document.createElement("tr");
      tr.innerHTML = `<td>${n}</td><td class="n" data-ch="forward"></td>` +
                     `<td class="n" data-ch="return"></td>`;
      tr.dataset.name = n;
      body.appendChild(tr);
    }
  }
  for (const tr of body.children) {
    for (const td of tr.querySelectorAll("td.n")) {
      td.textContent = r.channels[td.dataset.ch][tr.dataset.name];
    }
  }
  const terms = $("#terminals");
  terms.innerHTML = "";
  for (const [ch, rows] of Object.entries(r.terminals || {})) {
    const h = document.createElement("h3");
    h.textContent = `${ch} channel, by terminal`;
    terms.appendChild(h);
    const table = document.createElement("table");
    const cols = ["rx_frames", "tx_frames", "drop_loss", "drop_queue", "drop_mem"];
    table.innerHTML = `<tr><th>terminal</th>${cols.map((c) => `<th>${c}</th>`).join("")}</tr>` +
      Object.entries(rows).map(([who, c]) =>
        `<tr><td>${who === "none" ? "no terminal's" : who}</td>` +
        cols.map((k) => `<td class="n">${c[k]}</td>`).join("") + "</tr>").join("");
    terms.appendChild(table);
  }
}

async function change(path, body) {
  try {
    const out = await api("POST", path, Object.assign({ session: heldId() }, body || {}));
    $("#box-error").hidden = true;
    return out;
  } catch (e) {
    say($("#box-error"), e.message, "error");
    $("#box-error").hidden = false;
    return null;
  } finally {
    refreshBoxes();
  }
}

function heldId() { return session && session.box === current ? session.id : null; }

$("#box").addEventListener("change", (e) => { watch(e.target.value); refreshBoxes(); });
$("#claim").addEventListener("click", async () => {
  const out = await change(`/api/boxes/${current}/session`, { who: "the web page" });
  if (out) session = { box: current, id: out.session };
  showBox();
});
$("#release").addEventListener("click", async () => {
  try {
    await api("DELETE", `/api/boxes/${current}/session?session=${heldId()}`);
  } catch (e) { say($("#box-error"), e.message, "error"); $("#box-error").hidden = false; }
  session = null;
  refreshBoxes();
});
$("#reset").addEventListener("click", () => change(`/api/boxes/${current}/reset-stats`));
$("#start").addEventListener("click", () => change(`/api/boxes/${current}/start`));
$("#stop").addEventListener("click", () => change(`/api/boxes/${current}/stop`));

// ---- the profile editor ------------------------------------------------------------------------

const text = $("#text");
const gutter = $("#gutter");
const notes = $("#notes");
const LINE_PX = 18;

function drawGutter(errors) {
  const lines = text.value.split("\n").length;
  const bad = new Map();
  for (const e of errors || []) if (e.line) bad.set(e.line, e);
  gutter.innerHTML = "";
  notes.innerHTML = "";
  for (let i = 1; i <= lines; i++) {
    const span = document.createElement("span");
    span.textContent = i + "\n";
    if (bad.has(i)) span.className = "bad";
    gutter.appendChild(span);
  }
  for (const [line, e] of bad) {
    const div = document.createElement("div");
    div.className = "note-line";
    div.dataset.line = line;
    div.dataset.field = e.field;
    div.textContent = e.message;
    div.title = e.message;
    notes.appendChild(div);
  }
  placeNotes();
}

function placeNotes() {
  gutter.scrollTop = text.scrollTop;
  for (const div of notes.children) {
    div.style.top = (4 + (div.dataset.line - 1) * LINE_PX - text.scrollTop) + "px";
  }
}

text.addEventListener("scroll", placeNotes);
text.addEventListener("input", () => drawGutter([]));

async function listProfiles() {
  const list = await api("GET", "/api/profiles");
  const ul = $("#profile-list");
  ul.innerHTML = "";
  for (const p of list) {
    const li = document.createElement("li");
    li.innerHTML = `${p.name} ${p.saved ? '<span class="saved">saved</span>' : ""}`;
    li.title = p.description;
    li.addEventListener("click", () => openProfile(p.name, li));
    ul.appendChild(li);
  }
}

async function openProfile(name, li) {
  document.querySelectorAll("#profile-list li").forEach((x) => x.classList.remove("active"));
  if (li) li.classList.add("active");
  const board = $("#board").value;
  const p = await api("GET", `/api/profiles/${encodeURIComponent(name)}?board=${board}`);
  text.value = p.text;
  $("#profile-name").value = p.saved ? name : `my-${name}`;
  $("#show").textContent = p.show.join("\n");
  say($("#verdict"), "");
  drawGutter([]);
}

function showErrors(errors) {
  say($("#verdict"), `${errors.length} error${errors.length > 1 ? "s" : ""}: ` +
      errors.map((e) => (e.line ? `line ${e.line}: ` : "") + e.message).join("; "), "bad");
  $("#show").textContent = "";
  drawGutter(errors);
}

async function validate() {
  const out = await api("POST", "/api/profiles/validate",
                        { text: text.value, board: $("#board").value });
  if (out.ok) {
    say($("#verdict"), `valid for ${$("#board").value}`, "ok");
    $("#show").textContent = out.show.join("\n");
    drawGutter([]);
  } else {
    showErrors(out.errors);
  }
  return out.ok;
}

$("#validate").addEventListener("click", () => validate().catch((e) => say($("#verdict"),
                                                                           e.message, "bad")));
$("#save").addEventListener("click", async () => {
  try {
    await api("PUT", `/api/profiles/${encodeURIComponent($("#profile-name").value)}`,
              { text: text.value, board: $("#board").value });
    say($("#verdict"), `saved as ${$("#profile-name").value}`, "ok");
    listProfiles();
  } catch (e) {
    if (e.data && e.data.errors) showErrors(e.data.errors);
    else say($("#verdict"), e.message, "bad");
  }
});
$("#load").addEventListener("click", async () => {
  try {
    const out = await api("POST", `/api/boxes/${current}/load`,
                          { text: text.value, session: heldId() });
    say($("#verdict"), out.lines.join(" "), "ok");
  } catch (e) {
    if (e.data && e.data.errors) showErrors(e.data.errors);
    else say($("#verdict"), e.message, "bad");
  }
});

// ---- experiments -------------------------------------------------------------------------------

const RESULT_COLUMNS = ["profile", "size_text", "ack", "cc", "seed", "completion_s",
                        "goodput_mbps", "return_packets", "return_bytes", "ack_only_packets",
                        "ack_ratio", "consistent"];
// a scenario sweep's rows: a point each, its flows together
const SCENARIO_COLUMNS = ["scenario", "overrides", "seed", "completed", "flows_completed",
                          "goodput_mbps_mean", "goodput_jain", "slots_granted_jain",
                          "return_packets", "return_bytes"];
let shownExperiment = null;

async function listExperiments() {
  let runs;
  try { runs = await api("GET", "/api/experiments"); } catch (e) { return; }
  const body = $("#exp-list tbody");
  body.innerHTML = "";
  for (const r of runs.slice().reverse()) {
    const tr = document.createElement("tr");
    const f = r.fields;
    const total = r.points || 0;
    tr.innerHTML = `<td>${r.id}</td><td class="status">${r.status}</td>` +
      `<td><progress max="${total || 1}" value="${r.done}"></progress> ${r.done}/${total || "?"}` +
      `</td><td>${escapeHtml(f.kind === "scenario"
        ? [`scenario ${f.scenario}`, ...(f.set || [])].join(" · ")
        : [(f.profile || ["geo-testbed"]).join(" "), f.sizes || "", f.policies || ""]
          .join(" · "))}</td><td></td>`;
    tr.dataset.id = r.id;
    const last = tr.lastChild;
    if (r.status === "running") {
      const b = document.createElement("button");
      b.textContent = "Cancel";
      b.addEventListener("click", async () => {
        try { await api("POST", `/api/experiments/${r.id}/cancel`); }
        catch (e) { say($("#exp-error"), e.message, "error"); $("#exp-error").hidden = false; }
        listExperiments();
      });
      last.appendChild(b);
    }
    const v = document.createElement("button");
    v.textContent = "Show";
    v.addEventListener("click", () => { shownExperiment = r.id; showExperiment(r); });
    last.appendChild(v);
    body.appendChild(tr);
    if (r.id === shownExperiment) showExperiment(r);
  }
}

async function showExperiment(r) {
  const div = $("#exp-detail");
  const files = (name) => `/api/experiments/${r.id}/files/${name}`;
  let html = `<h3>${r.id}: ${r.status}</h3><pre>${escapeHtml(r.log_tail.join("\n"))}</pre>`;
  if (r.status === "done" || r.status === "failed") {
    try {
      const res = await api("GET", `/api/experiments/${r.id}/results`);
      const columns = r.fields.kind === "scenario" ? SCENARIO_COLUMNS : RESULT_COLUMNS;
      html += "<table><tr>" + columns.map((c) => `<th>${c}</th>`).join("") + "</tr>" +
        res.rows.map((row) => "<tr>" + columns.map((c) =>
          `<td class="n">${escapeHtml(cell(row[c]))}</td>`).join("") + "</tr>").join("") +
        "</table>";
    } catch (e) { html += `<p class="error">${escapeHtml(e.message)}</p>`; }
    html += r.files.map((f) => `<a href="${files(f)}">${f}</a>`).join(" · ");
    // a sweep's own plots; a scenario sweep's flows' goodput, a plot a point
    const shown = /(sweep_return_bytes|forward_goodput|return_pps|flows_goodput)\.png$/;
    html += "<div>" + r.plots.filter((p) => shown.test(p))
      .slice(0, 12).map((p) => `<img alt="${p}" title="${p}" src="${files(p)}">`).join("") +
      "</div>";
  }
  div.innerHTML = html;
}

function cell(v) {
  if (typeof v === "number" && !Number.isInteger(v)) return v.toFixed(3);
  return String(v ?? "");
}

function escapeHtml(t) {
  const entities = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" };
  return t.replace(/[&<>"]/g, (c) => entities[c]);
}

$("#exp-scenario").addEventListener("change", () => {
  const scenario = !!$("#exp-scenario").value;
  document.querySelectorAll("#exp-form .plain").forEach((e) => { e.hidden = scenario; });
  document.querySelectorAll("#exp-form .scenario").forEach((e) => { e.hidden = !scenario; });
});

$("#exp-run").addEventListener("click", async () => {
  const chosen = Array.from($("#exp-profile").selectedOptions).map((o) => o.value);
  const scenario = $("#exp-scenario").value;
  const fields = scenario
    ? { kind: "scenario", scenario, seeds: $("#exp-seeds").value,
        engine: $("#exp-engine").value,
        set: $("#exp-set").value.split(";").map((x) => x.trim()).filter((x) => x) }
    : { profile: chosen.length ? chosen : ["geo-testbed"],
        sizes: $("#exp-sizes").value, policies: $("#exp-policies").value,
        cc: $("#exp-cc").value, seeds: $("#exp-seeds").value,
        engine: $("#exp-engine").value };
  try {
    const r = await api("POST", "/api/experiments", fields);
    $("#exp-error").hidden = true;
    shownExperiment = r.id;
  } catch (e) {
    say($("#exp-error"), e.message, "error");
    $("#exp-error").hidden = false;
  }
  listExperiments();
});

// ---- tabs, start -------------------------------------------------------------------------------

document.querySelectorAll("nav .tab").forEach((tab) => tab.addEventListener("click", () => {
  document.querySelectorAll("nav .tab").forEach((t) => t.classList.toggle("active", t === tab));
  document.querySelectorAll(".view").forEach((v) => { v.hidden = v.id !== tab.dataset.view; });
}));

(async function start() {
  const about = await api("GET", "/api");
  for (const b of about.boards) {
    const o = document.createElement("option");
    o.value = b; o.textContent = b;
    $("#board").appendChild(o);
  }
  say($("#auth-state"), about.token_configured ? "" : "no token configured: read-only");
  await refreshBoxes();
  await listProfiles();
  for (const p of await api("GET", "/api/profiles")) {
    const o = document.createElement("option");
    o.value = p.name; o.textContent = p.name;
    $("#exp-profile").appendChild(o);
  }
  for (const sc of await api("GET", "/api/scenarios")) {
    const o = document.createElement("option");
    o.value = sc.name;
    o.textContent = `scenario ${sc.name}` + (sc.profile ? ` (${sc.profile})` : "");
    $("#exp-scenario").appendChild(o);
  }
  drawGutter([]);
  listExperiments();
  setInterval(refreshBoxes, 2000);
  setInterval(listExperiments, 1000);
})();
