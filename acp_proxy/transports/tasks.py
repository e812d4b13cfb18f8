"""Tasks a listener runs for its connections, to be ended together.

What belongs here: :class:`Tasks`, a set of running asyncio tasks (each connection's or
stream's work) that forgets each one as it ends; when the listener stops, waits for those
left to end on their own, or cancels them, or both in turn (:meth:`Tasks.settle`),
waiting for them to finish what cancelling runs (recording how a stream ended).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any

__all__ = ["Tasks"]


class Tasks:
    def __init__(self) -> None:
        self.running: set[asyncio.Task[None]] = set()

    def run(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self.running.add(task)
        task.add_done_callback(self.running.discard)

    async def wait(self) -> None:
        """Wait for every task still running to end on its own."""
        for task in list(self.running):
            await task

    async def settle(self, timeout: float) -> None:
        """Wait at most ``timeout`` seconds for the tasks to end on their own, then cancel
        those left (and wait for that): a listener stops in bounded time."""
        if self.running:
            await asyncio.wait(list(self.running), timeout=timeout)
        await self.cancel()

    async def cancel(self) -> None:
        """Cancel every task still running and wait for each to end."""
        for task in list(self.running):
            task.cancel()
        for task in list(self.running):
            with contextlib.suppress(asyncio.CancelledError):
                await task
