// acp-proxy ui: one frame in detail — its fields, its request or response, a JSON tree
// (collapsible; copy a value, its path or the exact line), the exact bytes, and the state
// of the capture after it. Loaded before app.js; recorded strings are only text nodes.
"use strict";

function frameDetail(f) {
  const cid = state.capture.id;
  const partner = f.partner
    ? el("dd", {}, frameLink(cid, f.partner.seq, `${f.partner.role} #${f.partner.seq}`),
      f.partner.latency_ms !== null ? ` after ${ms(f.partner.latency_ms)}` : "")
    : el("dd", { class: "muted" }, f.kind === "request" ? (state.capture.live ? "no answer yet" : "never answered") : "none");
  const stateBox = el("div", { id: "state-box" });
  let value;
  try { value = f.pretty === null ? undefined : JSON.parse(f.pretty); } catch (e) { value = undefined; }
  return el("div", { class: "card", id: "frame-detail", "data-seq": f.seq },
    el("h2", {}, `Frame #${f.seq} `, el("span", { class: f.direction }, f.direction === "c2a" ? "→ client to agent" : "← agent to client")),
    el("dl", { class: "kv" },
      el("dt", {}, "time"), el("dd", {}, ms(f.t_ms)),
      el("dt", {}, "kind"), el("dd", { class: f.kind === "error" ? "odd" : null }, f.kind + (f.opcode ? "/" + f.opcode : "")),
      el("dt", {}, "method"), el("dd", { class: "mono" }, f.method || "–"),
      el("dt", {}, "id"), el("dd", { class: "mono" }, f.msg_id === null ? "–" : f.msg_id),
      el("dt", {}, "session"), el("dd", { class: "mono" }, f.session || "–"),
      f.tool_call ? [el("dt", {}, "tool call"), el("dd", {}, el("a", { href: hash("c", cid, "tools", f.tool_call) }, f.tool_call))] : null,
      f.terminal ? [el("dt", {}, "terminal"), el("dd", {}, el("a", { href: hash("c", cid, "terminals", f.terminal) }, f.terminal))] : null,
      el("dt", {}, "paired"), partner,
      el("dt", {}, "size"), el("dd", {}, `${f.size} bytes` + (f.terminated ? " + \\n" : "")),
      el("dt", {}, "anomalies"), el("dd", { class: f.anomalies.length ? "odd" : "muted" }, f.anomalies.join(", ") || "none")),
    value !== undefined ? [el("h2", {}, "JSON"), jsonView(value, f.text)] : null,
    el("h2", {}, "Exact bytes", f.truncated ? " (first 256 KiB; the JSONL export has them all)" : ""),
    el("pre", { id: "raw" }, marked(f.text, state.terms)),
    f.hex !== null ? [el("h2", {}, "Hex"), el("pre", { id: "hex" }, f.hex)] : null,
    el("button", { type: "button", id: "state-button", onclick: () => showState(cid, f.seq, stateBox).catch((e) => stateBox.replaceChildren(el("p", { class: "odd" }, e.message))) },
      "State at this frame"), stateBox);
}

// ---- the JSON tree ------------------------------------------------------------------------

function pathOf(parts) {
  return "$" + parts.map((p) => typeof p === "number" ? `[${p}]` : /^[A-Za-z_$][\w$]*$/.test(p) ? "." + p : `[${JSON.stringify(p)}]`).join("");
}

