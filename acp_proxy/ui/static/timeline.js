// acp-proxy ui: the timeline of a capture (one line a frame, a waterfall column, sortable
// and resizable columns, a resizable split with the frame's detail), its filter expression,
// the keys, follow mode, and the stats tab. Loaded before app.js, whose helpers (el, get,
// hash, state...) it calls at run time. Recorded strings are only ever text nodes.
"use strict";

const COLUMNS = [
  ["seq", "seq", (f) => f.seq], ["t", "t ms", (f) => f.t_ms], ["dir", "dir", (f) => f.direction],
  ["kind", "kind", (f) => f.kind], ["method", "method", (f) => f.update || f.method || ""],
  ["summary", "summary", (f) => f.summary], ["latency", "latency", (f) => f.latency_ms === null ? -1 : f.latency_ms],
  ["waterfall", "waterfall", (f) => f.t_ms], ["anomalies", "anomalies", (f) => f.anomalies.join(",")]];
const WIDTHS = { seq: 52, t: 72, dir: 52, kind: 84, method: 150, summary: 160, latency: 76, waterfall: 140, anomalies: 80 };

// ---- the filter expression -------------------------------------------------------------

function filterBar() {
  const input = el("input", { id: "filter", type: "search", value: state.filter, autocomplete: "off", spellcheck: "false",
    placeholder: "filter: method:session/* and not dir:a2c, error:any, \"text\", /regex/   (/ to focus, ? for keys)",
    "aria-label": "filter expression" });
  const problem = el("span", { id: "filter-error", class: "odd", role: "status" });
  const follow = el("input", { id: "follow", type: "checkbox", checked: state.follow });
  follow.addEventListener("change", () => setFollow(follow.checked, true));
  const form = el("form", { class: "filterbar", id: "filter-form", role: "search" }, input,
    el("button", { type: "submit" }, "Filter"), el("button", { type: "button", id: "help-button", onclick: () => toggleHelp() }, "?"),
    el("label", { class: "follow" }, follow, " follow"), laneToggle("stderr", "the agent's stderr"),
    laneToggle("event", "process and connection events"), el("span", { id: "shown", class: "muted" }), problem);
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    applyFilter(input.value.trim());
  });
  return form;
}

// the agent's stderr and the capture's events: lanes of their own between the frames
function laneToggle(lane, title) {
  const box = el("input", { type: "checkbox", id: "lane-" + lane, checked: state.lanes[lane], title });
  box.addEventListener("change", () => {
    state.lanes[lane] = box.checked;
    localStorage.setItem("acp-proxy-lanes", JSON.stringify(state.lanes));
    state.notes = { cid: null, items: [], next: 0 };  // read again: a live capture's grew
    renderRows();
  });
  return el("label", { class: "follow", title }, box, lane === "event" ? " events" : " stderr");
}

// the log entries up to time t (ms), a page at a time, kept for the capture
async function ensureNotes(t) {
  if (!state.lanes.stderr && !state.lanes.event) return;
  const cid = state.capture.id;
  if (state.notes.cid !== cid) state.notes = { cid, items: [], next: 0 };
  const n = state.notes;
  while (n.next !== null && (!n.items.length || n.items[n.items.length - 1].t_ms <= t)) {
    const page = await get(`/api/captures/${cid}/log?offset=${n.next}&limit=1000`);
    n.items.push(...page.entries);
    n.next = page.next;
  }
}

function noteTr(e) {
  const what = e.source === "stderr" ? el("span", { class: "mono" }, stderrLine(e)) : el("span", { class: e.bad ? "odd" : "event" }, e.line);
  const tick = el("span", { class: "bar tick lane", "data-start": e.t_ms, "data-end": e.t_ms });
  placeBar(tick, Math.max(state.capture.span_ms || 0, 0.001));
  return el("tr", { class: "note " + e.source + (e.bad ? " err" : "") },
    el("td", { class: "num muted" }, "·"), el("td", { class: "num" }, e.t_ms.toFixed(3)),
    el("td", { colspan: 2 }, el("span", { class: "badge " + e.source }, e.source === "stderr" ? "stderr" : e.kind)),
    el("td", { colspan: 3 }, what), el("td", { class: "wf" }, el("div", { class: "track" }, tick)), el("td", {}));
}

