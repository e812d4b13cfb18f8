// acp-proxy ui: the page. Everything recorded is shown as text (textContent / text nodes),
// never parsed as HTML; links are built from our own routes only.
"use strict";

const TOKEN = new URLSearchParams(location.search).get("token");
const app = document.getElementById("app");
const VIEWS = ["timeline", "stats", "log", "turns", "tools", "permissions", "terminals", "diffs", "files", "sessions"];
const state = { route: null, capture: null, frames: [], done: false, next: -1, filter: "",
  selected: null, terms: [], view: null, viewTimer: null, follow: true, sort: null,
  lanes: Object.assign({ stderr: false, event: false }, JSON.parse(localStorage.getItem("acp-proxy-lanes") || "{}")),
  notes: { cid: null, items: [], next: 0 } };

// ---- helpers -------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function withToken(url) {
  if (!TOKEN) return url;
  return url + (url.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(TOKEN);
}

async function get(path) {
  const headers = TOKEN ? { Authorization: "Bearer " + TOKEN } : {};
  const r = await fetch(path, { headers, credentials: "omit", cache: "no-store" });
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

function hash(...parts) {
  return "#/" + parts.map((p) => encodeURIComponent(String(p))).join("/");
}

function ms(v) { return v === null || v === undefined ? "" : v.toFixed(v < 10 ? 3 : 1) + " ms"; }

function pretty(v) { return JSON.stringify(v, null, 2); }

// text with the search terms wrapped in <mark> (text nodes only)
function marked(text, terms) {
  const words = (terms || []).filter((t) => t.length > 0);
  if (!words.length || !text) return [text || ""];
  const re = new RegExp(words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"), "gi");
  const out = [];
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    out.push(el("mark", {}, m[0]));
    last = m.index + m[0].length;
    if (out.length > 2000) break;
  }
  out.push(text.slice(last));
  return out;
}

function patchView(text) {
  const pre = el("pre", { class: "patch" });
  for (const line of (text || "").split("\n")) {
    let cls = null;
    if (line.startsWith("+") && !line.startsWith("+++")) cls = "add";
    else if (line.startsWith("-") && !line.startsWith("---")) cls = "del";
    else if (line.startsWith("@@")) cls = "hunk";
    pre.append(cls ? el("span", { class: cls }, line) : document.createTextNode(line + "\n"));
  }
  return pre;
}

// a stderr line: pieces of text, each with the CSS classes of the agent's own colours
function stderrLine(e) {
  return e.pieces.map((p) => p.classes.length ? el("span", { class: p.classes.join(" ") }, p.text) : p.text);
}

// a JSON-RPC error as a person reads it: code, message, and what data says
function errorText(err) {
  if (!err || typeof err !== "object") return String(err);
  let text = [err.code, err.message].filter((x) => x !== undefined && x !== null).join(" ");
  const d = err.data;
  let detail = null;
  if (d && typeof d === "object" && !Array.isArray(d)) {
    for (const k of ["message", "details", "error", "reason"]) if (typeof d[k] === "string" && d[k]) { detail = d[k]; break; }
    if (detail === null && Object.keys(d).length) detail = JSON.stringify(d);
  } else if (d !== undefined && d !== null) detail = typeof d === "string" ? d : JSON.stringify(d);
  if (detail && detail !== err.message) text += ": " + detail;
  return text;
}

function screen(lines) { return el("pre", { class: "screen", "aria-label": "terminal screen" }, (lines || []).join("\n")); }

function frameLink(cid, seq, label) { return el("a", { href: hash("c", cid, "f", seq) }, label || "#" + seq); }

function fail(e) { app.replaceChildren(el("p", { class: "odd" }, "Error: " + e.message)); }

// ---- theme and live indicator -----------------------------------------------------------

const saved = localStorage.getItem("acp-proxy-theme");
if (saved) document.documentElement.dataset.theme = saved;
document.getElementById("theme").addEventListener("click", () => {
  const dark = matchMedia("(prefers-color-scheme: dark)").matches;
  const now = document.documentElement.dataset.theme || (dark ? "dark" : "light");
  const next = now === "dark" ? "light" : "dark";
  document.documentElement.dataset.theme = next;
  localStorage.setItem("acp-proxy-theme", next);
});

document.getElementById("search-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const q = document.getElementById("search-input").value.trim();
  if (q) location.hash = hash("search", q);
});

