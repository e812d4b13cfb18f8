"""Redaction of a capture on its way out (pure: frames in, redacted frames and findings out).

What belongs here: deciding which values of a capture are secret and replacing them with
placeholders, for every export format (``export --redact``, ``share``). Nothing here reads
the database or touches forwarding: it takes the frames an export is about to write. What
is secret is in :mod:`.rules`, finding strings in a frame's bytes in :mod:`.scan`, what
each message is in :mod:`.messages`, and the passes over a capture in :mod:`.redactor`.

How it stays faithful (docs/sharing.md):

- Only bytes *inside JSON string tokens* change, and only to placeholder text
  (``[redacted:RULE:N]``: plain ASCII, nothing JSON must escape). Every other byte of the
  frame — whitespace, key order, escapes, numbers of any size, invalid UTF-8 elsewhere — is
  kept, so valid JSON stays valid and a frame with nothing secret comes out identical.
- The same secret gets the same placeholder everywhere in the capture (a stable
  pseudonym): the first rule that found it names it, counted per rule in order of discovery.
- A secret split across consecutive chunks of one message (``agent_message_chunk`` …) is
  found in the joined text: the first piece becomes the placeholder, later pieces lose
  their part of it.
- A frame that is not JSON (noise on stdout, a binary WebSocket message) has the
  credential shapes and the known secrets replaced in its bytes; the member-name rules
  cannot apply to it. Such frames are counted in :attr:`Redactor.notes`.
- Each changed frame keeps the sha256 of its original bytes (:attr:`Redacted.sha256`), so
  the owner of the capture can prove which frame it was.
"""

from __future__ import annotations

from acp_proxy.export.core.redact.redactor import Redacted, Redactor
from acp_proxy.export.core.redact.rules import CLASSES, Rules, Shape, parse_rules, secret_name

__all__ = [
    "CLASSES",
    "Redacted",
    "Redactor",
    "Rules",
    "Shape",
    "parse_rules",
    "secret_name",
]
