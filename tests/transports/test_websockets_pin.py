"""The websockets internals the relay relies on are there, in the versions pyproject admits.

The relay hooks into ``websockets``' asyncio connections below their public API (see
docs/websocket.md, "What we rely on in websockets"); the dependency is pinned to the major
version these tests ran on. A release that moves one of these fails here, not in a user's
editor.
"""

from __future__ import annotations

import inspect
import re
import tomllib

import websockets
from support.paths import ROOT
from websockets.asyncio.connection import Connection
from websockets.asyncio.messages import Assembler
from websockets.asyncio.server import Server, ServerConnection
from websockets.protocol import Protocol


def test_the_installed_version_is_inside_the_pin() -> None:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (pin,) = [d for d in deps if d.startswith("websockets")]
    low, high = re.fullmatch(r"websockets>=([\d.]+),<(\d+)", pin.split("#")[0].strip()).groups()
    major = int(websockets.__version__.split(".")[0])
    assert tuple(map(int, low.split("."))) <= tuple(map(int, websockets.__version__.split(".")[:2]))
    assert major < int(high)


def test_the_hooks_exist_with_the_shapes_we_call() -> None:
    # overridden: called with one argument each
    for name, arity in (("data_received", 2), ("process_event", 2), ("connection_lost", 2),
                        ("resume_writing", 1), ("pause_writing", 1)):  # fmt: skip
        assert len(inspect.signature(getattr(Connection, name)).parameters) == arity, name
    # called: sending what the protocol produced, and its buffers
    assert len(inspect.signature(Connection.send_data).parameters) == 1
    assert len(inspect.signature(Protocol.data_to_send).parameters) == 1
    for name in ("send_text", "send_binary"):
        assert list(inspect.signature(getattr(Protocol, name)).parameters)[:2] == ["self", "data"]
    # read: the assembler's pause flag, the connection's write-pause flag
    assert "paused" in inspect.getsource(Assembler.__init__)
    assert "self.paused" in inspect.getsource(Connection.pause_writing)
    # the upgrade request awaited apart from the rest of the handshake (its head timeout),
    # and whether the server still serves, asked of whatever HandOver sets as its server
    assert "self.request_rcvd" in inspect.getsource(ServerConnection.__init__)
    assert "self.server.is_serving()" in inspect.getsource(ServerConnection.handshake)
    assert "self.server.is_serving()" in inspect.getsource(Server.is_serving)