// ---- router ------------------------------------------------------------------------

function parseRoute() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, query] = raw.split("?");
  const parts = path ? path.split("/").map(decodeURIComponent) : [];
  return { parts, query: new URLSearchParams(query || "") };
}

// One route at a time, in the order the hash changed: a page still loading when the hash
// changes again finishes first, so the newest hash is always rendered last (never
// overwritten by an older one whose data came late); routes queued behind a newer one
// are skipped.
let routing = Promise.resolve();
let routeGen = 0;
function route() {
  const gen = ++routeGen;
  routing = routing.then(() => (gen === routeGen ? render() : undefined));
  return routing;
}

async function render() {
  const r = parseRoute();
  const [head, cid, tab, item] = r.parts;
  state.terms = r.query.get("q") ? r.query.get("q").match(/[\p{L}\p{N}_]+/gu) || [] : [];
  try {
    if (!head) { state.route = "list"; await showList(); }
    else if (head === "search") { state.route = "search"; await showSearch(cid || ""); }
    else if (head === "c") {
      const t = tab === "f" || !tab ? "timeline" : tab;
      const same = state.route === "capture" && state.capture && String(state.capture.id) === cid && state.view === t;
      const filter = (r.query.get("filter") || "").trim();
      const refilter = filter !== state.filter;
      state.route = "capture";
      state.filter = filter;
      if (same && t === "timeline") {
        if (refilter) {
          const box = document.getElementById("filter");
          if (box) box.value = filter;
          await reloadFrames(null).catch(showFilterError);
        }
        await selectFrame(item === undefined ? null : Number(item));
        return;
      }
      await showCapture(cid, t, item);
    } else app.replaceChildren(el("p", {}, "No such page."));
  } catch (e) { fail(e); }
}
window.addEventListener("hashchange", route);

// ---- captures list -------------------------------------------------------------------

function captureRow(c) {
  return el("tr", { "data-id": c.id },
    el("td", { class: "num" }, el("a", { href: hash("c", c.id) }, String(c.id))),
    el("td", {}, (c.started_at || "").replace("T", " ").replace("Z", "")),
    el("td", { class: "num" }, c.duration_s === null ? (c.live ? "running" : "–") : c.duration_s.toFixed(2) + " s"),
    el("td", {}, c.transport),
    el("td", {}, c.peers),
    el("td", { class: "num" }, c.protocol_version === null ? "" : "v" + c.protocol_version),
    el("td", { class: "num" }, String(c.messages)),
    el("td", {}, c.live ? el("span", { class: "badge live" }, "● live") : null, " ", c.status),
    el("td", {}, c.label || ""),
    el("td", { class: "mono" }, c.agent_command || ""));
}

async function showList() {
  const rows = await get("/api/captures");
  const body = el("tbody", { id: "captures" }, rows.map(captureRow));
  app.replaceChildren(el("h1", {}, "Captures"),
    rows.length ? el("table", {},
      el("thead", {}, el("tr", {}, ["id", "started (UTC)", "duration", "transport", "client ⇄ agent",
        "protocol", "frames", "status", "label", "command"].map((h) => el("th", {}, h)))), body)
      : el("p", { class: "muted" }, "No captures yet: put acp-proxy record in front of an agent."));
}

// ---- search ------------------------------------------------------------------------

