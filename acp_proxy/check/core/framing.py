"""The framing checks: is each line one JSON message, and is the stream cut right (pure).

What belongs here: :class:`Framing`, which reads each frame before anything else looks at
it — the anomalies :func:`~acp_proxy.protocol.jsonrpc.classify` names (CRLF, BOM, invalid
UTF-8, noise or whitespace around the message, duplicate keys, ``NaN``, lone surrogates, no
``jsonrpc``), binary WebSocket messages, empty lines, frames the recorder could not keep
whole (counted, not checked) — and the lines that are not JSON: held per direction until a
readable frame comes, then told apart as a message broken by raw newlines, JSON with bytes
after it, or plain text. At the end: a last line without its newline.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from acp_proxy.check.core.context import Context, sender
from acp_proxy.protocol.frames import Direction, Frame
from acp_proxy.protocol.jsonrpc import Info, Kind, classify

__all__ = ["Framing"]

# Recorder flags that mean the frame is not the whole message the peer sent.
_INCOMPLETE = frozenset({"split", "truncated", "resumed"})
_FRAMING = {
    "crlf": "framing.crlf",
    "bom": "framing.bom",
    "invalid_utf8": "framing.invalid-utf8",
    "leading_noise": "framing.leading-noise",
    "whitespace": "framing.whitespace",
    "duplicate_keys": "json.duplicate-keys",
    "nan": "json.non-standard",
    "lone_surrogate": "json.lone-surrogate",
    "no_version": "rpc.no-version",
}
_REASON = {
    "framing.crlf": "the line ends with CRLF; ACP stdio lines end with LF only",
    "framing.bom": "a UTF-8 byte order mark precedes the JSON",
    "framing.invalid-utf8": "the line is not valid UTF-8",
    "framing.leading-noise": "bytes precede the JSON message on this line",
    "framing.whitespace": "whitespace surrounds the JSON message",
    "json.duplicate-keys": "an object has the same key twice",
    "json.non-standard": "NaN or Infinity is not JSON",
    "json.lone-surrogate": "a string holds an unpaired surrogate escape",
    "rpc.no-version": 'the message lacks "jsonrpc": "2.0"',
}
_HELD = 64  # unreadable lines held per direction before they are judged


class Framing:
    """The framing findings of one capture, frame by frame."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.incomplete = 0
        self._broken: dict[Direction, list[tuple[int, bytes]]] = {}
        self._last: dict[Direction, Frame] = {}

    def read(self, frame: Frame, flags: Sequence[str]) -> Info | None:
        """The framing findings of ``frame``; its classification when it holds messages to
        check (numbers kept as text made numbers again), None when it holds none."""
        ctx = self.ctx
        d = frame.direction
        side = sender(d)
        if flags and _INCOMPLETE.intersection(flags):
            self.incomplete += 1
            return None
        self._last[d] = frame
        if frame.opcode is not None and frame.opcode.value == "binary":
            ctx.add("framing.binary", side, "a binary WebSocket message carries no ACP message")
            return None
        info = classify(frame.raw)
        anomalies = info.anomalies
        unreadable = info.kind == Kind.INVALID and ("not_json" in anomalies or "empty" in anomalies)
        if unreadable or ("leading_noise" in anomalies and _trailing(frame.raw)):
            if "empty" in anomalies:
                ctx.add("framing.empty-line", side, "an empty line")
                return None
            self._broken.setdefault(d, []).append((frame.seq, frame.raw))
            if len(self._broken[d]) > _HELD:
                self._flush(d, self._broken.pop(d))
            return None
        if d in self._broken:
            self._flush(d, self._broken.pop(d))
            ctx.at(frame.seq, frame.raw)
        for a in anomalies:
            rid = _FRAMING.get(a)
            if a == "no_version" and "not_jsonrpc" in anomalies:
                continue  # not a message at all: said once, by rpc.not-jsonrpc
            if rid is not None:
                ctx.add(rid, side, _REASON[rid])
        if "big_int" in anomalies:  # exact integers kept as their text: numbers again
            info.value = _numbers(info.value)
        return info

    def finish(self) -> None:
        """What the end of the stream shows: lines still held, a last line unterminated."""
        for direction, broken in self._broken.items():
            self._flush(direction, broken)
        self._broken.clear()
        for frame in self._last.values():
            if frame.opcode is None and not frame.terminated:
                self.ctx.at(frame.seq, frame.raw)
                self.ctx.add(
                    "framing.unterminated",
                    sender(frame.direction),
                    "the stream ended without a newline after this line",
                )

    def finish_incomplete(self) -> None:
        """The frames that were not recorded whole, counted."""
        if self.incomplete:
            self.ctx.at(-1)
            self.ctx.add(
                "capture.incomplete",
                "-",
                f"{self.incomplete} frames were not recorded whole and were not checked",
            )

    def _flush(self, d: Direction, broken: list[tuple[int, bytes]]) -> None:
        """Lines of one direction that were not JSON: a message broken over several lines
        by raw newlines, JSON with bytes after it, or plain text (logs on stdout)."""
        ctx = self.ctx
        side = sender(d)
        i = 0
        while i < len(broken):
            seq, raw = broken[i]
            ctx.at(seq, raw)
            joined = _joins(broken, i)
            if joined:
                ctx.add(
                    "framing.embedded-newline",
                    side,
                    f"frames {seq}..{broken[i + joined - 1][0]} are one message "
                    "split by raw newlines",
                    [s for s, _ in broken[i + 1 : i + joined]],
                )
                i += joined
                continue
            if _trailing(raw):
                ctx.add(
                    "framing.trailing-data",
                    side,
                    "a JSON message is followed by more bytes on the same line",
                )
            else:
                who = (
                    "the agent wrote non-ACP output to stdout (logs?)"
                    if side == "agent"
                    else "the client wrote non-ACP input to the agent's stdin"
                )
                ctx.add("framing.not-json", side, f"not JSON: {who}")
            i += 1


def _numbers(value: Any) -> Any:
    """``value`` with every number the tolerant parser kept as text (a ``str`` subclass)
    made a number again, so the validator sees the JSON value the peer sent."""
    if isinstance(value, dict):
        return {k: _numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers(v) for v in value]
    if isinstance(value, str) and value.__class__ is not str:
        try:
            return int(value)
        except ValueError:
            return float(value)
    return value


def _joins(broken: list[tuple[int, bytes]], i: int) -> int:
    """How many lines from ``broken[i]`` on join, with newlines, into one JSON message
    (0: none do). Lines must be consecutive frames."""
    parts = [broken[i][1]]
    if parts[0].lstrip(b" \t\r\xef\xbb\xbf")[:1] not in (b"{", b"["):
        return 0  # a message starts with a brace: this is text (a log line, say)
    size = len(parts[0])
    for j in range(i + 1, min(len(broken), i + 64)):
        if broken[j][0] != broken[j - 1][0] + 1 and broken[j][0] <= broken[j - 1][0]:
            break
        parts.append(broken[j][1])
        size += len(broken[j][1])
        if size > 8 * 1024 * 1024:
            break
        text = b"\n".join(parts)
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            continue
        return len(parts) if isinstance(value, dict | list) else 0
    return 0


def _trailing(raw: bytes) -> bool:
    """Does a JSON object or array start the line, with bytes after it?"""
    text = raw.decode("utf-8", "replace").lstrip("\ufeff \t")
    if text[:1] not in ("{", "["):
        return False
    try:
        _, end = json.JSONDecoder().raw_decode(text)
    except (ValueError, RecursionError):
        return False
    return bool(text[end:].strip())