// frames and, between them in time, the lanes asked for (none while sorted: they have no seq)
function withNotes(frames, from, to, last) {
  const lanes = state.lanes;
  if (state.sort || (!lanes.stderr && !lanes.event) || state.notes.cid !== state.capture.id) return frames.map(frameTr);
  const notes = state.notes.items.filter((e) => lanes[e.source] && e.t_ms > from && (last || e.t_ms <= to));
  const out = [];
  let i = 0;
  for (const f of frames) {
    while (i < notes.length && notes[i].t_ms <= f.t_ms) out.push(noteTr(notes[i++]));
    out.push(frameTr(f));
  }
  if (last) while (i < notes.length) out.push(noteTr(notes[i++]));
  return out;
}

function applyFilter(text) {
  state.filter = text;
  syncUrl();
  reloadFrames(null).catch(showFilterError);
}

function showFilterError(e) {
  const box = document.getElementById("filter-error");
  if (box) box.textContent = e.message; else fail(e);
}

// the filter and the selected frame in the address, so a view can be shared
function syncUrl() {
  if (!state.capture) return;
  const base = state.selected === null ? hash("c", state.capture.id, "f") : hash("c", state.capture.id, "f", state.selected);
  const q = state.filter ? "?filter=" + encodeURIComponent(state.filter) : "";
  history.replaceState(null, "", base + q);
}

// ---- rows ------------------------------------------------------------------------------

function rowClass(f) {
  const cls = ["frame"];
  if (f.kind === "error" || (f.error_code !== null && f.error_code !== undefined)) cls.push("err");
  if (f.anomalies.length) cls.push("anom");
  if (f.kind === "request" && f.msg_id !== null && f.answer_seq === null) cls.push(state.capture.live ? "pending" : "unanswered");
  return cls.join(" ");
}

function session_lane(id) {
  let h = 0;
  for (const ch of String(id || "")) h = (h * 31 + ch.codePointAt(0)) >>> 0;
  return "w" + (id ? 1 + (h % 6) : 0);
}

// a bar from a request to its answer on the capture's time axis (per cent of the column)
function waterfallCell(f) {
  const span = Math.max(state.capture.span_ms || 0, 0.001);
  let start = f.t_ms, end = null;
  if (f.kind === "request" && f.msg_id !== null) end = f.end_ms === null || f.end_ms === undefined ? span : f.end_ms;
  else if (f.latency_ms !== null) { start = f.t_ms - f.latency_ms; end = f.t_ms; }
  const bar = el("span", { class: "bar " + session_lane(f.session) + (end === null ? " tick" : "") + (f.kind === "response" || f.kind === "error" ? " answer" : ""),
    "data-start": start, "data-end": end === null ? start : end });
  placeBar(bar, span);
  return el("td", { class: "wf" }, el("div", { class: "track" }, bar));
}

function placeBar(bar, span) {
  const start = Number(bar.dataset.start), end = Number(bar.dataset.end);
  bar.style.left = (100 * start / span) + "%";
  bar.style.width = (100 * Math.max(0, end - start) / span) + "%";
}

function frameTr(f) {
  const cid = state.capture.id;
  const tr = el("tr", { class: rowClass(f), tabindex: "-1", "data-seq": f.seq, "aria-selected": "false" },
    el("td", { class: "num" }, "#" + f.seq),
    el("td", { class: "num" }, f.t_ms.toFixed(3)),
    el("td", { class: f.direction }, f.direction === "c2a" ? "→ c2a" : "← a2c"),
    el("td", {}, f.opcode ? `${f.kind}/${f.opcode}` : f.kind),
    el("td", { class: "mono" }, f.update || f.method || "", f.msg_id !== null ? ` [${f.msg_id}]` : ""),
    el("td", {}, f.summary),
    el("td", { class: "num" }, f.latency_ms !== null ? ms(f.latency_ms) : ""),
    waterfallCell(f),
    el("td", { class: "odd" }, f.anomalies.length ? "! " + f.anomalies.join(",") : ""));
  tr.title = f.summary;
  tr.addEventListener("click", () => { location.hash = frameHash(f.seq); });
  return tr;
}

function frameHash(seq) {
  return hash("c", state.capture.id, "f", seq) + (state.filter ? "?filter=" + encodeURIComponent(state.filter) : "");
}

function sortedFrames() {
  if (!state.sort) return state.frames;
  const key = COLUMNS.find((c) => c[0] === state.sort.col)[2];
  const dir = state.sort.asc ? 1 : -1;
  return [...state.frames].sort((a, b) => {
    const x = key(a), y = key(b);
    return (x < y ? -1 : x > y ? 1 : a.seq - b.seq) * dir;
  });
}