function hitCard(h, q) {
  const suffix = "?q=" + encodeURIComponent(q);
  if (h.source === "frame") return el("div", { class: "card hit" },
    el("a", { href: hash("c", h.capture, "f", h.seq) + suffix }, `capture ${h.capture} · #${h.seq}`), " ",
    el("span", { class: h.direction }, h.direction === "c2a" ? "→ client to agent" : "← agent to client"), " ",
    el("code", {}, h.method || h.kind),
    el("div", { class: "mono" }, "…", h.before, el("mark", {}, h.match), h.after, "…"));
  return el("div", { class: "card hit " + h.source },
    el("a", { href: hash("c", h.capture, "log") + suffix }, `capture ${h.capture} · ${ms(h.t_ms)}`), " ",
    el("span", { class: "badge " + h.source }, h.source === "stderr" ? "agent stderr" : "event " + h.kind),
    el("div", { class: "mono" }, "…", h.before, el("mark", {}, h.match), h.after, "…"));
}

async function showSearch(q) {
  document.getElementById("search-input").value = q;
  let res = await get("/api/search?q=" + encodeURIComponent(q));
  const note = res.pending ? el("p", { class: "muted" }, `Indexing: ${res.pending} recorded items not searched yet.`) : null;
  const list = el("div", { id: "hits" }, res.hits.map((h) => hitCard(h, q)));
  const count = el("p", { class: "muted", id: "hit-count" });
  const more = el("button", { type: "button" }, "More");
  let shown = res.hits.length;
  const total = res.count, atLeast = res.at_least;
  const say = () => {
    const all = atLeast ? `at least ${total} hits` : `${total} hit${total === 1 ? "" : "s"}`;
    count.textContent = `${all} (frames, the agent's stderr, events), newest first` + (res.next || shown < total ? `; ${shown} shown.` : ".");
    more.hidden = !res.next;
  };
  more.addEventListener("click", async () => {
    res = await get("/api/search?q=" + encodeURIComponent(q) + "&before=" + encodeURIComponent(res.next));
    list.append(...res.hits.map((h) => hitCard(h, q)));
    shown += res.hits.length;
    say();
  });
  say();
  app.replaceChildren(el("h1", {}, `Search: ${q}`), ...[note].filter(Boolean), count, list, more);
}

// ---- a capture -----------------------------------------------------------------------

function captureHeader(c, compact) {
  // the html, patch and asciicast exports are made from the whole fold: past the server's
  // limit they say what to run instead of being links the server would refuse
  const whole = c.fold_max === undefined || c.last_seq + 1 <= c.fold_max;
  const ex = (fmt, label) => fmt === "jsonl" || whole
    ? el("a", { href: withToken(`/api/captures/${c.id}/export/${fmt}`), download: "" }, label)
    : el("span", { class: "muted refused", title: `too large to fold here: run acp-proxy export ${c.id} --format ${fmt}` }, label);
  return el("div", { class: "card", id: "capture-head" },
    el("h1", {}, `Capture ${c.id} · ${c.transport} · `, el("span", { class: "mono" }, c.agent_command || "")),
    el("div", {}, c.peers, c.protocol_version === null ? "" : ` · ACP v${c.protocol_version}`,
      ` · started ${c.started_at} · `, el("span", { id: "capture-count" }, `${c.messages} frames`), " · ",
      c.live ? el("span", { class: "badge live", id: "capture-live" }, "● live") : null, " ",
      el("span", { id: "capture-status" }, c.status), c.label ? ` · label ${c.label}` : "",
      el("span", { class: "exports" }, " · export: ", ex("html", "HTML page"), ex("jsonl", "JSONL (exact bytes)"),
        ex("patch", "patch"), ex("asciicast", "asciicast"))),
    c.chain ? chainLine(c) : null,
    (c.last_stderr || []).length ? el("details", { id: "last-stderr", open: !compact },
      el("summary", { class: "muted" }, "last on the agent's stderr (", el("a", { href: hash("c", c.id, "log") }, "all of it"), "): ",
        el("span", { class: "mono" }, c.last_stderr[c.last_stderr.length - 1].text.slice(0, 120))),
      el("pre", { class: "stderr" }, c.last_stderr.map((e) => [stderrLine(e), "\n"]))) : null);
}

