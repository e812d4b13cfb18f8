"""The session tree and the MCP calls of the page (docs/protocol.md §13): their HTML.

What belongs here: the sessions of a capture as a tree — each child session under its
parent, with what the parent said of it (title, state, the tool call that runs it), its
history replays and the messages between sessions, history marked as such — and the MCP
requests carried over ACP as a table. Nothing when a capture has neither children, nor
history, nor messages between sessions (a plain session needs no tree), nor MCP calls.
Every value comes from a peer: all of it is escaped.
"""

from __future__ import annotations

import json
from typing import Any

from acp_proxy.export.html.style import esc, link

__all__ = ["mcp_html", "sessions_html"]

_HISTORY = "<span class=badge>history</span>"


def sessions_html(
    sessions: list[dict[str, Any]], messages: list[dict[str, Any]], shown: range
) -> list[str]:
    """The session tree, when there is more to it than one plain session."""
    if not any(s.get("children") or s.get("history") for s in sessions) and not messages:
        return []
    by_id = {s["sessionId"]: s for s in sessions}
    seen: set[str] = set()
    out = ["<h2>Sessions</h2><ul class=tree>"]

    def node(s: dict[str, Any]) -> None:
        if s["sessionId"] in seen:
            return
        seen.add(s["sessionId"])
        out.append(f"<li>{_card(s, messages, shown)}")
        kids = [by_id[c] for c in s.get("children") or [] if c in by_id]
        if kids:
            out.append("<ul class=tree>")
            for k in kids:
                node(k)
            out.append("</ul>")
        out.append("</li>")

    for s in sessions:
        if not s.get("parentSessionId") or s["parentSessionId"] not in by_id:
            node(s)
    for s in sessions:  # a loop of parents: shown all the same
        node(s)
    out.append("</ul>")
    return out


def _card(s: dict[str, Any], messages: list[dict[str, Any]], shown: range) -> str:
    sub = s.get("subagent") or None
    kind = "subagent" if sub else "session"
    head = f"{kind} <code>{esc(s['sessionId'])}</code>"
    parts = []
    if sub:
        title = sub.get("title")
        state = sub.get("state")
        state = state.get("state") if isinstance(state, dict) else state
        head += (f" · {esc(title)}" if title else "") + (f" · {esc(state)}" if state else "")
        if sub.get("replayed"):
            head += f" {_HISTORY}"
        tools = ", ".join(f"<code>{esc(t)}</code>" for t in sub.get("toolCallIds") or [])
        parts.append(
            f"<div>child of <code>{esc(s.get('parentSessionId'))}</code>, announced "
            f"{link(sub.get('announcedSeq'), shown)}"
            + (f", run by tool call {tools}" if tools else "")
            + "</div>"
        )
    if s.get("history"):
        replays = "; ".join(
            f"{esc(r.get('method'))} {link(r.get('requestSeq'), shown)}: "
            + (
                "complete"
                if r.get("complete")
                else "<b class=err>truncated</b>"
                if r.get("truncated")
                else "open"
            )
            for r in s.get("replays") or []
        )
        parts.append(f"<div>{_HISTORY} {esc(s['history'])} update(s) replayed history"
                     + (f" · {replays}" if replays else "") + "</div>")  # fmt: skip
    said = [m for m in messages if m.get("sessionId") == s["sessionId"]]
    for m in said:
        mark = f" {_HISTORY}" if m.get("replayed") else ""
        parts.append(
            f"<div>{link(m.get('seq'), shown)} {esc(m.get('senderSessionId') or '?')} → "
            f"{esc(m.get('recipientSessionId') or '?')}{mark}: {esc(m.get('text'))}</div>"
        )
    return f"<div class=card>{head}{''.join(parts)}</div>"


def mcp_html(calls: list[dict[str, Any]], shown: range) -> list[str]:
    """MCP requests carried over ACP, with their outcome."""
    if not calls:
        return []
    rows = [
        "<h2>MCP over ACP</h2><table><tr><th>frame</th><th>server</th><th>call</th>"
        "<th>arguments</th><th>outcome</th><th>by</th></tr>"
    ]
    for c in calls:
        what = f"{c.get('method')} {c['tool']}" if c.get("tool") else c.get("method")
        args = "" if c.get("arguments") is None else json.dumps(c["arguments"])
        if c.get("error") is not None:
            outcome, bad = f"error {json.dumps(c['error'])}", True
        elif c.get("responseSeq") is None:
            outcome, bad = "no answer", False
        else:
            outcome, bad = f"{json.dumps(c.get('result'))}", False
        rows.append(
            f"<tr{' class=err' if bad else ''}><td class=num>{link(c.get('seq'), shown)}</td>"
            f"<td><code>{esc(c.get('server'))}</code></td><td><code>{esc(what)}</code></td>"
            f"<td><code>{esc(args)}</code></td><td>{esc(outcome)}</td><td>{esc(c.get('caller'))}"
            "</td></tr>"
        )
    rows.append("</table>")
    return rows
