"""The state at a frame, as the inspector shows it (the state button of a frame).

What belongs here: :func:`state_json`, each section as its tab shows it — the last
:data:`STATE_ITEMS` of each list, with how many there are — from the folds the tabs use
(:mod:`acp_proxy.ui.folds`).
"""

from __future__ import annotations

from typing import Any

from acp_proxy.reconstruct import Reconstruction, reconstruct
from acp_proxy.reconstruct import views as rviews
from acp_proxy.store.reader import Store
from acp_proxy.ui import folds as folds_module
from acp_proxy.ui.folds import Folds, frames_upto

__all__ = ["STATE_ITEMS", "state_json"]

STATE_ITEMS = 200
"""Items of each list the state at a frame shows: the last ones (a million frames' turns,
tool calls and the rest would be a hundred MB to send and to draw)."""


def state_json(
    store: Store, capture_id: int, at: int, folds: Folds | None = None
) -> dict[str, Any]:
    """The reconstructed state after frame ``at``: what the user had seen by then, as the
    views of the capture's tabs show it — of turns, tool calls, terminals and files the last
    :data:`STATE_ITEMS`, with how many there are in ``counts``. Past
    :data:`~acp_proxy.ui.folds.FOLD_MAX` frames, each section as its tab folds it: turns,
    tool calls and sessions from the sessions part (which keeps the tool calls its turns
    list; folded for this state alone, so the tabs' fold is kept), terminals streamed,
    files from their frames."""
    if frames_upto(store, capture_id, at) > folds_module.FOLD_MAX:
        folds = folds or Folds()
        r = folds.once(store, capture_id, "sessions", at)
        folds.read_text(store, capture_id, r.turns[-STATE_ITEMS:])
        turns, tools, sessions = _last_turns(r), _last_tools(r), rviews.sessions_json(r)
        del r  # the sessions part goes before the next state's is made
        terminals = folds.view(store, capture_id, "terminals", at)
        files = folds.view(store, capture_id, "files", at)
    else:
        r = reconstruct((sf.frame for sf in store.frames(capture_id, upto_seq=at)), at=at)
        turns, tools, sessions = _last_turns(r), _last_tools(r), rviews.sessions_json(r)
        terminals, files = rviews.terminals_json(r), rviews.files_json(r)
    return {
        "at": at,
        "turns": turns[1],
        "tools": tools[1],
        "terminals": terminals[-STATE_ITEMS:],
        "files": files[-STATE_ITEMS:],
        "sessions": sessions,
        "counts": {
            "turns": turns[0],
            "tools": tools[0],
            "terminals": len(terminals),
            "files": len(files),
        },
    }


def _last_turns(r: Reconstruction) -> tuple[int, list[dict[str, Any]]]:
    return len(r.turns), [rviews.turn_json(r, t) for t in r.turns[-STATE_ITEMS:]]


def _last_tools(r: Reconstruction) -> tuple[int, list[dict[str, Any]]]:
    calls = list(r.tool_calls.values())
    return len(calls), [rviews.tool_json(tc) for tc in calls[-STATE_ITEMS:]]
