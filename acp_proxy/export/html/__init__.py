"""A capture as one self-contained HTML page, to open in a browser.

What belongs here: laying out what the other views already compute — the capture, its turns,
tool calls with their content (diffs, text, terminals), permissions, the plan, terminals as
their screens showed them (in their colours), file changes as patches, the agent's stderr,
the events, and the frame timeline with every frame's exact text one click away — as static
HTML with inline CSS. No scripts, no external resources: the file can be attached to a bug
report and read offline. Everything from the wire is escaped, and the page's
Content-Security-Policy (:data:`CSP`) makes the browser refuse what escaping would have let
through anyway: any script, any load from anywhere, any style but our own stylesheet
(allowed by its hash), forms and ``<base>``. Links are fragments within the page only.

Big captures stay a page a browser opens in seconds: the page is written as it is read
(:func:`write_html`, frames from a cursor, never all in memory), runs of message chunks
collapse into one row, each frame shows at most :data:`RAW_SHOWN` bytes, and at most
``max_frames`` frames are laid out — the page says how to see the rest (the next page with
``--from``).

The look and escaping are in :mod:`.style`, terminal screens in :mod:`.screen`, the
sections above the frames in :mod:`.sections`, the frames table in :mod:`.rows`, and the
page as a whole in :mod:`.page`.
"""

from __future__ import annotations

from acp_proxy.export.html.page import (
    DEFAULT_MAX_FRAMES,
    render_html,
    write_capture_html,
    write_html,
)
from acp_proxy.export.html.rows import RAW_SHOWN
from acp_proxy.export.html.style import CSP

__all__ = [
    "CSP",
    "DEFAULT_MAX_FRAMES",
    "RAW_SHOWN",
    "render_html",
    "write_capture_html",
    "write_html",
]
