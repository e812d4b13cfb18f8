"""Terminal state: exact output bytes, text, screen, exit (pure, no I/O).

What belongs here: the :class:`Terminal` record and the rules that change it —

* v2 agent-owned terminals (docs/protocol.md §6.3): ``terminal_update`` is an upsert with patch
  semantics (omitted = unchanged, ``null`` = clear, value = replace; ``_meta`` patched by
  key); ``output`` is an authoritative snapshot that replaces every stored byte;
  ``terminal_output_chunk`` data is base64-decoded chunk by chunk and the bytes appended.
  The ``{type:"terminal"}`` anchor may come before or after the first update.
* v1 client-owned terminals (§4.1, §6.3): ``terminal/create`` → ``terminalId``,
  ``terminal/output`` results (the output captured so far: a snapshot), ``wait_for_exit``,
  ``kill`` and ``release``.

Text is decoded incrementally as UTF-8, per terminal, so a code point split across chunks
decodes once it is whole and bytes that are not UTF-8 show as U+FFFD; a snapshot starts the
decoding again. The screen is rendered with the ``pyte`` VT100 emulator (carriage returns,
colours, cursor moves applied).
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
from dataclasses import dataclass, field
from typing import Any

from wcwidth import wcwidth

__all__ = [
    "MAX_COLS",
    "MAX_SCREEN_ROWS",
    "Attrs",
    "Terminal",
    "TerminalEvent",
    "render_cells",
    "render_screen",
]

DEFAULT_COLS = 80
DEFAULT_ROWS = 24
# What the views emulate at most: a recorded size is peer content (100000x10000 would take
# minutes to render); a bigger one is clamped and the views say so (Terminal.screen_note).
MAX_COLS = 500
MAX_SCREEN_ROWS = 1_000
_MAX_ROWS = 10_000  # with the scrollback


@dataclass(slots=True)
class TerminalEvent:
    """One step of a terminal's timeline.

    ``kind``: ``anchor``, ``update``, ``chunk``, ``snapshot``, ``create``, ``output``,
    ``wait_for_exit``, ``exit``, ``kill``, ``release``, ``cancel``. For ``chunk``,
    ``snapshot`` and ``output``, ``size`` is the number of bytes and ``text`` the text this
    step added (for a snapshot: the whole decoded snapshot).
    """

    seq: int
    t_ns: int
    kind: str
    size: int = 0
    text: str = ""
    detail: Any = None


@dataclass(slots=True)
class Terminal:
    """What a client knows about one terminal (keyed by session and ``terminalId``)."""

    session_id: str
    terminal_id: str
    owner: str  # "agent" (v2 terminal_update) or "client" (v1 terminal/create)
    first_seq: int
    first_t_ns: int
    command: str | None = None
    args: list[Any] = field(default_factory=list)
    env: list[Any] = field(default_factory=list)
    cwd: str | None = None
    output_byte_limit: Any = None
    size: dict[str, Any] | None = None
    capabilities: Any = None
    meta: dict[str, Any] | None = None
    exit_status: dict[str, Any] | None = None
    truncated: bool = False
    killed: bool = False
    released: bool = False
    output: bytearray = field(default_factory=bytearray)
    tool_call_ids: list[str] = field(default_factory=list)
    replayed: bool = False  # first seen while session/load or resume replayed history
    events: list[TerminalEvent] = field(default_factory=list)
    anomalies: list[str] = field(default_factory=list)
    _pending: bytes = b""  # the first bytes of a character split across chunks
    _since: int = 0  # index in events of the last snapshot

    # -- output -----------------------------------------------------------------------

    def append(self, data: bytes, seq: int, t_ns: int, meta: Any = None) -> None:
        """Append bytes in received order; decode them carrying state over (§6.3)."""
        self.output += data
        text = self._decode(data)
        self.events.append(TerminalEvent(seq, t_ns, "chunk", len(data), text, meta))

    def replace(self, data: bytes, seq: int, t_ns: int, kind: str = "snapshot") -> None:
        """Replace every stored byte with a snapshot; never merged with what was there."""
        self.output = bytearray(data)
        self._pending = b""
        text = self._decode(data)
        self._since = len(self.events)
        self.events.append(TerminalEvent(seq, t_ns, kind, len(data), text))

    @property
    def text(self) -> str:
        """The output decoded as UTF-8; an incomplete trailing sequence shows as U+FFFD."""
        parts = [e.text for e in self.events[self._since :] if e.kind in _OUTPUT_KINDS]
        if self._pending:
            parts.append(self._pending.decode("utf-8", "replace"))
        return "".join(parts)

    def _decode(self, data: bytes) -> str:
        """The text ``data`` completes, decoding carrying state over: a character split
        across chunks decodes once whole; bytes that are not UTF-8 show as U+FFFD."""
        if self._pending:
            data = self._pending + data
        text, used = codecs.utf_8_decode(data, "replace", False)
        self._pending = data[used:]
        return text

    def _size(self) -> tuple[Any, Any]:
        if self.size is None:
            return None, None
        return self.size.get("cols"), self.size.get("rows")

    def screen(self, text: str | None = None) -> list[str]:
        """The output as a terminal shows it, one string per line (see :func:`render_screen`);
        ``text`` is :attr:`text` when the caller has it already."""
        cols, rows = self._size()
        text = self.text if text is None else text
        return render_screen(text, cols if isinstance(cols, int) else None, rows)

    def screen_cells(self) -> list[list[Attrs]]:
        """:meth:`screen` with each character's attributes (see :func:`render_cells`)."""
        cols, rows = self._size()
        return render_cells(self.text, cols if isinstance(cols, int) else None, rows)

    @property
    def screen_note(self) -> str | None:
        """Why :meth:`screen` is not at the recorded size (None: it is)."""
        cols, rows = self._size()
        big_cols = isinstance(cols, int) and cols > MAX_COLS
        big_rows = isinstance(rows, int) and rows > MAX_SCREEN_ROWS
        if not (big_cols or big_rows):
            return None
        return (
            f"recorded size {cols}x{rows}; shown at most {MAX_COLS} columns x "
            f"{MAX_SCREEN_ROWS} rows"
        )

    # -- v2 -----------------------------------------------------------------------------

    def apply_update(self, u: dict[str, Any], seq: int, t_ns: int) -> None:
        """Apply a v2 ``terminal_update`` patch (§6.3)."""
        changed = [k for k in u if k not in ("sessionUpdate", "terminalId", "output")]
        # A malformed value is ignored (the schema drops it: x-deserialize-default-on-error).
        for key in ("command", "cwd"):
            if key in u and (u[key] is None or isinstance(u[key], str)):
                setattr(self, key, u[key])
        if "size" in u and (u["size"] is None or isinstance(u["size"], dict)):
            self.size = u["size"]
        if "capabilities" in u and (
            u["capabilities"] is None or isinstance(u["capabilities"], dict)
        ):
            self.capabilities = u["capabilities"]
        if "exitStatus" in u and (u["exitStatus"] is None or isinstance(u["exitStatus"], dict)):
            self.exit_status = u["exitStatus"]
        if "_meta" in u:
            patch = u["_meta"]
            if patch is None:
                self.meta = None
            elif isinstance(patch, dict):
                meta = dict(self.meta or {})
                for k, v in patch.items():
                    if v is None:
                        meta.pop(k, None)
                    else:
                        meta[k] = v
                self.meta = meta
        if changed:
            self.events.append(TerminalEvent(seq, t_ns, "update", detail=changed))
        if "exitStatus" in u and self.exit_status is not None:
            self.events.append(TerminalEvent(seq, t_ns, "exit", detail=self.exit_status))
        if "output" in u:
            out = u["output"]
            if out is None:
                self.replace(b"", seq, t_ns)
            elif isinstance(out, dict):
                data = self._b64(out.get("data"))
                if data is not None:
                    self.replace(data, seq, t_ns)

    def apply_chunk(self, u: dict[str, Any], seq: int, t_ns: int) -> None:
        """Append one v2 ``terminal_output_chunk``: its own base64 value, decoded alone."""
        data = self._b64(u.get("data"))
        if data is not None:
            self.append(data, seq, t_ns, u.get("_meta"))

    def _b64(self, value: Any) -> bytes | None:
        if not isinstance(value, str):
            self.anomalies.append("output_not_base64")
            return None
        try:
            return binascii.a2b_base64(value, strict_mode=True)
        except (binascii.Error, ValueError):
            self.anomalies.append("output_not_base64")
            try:
                return base64.b64decode(value + "==")
            except (binascii.Error, ValueError):
                return None

    # -- v1 -----------------------------------------------------------------------------

    def apply_create(self, params: dict[str, Any], seq: int, t_ns: int) -> None:
        """v1 ``terminal/create`` params, once the client answered with the id (§4.1)."""
        cmd = params.get("command")
        self.command = cmd if isinstance(cmd, str) else None
        args, env = params.get("args"), params.get("env")
        self.args = list(args) if isinstance(args, list) else []  # a peer may send anything
        self.env = list(env) if isinstance(env, list) else []
        cwd = params.get("cwd")
        self.cwd = cwd if isinstance(cwd, str) else None
        self.output_byte_limit = params.get("outputByteLimit")
        if isinstance(params.get("_meta"), dict):
            self.meta = params["_meta"]
        self.events.append(TerminalEvent(seq, t_ns, "create"))

    def apply_output(self, result: dict[str, Any], seq: int, t_ns: int) -> None:
        """v1 ``terminal/output`` result: the output so far replaces what we had (§6.3)."""
        out = result.get("output")
        if isinstance(out, str):
            data = out.encode("utf-8", "surrogatepass")
            self.replace(data, seq, t_ns, "output")
        self.truncated = bool(result.get("truncated"))
        es = result.get("exitStatus")
        if isinstance(es, dict):
            self._exited(es, seq, t_ns)

    def apply_exit(self, result: dict[str, Any], seq: int, t_ns: int) -> None:
        """v1 ``terminal/wait_for_exit`` result ``{exitCode?, signal?}``."""
        self.events.append(TerminalEvent(seq, t_ns, "wait_for_exit"))
        self._exited(result, seq, t_ns)

    def _exited(self, status: dict[str, Any], seq: int, t_ns: int) -> None:
        new = {k: status.get(k) for k in ("exitCode", "signal")}
        if self.exit_status is None or _exit_view(self.exit_status) != new:
            self.exit_status = dict(status)
            self.events.append(TerminalEvent(seq, t_ns, "exit", detail=new))