function chainLine(c) {
  const ch = c.chain;
  return el("div", { id: "chain" }, `hop ${ch.hop} of proxy chain `, el("span", { class: "mono" }, ch.id.slice(0, 12)), ": ",
    ch.hops.map((h, i) => [i ? " → " : "", h.capture === c.id
      ? el("strong", {}, `hop ${i} (${h.role})`)
      : el("a", { href: hash("c", h.capture, "f") }, `hop ${i} (${h.role}, capture ${h.capture})`)]));
}

// the first stop of Tab: straight to the list of frames (or the page's content)
document.getElementById("skip").addEventListener("click", (ev) => {
  ev.preventDefault();
  const row = document.querySelector("#frames tr[tabindex='0']") || document.querySelector("#frames tr");
  if (row) row.focus(); else app.focus();
});

async function showCapture(cid, tab, item) {
  const c = await get(`/api/captures/${encodeURIComponent(cid)}`);
  state.capture = c;
  state.view = tab;
  clearInterval(state.viewTimer);
  const tabs = el("nav", { class: "tabs", "aria-label": "views" }, VIEWS.map((v) =>
    el("a", { href: hash("c", c.id, v === "timeline" ? "f" : v), "aria-current": v === tab ? "page" : null }, v)));
  const body = el("div", { id: "view" });
  app.replaceChildren(captureHeader(c, tab === "timeline"), tabs, body);
  if (tab === "timeline") {
    state.selected = item === undefined ? null : Number(item);
    state.follow = !!c.live && state.selected === null;
    state.sort = null;
    await showTimeline(body, state.selected).catch(showFilterError);
  } else if (tab === "stats") await showStats(body);
  else if (VIEWS.includes(tab)) await showView(body, tab, item);
  else body.append(el("p", {}, "No such view."));
}

// ---- the reconstruction views ---------------------------------------------------------

async function showLog(body) {
  const cid = state.capture.id;
  const rows = el("tbody", { id: "log" });
  const more = el("button", { type: "button", hidden: true }, "More");
  let offset = 0;
  const load = async () => {
    const page = await get(`/api/captures/${cid}/log?offset=${offset}`);
    for (const e of page.entries) {
      const what = e.source === "stderr" ? el("td", { class: "mono stderr" }, stderrLine(e))
        : el("td", { class: e.bad ? "odd" : "event" }, e.line);
      rows.append(el("tr", { class: "log " + e.source }, el("td", { class: "num" }, e.t_ms.toFixed(3)),
        el("td", {}, el("span", { class: "badge " + e.source }, e.source === "stderr" ? "stderr" : e.kind)), what));
    }
    offset = page.next === null ? offset + page.entries.length : page.next;
    more.hidden = page.next === null;
    return page;
  };
  more.addEventListener("click", () => load().catch(fail));
  const first = await load();
  body.replaceChildren(first.total ? el("table", { "aria-label": "the agent's stderr and the capture events" },
    el("thead", {}, el("tr", {}, ["t ms", "what", ""].map((h) => el("th", {}, h)))), rows)
    : el("p", { class: "muted" }, "Nothing on the agent's stderr, and no events."), more);
}

async function showView(body, name, item) {
  const cid = state.capture.id;
  if (name === "log") { await showLog(body); return; }
  // tools, terminals, diffs, turns and permissions come a page at a time (a large
  // capture's are streamed, or folded from the parts they read)
  const paged = PAGED_VIEWS.includes(name) && item === undefined;
  // the sessions tree shows the messages between sessions, the tools the MCP calls over ACP:
  // asked for at once (a large capture's are folded side by side)
  const more = { sessions: "messages", tools: "mcp" }[name];
  let note = null;
  const asked = more ? get(`/api/captures/${cid}/view/${more}`).catch((e) => { note = el("p", { class: "muted" }, e.message); return []; }) : Promise.resolve([]);
  const [first, extra] = await Promise.all([get(`/api/captures/${cid}/view/${name}` + (paged ? `?limit=${VIEW_PAGE}` : "")), asked]);
  const data = paged ? first.items : first;
  if (name === "sessions") body.replaceChildren(...sessionTree(data, extra, cid));
  else if (name === "tools") body.replaceChildren(...(data.length ? renderView(name, data, cid, item) : []), ...mcpCalls(extra, cid),
    ...(data.length || extra.length ? [] : renderView(name, data, cid, item)));
  else body.replaceChildren(...renderView(name, data, cid, item));
  if (note) body.append(note);
  if (paged && first.total > data.length) body.append(viewMore(body, name, cid, data.length, first.total));
  if (item !== undefined) {
    const target = document.getElementById("item-" + item);
    if (target) { target.classList.add("target"); target.scrollIntoView({ block: "start" }); }
  }
}

