"""The web inspector's HTTP server: routes, admission, live feed, search indexer.

What belongs here: a threaded standard-library HTTP server over a recordings database. Every
request is checked before anything is read: its ``Host`` must name this server (a page on
another site that rebinds its DNS name to 127.0.0.1 is refused), an ``Origin``, when sent,
must be this server's, and with ``--token`` the API wants it (``Authorization: Bearer`` or
``?token=``; the rules of :class:`acp_proxy.relay.admission.Admission`). The page itself is
static files of this package under a strict Content-Security-Policy (:data:`CSP`): scripts
and styles from this server only, nothing inline, nothing from elsewhere.

Views read through read-only connections (a writer is never blocked). The one write is the
search index, brought up to date every half second by :class:`Indexer` in short
transactions. ``/api/events`` is a server-sent event stream that says which captures
changed; the page then asks for what is new.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any

import orjson
from websockets.datastructures import Headers
from websockets.http11 import Request

from acp_proxy.errors import ProxyError, StoreError, UsageError
from acp_proxy.export.html import CSP as EXPORT_CSP
from acp_proxy.relay.admission import Admission, check_listen_address, check_token
from acp_proxy.store.db import connect, migrate
from acp_proxy.store.reader import Store
from acp_proxy.store.search import catch_up, indexed_upto, pending
from acp_proxy.text.timeline import FrameFilter
from acp_proxy.ui import api

__all__ = ["CSP", "Indexer", "UiConfig", "UiServer", "host_allowed", "make_server"]

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
_STATIC_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
POLL_S = 0.25
"""How often the live feed looks at the database."""


def _static_files() -> dict[str, tuple[bytes, str]]:
    base = resources.files("acp_proxy.ui").joinpath("static")
    out = {}
    for entry in base.iterdir():
        suffix = Path(entry.name).suffix
        if entry.is_file() and suffix in _STATIC_TYPES:
            out[entry.name] = (entry.read_bytes(), _STATIC_TYPES[suffix])
    return out


def _wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def host_allowed(header: str | None, listen_host: str, port: int) -> bool:
    """Whether a request's ``Host`` names this server: a loopback name or the address it
    listens on, with its port. On a wildcard address (``0.0.0.0``, ``::``), any IP address
    is accepted too: a DNS rebinding attack needs a name, never an address."""
    if not header:
        return False
    try:
        parts = urllib.parse.urlsplit("//" + header)
        name, given = parts.hostname, parts.port
    except ValueError:
        return False
    if name is None or given != port or parts.username or parts.path:
        return False
    listen = listen_host.strip("[]").lower()
    if name in ("127.0.0.1", "localhost", "::1", listen):
        return True
    if _wildcard(listen_host):
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return False
        return True
    return False


@dataclass
class UiConfig:
    db: Path
    host: str = "127.0.0.1"
    port: int = 8700
    token: str | None = None
    index: bool = True


class Indexer(threading.Thread):
    """Keeps the search index current: every half second, the frames recorded since, in
    write transactions of at most 500 frames (tens of milliseconds)."""

    def __init__(self, db: Path, stop: threading.Event) -> None:
        super().__init__(name="acp-proxy-ui-indexer", daemon=True)
        self.db = db
        self.stop = stop
        self.error: str | None = None
        self.wake = threading.Event()

    def run(self) -> None:
        try:
            conn = connect(self.db, create=False)
            migrate(conn)
        except (ProxyError, sqlite3.Error) as e:
            self.error = f"search index not updated: {e}"
            return
        try:
            while not self.stop.is_set():
                try:
                    catch_up(conn, batch=500, limit=20000)
                    self.error = None
                except sqlite3.Error as e:
                    self.error = f"search index not updated: {e}"
                if pending(conn) == 0:
                    self.wake.wait(0.5)
                    self.wake.clear()
        finally:
            conn.close()


@dataclass
class _State:
    config: UiConfig
    folds: api.Folds = field(default_factory=api.Folds)
    stop: threading.Event = field(default_factory=threading.Event)
    static: dict[str, tuple[bytes, str]] = field(default_factory=_static_files)
    indexer: Indexer | None = None


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class UiServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, state: _State) -> None:
        self.state = state
        host = state.config.host
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__((host.strip("[]"), state.config.port), _Handler)
        self.port = int(self.server_address[1])
        state.config.port = self.port

    @property
    def url(self) -> str:
        host = self.state.config.host
        if _wildcard(host):
            host = "127.0.0.1"
        shown = f"[{host.strip('[]')}]" if ":" in host else host
        url = f"http://{shown}:{self.port}/"
        if self.state.config.token:
            url += "?token=" + urllib.parse.quote(self.state.config.token, safe="")
        return url

    def shutdown(self) -> None:
        self.state.stop.set()
        super().shutdown()


def make_server(config: UiConfig) -> UiServer:
    """A server ready to ``serve_forever`` (the database checked, the indexer started)."""
    check_token(config.token)
    check_listen_address(config.host.strip("[]"), config.token)
    Store(config.db, readonly=True).close()  # a missing or shared database: one clear error
    state = _State(config)
    try:
        server = UiServer(state)
    except OSError as e:
        raise UsageError(f"cannot listen on {config.host}:{config.port}: {e.strerror}") from e
    if config.index:
        state.indexer = Indexer(config.db, state.stop)
        state.indexer.start()
    return server


def _int(q: dict[str, str], name: str) -> int | None:
    v = q.get(name)
    if v is None or v == "":
        return None
    try:
        return int(v)
    except ValueError:
        raise UsageError(f"{name} must be a number") from None


def _float(q: dict[str, str], name: str) -> float | None:
    v = q.get(name)
    if v is None or v == "":
        return None
    try:
        return float(v)
    except ValueError:
        raise UsageError(f"{name} must be a number") from None


class _Handler(BaseHTTPRequestHandler):
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
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", csp)
        for k, v in (*_COMMON_HEADERS, *extra):
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, value: Any, status: int = 200) -> None:
        body = orjson.dumps(value, default=str)
        self._send(status, body, "application/json", (("Cache-Control", "no-store"),))

    def _error(self, status: int, message: str) -> None:
        self._json({"error": message}, status)

    def _admit(self, path: str, needs_token: bool) -> None:
        cfg = self.server.state.config
        host = self.headers.get("Host")
        if len(self.headers.get_all("Host") or []) != 1 or not host_allowed(
            host, cfg.host, cfg.port
        ):
            raise _Refused(421, "this server does not answer for that Host")
        site = self.headers.get("Sec-Fetch-Site")
        if needs_token and site not in (None, "same-origin", "none"):
            raise _Refused(403, f"cross-site request refused (Sec-Fetch-Site: {site})")
        headers = Headers()
        for k, v in self.headers.items():
            headers[k] = v
        admission = Admission(
            token=cfg.token if needs_token else None,
            allow_origins=frozenset({f"http://{host}"}),
        )
        refused = admission.refusal(Request(path, headers))
        if refused is not None:
            status, message = refused
            if status == 403:  # an Origin: only this server's own pages may ask
                message = f"cross-origin request refused ({message.split(' is ')[0]})"
            raise _Refused(status, message)

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
            self._admit(self.path, needs_token=is_api)
            if is_api:
                self._api(path[len("/api/") :], query)
            else:
                self._static(path)
        except _Refused as e:
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
            store, text, capture_id=cid, limit=_int(q, "limit") or 50, before=_int(q, "before")
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
            self._json(
                api.frames_page(
                    store,
                    cid,
                    after=-1 if after is None else after,
                    limit=_int(q, "limit") or api.PAGE,
                    flt=flt,
                    from_ms=_float(q, "from_ms"),
                    to_ms=_float(q, "to_ms"),
                )
            )
        elif len(rest) == 2 and rest[0] == "frames":
            try:
                seq = int(rest[1])
            except ValueError:
                raise UsageError("no such frame (a frame is a number)") from None
            self._json(api.frame_detail(store, cid, seq))
        elif rest == ["state"]:
            at = _int(q, "at")
            if at is None or at < 0:
                raise UsageError("state needs at=SEQ (zero or more)")
            self._json(api.state_json(store, cid, at))
        elif len(rest) == 2 and rest[0] == "view":
            at = _int(q, "at")
            if at is not None and at < 0:
                raise UsageError("at takes a frame number (seq) of zero or more")
            self._json(self.server.state.folds.view(store, cid, rest[1], at))
        elif len(rest) == 2 and rest[0] == "export":
            self._export(store, c, rest[1], q)
        else:
            self._error(404, "no such route")

    def _export(self, store: Store, c: dict[str, Any], fmt: str, q: dict[str, str]) -> None:
        cid = int(c["id"])
        name = f"capture-{cid}"
        if fmt in ("html", "patch", "asciicast"):
            api.check_foldable(store, cid)
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

            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Content-Disposition", f'attachment; filename="{name}.jsonl"')
            self.send_header("Content-Security-Policy", CSP)
            for k, v in _COMMON_HEADERS:
                self.send_header(k, v)
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
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
        from acp_proxy.export.asciicast import asciicast
        from acp_proxy.export.patch import session_patch

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
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Security-Policy", CSP)
        for k, v in _COMMON_HEADERS:
            self.send_header(k, v)
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
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
        for c in store.db.query("SELECT * FROM captures"):
            row = api.capture_row_live(c)
            key = (row["messages"], row["status"], row["state"], row["label"], row["duration_s"])
            if seen.get(c["id"]) != key:
                seen[c["id"]] = key
                changed.append(row)
        return changed


def serve_until_interrupted(server: UiServer, on_ready: Callable[[str], None]) -> None:
    on_ready(server.url)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.state.stop.set()
        server.server_close()