_OUTPUT_KINDS = frozenset({"chunk", "snapshot", "output"})


def _exit_view(status: dict[str, Any]) -> dict[str, Any]:
    return {k: status.get(k) for k in ("exitCode", "signal")}


def render_screen(text: str, cols: int | None = None, rows: Any = None) -> list[str]:
    """Render terminal output the way a terminal shows it, with ``pyte``.

    The emulator is ``cols`` wide (default 80, at most :data:`MAX_COLS`; ``rows`` at most
    :data:`MAX_SCREEN_ROWS`) and tall enough to keep every line the output
    wrote (at least ``rows``), so nothing scrolls away: the result is the scrollback plus
    the screen. A line feed also returns the carriage (as a tty's ``onlcr`` does for the
    output of a pipe). Trailing blanks of each line and trailing empty lines are dropped.

    Output that only prints, colours (SGR) and ends lines — most of it — is laid out
    directly, with the same result as the emulator (a test checks this) at a fraction of
    the cost; anything else (carriage returns, cursor moves, erases, tabs, wide
    characters) goes through ``pyte``.
    """
    width = min(cols, MAX_COLS) if cols and cols > 0 else DEFAULT_COLS
    height = min(rows, MAX_SCREEN_ROWS) if isinstance(rows, int) and rows > 0 else DEFAULT_ROWS
    lines = _plain_layout(text, width)
    if lines is None:
        lines = _emulate(text, width, height)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _screen(text: str, width: int, height: int) -> Any:
    need = text.count("\n") + len(text) // width + 2
    import pyte  # most output is laid out without it (_plain_layout)

    screen = pyte.Screen(width, min(max(height, need), _MAX_ROWS))
    screen.set_mode(pyte.modes.LNM)
    stream = pyte.Stream(screen)
    stream.feed(text)
    return screen