const PAGED_VIEWS = ["tools", "terminals", "diffs", "turns", "permissions"];
const VIEW_PAGE = 200;

function viewMore(body, name, cid, shown, total) {
  const button = el("button", { type: "button", id: "view-more" }, `More (${total - shown} of ${total} not shown)`);
  button.addEventListener("click", async () => {
    const page = await get(`/api/captures/${cid}/view/${name}?limit=${VIEW_PAGE}&offset=${shown}`);
    shown += page.items.length;
    button.before(...renderView(name, page.items, cid));
    if (shown >= page.total || !page.items.length) button.remove();
    else button.textContent = `More (${page.total - shown} of ${page.total} not shown)`;
  });
  return button;
}

function statusTrail(items, cid) {
  return items.map((h, i) => [i ? " → " : "", h.status || h.event, " ", frameLink(cid, h.seq, "#" + h.seq)]);
}

function contentItems(items, cid) {
  return (items || []).map((c) => {
    if (!c || typeof c !== "object") return el("pre", {}, pretty(c));
    if (c.type === "diff") return el("div", {}, "diff of ", el("a", { href: hash("c", cid, "files", c.path) }, String(c.path)),
      " (", el("a", { href: hash("c", cid, "diffs") }, "as a patch"), ")");
    if (c.type === "terminal") return el("div", {}, "terminal ", el("a", { href: hash("c", cid, "terminals", c.terminalId) }, String(c.terminalId)));
    const inner = c.content && typeof c.content === "object" ? c.content : c;
    if (inner.type === "text") return el("pre", {}, String(inner.text));
    return el("pre", {}, pretty(c));
  });
}