function renderRows() {
  const body = document.getElementById("frames");
  if (!body) return;
  const frames = sortedFrames();
  const from = state.frames.length && state.frames[0].seq !== 0 ? state.frames[0].t_ms : -Infinity;
  ensureNotes(frames.length ? frames[frames.length - 1].t_ms : 0).then(() => {
    body.replaceChildren(...withNotes(frames, from, Infinity, state.done));
    markSelected(false);
  }).catch(fail);
}

function sortBy(col) {
  const now = state.sort;
  state.sort = !now || now.col !== col ? { col, asc: true } : now.asc ? { col, asc: false } : null;
  for (const th of document.querySelectorAll("#frame-table th")) {
    th.setAttribute("aria-sort", state.sort && th.dataset.col === state.sort.col ? (state.sort.asc ? "ascending" : "descending") : "none");
  }
  if (state.sort) setFollow(false);
  renderRows();
}

// ---- the table, its columns and the split --------------------------------------------------

function frameTable() {
  const saved = JSON.parse(localStorage.getItem("acp-proxy-columns") || "{}");
  const cols = el("colgroup", {}, COLUMNS.map(([key]) => {
    const col = el("col", { "data-col": key });
    col.style.width = (saved[key] || WIDTHS[key]) + "px";
    return col;
  }));
  const head = el("tr", {}, COLUMNS.map(([key, label], i) => {
    const grip = el("span", { class: "grip", "aria-hidden": "true" });
    const th = el("th", { "data-col": key, "aria-sort": "none", scope: "col" },
      el("button", { type: "button", class: "sort", tabindex: "-1", onclick: () => sortBy(key) }, label), grip);
    grip.addEventListener("pointerdown", (ev) => resizeColumn(ev, cols.children[i], key));
    return th;
  }));
  const table = el("table", { id: "frame-table", "aria-label": "frames" }, cols, el("thead", {}, head), el("tbody", { id: "frames" }));
  tableWidth(table);
  return table;
}

// fixed layout: the table is as wide as its columns, the list scrolls sideways past it
function tableWidth(table) {
  let w = 0;
  for (const col of table.querySelectorAll("col")) w += parseFloat(col.style.width) || 0;
  table.style.width = w + "px";
}

function drag(ev, move) {
  ev.preventDefault();
  const onMove = (e) => move(e);
  const stop = () => { removeEventListener("pointermove", onMove); removeEventListener("pointerup", stop); };
  addEventListener("pointermove", onMove);
  addEventListener("pointerup", stop);
}

function resizeColumn(ev, col, key) {
  const x0 = ev.clientX, w0 = col.getBoundingClientRect().width || WIDTHS[key];
  drag(ev, (e) => {
    const w = Math.max(32, Math.round(w0 + e.clientX - x0));
    col.style.width = w + "px";
    tableWidth(document.getElementById("frame-table"));
    const saved = JSON.parse(localStorage.getItem("acp-proxy-columns") || "{}");
    saved[key] = w;
    localStorage.setItem("acp-proxy-columns", JSON.stringify(saved));
    relayoutBars();
  });
}

function setSplit(split, listWidth) {
  const total = split.getBoundingClientRect().width;
  const w = Math.max(240, Math.min(listWidth, total - 240));
  split.style.gridTemplateColumns = `${w}px 6px minmax(0, 1fr)`;
  localStorage.setItem("acp-proxy-split", String(w / Math.max(total, 1)));
}

function splitter(split) {
  const handle = el("div", { id: "splitter", role: "separator", tabindex: "0", "aria-orientation": "vertical",
    "aria-label": "resize the list and the detail (left and right arrows)" });
  handle.addEventListener("pointerdown", (ev) => {
    const left = split.getBoundingClientRect().left;
    drag(ev, (e) => setSplit(split, e.clientX - left));
  });
  handle.addEventListener("keydown", (ev) => {
    const list = document.getElementById("list");
    if (ev.key === "ArrowLeft" || ev.key === "ArrowRight") {
      ev.preventDefault();
      setSplit(split, list.getBoundingClientRect().width + (ev.key === "ArrowLeft" ? -40 : 40));
    }
  });
  return handle;
}

// the split fills the window below what is above it: the list scrolls, never the page
function fitSplit() {
  const split = document.getElementById("split");
  if (!split) return;
  const top = split.getBoundingClientRect().top + scrollY;
  split.style.height = Math.max(240, innerHeight - top - 4) + "px";
}
addEventListener("resize", fitSplit);

