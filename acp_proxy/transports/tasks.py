"""Tasks a listener runs for its connections, to be ended together.

What belongs here: :class:`Tasks`, a set of running asyncio tasks (each connection's or
stream's work) that forgets each one as it ends; when the listener stops, either waits for
those left to end on their own or cancels them, waiting for them to finish what cancelling
runs (recording how a stream ended).
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

    async def cancel(self) -> None:
        """Cancel every task still running and wait for each to end."""
        for task in list(self.running):
            task.cancel()
        for task in list(self.running):
            with contextlib.suppress(asyncio.CancelledError):
                await task
