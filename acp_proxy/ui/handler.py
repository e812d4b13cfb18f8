"""The web inspector's routes: each request admitted, answered and written out.

What belongs here: :class:`Handler`, which admits every request first
(:func:`acp_proxy.ui.admission.admit`), then serves the page itself as static files of
this package under a strict Content-Security-Policy (:data:`CSP`: scripts and styles from
this server only, nothing inline, nothing from elsewhere), the JSON routes over read-only
connections (what they answer is :mod:`acp_proxy.ui.api`'s), the exports as downloads,
and ``/api/events``, a server-sent event stream that says which captures changed; the page
then asks for what is new. Errors are answered as JSON with a status, never a trace.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

import orjson

from acp_proxy.errors import StoreError, UsageError
from acp_proxy.export.html import CSP as EXPORT_CSP
from acp_proxy.store.index import indexed_upto, pending
from acp_proxy.store.numbers import INT64_MAX, parse_int
from acp_proxy.store.reader import Store
from acp_proxy.text.timeline import Expression, FrameFilter
from acp_proxy.ui import api
from acp_proxy.ui.admission import NotAdmitted, admit
from acp_proxy.ui.bounded import BoundedHandler
from acp_proxy.ui.state import UiServer
from acp_proxy.ui.stats import stats_json

__all__ = ["CSP", "POLL_S", "Handler"]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_COMMON_HEADERS = (
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Frame-Options", "DENY"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
)
POLL_S = 0.25
"""How often the live feed looks at the database."""


def _int(q: dict[str, str], name: str) -> int | None:
    """Query parameter ``name`` as a whole number the database can compare (64 bits);
    None when absent or empty."""
    v = q.get(name)
    if v is None or v == "":
        return None
    return parse_int(v, name)


def _ms(q: dict[str, str], name: str) -> float | None:
    """Query parameter ``name``: milliseconds, finite, whose nanoseconds fit in 64 bits."""
    v = q.get(name)
    if v is None or v == "":
        return None
    try:
        ms = float(v)
    except ValueError:
        raise UsageError(f"{name} must be a number") from None
    if not abs(ms) * 1e6 < INT64_MAX:  # also refuses inf and nan
        raise UsageError(f"{name} takes milliseconds of at most {INT64_MAX // 10**6}")
    return ms


class Handler(BoundedHandler):
    """One connection's requests: GET and HEAD only, the API behind admission."""

    server: UiServer
    protocol_version = "HTTP/1.1"
    server_version = "acp-proxy-ui"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the terminal that started us shows only the URL

    # --- plumbing -------------------------------------------------------------------

    def _send(
        self,
        status: int,
        body: bytes,
        ctype: str,
        extra: tuple[tuple[str, str], ...] = (),
        csp: str = CSP,
    ) -> None:
        self._head(status, ctype, (("Content-Length", str(len(body))), *extra), csp)
        if self.command != "HEAD":
            self.wfile.write(body)

    def _stream(self, ctype: str, extra: tuple[tuple[str, str], ...]) -> None:
        """The head of a response whose body is written as it is made, with no length: the
        connection ends with it."""
        self._head(200, ctype, (*extra, ("Connection", "close")))
        self.close_connection = True

    def _head(
        self, status: int, ctype: str, extra: tuple[tuple[str, str], ...], csp: str = CSP
    ) -> None:
        """The headers of every response: its type, the Content-Security-Policy and the
        common ones, then ``extra``."""
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Security-Policy", csp)
        for k, v in (*_COMMON_HEADERS, *extra):
            self.send_header(k, v)
        self.end_headers()

    def _json(self, value: Any, status: int = 200) -> None:
        body = orjson.dumps(value, default=str)
        self._send(status, body, "application/json", (("Cache-Control", "no-store"),))

    def _error(self, status: int, message: str) -> None:
        self._json({"error": message}, status)

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_POST(self) -> None:
        self._error(405, "read-only: only GET")

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_POST

    def do_GET(self) -> None:
        split = urllib.parse.urlsplit(self.path)
        path = split.path
        query = dict(urllib.parse.parse_qsl(split.query, keep_blank_values=True))
        is_api = path.startswith("/api/")
        try:
            cfg = self.server.state.config
            admit(self.headers, self.path, cfg.host, cfg.port, cfg.token, is_api, cfg.allow_hosts)
            if is_api:
                self._api(path[len("/api/") :], query)
            else:
                self._static(path)
        except NotAdmitted as e:
            self._error(e.status, str(e))
        except UsageError as e:
            self._error(404 if str(e).startswith("no ") else 400, str(e))
        except StoreError as e:
            self._error(503, str(e))
        except sqlite3.Error as e:  # busy past the timeout, a damaged file: said, not a trace
            self._error(503, f"cannot read the recordings database: {e}")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _static(self, path: str) -> None:
        files = self.server.state.static
        name = "index.html" if path in ("/", "/index.html") else None
        if path.startswith("/static/"):
            name = path[len("/static/") :]
        if name is None or name not in files:
            self._error(404, "not found")
            return
        body, ctype = files[name]
        self._send(200, body, ctype, (("Cache-Control", "no-cache"),))

    # --- the API --------------------------------------------------------------------

    @contextlib.contextmanager
    def _store(self) -> Iterator[Store]:
        store = Store(self.server.state.config.db, readonly=True)
        try:
            yield store
        finally:
            store.close()

    def _api(self, route: str, q: dict[str, str]) -> None:
        parts = [urllib.parse.unquote(p) for p in route.split("/")]
        if parts == ["events"]:
            self._events()
            return
        with self._store() as store:
            if parts == ["captures"]:
                self._json(api.captures_json(store))
            elif parts == ["filter-keys"]:
                from acp_proxy.filters import KEYS

                self._json(KEYS)
            elif parts == ["search"]:
                self._search(store, q)
            elif len(parts) >= 2 and parts[0] == "captures":
                self._capture(store, parts[1], parts[2:], q)
            else:
                self._error(404, "no such route")

    def _search(self, store: Store, q: dict[str, str]) -> None:
        text = q.get("q", "")
        capture = q.get("capture")
        cid = store.capture(capture)["id"] if capture else None
        out = api.search_json(
            store, text, capture_id=cid, limit=_int(q, "limit") or 50, before=q.get("before")
        )
        indexer = self.server.state.indexer
        upto = indexed_upto(store.conn)
        out["indexed_upto"] = upto
        out["pending"] = pending(store.conn) if upto >= 0 else None
        out["index_error"] = indexer.error if indexer is not None else "indexing is off"
        self._json(out)

    def _capture(self, store: Store, ref: str, rest: list[str], q: dict[str, str]) -> None:
        c = store.capture(ref)
        cid = int(c["id"])
        if not rest:
            self._json(api.capture_json(store, str(cid)))
        elif rest == ["frames"]:
            flt = FrameFilter(
                method=q.get("method") or None,
                kind=q.get("kind") or None,
                session=q.get("session") or None,
                direction=q.get("direction") or None,
                update=q.get("update") or None,
                anomalous=q.get("anomalous") in ("1", "true", "on"),
            )
            after = _int(q, "after")
            src = q.get("filter", "").strip()
            self._json(
                api.frames_page(
                    store,
                    cid,
                    after=-1 if after is None else after,
                    limit=_int(q, "limit") or api.PAGE,
                    flt=flt,
                    expr=Expression(src) if src else None,
                    from_ms=_ms(q, "from_ms"),
                    to_ms=_ms(q, "to_ms"),
                )
            )
        elif len(rest) == 2 and rest[0] == "frames":
            if not rest[1].strip().lstrip("+-").isdigit():
                raise UsageError("no such frame (a frame is a number)")
            self._json(api.frame_detail(store, cid, parse_int(rest[1], "frame", minimum=0)))
        elif rest == ["log"]:
            offset = _int(q, "offset")
            if offset is not None and offset < 0:
                raise UsageError("offset takes a number of zero or more")
            self._json(api.log_json(store, cid, offset or 0, _int(q, "limit") or api.LOG_PAGE))
        elif rest == ["stats"]:
            self._json(stats_json(store, cid))
        elif rest == ["state"]:
            at = _int(q, "at")
            if at is None or at < 0:
                raise UsageError("state needs at=SEQ (zero or more)")
            self._json(api.state_json(store, cid, at, self.server.state.folds))
        elif len(rest) == 2 and rest[0] == "view":
            at = _int(q, "at")
            if at is not None and at < 0:
                raise UsageError("at takes a frame number (seq) of zero or more")
            folds, limit = self.server.state.folds, _int(q, "limit")
            if limit is None:
                self._json(folds.view(store, cid, rest[1], at))
            else:
                self._json(folds.page(store, cid, rest[1], at, _int(q, "offset") or 0, limit))
        elif len(rest) == 2 and rest[0] == "export":
            self._export(store, c, rest[1], q)
        else:
            self._error(404, "no such route")

    def _export(self, store: Store, c: dict[str, Any], fmt: str, q: dict[str, str]) -> None:
        cid = int(c["id"])
        name = f"capture-{cid}"
        if fmt in ("html", "patch", "asciicast"):
            api.check_foldable(store, cid, fmt=fmt)
        if fmt == "html":
            import io

            from acp_proxy.export.html import write_capture_html

            page = io.StringIO()
            write_capture_html(page, store, c)  # the page export --format html writes
            body = page.getvalue().encode("utf-8")
            self._download(body, "text/html; charset=utf-8", f"{name}.html", EXPORT_CSP)
        elif fmt == "jsonl":
            from acp_proxy.export.jsonl import write_export
            from acp_proxy.store.refs import Source

            disposition = ("Content-Disposition", f'attachment; filename="{name}.jsonl"')
            self._stream("application/x-ndjson", (disposition,))
            if self.command != "HEAD":
                # what export --format jsonl writes: metadata, frames, stderr, events
                source = Source(c, f"capture {cid}", store=store)
                write_export(source, self.wfile)  # type: ignore[arg-type]
        elif fmt in ("patch", "asciicast"):
            folds = self.server.state.folds
            with folds.lock:
                r = folds.current(store, cid)
                text = self._text_export(r, fmt, q.get("terminal"))
            ext = "patch" if fmt == "patch" else "cast"
            self._download(text.encode("utf-8"), "text/plain; charset=utf-8", f"{name}.{ext}")
        else:
            raise UsageError(f"no export format {fmt!r} (html, jsonl, patch, asciicast)")

    @staticmethod
    def _text_export(r: Any, fmt: str, terminal: str | None) -> str:
        from acp_proxy.export.core.asciicast import asciicast
        from acp_proxy.export.core.patch import session_patch

        if fmt == "patch":
            return session_patch(r).text
        terms = [t for t in r.terminals.values() if terminal is None or t.terminal_id == terminal]
        if len(terms) != 1 and terminal is None:
            raise UsageError("give terminal=ID (this capture has several terminals, or none)")
        if not terms:
            raise UsageError(f"no terminal {terminal!r} in this capture")
        return asciicast(terms[0])

    def _download(self, body: bytes, ctype: str, filename: str, csp: str = CSP) -> None:
        self._send(
            200,
            body,
            ctype,
            (
                ("Content-Disposition", f'attachment; filename="{filename}"'),
                ("Cache-Control", "no-store"),
            ),
            csp,
        )

    # --- the live feed --------------------------------------------------------------

    def _events(self) -> None:
        """Server-sent events: ``captures`` with the rows of the captures that changed
        (new ones, more frames, ended, ...), at most every :data:`POLL_S` seconds."""
        self._stream("text/event-stream", (("Cache-Control", "no-store"),))
        if self.command == "HEAD":
            return
        state = self.server.state
        seen: dict[int, Any] = {}
        last_write = time.monotonic()
        self.wfile.write(b"retry: 1000\n\n")
        self.wfile.flush()
        store = Store(state.config.db, readonly=True)
        try:
            while not state.stop.is_set():
                changed = self._changes(store, seen)
                now = time.monotonic()
                if changed:
                    data = orjson.dumps(changed, default=str)
                    self.wfile.write(b"event: captures\ndata: " + data + b"\n\n")
                    self.wfile.flush()
                    last_write = now
                elif now - last_write > 10:
                    self.wfile.write(b": keep-alive\n\n")
                    self.wfile.flush()
                    last_write = now
                state.stop.wait(POLL_S)
        finally:
            store.close()

    @staticmethod
    def _changes(store: Store, seen: dict[int, Any]) -> list[dict[str, Any]]:
        changed = []
        for c in store.dicts("SELECT * FROM captures"):
            row = api.capture_row_live(c)
            key = (row["messages"], row["status"], row["state"], row["label"], row["duration_s"])
            if seen.get(c["id"]) != key:
                seen[c["id"]] = key
                changed.append(row)
        return changed
