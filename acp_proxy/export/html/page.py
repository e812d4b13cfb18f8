"""The page as a whole, written as it is read.

What belongs here: the head of the page (capture, peers, CSP, stylesheet), the sections
in their order, the frames table with the note that points to the next page, and the ways
in: a capture in the database (:func:`write_capture_html`), frames from a cursor
(:func:`write_html`) and a small page as a string (:func:`render_html`).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any

from acp_proxy.check.core.findings import Finding
from acp_proxy.check.source import by_seq
from acp_proxy.export.html import sections
from acp_proxy.export.html.rows import Rows
from acp_proxy.export.html.sessions import mcp_html, sessions_html
from acp_proxy.export.html.style import CSP, CSS, esc
from acp_proxy.reconstruct import Reconstruction, reconstruct
from acp_proxy.reconstruct.views import (
    diffs_json,
    mcp_calls_json,
    permissions_json,
    session_messages_json,
    sessions_json,
    terminals_json,
    tools_json,
    turns_json,
)
from acp_proxy.store.reader import Store, StoredFrame
from acp_proxy.text.captures import capture_row

DEFAULT_MAX_FRAMES = 5000


MARKED_PER_RULE = 200  # findings of one rule marked on a page; all are counted


def write_capture_html(
    out: IO[str],
    store: Store,
    capture: dict[str, Any],
    *,
    from_seq: int = 0,
    max_frames: int = DEFAULT_MAX_FRAMES,
    progress: Callable[[int], None] = lambda n: None,
) -> int:
    """The page of a capture in the database, read from it as :func:`write_html` needs:
    what ``export --format html`` writes and the inspector's export button serves."""
    from acp_proxy.check.source import checked
    from acp_proxy.events.ending import capture_ending
    from acp_proxy.store.liveness import capture_state
    from acp_proxy.text.captures import cut_short

    cid = capture["id"]
    ended = capture_state(capture) != "recording"
    events = store.events(cid)
    ending = capture_ending(capture, events) if ended else None
    checker = checked(store.frames(cid), keep_per_rule=MARKED_PER_RULE, ending=ending)
    return write_html(
        out,
        capture,
        lambda: store.frames(cid, ended=ended),
        stderr=lambda: store.stderr(cid),
        events=events,
        cut_short=cut_short(capture, events) if ended else None,
        from_seq=from_seq,
        max_frames=max_frames,
        progress=progress,
        findings=checker.findings,
        finding_counts=checker.counts,
    )


def write_html(
    out: IO[str],
    capture: dict[str, Any],
    frames: Callable[[], Iterable[StoredFrame]],
    *,
    stderr: Callable[[], Iterable[tuple[int, bytes]]] = lambda: (),
    events: Sequence[dict[str, Any]] = (),
    cut_short: str | None = None,
    from_seq: int = 0,
    max_frames: int = DEFAULT_MAX_FRAMES,
    progress: Callable[[int], None] = lambda n: None,
    findings: Iterable[Finding] | None = None,
    finding_counts: dict[str, int] | None = None,
) -> int:
    """Write the page for one capture to ``out``, reading the frames twice from
    ``frames()`` (the fold, then the table): nothing is held but what the views need.
    Returns the number of frames laid out in the table."""
    r: Reconstruction = reconstruct(f.frame for f in _ticking(frames(), progress))
    found = list(findings or ())
    c = capture_row(capture, events)
    last = r.last_seq if r.last_seq is not None else -1
    shown = range(from_seq, min(last + 1, from_seq + max_frames))
    name = c["id"] if c["id"] is not None else capture.get("source")
    peers = c["peers"]
    version = f"ACP v{c['protocol_version']}" if c["protocol_version"] is not None else ""
    duration = "running" if c["duration_s"] is None else f"{c['duration_s']} s"
    terminals = terminals_json(r)
    diffs = diffs_json(r)
    head = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        f"<title>acp-proxy capture {esc(name)}</title><style>{CSS}</style></head><body>",
        f"<header><h1>Capture {esc(name)} · {esc(c['transport'])} · {esc(c['agent_command'])}"
        f"</h1><p>{esc(peers)} {esc(version)}</p><p>started {esc(c['started_at'])} · "
        f"{esc(duration)} · {c['messages']} frames · {esc(c['status'])}"
        + (f" · label {esc(c['label'])}" if c.get("label") else "")
        + "</p></header><main>",
        *sections.turns_html(turns_json(r), shown, cut_short),
        *sessions_html(sessions_json(r), session_messages_json(r), shown),
        *sections.tools_html(tools_json(r), diffs, {t["terminalId"]: t for t in terminals}, shown),
        *mcp_html(mcp_calls_json(r), shown),
        *sections.permissions_html(permissions_json(r), shown),
        *sections.plans_html(sessions_json(r)),
        *sections.terminals_html(terminals, shown),
        *sections.diffs_html(diffs, shown),
        *sections.stderr_html(stderr()),
        *sections.events_html(list(events)),
        *sections.conformance_html(found, finding_counts),
    ]
    out.write("\n".join(head) + "\n")
    count = r.frames
    title = f"Frames ({count})"
    if shown.start > 0 or shown.stop <= last:
        title = f"Frames #{shown.start}–#{max(shown.stop - 1, shown.start)} of {count}"
    out.write(
        f"<h2>{esc(title)}</h2><table><tr><th>t (ms)</th><th>#</th><th></th>"
        "<th>kind</th><th>method / update</th><th>id</th><th>summary and bytes</th>"
        "<th>latency</th></tr>\n"
    )
    rows = Rows(out, by_seq(found))
    n = 0
    for f in _ticking(frames(), progress):
        if f.seq < shown.start:
            continue
        if f.seq >= shown.stop:
            break
        rows.add(f)
        n += 1
    rows.flush()
    out.write("</table>\n")
    if shown.stop <= last:
        cid = capture["id"]
        out.write(
            f"<p class=card>{last + 1 - shown.stop} more frames are not on this page. "
            f"Next page: <code>acp-proxy export {cid} --format html --from {shown.stop} "
            f"-o next.html</code>; or in a terminal: <code>acp-proxy show {cid} --from "
            f"{shown.stop}</code></p>\n"
        )
    out.write("</main></body></html>\n")
    return n


def _ticking(
    items: Iterable[StoredFrame], progress: Callable[[int], None]
) -> Iterator[StoredFrame]:
    for item in items:
        progress(1)
        yield item


def render_html(
    capture: dict[str, Any],
    frames: Iterable[StoredFrame],
    *,
    stderr: Sequence[tuple[int, bytes]] = (),
    events: Sequence[dict[str, Any]] = (),
) -> str:
    """The whole page for one capture, as a string (small captures, shared ones, tests)."""
    stored = list(frames)
    buf = io.StringIO()
    write_html(buf, capture, lambda: stored, stderr=lambda: stderr, events=events)
    return buf.getvalue()
