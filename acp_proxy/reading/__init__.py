"""Reading captures back: what every reader asks of a capture, as typed values.

What belongs here: the library the command line, the web inspector and Python callers
share to read a capture — opening the one a ``CAPTURE`` argument names, from the database
or a ``jsonl`` export (:mod:`.capture`), its timeline of frames, events and stderr in time
order with the findings of ``check`` (:mod:`.timeline`), and what the user saw: its
reconstruction and views (:mod:`.views`). Nothing here parses options or prints: the
commands turn their options into these calls and print what comes back
(:mod:`acp_proxy.text` makes the lines).

::

    with open_capture(db, "-1") as cap:            # the latest capture of db
        timeline = Timeline(cap, at=120)           # up to frame 120
        for item in timeline.items(timeline.frames()):
            ...                                    # FrameItem, EventItem, StderrItem
        r = reconstruction(cap, at=120)            # tool calls, terminals, turns…
"""

from __future__ import annotations

from acp_proxy.reading.capture import EndNotes, OpenCapture, open_capture
from acp_proxy.reading.timeline import EventItem, FrameItem, Item, StderrItem, Timeline, since_ns
from acp_proxy.reading.views import VIEWS, export_text, plain_frames, reconstruction

__all__ = [
    "VIEWS",
    "EndNotes",
    "EventItem",
    "FrameItem",
    "Item",
    "OpenCapture",
    "StderrItem",
    "Timeline",
    "export_text",
    "open_capture",
    "plain_frames",
    "reconstruction",
    "since_ns",
]