function renderView(name, data, cid, item) {
  if (!data.length) return [el("p", { class: "muted" }, `No ${name} in this capture.`)];
  if (name === "turns") return data.map((t) => el("div", { class: "card", id: "item-" + t.index },
    el("h2", {}, `Turn ${t.index} · `, frameLink(cid, t.seq), ` · ${t.stopReason || (t.error ? "error" : t.endedSeq === null ? "running" : "ended")}`,
      (t.retries || []).length ? [" ", el("span", { class: "badge retry" }, `retried ${t.retries.length}×`)] : null),
    (t.retries || []).length ? el("div", { class: "muted retries" }, `the prompt was sent again with idempotencyKey ${t.idempotencyKey}: `,
      t.retries.map((x, i) => [i ? ", " : "", frameLink(cid, x.seq), x.messageId !== null && x.messageId !== undefined ? ` (messageId ${x.messageId})` : ""])) : null,
    t.error ? el("div", { class: "odd turn-error" }, "error ", errorText(t.error), " · ", el("a", { href: hash("c", cid, "log") }, "the agent's stderr")) : null,
    el("div", { class: "muted" }, `session ${t.sessionId} · duration ${ms(t.durationMs)} · first output after ${ms(t.timeToFirstOutputMs)}` +
      ` · tools ${ms(t.toolTimeMs)} · permission wait ${ms(t.permissionWaitMs)}`),
    el("h2", {}, "Prompt"), el("pre", {}, t.prompt),
    t.thoughtText ? [el("h2", {}, "Thoughts"), el("pre", {}, t.thoughtText)] : null,
    el("h2", {}, "Answer"), el("pre", {}, t.agentText),
    t.toolCallIds.length ? el("div", {}, "tool calls: ", t.toolCallIds.map((id) => [el("a", { href: hash("c", cid, "tools", id) }, id), " "])) : null));
  if (name === "tools") return data.map((t) => el("div", { class: "card", id: "item-" + t.toolCallId },
    el("h2", {}, `${t.title || t.toolCallId} `, el("span", { class: "badge" }, t.status || "?"), " ", el("span", { class: "muted" }, t.kind || "")),
    el("div", { class: "mono" }, t.toolCallId, ` · ${ms(t.durationMs)} · first `, frameLink(cid, t.firstSeq)),
    el("div", {}, "status: ", statusTrail(t.statusHistory, cid)),
    t.locations && t.locations.length ? el("div", {}, "locations: ", t.locations.map((l) => [el("a", { href: hash("c", cid, "files", l.path) }, String(l.path)), " "])) : null,
    contentItems(t.content, cid),
    t.rawInput !== null ? [el("div", { class: "muted" }, "raw input"), el("pre", {}, pretty(t.rawInput))] : null,
    t.rawOutput !== null ? [el("div", { class: "muted" }, "raw output"), el("pre", {}, pretty(t.rawOutput))] : null));
  if (name === "permissions") return data.map((p) => el("div", { class: "card", id: "item-" + p.seq },
    el("h2", {}, `${p.title || p.toolCallId || "permission"} · `, frameLink(cid, p.seq)),
    el("div", {}, "options: ", (p.options || []).map((o) => el("span", { class: "badge" }, `${o && o.optionId} (${o && o.kind})`))),
    el("div", {}, "choice: ", p.outcome === null ? "unanswered" : `${p.outcome}${p.optionId ? " " + p.optionId : ""}`,
      p.approved === null ? "" : p.approved ? " — approved" : " — refused", ` · waited ${ms(p.waitMs)}`,
      p.answeredSeq !== null ? [" · ", frameLink(cid, p.answeredSeq)] : null)));
  if (name === "terminals") return data.map((t) => terminalCard(t, cid));
  if (name === "diffs") return diffCards(data, cid);
  if (name === "files") return data.map((h) => el("div", { class: "card", id: "item-" + h.path },
    el("h2", { class: "mono" }, h.path),
    el("div", {}, `at start: ${h.startExists === null ? "unknown" : h.startExists ? "existed" : "absent"} · now: ${h.exists === null ? "unknown" : h.exists ? "exists" : "absent"}`),
    el("ol", {}, h.versions.map((v) => el("li", {}, frameLink(cid, v.seq), ` ${v.operation} (${v.source})`,
      v.toolCallId ? [" tool ", el("a", { href: hash("c", cid, "tools", v.toolCallId) }, v.toolCallId)] : null,
      v.stale ? el("span", { class: "odd" }, " stale") : null))),
    h.content !== null ? el("pre", {}, h.content) : null));
  return data.map((s) => el("div", { class: "card" }, el("h2", { class: "mono" }, s.sessionId), el("pre", {}, pretty(s))));
}

// file changes; a write of exactly what a tool call proposed is that change, applied
function diffCards(data, cid) {
  const cards = new Map();
  const out = [];
  data.forEach((d, i) => {
    const shown = d.applies !== null && d.applies !== undefined ? cards.get(d.applies) : undefined;
    if (shown) {
      const how = d.ok === true ? "done" : d.ok === false ? "refused by the client" : "unanswered";
      shown.append(el("div", { class: "muted" }, "applied by ", frameLink(cid, d.seq), ` fs/write_text_file (${how})`));
      return;
    }
    const card = el("div", { class: "card", id: "item-" + i },
      el("h2", {}, `${d.operation} `, el("a", { href: hash("c", cid, "files", d.path) }, d.path), " · ", frameLink(cid, d.seq),
        d.stale ? el("span", { class: "odd" }, " stale") : null, d.ok === false ? el("span", { class: "odd" }, " failed") : null),
      el("div", { class: "muted" }, `${d.source}${d.toolCallId ? " · tool call " + d.toolCallId : ""}`),
      d.patch ? patchView(d.patch) : el("p", { class: "muted" }, "content unknown"));
    cards.set(d.seq, card);
    out.push(card);
  });
  return out;
}