function relayoutBars() {
  const span = Math.max(state.capture ? state.capture.span_ms || 0 : 0, 0.001);
  for (const bar of document.querySelectorAll("#frames .bar")) placeBar(bar, span);
}

// ---- loading pages -----------------------------------------------------------------------

function query(after) {
  const p = new URLSearchParams();
  if (state.filter) p.set("filter", state.filter);
  p.set("after", String(after));
  return `/api/captures/${state.capture.id}/frames?` + p.toString();
}

async function loadMore() {
  const page = await get(query(state.next));
  const body = document.getElementById("frames");
  if (!body) return;
  const added = [];
  for (const f of page.frames) {
    if (state.frames.length && f.seq <= state.frames[state.frames.length - 1].seq) continue;
    state.frames.push(f);
    added.push(f);
  }
  if (added.length && !state.sort) await ensureNotes(added[added.length - 1].t_ms).catch(() => {});
  const before = state.frames.length > added.length ? state.frames[state.frames.length - added.length - 1].t_ms
    : state.frames.length && state.frames[0].seq === 0 ? -Infinity : added.length ? added[0].t_ms : -Infinity;
  if (state.sort) renderRows();
  else body.append(...withNotes(added, before, added.length ? added[added.length - 1].t_ms : Infinity, page.done && !state.done));
  answered(added, body);
  state.next = page.next;
  state.done = page.done;
  const more = document.getElementById("more");
  if (more) {
    more.hidden = page.done;
    more.textContent = page.frames.length ? "Load more" : `Scanned to #${page.next}: more`;
  }
  const shown = document.getElementById("shown");
  if (shown) shown.textContent = `${state.frames.length} frame${state.frames.length === 1 ? "" : "s"}` + (state.done ? "" : " so far");
  if (state.follow) scrollToEnd();
  return page;
}

// a request shown before its answer came: its bar now ends at the answer
function answered(added, body) {
  for (const a of added) {
    if (a.request_seq === null || a.request_seq === undefined) continue;
    const req = state.frames.find((f) => f.seq === a.request_seq);
    if (!req || req.answer_seq !== null) continue;
    req.answer_seq = a.seq;
    req.end_ms = a.t_ms;
    const tr = body.querySelector(`tr[data-seq="${req.seq}"]`);
    if (tr) tr.replaceWith(frameTr(req));
  }
}

async function reloadFrames(around) {
  const box = document.getElementById("filter-error");
  if (box) box.textContent = "";
  state.frames = [];
  // a live capture opens at its end (following it); a frame asked for, around it
  const tail = around === null && state.follow && state.capture.live && !state.filter;
  state.next = around !== null ? Math.max(-1, around - 51) : tail ? Math.max(-1, state.capture.last_seq - PAGE_ROWS) : -1;
  state.done = false;
  document.getElementById("frames").replaceChildren();
  document.getElementById("earlier").hidden = state.next < 0;
  for (let i = 0; i < 5; i++) {  // fill the first screen even when filters leave few frames
    const page = await loadMore();
    if (!page || page.done || state.frames.length >= 50) break;
  }
}
const PAGE_ROWS = 200;

async function showTimeline(body, seq) {
  const more = el("button", { id: "more", type: "button", onclick: () => loadMore().catch(fail) }, "Load more");
  const earlier = el("button", { id: "earlier", type: "button", hidden: true, onclick: () => { setFollow(false); reloadFrames(-1).catch(fail); } }, "From the start");
  const list = el("div", { id: "list" }, earlier, frameTable(), more);
  const detail = el("div", { id: "detail", tabindex: "-1" }, el("p", { class: "muted" }, "Select a frame (click, or j/k and Enter; ? lists the keys)."));
  const split = el("div", { id: "split", class: "split" }, list, null, detail);
  split.insertBefore(splitter(split), detail);
  body.append(filterBar(), split);
  fitSplit();
  const ratio = Number(localStorage.getItem("acp-proxy-split") || "0.66");
  setSplit(split, split.getBoundingClientRect().width * (ratio > 0.1 && ratio < 0.95 ? ratio : 0.66));
  let lastTop = 0;
  list.addEventListener("scroll", () => {
    const atEnd = list.scrollHeight - list.scrollTop - list.clientHeight < 4;
    if (list.scrollTop < lastTop - 2 && !atEnd) setFollow(false);
    else if (atEnd && list.scrollTop > lastTop && !state.sort) setFollow(true);
    lastTop = list.scrollTop;
  });
  new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting) && !state.done && !more.hidden) loadMore().catch(fail);
  }, { root: list }).observe(more);
  if (seq !== null) state.follow = false;
  await reloadFrames(seq);
  await selectFrame(seq);
}

