"""What a frame is, as the recorder stores it (pure).

What belongs here: a frame's rows (:func:`frame_rows`: it numbers the frame, classifies it
— :func:`classify_frame`, the full classification or
:func:`~acp_proxy.protocol.skim.skim` for a huge frame —, pairs it with the request it
answers — :func:`pair`, over :mod:`acp_proxy.protocol.pairing` — and adds the recorder's
own flags), and what ``initialize`` teaches about a capture (:func:`note_initialize`: the
protocol version, both peers and their capabilities).
"""

from __future__ import annotations

from typing import Any

from acp_proxy.protocol.envelopes import INITIALIZE_METHODS
from acp_proxy.protocol.frames import Direction
from acp_proxy.protocol.jsonrpc import Info, Kind, classify
from acp_proxy.protocol.skim import HEAD, SKIM_ABOVE, skim
from acp_proxy.protocol.templates import message_chunk
from acp_proxy.record.core.rows import FrameRow, ItemRow, Row
from acp_proxy.record.core.state import CaptureState, StreamState, json_text
from acp_proxy.record.core.wire import Stream

__all__ = ["classify_frame", "flag", "frame_rows", "note_initialize", "pair"]

_DIRECTION: dict[int, Direction] = {
    Stream.C2A: Direction.CLIENT_TO_AGENT,
    Stream.A2C: Direction.AGENT_TO_CLIENT,
}
# looked up by plain int (no Enum call on the hot path)
_DIRECTION_TEXT: dict[int, str] = {Stream.C2A: "c2a", Stream.A2C: "a2c"}

_MAX_U16 = 0xFFFF


def frame_rows(
    cap: CaptureState,
    s: int,
    st: StreamState,
    raw: bytes,
    terminated: bool,
    opcode: str | None,
    t_abs: int,
    extra: tuple[str, ...],
    parts: list[bytes] | None,
    out: list[Row],
) -> None:
    """The rows of one frame of stream ``s`` (``raw``, or ``parts`` when it is held in
    pieces), appended to ``out``: its batch entries, then the frame. ``extra``: flags the
    recorder adds (``split``, ``truncated``...)."""
    seq = cap.seq
    cap.seq = seq + 1
    cap.count += 1
    if st.chunk_first_seq is None:
        st.chunk_first_seq = seq
    t = t_abs - cap.started_ns
    direction = _DIRECTION[s]
    info = classify_frame(raw, parts, opcode)
    anomalies = info.anomalies
    if extra or st.resumed or st.undelivered:
        anomalies = [*anomalies, *extra]
        if st.resumed:
            anomalies.append("resumed")
            st.resumed = False
        if st.undelivered:
            anomalies.append("undelivered")
    request_seq = latency = None
    if info.id is not None or info.kind != Kind.NOTIFICATION:
        request_seq, latency = pair(cap, direction, seq, t, info, anomalies)
    if info.items is not None:
        for idx, item in enumerate(info.items):
            rs, lat = pair(cap, direction, seq, t, item, anomalies)
            out.append(ItemRow(cap.uid, seq, idx, item, rs, lat))
    if info.method in INITIALIZE_METHODS:  # a response's method is its request's, once paired
        note_initialize(cap, direction, info, anomalies)
    info.value = None  # the parsed message is not stored: let it go now, not at commit
    if info.items is not None:
        for item in info.items:
            item.value = None
    out.append(
        FrameRow(
            cap.uid,
            seq,
            _DIRECTION_TEXT[s],
            t,
            raw,
            terminated,
            opcode,
            info,
            anomalies,
            request_seq,
            latency,
            parts,
        )
    )


def classify_frame(raw: bytes, parts: list[bytes] | None, opcode: str | None) -> Info:
    """The fields of a frame: ``raw``, or ``parts`` when it is held in pieces."""
    if opcode == "binary":
        return Info(Kind.INVALID, anomalies=["binary"])
    if parts is not None:
        return skim(head_of(parts))
    if len(raw) >= SKIM_ABOVE:
        return skim(raw[:HEAD])
    chunk = message_chunk(raw)  # most of a long capture: known by its bytes, not parsed
    if chunk is not None:
        return Info(Kind.NOTIFICATION, "session/update", None, chunk[0], chunk[1])
    return classify(raw)


def pair(
    cap: CaptureState,
    direction: Direction,
    seq: int,
    t: int,
    info: Info,
    anomalies: list[str],
) -> tuple[int | None, int | None]:
    """Pair a frame with the request it answers: (the request's seq, the latency), or
    (None, None); duplicate ids, null-id errors and strays are flagged in ``anomalies``."""
    if info.id is None:
        if info.kind in (Kind.INVALID, Kind.BATCH):
            cap.pairing.unreadable(direction, (seq, t, None))
        return None, None
    if info.kind == Kind.REQUEST:
        if cap.pairing.request(direction, info.id, (seq, t, info.method)):
            flag(anomalies, "duplicate_request_id")
        return None, None
    if info.kind in (Kind.RESPONSE, Kind.ERROR):
        found, how = cap.pairing.response(direction, info.id, error=info.kind == Kind.ERROR)
        if how == "null_id":
            flag(anomalies, "null_id")
        elif how == "unpaired":
            flag(anomalies, "unpaired_response")
        if found is None:
            return None, None
        info.method = info.method or found[2]
        return found[0], t - found[1]
    return None, None


def note_initialize(
    cap: CaptureState, direction: Direction, info: Info, anomalies: list[str]
) -> None:
    """The protocol version and peers, from ``initialize`` (docs/protocol.md), or from the
    ``proxy/initialize`` a conductor sends a hop of a proxy chain (§13.4)."""
    v = info.value
    if not isinstance(v, dict):
        return
    f = cap.fields
    if info.kind == Kind.REQUEST and direction is Direction.CLIENT_TO_AGENT:
        p = v.get("params")
        if isinstance(p, dict):
            peer = p.get("clientInfo", p.get("info"))
            if peer is not None:
                f["client_info"] = json_text(peer)
            caps = p.get("clientCapabilities", p.get("capabilities"))
            if caps is not None:
                f["client_capabilities"] = json_text(caps)
            version = protocol_version(p.get("protocolVersion"), anomalies)
            if version is not None and "_agent_version" not in f:
                f["protocol_version"] = version
    elif info.kind == Kind.RESPONSE and info.method in INITIALIZE_METHODS:
        r = v.get("result")
        if isinstance(r, dict):
            version = protocol_version(r.get("protocolVersion"), anomalies)
            if version is not None:
                f["protocol_version"] = version
                f["_agent_version"] = True
            peer = r.get("agentInfo", r.get("info"))
            if peer is not None:
                f["agent_info"] = json_text(peer)
            caps = r.get("agentCapabilities", r.get("capabilities"))
            if caps is not None:
                f["agent_capabilities"] = json_text(caps)
    cap.touched = True


def head_of(parts: list[bytes]) -> bytes:
    """The first :data:`HEAD` bytes of a frame held as pieces."""
    out, size = [], 0
    for part in parts:
        out.append(part[: HEAD - size])
        size += len(out[-1])
        if size >= HEAD:
            break
    return b"".join(out)


def protocol_version(v: Any, anomalies: list[str]) -> int | None:
    """``protocolVersion`` is a uint16; anything else is not stored, and said so."""
    if v is None:
        return None
    if v.__class__ is int and 0 <= v <= _MAX_U16:
        return int(v)
    flag(anomalies, "bad_protocol_version")
    return None


def flag(anomalies: list[str], name: str) -> None:
    if name not in anomalies:
        anomalies.append(name)
