"""Readable text for people: what a capture is, in a listing row and a timeline header.

What belongs here: a capture's row in ``acp-proxy captures`` (also its ``--json`` form), the
header over its timeline, and the words for how it ended (status, why requests went
unanswered). Frames are summarised in :mod:`acp_proxy.text.summary`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from acp_proxy.events.ending import capture_ending
from acp_proxy.store.liveness import capture_state

__all__ = ["capture_header", "capture_row", "cut_short"]


def _duration(c: dict[str, Any]) -> str:
    if c.get("ended_ns") is None:
        return "running" if capture_state(c) == "recording" else "-"
    return f"{c['ended_ns'] / 1e9:.2f}s"


def _name(info: str | None) -> str | None:
    if not info:
        return None
    try:
        v = orjson.loads(info)
    except orjson.JSONDecodeError:
        return None
    if isinstance(v, dict):
        name = v.get("name")
        version = v.get("version")
        return f"{name} {version}" if version else str(name)
    return None


def _command(c: dict[str, Any]) -> str:
    if c.get("agent_command"):
        try:
            return " ".join(orjson.loads(c["agent_command"]))
        except (orjson.JSONDecodeError, TypeError):
            return str(c["agent_command"])
    return c.get("upstream_url") or ""


def _status(c: dict[str, Any], events: Iterable[dict[str, Any]] = ()) -> str:
    """Who ended the capture and how (:mod:`acp_proxy.events.ending`), or that it is still
    being recorded; ``finishing`` while its recorder catches up, ``incomplete`` when
    something was lost."""
    state = capture_state(c)
    if state == "recording":
        return "running"
    ending = capture_ending(c, events)
    if ending is not None:
        status = ending.status
    elif state == "killed":
        status = "proxy killed"
    else:
        status = "closed"
    if state == "finishing":
        status += ", finishing"
    if c.get("lost_count") or c.get("lost_bytes"):
        status += ", incomplete"
    return status


def peers(c: dict[str, Any]) -> tuple[str, str]:
    """``client ⇄ agent`` as far as it is known: the names they gave in ``initialize``; else
    the agent's program (``(codex-acp)``) or its address, and ``?`` for what nothing says."""
    client = _name(c.get("client_info"))
    agent = _name(c.get("agent_info"))
    if agent is None:
        try:
            argv = orjson.loads(c["agent_command"]) if c.get("agent_command") else None
        except orjson.JSONDecodeError:
            argv = None
        if isinstance(argv, list) and argv and isinstance(argv[0], str):
            # an interpreter runs the agent's script: name the script
            program = next((a for a in argv[1:] if isinstance(a, str) and a[:1] != "-"), argv[0])
            name = argv[0] if "python" not in argv[0] and "node" not in argv[0] else program
            agent = f"({name.rsplit('/', 1)[-1]})"
        elif c.get("upstream_url"):
            agent = f"({c['upstream_url']})"
    return client or "?", agent or "?"


def capture_row(c: dict[str, Any], events: Iterable[dict[str, Any]] = ()) -> dict[str, Any]:
    """A capture as the listing shows it (also its ``--json`` form); ``events``: its
    ``signal`` and ``terminate`` events at least (who ended it)."""
    return {
        "id": c["id"],
        "uid": c["uid"],
        "started_at": c["started_at"],
        "duration_s": None if c.get("ended_ns") is None else round(c["ended_ns"] / 1e9, 3),
        "transport": c["transport"],
        "agent_command": _command(c),
        "client": _name(c.get("client_info")),
        "agent": _name(c.get("agent_info")),
        "peers": " ⇄ ".join(peers(c)),
        "protocol_version": c.get("protocol_version"),
        "messages": c.get("message_count", 0),
        "status": _status(c, events),
        "exit_code": c.get("exit_code"),
        "exit_signal": c.get("exit_signal"),
        "label": c.get("label"),
    }


def cut_short(c: dict[str, Any], events: Iterable[dict[str, Any]] = ()) -> str:
    """Why a capture's open requests were never answered: "the agent exited 3", "the
    client ended it (SIGTERM)", "the proxy was killed"…"""
    ending = capture_ending(c, events)
    if ending is not None:
        return ending.why
    state = capture_state(c)
    if state == "killed":
        return "the proxy was killed"
    if state == "recording":
        return "still recording"
    return "the connection closed"


def capture_header(c: dict[str, Any], events: Iterable[dict[str, Any]] = ()) -> list[str]:
    started = c["started_at"].replace("T", " ").rstrip("Z")
    lines = [
        f"capture {c['id'] if c.get('id') is not None else c.get('source')}  "
        f"{c['transport']}  {_command(c)}",
        f"  started {started} UTC, {_duration(c)}, {c.get('message_count', 0)} frames, "
        f"{_status(c, events)}" + (f", label {c['label']!r}" if c.get("label") else ""),
    ]
    v = c.get("protocol_version")
    client, agent = peers(c)
    lines.append(
        f"  client {client} ⇄ agent {agent}" + (f", ACP protocol v{v}" if v is not None else "")
    )
    return lines
