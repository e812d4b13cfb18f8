"""Raw HTTP/2 peers on ``h2`` for the tests: a client (prior knowledge) that keeps every
byte of each answer and gives flow-control window back only when told to, and an
upstream server that answers each request with a scripted list of actions."""

from __future__ import annotations

import asyncio
import contextlib
import urllib.parse
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import h2.config
import h2.connection
import h2.events

from support.http import loopback_server

Raw = list[tuple[bytes, bytes]]


@dataclass
class Answer:
    status: int = 0
    headers: Raw = field(default_factory=list)
    body: bytearray = field(default_factory=bytearray)
    ended: bool = False
    reset: int | None = None  # the error code of a RST_STREAM received


class H2Client:
    """One HTTP/2 connection to ``url``. ``auto_ack``: give the window back as bytes
    arrive (False: a reader that does not read)."""

    def __init__(self, reader: Any, writer: Any, authority: bytes, auto_ack: bool) -> None:
        self.reader, self.writer = reader, writer
        self.authority = authority
        self.auto_ack = auto_ack
        config = h2.config.H2Configuration(client_side=True, header_encoding=None)
        self.conn = h2.connection.H2Connection(config=config)
        self.conn.initiate_connection()
        self.answers: dict[int, Answer] = {}
        self.changed = asyncio.Event()
        self.unacked: dict[int, int] = {}
        self.closed = False
        self.flush()
        self.task = asyncio.create_task(self._pump())

    @classmethod
    async def connect(cls, url: str, *, auto_ack: bool = True) -> H2Client:
        u = urllib.parse.urlsplit(url)
        reader, writer = await asyncio.open_connection(u.hostname, u.port)
        return cls(reader, writer, u.netloc.encode(), auto_ack)

    def flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.writer.write(data)

    async def _pump(self) -> None:
        while data := await self.reader.read(65536):
            for event in self.conn.receive_data(data):
                self._event(event)
            self.flush()
            self.changed.set()
        self.closed = True
        self.changed.set()

    def _event(self, event: Any) -> None:
        answer = self.answers.get(getattr(event, "stream_id", 0) or 0)
        if answer is None:
            return
        if isinstance(event, h2.events.ResponseReceived):
            headers = list(event.headers)
            answer.status = int(dict(headers)[b":status"])
            answer.headers = [(k, v) for k, v in headers if not k.startswith(b":")]
        elif isinstance(event, h2.events.DataReceived):
            answer.body += event.data
            if self.auto_ack:
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            else:
                self.unacked[event.stream_id] = (
                    self.unacked.get(event.stream_id, 0) + event.flow_controlled_length
                )
        elif isinstance(event, h2.events.StreamEnded):
            answer.ended = True
        elif isinstance(event, h2.events.StreamReset):
            answer.reset = event.error_code

    def request(self, method: bytes, path: bytes, headers: Raw, body: bytes = b"") -> int:
        sid = self.conn.get_next_available_stream_id()
        self.answers[sid] = Answer()
        head = [(b":method", method), (b":scheme", b"http"), (b":authority", self.authority)]
        head += [(b":path", path), *headers]
        self.conn.send_headers(sid, head, end_stream=not body)
        if body:
            self.conn.send_data(sid, body, end_stream=True)
        self.flush()
        return sid

    def ack(self, sid: int) -> None:
        """Read what came: the window goes back, and from now on as bytes arrive."""
        self.auto_ack = True
        if self.unacked.get(sid):
            self.conn.acknowledge_received_data(self.unacked.pop(sid), sid)
            self.flush()

    def reset(self, sid: int) -> None:
        self.conn.reset_stream(sid)
        self.flush()

    async def until(self, test: Callable[[], bool], timeout: float = 30) -> None:
        async with asyncio.timeout(timeout):
            while not test():
                if self.closed:
                    raise ConnectionError("the proxy closed the connection")
                self.changed.clear()
                await self.changed.wait()

    async def exchange(self, method: bytes, path: bytes, headers: Raw, body: bytes = b"") -> Answer:
        sid = self.request(method, path, headers, body)
        answer = self.answers[sid]
        await self.until(lambda: answer.ended or answer.reset is not None)
        return answer

    async def close(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
        self.writer.close()


@dataclass
class H2Upstream:
    """What a raw HTTP/2 upstream got and did: each request (headers, body), the bytes it
    sent, and whether its sending was held back by the window (``blocked``)."""

    url: str = ""
    requests: list[tuple[Raw, bytes]] = field(default_factory=list)
    sent: int = 0
    blocked: asyncio.Event = field(default_factory=asyncio.Event)
    reset: asyncio.Event = field(default_factory=asyncio.Event)  # a stream reset by the proxy
    clients: set[int] = field(default_factory=set)  # the ports of the connections it accepted


Action = tuple[Any, ...]


@contextlib.asynccontextmanager
async def h2_upstream(reply: Callable[[Raw, bytes], list[Action]]) -> AsyncIterator[H2Upstream]:
    """An HTTP/2 server (prior knowledge). ``reply(headers, body)`` gives its actions:
    ``("head", status, headers)``, ``("data", bytes)``, ``("flood", n)`` (``n`` bytes of
    ``data: x…`` events, as fast as the window allows), ``("end",)``, ``("reset", code)``,
    ``("hold",)`` (keep the stream open), ``("goaway",)`` (refuse this stream: a GOAWAY
    naming the one before, and the connection closed)."""
    up = H2Upstream()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up.clients.add(writer.get_extra_info("peername")[1])
        config = h2.config.H2Configuration(client_side=False, header_encoding=None)
        conn = h2.connection.H2Connection(config=config)
        conn.initiate_connection()
        writer.write(conn.data_to_send())
        window = asyncio.Event()
        bodies: dict[int, bytearray] = {}
        heads: dict[int, Raw] = {}
        tasks = set()

        async def act(sid: int, actions: list[Action]) -> None:
            for action in actions:
                if action[0] == "head":
                    conn.send_headers(sid, [(b":status", b"%d" % action[1]), *action[2]])
                elif action[0] == "data":
                    conn.send_data(sid, action[1])
                elif action[0] == "flood":
                    await flood(sid, action[1])
                elif action[0] == "end":
                    conn.end_stream(sid)
                elif action[0] == "reset":
                    conn.reset_stream(sid, action[1])
                elif action[0] == "goaway":  # the stream not taken; the connection closed
                    conn.close_connection(last_stream_id=sid - 2)
                    writer.write(conn.data_to_send())
                    writer.close()
                    return
                writer.write(conn.data_to_send())
                await writer.drain()
                await asyncio.sleep(0.01)

        async def flood(sid: int, n: int) -> None:
            event = b"data: " + b"x" * 1000 + b"\n\n"
            while up.sent < n:
                size = min(conn.local_flow_control_window(sid), conn.max_outbound_frame_size)
                if size < len(event):
                    up.blocked.set()
                    window.clear()
                    await window.wait()
                    continue
                chunk = event * (size // len(event))
                conn.send_data(sid, chunk[: n - up.sent])
                up.sent += min(len(chunk), n - up.sent)
                writer.write(conn.data_to_send())
                await writer.drain()

        try:
            while data := await reader.read(65536):
                for event in conn.receive_data(data):
                    if isinstance(event, h2.events.RequestReceived):
                        heads[event.stream_id] = list(event.headers)
                        bodies[event.stream_id] = bytearray()
                    elif isinstance(event, h2.events.DataReceived):
                        bodies[event.stream_id] += event.data
                        conn.acknowledge_received_data(
                            event.flow_controlled_length, event.stream_id
                        )
                    elif isinstance(event, h2.events.StreamEnded):
                        sid = event.stream_id
                        up.requests.append((heads[sid], bytes(bodies[sid])))
                        actions = reply(heads[sid], bytes(bodies[sid]))
                        tasks.add(asyncio.create_task(act(sid, actions)))
                    elif isinstance(event, h2.events.WindowUpdated):
                        window.set()
                    elif isinstance(event, h2.events.StreamReset):
                        up.reset.set()
                writer.write(conn.data_to_send())
        finally:
            for task in tasks:
                task.cancel()
            writer.close()

    async with loopback_server(handle) as up.url:
        yield up
