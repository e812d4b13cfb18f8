"""A tiny proxy chain for the chain tests (docs/protocol.md §13.4): a conductor and a proxy.

usage: chain.py conduct PROXY_ARGV_JSON AGENT_ARGV_JSON
       chain.py proxy

``conduct`` sits where the agent would be: it starts the proxy and the agent (each a JSON
array of argv, typically ``acp-proxy record -- ...``), initializes the proxy with
``proxy/initialize`` (the client's ``initialize``), and routes: what the client sends goes
to the proxy; a ``proxy/successor`` envelope from the proxy is unwrapped for the agent;
what the agent sends goes to the proxy in an envelope; what the proxy sends plainly goes
to the client. Answers go back the way their request came. ``proxy`` forwards everything
from its client to its successor in envelopes, and unwraps what comes back.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import IO, Any

ENVELOPE = "proxy/successor"
Msg = dict[str, Any]


class Peer:
    """One end of a line-delimited JSON-RPC connection, with its own request ids."""

    def __init__(self, name: str, r: IO[bytes], w: IO[bytes]) -> None:
        self.name, self.r, self.w = name, r, w
        self.lock = threading.Lock()
        self.ids = itertools.count(100)
        self.waiting: dict[int, Callable[[Msg], None]] = {}

    def send(self, msg: Msg) -> None:
        with self.lock:
            self.w.write(json.dumps(msg, separators=(",", ":")).encode() + b"\n")
            self.w.flush()

    def ask(self, method: str, params: Any, then: Callable[[Msg], None]) -> None:
        with self.lock:
            n = next(self.ids)
            self.waiting[n] = then
        self.send({"jsonrpc": "2.0", "id": n, "method": method, "params": params})

    def tell(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def answered(self, msg: Msg) -> None:
        with self.lock:
            then = self.waiting.pop(msg["id"])
        then(msg)

    def messages(self) -> Any:
        for line in self.r:
            if line.strip():
                yield json.loads(line)


def outcome(msg: Msg, id_: Any) -> Msg:
    """``msg``'s result or error, as the answer to request ``id_``."""
    out: Msg = {"jsonrpc": "2.0", "id": id_}
    out.update({k: msg[k] for k in ("result", "error") if k in msg})
    return out


def replier(peer: Peer, id_: Any) -> Callable[[Msg], None]:
    return lambda answer: peer.send(outcome(answer, id_))


def passing(src: Peer, dst: Peer, msg: Msg, method: str, params: Any) -> None:
    """``msg`` (a request or a notification of ``src``) sent on to ``dst`` as ``method``."""
    if "id" in msg:
        dst.ask(method, params, replier(src, msg["id"]))
    else:
        dst.tell(method, params)


def conduct(proxy_argv: list[str], agent_argv: list[str]) -> int:
    procs = [
        subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        for argv in (proxy_argv, agent_argv)
    ]
    client = Peer("client", sys.stdin.buffer, sys.stdout.buffer)
    proxy, agent = (
        Peer(n, p.stdout, p.stdin) for n, p in zip(("proxy", "agent"), procs, strict=True)
    )  # type: ignore[arg-type]

    def from_client(msg: Msg) -> None:
        if "method" not in msg:
            return client.answered(msg)
        method = "proxy/initialize" if msg["method"] == "initialize" else msg["method"]
        passing(client, proxy, msg, method, msg.get("params"))

    def from_proxy(msg: Msg) -> None:
        if "method" not in msg:
            return proxy.answered(msg)
        if msg["method"] == ENVELOPE:
            inner = msg["params"]
            return passing(proxy, agent, msg, inner["method"], inner.get("params"))
        passing(proxy, client, msg, msg["method"], msg.get("params"))

    def from_agent(msg: Msg) -> None:
        if "method" not in msg:
            return agent.answered(msg)
        wrapped = {"method": msg["method"], "params": msg.get("params")}
        passing(agent, proxy, msg, ENVELOPE, wrapped)

    threads = [
        threading.Thread(target=lambda p=p, f=f: [f(m) for m in p.messages()], daemon=True)
        for p, f in ((proxy, from_proxy), (agent, from_agent))
    ]
    for t in threads:
        t.start()
    for msg in client.messages():
        from_client(msg)
    for p in procs:
        assert p.stdin is not None
        p.stdin.close()
    return max(p.wait(timeout=30) for p in procs)


def proxy() -> int:
    conductor = Peer("conductor", sys.stdin.buffer, sys.stdout.buffer)
    for msg in conductor.messages():
        if "method" not in msg:
            conductor.answered(msg)
        elif msg["method"] == ENVELOPE:  # from the successor: on to our client
            inner = msg["params"]
            passing(conductor, conductor, msg, inner["method"], inner.get("params"))
        else:  # from our client: on to the successor
            method = "initialize" if msg["method"] == "proxy/initialize" else msg["method"]
            wrapped = {"method": method, "params": msg.get("params")}
            passing(conductor, conductor, msg, ENVELOPE, wrapped)
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "conduct":
        sys.exit(conduct(json.loads(sys.argv[2]), json.loads(sys.argv[3])))
    sys.exit(proxy())