// the session tree: each child under its parent, with what the parent said of it, its
// history replays and the messages between sessions (history marked as such)
function sessionTree(sessions, messages, cid) {
  if (!sessions.length) return [el("p", { class: "muted" }, "No sessions in this capture.")];
  const byId = new Map(sessions.map((s) => [s.sessionId, s]));
  const seen = new Set();
  const history = (what) => el("span", { class: "badge history" }, what || "history");
  const node = (s) => {
    if (seen.has(s.sessionId)) return null;
    seen.add(s.sessionId);
    const sub = s.subagent;
    const state = s.state || (sub && sub.state && (sub.state.state || sub.state));
    const said = messages.filter((m) => m.sessionId === s.sessionId);
    return el("li", { class: "session" }, el("div", { class: "card", id: "item-" + s.sessionId },
      el("h2", {}, sub ? "Subagent " : "Session ", el("span", { class: "mono" }, s.sessionId),
        sub && sub.title ? ` · ${sub.title}` : "", state ? [" ", el("span", { class: "badge" }, String(state))] : null,
        sub && sub.replayed ? [" ", history("named by history")] : null),
      sub ? el("div", { class: "muted" }, "child of ", el("a", { href: hash("c", cid, "sessions", s.parentSessionId) }, s.parentSessionId),
        ", announced ", frameLink(cid, sub.announcedSeq),
        sub.capabilities && sub.capabilities.cancel ? " · can be cancelled" : "",
        sub.toolCallIds.length ? [" · run by tool call ", sub.toolCallIds.map((id, i) => [i ? ", " : "", el("a", { href: hash("c", cid, "tools", id) }, id)])] : null) : null,
      s.cwd ? el("div", { class: "muted" }, `cwd ${s.cwd}`) : null,
      s.history ? el("div", { class: "replays" }, history(), ` ${s.history} update(s) replayed history`,
        (s.replays || []).map((r) => [" · ", r.method, " ", frameLink(cid, r.requestSeq), ": ",
          r.complete ? "complete" : r.truncated ? el("span", { class: "odd" }, "truncated") : "open"])) : null,
      said.length ? el("ul", { class: "messages", "aria-label": "messages between sessions" }, said.map((m) => el("li", {},
        frameLink(cid, m.seq), ` ${m.senderSessionId || "?"} → ${m.recipientSessionId || "?"}`, m.replayed ? [" ", history()] : null, ": ",
        el("span", { class: "said" }, m.text)))) : null),
      s.children.length ? el("ul", { class: "tree" }, s.children.map((c) => byId.has(c) ? node(byId.get(c)) : null)) : null);
  };
  const roots = sessions.filter((s) => !s.parentSessionId || !byId.has(s.parentSessionId));
  const tree = roots.map(node);
  const left = sessions.filter((s) => !seen.has(s.sessionId)).map(node);  // a loop of parents
  return [el("ul", { class: "tree", id: "sessions", "aria-label": "sessions and their subagents" }, tree, left)];
}

function mcpCalls(calls, cid) {
  if (!calls.length) return [];
  return [el("h2", {}, "MCP over ACP"), el("table", { id: "mcp", "aria-label": "MCP calls carried over ACP" },
    el("tr", {}, ["frame", "server", "call", "arguments", "outcome", "by"].map((h) => el("th", {}, h))),
    calls.map((c) => el("tr", { class: c.error ? "odd" : null },
      el("td", { class: "num" }, frameLink(cid, c.seq)), el("td", { class: "mono" }, String(c.server || "?")),
      el("td", { class: "mono" }, c.tool ? `${c.method} ${c.tool}` : c.method),
      el("td", {}, c.arguments === null || c.arguments === undefined ? "" : el("code", {}, JSON.stringify(c.arguments))),
      el("td", {}, c.error ? ["error ", errorText(c.error)] : c.responseSeq === null ? "no answer"
        : [frameLink(cid, c.responseSeq), " ", el("code", {}, JSON.stringify(c.result))]),
      el("td", {}, c.caller))))];
}