// ---- follow mode -------------------------------------------------------------------------

function setFollow(on, scroll) {
  state.follow = on;
  const box = document.getElementById("follow");
  if (box) box.checked = on;
  if (on && scroll) scrollToEnd();
}

function scrollToEnd() {
  const list = document.getElementById("list");
  if (list) list.scrollTop = list.scrollHeight;
}

// ---- selection and the keys --------------------------------------------------------------

function markSelected(focus) {
  const body = document.getElementById("frames");
  if (!body) return null;
  for (const tr of body.querySelectorAll("tr[aria-selected=true]")) { tr.setAttribute("aria-selected", "false"); tr.tabIndex = -1; }
  const tr = state.selected === null ? null : body.querySelector(`tr[data-seq="${state.selected}"]`);
  const target = tr || body.querySelector("tr.frame");
  if (target) target.tabIndex = 0;  // one stop for Tab in the whole list (arrows move within)
  if (tr) {
    tr.setAttribute("aria-selected", "true");
    tr.scrollIntoView({ block: "nearest" });
    if (focus && document.activeElement !== tr) tr.focus({ preventScroll: true });
  }
  return tr;
}

async function selectFrame(seq) {
  const body = document.getElementById("frames");
  const detail = document.getElementById("detail");
  if (!body || !detail || seq === null) { markSelected(false); return; }
  if (!body.querySelector(`tr[data-seq="${seq}"]`) && !state.filter) {
    const first = state.frames.length ? state.frames[0].seq : 0;
    const last = state.frames.length ? state.frames[state.frames.length - 1].seq : -1;
    if (seq < first || seq > last) await reloadFrames(seq);
  }
  state.selected = seq;
  const focusRow = !detail.contains(document.activeElement);
  markSelected(focusRow);
  if (state.follow && seq !== (state.frames.length ? state.frames[state.frames.length - 1].seq : null)) setFollow(false);
  const f = await get(`/api/captures/${state.capture.id}/frames/${seq}`);
  detail.replaceChildren(frameDetail(f));
}

function moveSelection(step) {
  const body = document.getElementById("frames");
  if (!body || !body.firstElementChild) return;
  const cur = document.activeElement && document.activeElement.closest && document.activeElement.closest("#frames tr");
  const from = cur || (state.selected !== null && body.querySelector(`tr[data-seq="${state.selected}"]`));
  let to = !from ? body.querySelector("tr.frame") : step > 0 ? from.nextElementSibling : from.previousElementSibling;
  while (to && !to.classList.contains("frame")) to = step > 0 ? to.nextElementSibling : to.previousElementSibling;
  if (to) { to.tabIndex = 0; to.focus(); location.hash = frameHash(Number(to.dataset.seq)); }
}

const KEYS_HELP = [["/", "focus the filter"], ["?", "these keys, and the filter's"], ["g", "go to a frame by its seq"],
  ["j / ↓", "next frame"], ["k / ↑", "previous frame"], ["Enter", "open the focused frame"], ["f", "follow a live capture"],
  ["Esc", "close this, leave the filter"]];

async function toggleHelp(force) {
  let box = document.getElementById("help");
  if (box) { box.remove(); if (force !== true) return; }
  let keys = {};
  try { keys = await get("/api/filter-keys"); } catch (e) { keys = {}; }
  box = el("div", { id: "help", role: "dialog", "aria-label": "keys", class: "overlay" },
    el("h2", {}, "Keys"), el("dl", { class: "kv" }, KEYS_HELP.map(([k, what]) => [el("dt", {}, el("kbd", {}, k)), el("dd", {}, what)])),
    el("h2", {}, "Filter expressions"),
    el("p", {}, "Terms side by side must all hold; ", el("code", {}, "or"), ", ", el("code", {}, "and"), ", ", el("code", {}, "not"),
      " (or ", el("code", {}, "||"), " ", el("code", {}, "&&"), " ", el("code", {}, "!"), " ", el("code", {}, "-"), ") and parentheses combine them. ",
      "A bare word or a \"quoted phrase\" is text in the frame's bytes; /regex/ a regular expression."),
    el("dl", { class: "kv" }, Object.entries(keys).map(([k, what]) => [el("dt", {}, el("code", {}, k + ":")), el("dd", {}, what)])),
    el("button", { type: "button", onclick: () => box.remove() }, "Close"));
  document.body.append(box);
  box.querySelector("button").focus();
}

