"""What a frame is, as the recorder stores it (pure).

What belongs here: the classification of one frame (:func:`classify_frame`: the full one,
or :func:`~acp_proxy.protocol.skim.skim` for a huge frame), its pairing with the request
it answers (:func:`pair`, over :mod:`acp_proxy.protocol.pairing`), and what ``initialize``
teaches about a capture (:func:`note_initialize`: the protocol version, both peers and their
capabilities).
"""

from __future__ import annotations

from typing import Any

from acp_proxy.protocol.frames import Direction
from acp_proxy.protocol.jsonrpc import Info, Kind, classify
from acp_proxy.protocol.skim import HEAD, SKIM_ABOVE, skim
from acp_proxy.record.state import CaptureState, json_text

__all__ = ["classify_frame", "flag", "note_initialize", "pair"]

_MAX_U16 = 0xFFFF


def classify_frame(raw: bytes, parts: list[bytes] | None, opcode: str | None) -> Info:
    """The fields of a frame: ``raw``, or ``parts`` when it is held in pieces."""
    if opcode == "binary":
        return Info(Kind.INVALID, anomalies=["binary"])
    if parts is not None:
        return skim(head_of(parts))
    if len(raw) >= SKIM_ABOVE:
        return skim(raw[:HEAD])
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
    """The protocol version and peers, from ``initialize`` (docs/protocol.md)."""
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
    elif info.kind == Kind.RESPONSE and info.method == "initialize":
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