function terminalCard(t, cid) {
  const scr = screen(t.screen);
  const marks = t.timeline.filter((e) => e.seq !== undefined);
  const label = el("span", { class: "muted" }, "end");
  const slider = el("input", { type: "range", min: 0, max: Math.max(0, marks.length - 1), value: Math.max(0, marks.length - 1),
    "aria-label": "play the terminal output over time" });
  slider.addEventListener("change", async () => {
    const e = marks[Number(slider.value)];
    if (!e) return;
    const at = await get(`/api/captures/${cid}/view/terminals?at=${e.seq}`);
    const same = at.find((x) => x.terminalId === t.terminalId);
    scr.textContent = same ? same.screen.join("\n") : "";
    label.textContent = `after #${e.seq} (${ms(e.t_ms)}, ${e.event})`;
  });
  return el("div", { class: "card", id: "item-" + t.terminalId },
    el("h2", { class: "mono" }, t.terminalId, " · ", [t.command, ...(t.args || [])].join(" ")),
    el("div", { class: "muted" }, `owner ${t.owner} · ` + (t.exitStatus ? `exit ${t.exitStatus.exitCode}${t.exitStatus.signal ? " signal " + t.exitStatus.signal : ""}` : "running"),
      t.truncated ? " · truncated" : "", " · first ", frameLink(cid, t.firstSeq)),
    scr, marks.length > 1 ? el("div", {}, "replay: ", label, slider) : null);
}

// ---- live -------------------------------------------------------------------------

function refreshView() {
  if (state.route !== "capture" || !state.capture || state.view === "timeline" || state.viewTimer) return;
  state.viewTimer = setTimeout(async () => {
    state.viewTimer = null;
    const body = document.getElementById("view");
    if (body && state.view !== "timeline") {
      const y = scrollY;
      await showView(body, state.view, undefined).catch(() => {});
      scrollTo(0, y);
    }
  }, 300);
}

function onCaptures(rows) {
  if (state.route === "list") {
    const body = document.getElementById("captures");
    if (!body) { route(); return; }  // the list is still loading: in turn, as any route
    for (const c of rows) {
      const old = body.querySelector(`tr[data-id="${c.id}"]`);
      const tr = captureRow(c);
      if (old) old.replaceWith(tr); else body.prepend(tr);
    }
    return;
  }
  if (state.route !== "capture" || !state.capture) return;
  const c = rows.find((r) => r.id === state.capture.id);
  if (!c) return;
  const grew = c.messages !== state.capture.messages;
  state.capture = Object.assign(state.capture, c);
  const count = document.getElementById("capture-count");
  if (count) count.textContent = `${c.messages} frames`;
  const status = document.getElementById("capture-status");
  if (status) status.textContent = c.status;
  const live = document.getElementById("capture-live");
  if (live && !c.live) live.remove();
  if (!grew) return;
  if (state.view === "timeline" && state.done) {
    const n = state.frames.length;
    loadMore().then(() => {
      const last = state.frames.length ? state.frames[state.frames.length - 1] : null;
      if (last && last.t_ms > (state.capture.span_ms || 0)) { state.capture.span_ms = last.t_ms; relayoutBars(); }
      if (!state.sort) for (const tr of [...document.querySelectorAll("#frames tr")].slice(n)) tr.classList.add("new");
      if (state.follow) scrollToEnd();
    }).catch(() => {});
  } else refreshView();
}

function connect() {
  const indicator = document.getElementById("live");
  const es = new EventSource(withToken("/api/events"));
  es.addEventListener("open", () => { indicator.textContent = "live"; indicator.className = "live on"; });
  es.addEventListener("error", () => { indicator.textContent = "reconnecting…"; indicator.className = "live off"; });
  es.addEventListener("captures", (ev) => { try { onCaptures(JSON.parse(ev.data)); } catch (e) { console.error(e); } });
}

connect();
route();