function goTo() {
  if (document.getElementById("goto") || !state.capture) return;
  const input = el("input", { type: "number", min: 0, "aria-label": "frame seq", placeholder: "seq" });
  const form = el("form", { id: "goto", class: "overlay", role: "dialog", "aria-label": "go to a frame" }, "Go to frame #", input);
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const seq = Number(input.value);
    form.remove();
    if (Number.isInteger(seq) && seq >= 0) {
      setFollow(false);
      if (state.filter) { state.filter = ""; const f = document.getElementById("filter"); if (f) f.value = ""; }
      location.hash = hash("c", state.capture.id, "f", seq);
    }
  });
  input.addEventListener("keydown", (ev) => { if (ev.key === "Escape") form.remove(); });
  document.body.append(form);
  input.focus();
}

addEventListener("keydown", (ev) => {
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const t = ev.target;
  const typing = t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT");
  if (ev.key === "Escape") {
    for (const id of ["help", "goto"]) { const x = document.getElementById(id); if (x) x.remove(); }
    if (typing) t.blur();
    return;
  }
  if (typing) return;
  const inTimeline = state.route === "capture" && state.view === "timeline";
  if (ev.key === "/") { const f = document.getElementById("filter"); if (f) { ev.preventDefault(); f.focus(); f.select(); } }
  else if (ev.key === "?") { ev.preventDefault(); toggleHelp(); }
  else if (ev.key === "g" && state.route === "capture") { ev.preventDefault(); goTo(); }
  else if (inTimeline && (ev.key === "j" || ev.key === "ArrowDown")) { ev.preventDefault(); moveSelection(1); }
  else if (inTimeline && (ev.key === "k" || ev.key === "ArrowUp")) { ev.preventDefault(); moveSelection(-1); }
  else if (inTimeline && ev.key === "f") setFollow(!state.follow, true);
  else if (inTimeline && (ev.key === "Enter" || ev.key === " ") && t.closest && t.closest("#frames tr")) {
    ev.preventDefault();
    location.hash = frameHash(Number(t.closest("tr").dataset.seq));
  }
});

// ---- the stats tab ---------------------------------------------------------------------------

async function showStats(body) {
  const s = await get(`/api/captures/${state.capture.id}/stats`);
  const num = (v) => el("td", { class: "num" }, v === null || v === undefined ? "–" : String(v));
  const lat = (v) => el("td", { class: "num" }, v === null ? "–" : ms(v));
  body.replaceChildren(
    el("h2", {}, "Requests by method"),
    s.methods.length ? el("table", { id: "stats-methods", class: "stats", "aria-label": "requests by method" },
      el("thead", {}, el("tr", {}, ["method", "dir", "requests", "answered", "errors", "unanswered", "p50", "p90", "p99", "max"]
        .map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, s.methods.map((m) => el("tr", { class: m.errors ? "err" : m.unanswered ? "unanswered" : null },
        el("td", { class: "mono" }, m.method || "(none)"), el("td", { class: m.direction }, m.direction),
        num(m.requests), num(m.answered), num(m.errors), num(m.unanswered),
        lat(m.p50_ms), lat(m.p90_ms), lat(m.p99_ms), lat(m.max_ms)))))
      : el("p", { class: "muted" }, "No requests in this capture."),
    el("h2", {}, "Errors by code"),
    s.errors.length ? el("table", { id: "stats-errors", class: "stats", "aria-label": "errors by code" },
      el("thead", {}, el("tr", {}, ["code", "method", "count", ""].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, s.errors.map((e) => el("tr", { class: "err" }, num(e.code), el("td", { class: "mono" }, e.method), num(e.count),
        el("td", {}, el("a", { href: hash("c", state.capture.id, "f") + "?filter=" + encodeURIComponent(
          e.code === null ? "error:any" : `error:${e.code}`) }, "show them"))))))
      : el("p", { class: "muted" }, "No error answers."),
    el("h2", {}, "Notifications by method"),
    s.notifications.length ? el("table", { id: "stats-notes", class: "stats", "aria-label": "notifications by method" },
      el("thead", {}, el("tr", {}, ["method", "dir", "count"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, s.notifications.map((n) => el("tr", {}, el("td", { class: "mono" }, n.method || "(none)"),
        el("td", { class: n.direction }, n.direction), num(n.count)))))
      : el("p", { class: "muted" }, "No notifications."));
}
