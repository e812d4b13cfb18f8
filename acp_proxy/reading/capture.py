"""A capture opened for reading, whatever holds it.

What belongs here: :func:`open_capture`, which resolves what a ``CAPTURE`` argument names
(the one rule of :mod:`acp_proxy.store.refs`: an id, a uid prefix, ``-1``, or a ``jsonl``
export) once, and :class:`OpenCapture`, through which everything of that capture is read —
its row, frames, events, stderr, how it ended — from the one store it was opened in (a
``jsonl`` export is read the way the database is, :class:`~acp_proxy.store.refs.ExportStore`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from acp_proxy.store.liveness import capture_state
from acp_proxy.store.reader import Store
from acp_proxy.store.refs import ExportStore, Source, resolve

__all__ = ["EndNotes", "OpenCapture", "open_capture"]


@dataclasses.dataclass(frozen=True, slots=True)
class EndNotes:
    """What the views say of a capture's end: why its open turns were cut short (None
    while it is recorded, or at a frame before its end), and the agent's stderr (a crash's
    explanation is usually there)."""

    reason: str | None = None
    stderr: tuple[tuple[int, bytes], ...] = ()


class OpenCapture:
    """One capture, opened once: ``capture`` is its row, :attr:`store` what its frames,
    events and stderr are read from (the database, or the export read the same way)."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.capture: dict[str, Any] = source.capture
        self.store: Store | ExportStore = (
            source.store if source.store is not None else ExportStore(source)
        )

    @property
    def is_file(self) -> bool:
        """Read from a ``jsonl`` export, not from the database."""
        return self.source.is_file

    @property
    def id(self) -> Any:
        return self.capture["id"]

    @property
    def ended(self) -> bool:
        """Nothing more will be recorded into it (its relay is gone)."""
        return capture_state(self.capture) != "recording"

    def events(self) -> list[dict[str, Any]]:
        return self.store.events(self.id)

    def end_notes(self, at: int | None = None) -> EndNotes:
        """What the views say of its end (nothing for a ``jsonl`` export)."""
        if self.is_file:
            return EndNotes()
        from acp_proxy.text.captures import cut_short

        reason = cut_short(self.capture, self.events()) if at is None and self.ended else None
        return EndNotes(reason, tuple(self.store.stderr(self.id)))

    def close(self) -> None:
        self.source.close()

    def __enter__(self) -> OpenCapture:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_capture(db: Path, ref: str | None) -> OpenCapture:
    """The capture ``ref`` names in ``db`` (the latest when None), or the ``jsonl`` export
    it names: :class:`~acp_proxy.errors.UsageError` when there is none such."""
    return OpenCapture(resolve(ref, db))