function jsonView(value, line) {
  const out = el("output", { id: "json-path", class: "mono muted" }, "$");
  let chosen = { path: [], value };
  const copy = (what) => {
    const text = what === "value" ? JSON.stringify(chosen.value, null, 2) : what === "path" ? pathOf(chosen.path) : line;
    out.textContent = `copied the ${what === "line" ? "exact line" : what}: ` + (text.length > 80 ? text.slice(0, 80) + "…" : text);
    if (navigator.clipboard) navigator.clipboard.writeText(text).catch(() => { out.textContent = "the browser refused the clipboard"; });
  };
  const tree = el("div", { id: "pretty", class: "jtree mono", role: "tree", "aria-label": "the frame as a JSON tree" });
  tree.append(jsonNode(null, value, [], 0, state.terms));
  tree.addEventListener("click", (ev) => {
    const node = ev.target.closest && ev.target.closest("[data-path]");
    if (!node || ev.target.tagName === "SUMMARY" && ev.offsetX < 12) return;
    for (const x of tree.querySelectorAll(".chosen")) x.classList.remove("chosen");
    node.classList.add("chosen");
    const path = JSON.parse(node.dataset.path);
    let v = value;
    for (const p of path) v = v[p];
    chosen = { path, value: v };
    out.textContent = pathOf(path);
  });
  return el("div", { class: "jsonview" },
    el("div", { class: "jtools" }, "Copy: ",
      el("button", { type: "button", id: "copy-value", onclick: () => copy("value") }, "value"),
      el("button", { type: "button", id: "copy-path", onclick: () => copy("path") }, "path"),
      el("button", { type: "button", id: "copy-line", onclick: () => copy("line") }, "exact line"), " ", out),
    tree);
}

function jsonScalar(v, terms) {
  if (typeof v === "string") return el("span", { class: "js" }, marked(JSON.stringify(v), terms));
  return el("span", { class: v === null ? "jn" : typeof v === "number" ? "jnum" : "jb" }, String(v));
}

function jsonNode(key, v, path, depth, terms) {
  const label = key === null ? null : [el("span", { class: "jk" }, marked(typeof key === "number" ? String(key) : JSON.stringify(key), terms)), ": "];
  const attrs = { "data-path": JSON.stringify(path), role: "treeitem" };
  if (v === null || typeof v !== "object") return el("div", Object.assign({ class: "jleaf" }, attrs), label, jsonScalar(v, terms));
  const entries = Array.isArray(v) ? v.map((x, i) => [i, x]) : Object.entries(v);
  const [open, close] = Array.isArray(v) ? ["[", "]"] : ["{", "}"];
  if (!entries.length) return el("div", Object.assign({ class: "jleaf" }, attrs), label, open + close);
  const box = el("details", Object.assign({ class: "jnode" }, attrs),
    el("summary", {}, label, open, el("span", { class: "muted jcount" }, ` ${entries.length} ${Array.isArray(v) ? "item" : "key"}${entries.length === 1 ? "" : "s"} ${close}`)),
    el("div", { class: "jkids" }, entries.map(([k, x]) => jsonNode(k, x, [...path, k], depth + 1, terms))), close);
  box.open = depth < 3 || entries.length <= 8 && depth < 6;
  return box;
}

// ---- the state after a frame ------------------------------------------------------------------

async function showState(cid, seq, box) {
  const s = await get(`/api/captures/${cid}/state?at=${seq}`);
  const counts = s.counts || {};
  // a long capture's lists: the last items, and how many came before them
  const earlier = (name, data) => (counts[name] || 0) > data.length
    ? [el("p", { class: "muted" }, `The last ${data.length} of ${counts[name]}: the ${name} tab has them all.`)] : [];
  const section = (title, name, data, render) => [el("h3", {}, title),
    ...(data.length ? [...earlier(name, data), ...render()] : [el("p", { class: "muted" }, `No ${name} yet.`)])];
  box.replaceChildren(el("h2", {}, `What the user had seen after #${seq}`),
    ...section("Turns", "turns", s.turns, () => renderView("turns", s.turns, cid)),
    ...section("Tool calls", "tools", s.tools, () => renderView("tools", s.tools, cid)),
    ...section("Terminals", "terminals", s.terminals, () => renderView("terminals", s.terminals, cid)),
    ...section("Files", "files", s.files, () => renderView("files", s.files, cid)),
    ...section("Sessions", "sessions", s.sessions, () => sessionTree(s.sessions, [], cid)));
}
