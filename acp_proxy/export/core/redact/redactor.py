"""The redactor: one pass over a capture's frames that replaces its secrets with placeholders.

What belongs here: :class:`Redactor` (placeholders, matching a string's text, the passes
over the capture, streams of chunks matched as one text, applying the edits to the bytes)
and :class:`Redacted`, a frame as it goes out. Which values are secret is decided in
:mod:`~acp_proxy.export.core.redact.rules` and :mod:`~acp_proxy.export.core.redact.messages`; where
they lie in the bytes, in :mod:`~acp_proxy.export.core.redact.scan`.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from acp_proxy.errors import UsageError
from acp_proxy.export.core.redact.messages import MessageFacts, contexts, split, whole_rule
from acp_proxy.export.core.redact.rules import CLASSES, HOME_SHAPES, SHAPES, Rules, Shape
from acp_proxy.export.core.redact.scan import Leaf, Path, decode, raw_span, scan
from acp_proxy.protocol.frames import Frame

_LITERAL_MIN = 8  # secrets found by a member name are searched for everywhere from this length


# -- the redactor --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Redacted:
    """A frame as it goes out: ``sha256`` of the original bytes and the rules that changed
    it when it was changed, else None and ``()``."""

    frame: Frame
    sha256: str | None = None
    rules: tuple[str, ...] = ()


class Redactor:
    """Redact the frames of one capture: :meth:`redact` (once), then :attr:`counts` (rule
    -> replacements), :attr:`distinct` (rule -> distinct values) and :attr:`notes`."""

    def __init__(self, classes: Iterable[str] = (), rules: Rules | None = None) -> None:
        self.classes = frozenset(classes)
        bad = self.classes - set(CLASSES)
        if bad:
            raise UsageError(
                f"no redaction class {sorted(bad)[0]!r} (choose from {', '.join(CLASSES)})"
            )
        self.rules = rules or Rules()
        self.shapes: list[Shape] = [*SHAPES, *self.rules.shapes]
        if "paths" in self.classes:
            self.shapes.extend(HOME_SHAPES)
        anchors = sorted({a for shape in self.shapes for a in shape.anchors}, key=len, reverse=True)
        self._anchors = re.compile("|".join(map(re.escape, anchors))) if anchors else None
        self._implied = {a: {b for b in anchors if b in a} for a in anchors}
        self._short: dict[str, list[tuple[int, int, str, str]]] = {}
        self.names: dict[str, str] = {}  # secret text -> placeholder
        self._per_rule: Counter[str] = Counter()
        self.counts: Counter[str] = Counter()
        self.distinct: Counter[str] = Counter()
        self.notes: list[str] = []
        self._literals: re.Pattern[str] | None = None

    # -- placeholders ----------------------------------------------------------------------

    def placeholder(self, secret: str, rule: str) -> str:
        name = self.names.get(secret)
        if name is None:
            self._per_rule[rule] += 1
            self.distinct[rule] += 1
            name = self.names[secret] = f"[redacted:{rule}:{self._per_rule[rule]}]"
        return name

    def _rule_of(self, placeholder: str) -> str:
        return placeholder[len("[redacted:") :].rsplit(":", 1)[0]

    # -- matching text ---------------------------------------------------------------------

    def _shape_hits(self, text: str) -> list[tuple[int, int, str, str]]:
        """(start, end, secret, rule) of every credential shape in ``text``; a shape is
        tried only when the text holds one of its anchors (one search of all anchors rules
        most strings out at once). Short strings repeat (methods, kinds, ids): their
        answers are kept."""
        short = len(text) <= 64
        if short:
            known = self._short.get(text)
            if known is not None:
                return known
        found: list[tuple[int, int, str, str]] = []
        present: set[str] = set()
        if self._anchors is not None:  # an anchor inside a longer one found counts too
            for a in set(self._anchors.findall(text.lower())):
                present |= self._implied[a]
        for shape in self.shapes:
            if shape.anchors and present.isdisjoint(shape.anchors):
                continue
            for m in shape.regex.finditer(text):
                s, e = m.span(shape.group)
                if e > s and not text[s:e].startswith("[redacted:"):
                    found.append((s, e, text[s:e], shape.name))
        if short and len(self._short) < 100_000:
            self._short[text] = found
        return found

    def _find(
        self, text: str, hits: list[tuple[int, int, str, str]] | None = None
    ) -> list[tuple[int, int, str, str]]:
        """Non-overlapping (start, end, secret, rule) in ``text``: shapes (``hits`` when
        already known) and known secrets."""
        found = list(self._shape_hits(text) if hits is None else hits)
        if self._literals is not None:
            for m in self._literals.finditer(text):
                secret = m.group()
                found.append((m.start(), m.end(), secret, self._rule_of(self.names[secret])))
        if len(found) > 1:
            found.sort(key=lambda f: (f[0], f[0] - f[1]))
            kept: list[tuple[int, int, str, str]] = []
            for f in found:
                if not kept or f[0] >= kept[-1][1]:
                    kept.append(f)
            found = kept
        return found

    def text(self, value: str) -> str:
        """A string outside the frames (a derived field, a capture's metadata), redacted
        with the same placeholders."""
        out, last = [], 0
        for s, e, secret, rule in self._find(value):
            out.append(value[last:s])
            out.append(self.placeholder(secret, rule))
            last = e
        return value if not out else "".join(out) + value[last:]

    # -- the capture -----------------------------------------------------------------------

    def redact(self, frames: Sequence[Frame]) -> list[Redacted]:
        scans = [scan(f.raw) for f in frames]
        messages = contexts(frames, scans)
        # pass 1: whole values chosen by where they are (member names, methods, classes),
        # and the secrets of every shape, named in order of appearance
        whole: list[dict[int, str]] = []
        hits: dict[tuple[int, int], list[tuple[int, int, str, str]]] = {}
        for k, (f, leaves, msgs) in enumerate(zip(frames, scans, messages, strict=True)):
            chosen: dict[int, str] = {}
            if leaves is None:
                hits[k, -1] = self._shape_hits(f.raw.decode("latin-1"))
                for _s, _e, secret, shape in hits[k, -1]:
                    self.placeholder(secret, shape)
            for i, leaf in enumerate(leaves or ()):
                if not leaf.string:
                    continue
                rule = (
                    None
                    if leaf.key
                    else whole_rule(leaf.path, msgs, leaves or [], f.raw, self.rules, self.classes)
                )
                text, _ = decode(f.raw[leaf.start : leaf.end])
                if rule is None:
                    hits[k, i] = self._shape_hits(text)
                    for _s, _e, secret, found in hits[k, i]:
                        self.placeholder(secret, found)
                elif text and not text.startswith("[redacted:"):
                    chosen[i] = rule
                    self.placeholder(text, rule)
            whole.append(chosen)
        literals = sorted(
            (s for s, p in self.names.items() if len(s) >= _LITERAL_MIN and not _optional(p)),
            key=len,
            reverse=True,
        )
        if literals:
            self._literals = re.compile("|".join(re.escape(s) for s in literals))
        # pass 2: text streams split across chunks
        edits: list[list[tuple[int, int, bytes, str]]] = [[] for _ in frames]
        in_stream = self._streams(frames, scans, messages, whole, edits)
        # pass 3: every other string (and opaque frames), then apply
        out: list[Redacted] = []
        opaque = 0
        for k, (f, leaves, chosen) in enumerate(zip(frames, scans, whole, strict=True)):
            mine = edits[k]
            if leaves is None:
                opaque += 1
                text = f.raw.decode("latin-1")
                for s, e, secret, rule in self._find(text, hits.get((k, -1))):
                    mine.append((s, e, self.placeholder(secret, rule).encode(), rule))
            else:
                for i, leaf in enumerate(leaves):
                    if not leaf.string or (k, i) in in_stream:
                        continue
                    content = f.raw[leaf.start : leaf.end]
                    text, offsets = decode(content)
                    if i in chosen:
                        name = self.names.get(text)
                        if name is not None:
                            mine.append((leaf.start, leaf.end, name.encode(), self._rule_of(name)))
                        continue
                    for s, e, secret, rule in self._find(text, hits.get((k, i))):
                        a, b = raw_span(offsets, s, e)
                        mine.append(
                            (
                                leaf.start + a,
                                leaf.start + b,
                                self.placeholder(secret, rule).encode(),
                                rule,
                            )
                        )
            out.append(self._apply(f, mine))
        if opaque:
            self.notes.append(
                f"{opaque} frame(s) are not JSON: credential shapes and known secrets were "
                "replaced in their bytes; rules by member name could not apply"
            )
        return out

    def _apply(self, f: Frame, edits: list[tuple[int, int, bytes, str]]) -> Redacted:
        if not edits:
            return Redacted(f)
        edits.sort(key=lambda e: (e[0], e[1]))
        parts, last, rules = [], 0, []
        for s, e, new, rule in edits:
            if s < last:
                continue
            parts.append(f.raw[last:s])
            parts.append(new)
            last = e
            if new:
                self.counts[rule] += 1
            if rule not in rules:
                rules.append(rule)
        parts.append(f.raw[last:])
        raw = b"".join(parts)
        if raw == f.raw:
            return Redacted(f)
        return Redacted(replace(f, raw=raw), hashlib.sha256(f.raw).hexdigest(), tuple(rules))

    # -- what each message is --------------------------------------------------------------

    def _streams(
        self,
        frames: Sequence[Frame],
        scans: list[list[Leaf] | None],
        messages: list[dict[Path, MessageFacts]],
        whole: list[dict[int, str]],
        edits: list[list[tuple[int, int, bytes, str]]],
    ) -> set[tuple[int, int]]:
        """Consecutive message chunks of one stream, matched as one text: a secret split
        across chunks is found. Returns the (frame, leaf) pairs handled here."""
        streams: dict[tuple[object, ...], list[tuple[int, int, str, list[int] | None]]] = {}
        for k, (f, leaves, msgs) in enumerate(zip(frames, scans, messages, strict=True)):
            for i, leaf in enumerate(leaves or ()):
                if not leaf.string or leaf.key or i in whole[k]:
                    continue
                root, rel = split(leaf.path)
                m = msgs.get(root)
                if m is None or m.update is None or not m.update.endswith("_chunk"):
                    continue
                if rel[-1:] != ("text",):
                    continue
                key = (f.direction, m.session, m.update, m.owner, rel)
                text, offsets = decode(f.raw[leaf.start : leaf.end])
                streams.setdefault(key, []).append((k, i, text, offsets))
        handled: set[tuple[int, int]] = set()
        for pieces in streams.values():
            joined = "".join(p[2] for p in pieces)
            bounds, at = [], 0
            for p in pieces:
                bounds.append(at)
                at += len(p[2])
            for s, e, secret, rule in self._find(joined):
                name = self.placeholder(secret, rule).encode()
                first = True
                for (k, i, text, offsets), b in zip(pieces, bounds, strict=True):
                    lo, hi = max(s, b), min(e, b + len(text))
                    if lo >= hi:
                        continue
                    leaf = (scans[k] or [])[i]
                    a, z = raw_span(offsets, lo - b, hi - b)
                    edits[k].append((leaf.start + a, leaf.start + z, name if first else b"", rule))
                    first = False
            handled.update((k, i) for k, i, _, _ in pieces)
        return handled


def _optional(placeholder: str) -> bool:
    return any(placeholder.startswith(f"[redacted:{c}:") for c in CLASSES)
