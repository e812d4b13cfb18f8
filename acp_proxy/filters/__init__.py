"""The frame filter language, shared by ``show --filter``, ``tail --filter`` and the web
inspector's filter box.

What belongs here: reading an expression (``method:session/* and not dir:a2c``) into a
tree (:func:`parse`), and deciding with it — on a frame's fields in Python
(:func:`matches`), and as an SQL condition over the ``messages`` table with bound
parameters (:func:`sql_where`) for what can be decided there. Pure: strings in, values out.
The language is described in docs/ui.md, "Filter expressions".
"""

from __future__ import annotations

from acp_proxy.filters.evaluate import FIELDS, compile_filter, matches
from acp_proxy.filters.parser import KEYS, Expr, parse
from acp_proxy.filters.sql import sql_where

__all__ = ["FIELDS", "KEYS", "Expr", "compile_filter", "matches", "parse", "sql_where"]
