"""AsyncClient: the Client's surface for asyncio applications.

The connect API is called through the standard library in a worker thread
(the calls are short, and the core stays free of third-party packages); the
sandboxes handed out are ``e2b.AsyncSandbox`` objects.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, Optional

from .answer import SandboxAnswer
from .client import Busy, Client

__all__ = ["AsyncClient"]


class AsyncClient:
    """As :class:`spacekeeper.Client` (same arguments), with awaitable calls::

        async with AsyncClient(url, token_file="/var/run/spacekeeper/token") as sk:
            sbx = await sk.sandbox("alice")
            await sbx.commands.run("echo hello")
    """

    def __init__(self, url: str, token: Optional[str] = None, **kwargs: Any) -> None:
        self.sync = Client(url, token, **kwargs)
        """The underlying (thread-safe) :class:`Client`."""

    async def _run(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, functools.partial(fn, *args, **kwargs))

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.sync.close()

    def stats(self) -> dict:
        return self.sync.stats()

    async def connect(self, user_id: str, **kwargs: Any) -> SandboxAnswer:
        """See :meth:`Client.connect`."""
        return await self._run(self.sync.connect, user_id, **kwargs)

    async def connect_name(self, name: str, **kwargs: Any) -> SandboxAnswer:
        """See :meth:`Client.connect_name`."""
        return await self._run(self.sync.connect_name, name, **kwargs)

    async def unhealthy(self, user_id: str, **kwargs: Any) -> SandboxAnswer:
        """See :meth:`Client.unhealthy`."""
        return await self._run(self.sync.unhealthy, user_id, **kwargs)

    async def activity(self, user_id: str, **kwargs: Any) -> None:
        """See :meth:`Client.activity`."""
        await self._run(self.sync.activity, user_id, **kwargs)

    def busy(self, user_id: str, **kwargs: Any) -> Busy:
        """``async with sk.busy(user): ...``; see :meth:`Client.busy`."""
        return self.sync.busy(user_id, **kwargs)

    async def sandbox(
        self,
        user_id: str,
        *,
        timeout: Optional[float] = None,
        fresh: bool = False,
        sdk: Optional[bool] = None,
    ) -> Any:
        """An ``e2b.AsyncSandbox`` for the user (see :meth:`Client.sandbox`)."""
        answer = await self.connect(user_id, timeout=timeout, fresh=fresh)
        return self.sync.attach(answer, async_=True, sdk=sdk)