def _emulate(text: str, width: int, height: int) -> list[str]:
    return [line.rstrip() for line in _screen(text, width, height).display]


# A character on an emulated screen: (text, fg, bg, bold, italics, underscore, reverse);
# colours as the emulator names them ("red", "brightblue", "default") or "rrggbb".
Attrs = tuple[str, str, str, bool, bool, bool, bool]


def render_cells(text: str, cols: int | None = None, rows: Any = None) -> list[list[Attrs]]:
    """The lines of :func:`render_screen` with each character's attributes, always from the
    emulator (so colours set by SGR are kept as attributes, never as the bytes sent)."""
    width = min(cols, MAX_COLS) if cols and cols > 0 else DEFAULT_COLS
    height = min(rows, MAX_SCREEN_ROWS) if isinstance(rows, int) and rows > 0 else DEFAULT_ROWS
    screen = _screen(text, width, height)
    out: list[list[Attrs]] = []
    for y in range(screen.lines):
        row = screen.buffer[y]
        line: list[Attrs] = []
        x = 0
        while x < screen.columns:
            c = row[x]
            if c.data:  # the second half of a wide character is an empty cell
                line.append((c.data, c.fg, c.bg, c.bold, c.italics, c.underscore, c.reverse))
            x += 1
        while line and line[-1][0] == " " and line[-1][2] == "default" and not line[-1][6]:
            line.pop()
        out.append(line)
    while out and not out[-1]:
        out.pop()
    return out


_SGR = re.compile(r"\x1b\[[0-9;:]*m")
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")
_ASCII = bytes(range(0x80))


def _beyond_ascii(text: str) -> str:
    """The characters of ``text`` that are not ASCII, in order (those that may be wide)."""
    data = text.encode("utf-8", "surrogatepass").translate(None, _ASCII)
    return data.decode("utf-8", "surrogatepass")


def _plain_layout(text: str, width: int) -> list[str] | None:
    """Lines wrapped at ``width`` for output without controls but SGR and line ends, else
    ``None``."""
    plain = _SGR.sub("", text).replace("\r\n", "\n")
    if _CONTROL.search(plain) or plain.count("\n") >= _MAX_ROWS:
        return None
    if not plain.isascii() and any(wcwidth(c) != 1 for c in set(_beyond_ascii(plain))):
        return None  # a wide, combining or unprintable character: the emulator lays it out
    lines = plain.split("\n")
    if max(map(len, lines)) <= width:  # nothing wraps
        return [line.rstrip() for line in lines]
    out: list[str] = []
    for line in lines:
        if not line:
            out.append("")
            continue
        for i in range(0, len(line), width):
            out.append(line[i : i + width].rstrip())
    return out
