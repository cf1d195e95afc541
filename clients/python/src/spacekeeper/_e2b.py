"""The e2b SDK's Sandbox and AsyncSandbox, attached from a connect answer.

Imported only when the SDK is installed. The sandbox is constructed the way
the SDK's own ``connect`` does after its control-plane call, from what the
answer carries (sandbox ID, envd version, envd access token, envd URL and
routing headers): no control-plane call, no provider API key.

When an envd call fails at the connection level before it took effect (a
502/503/504 answer instead of the command's stream, a refused connection, a
connect timeout), the sandbox reports it (``POST .../unhealthy``), re-attaches
to the sandbox the answer names (the replacement under ``remediation:
Replace``) and makes that call once more. A command whose stream had started,
or whose connection dropped after it was sent, may have run: never retried.
"""

from __future__ import annotations

import asyncio
import copy
import re
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

import e2b
from e2b import ConnectionConfig
from packaging.version import InvalidVersion, Version

from .answer import SandboxAnswer
from .errors import ControlPlaneNotAvailable

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client

try:  # what the SDK assumes when it cannot know envd's version
    from e2b.envd.versions import ENVD_DEBUG_FALLBACK as _FALLBACK_VERSION
except ImportError:  # pragma: no cover
    _FALLBACK_VERSION = Version("0.2.0")

__all__ = ["SpacekeeperSandbox", "SpacekeeperAsyncSandbox", "connection_level", "warm_up"]

# envd file operations retried once after a connection-level failure: such a
# failure means envd never received the request, so each is safe to send again.
_GUARDED_FILES = frozenset(
    {"read", "write", "write_files", "list", "exists", "get_info", "make_dir", "remove", "rename"}
)
_GATEWAY = re.compile(r"^(502|503|504)\b")
# Failures after the request went out: the command may have run.
_SENT_NAMES = frozenset(
    {"ReadError", "WriteError", "StreamError", "RemoteProtocolError", "ReadTimeout"}
)


def _chain(e: BaseException) -> Iterator[BaseException]:
    seen = set()
    cur: Optional[BaseException] = e
    while cur is not None and id(cur) not in seen and len(seen) < 16:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def connection_level(e: BaseException) -> bool:
    """True when the failed envd call cannot have taken effect: the sandbox's
    address answered 502/503/504 instead of envd's stream or reply, refused the
    connection, or did not accept it in time.

    The innermost error of the chain decides: the SDK wraps the transport's
    error (or the gateway's HTTP answer) in its own exceptions.
    """
    chain = list(_chain(e))
    for x in chain:
        if type(x).__name__ in _SENT_NAMES:
            return False  # dropped after the request went out
        if isinstance(x, (ConnectionResetError, ConnectionAbortedError, BrokenPipeError)):
            return False
    for x in reversed(chain):
        name = type(x).__name__
        if isinstance(x, ConnectionError):  # refused, unreachable host
            return True
        if name in ("ConnectError", "ConnectTimeout") and type(x).__module__.startswith("httpx"):
            return True
        if isinstance(x, TimeoutError):
            return "(Connect)" in str(x)  # else a deadline: the call may have run
        code = getattr(getattr(x, "code", None), "name", None)
        if name == "ConnectError" and code in ("UNAVAILABLE", "DEADLINE_EXCEEDED"):
            # no transport error below it: the HTTP answer was a gateway's
            # 502/503/504, not envd's stream
            return x.__cause__ is None
        if isinstance(x, (e2b.SandboxNotRunningException, _unreachable_cls())):
            return True
        if isinstance(x, e2b.SandboxException) and _GATEWAY.match(str(x)):
            return True
    return False


def _unreachable_cls() -> type:
    return getattr(e2b, "SandboxUnreachableException", e2b.SandboxNotRunningException)


def sdk_options(answer: SandboxAnswer, request_timeout: Optional[float]) -> dict:
    """The SDK constructor's arguments for an answer."""
    try:
        version = Version(answer.envd_version) if answer.envd_version else _FALLBACK_VERSION
    except InvalidVersion:
        version = _FALLBACK_VERSION
    config = ConnectionConfig(
        sandbox_url=answer.envd_url,
        extra_sandbox_headers=answer.headers,
        request_timeout=request_timeout,
    )
    return dict(
        sandbox_id=answer.sandbox_id,
        sandbox_domain=None,
        envd_version=version,
        envd_access_token=answer.envd_access_token,
        traffic_access_token=None,
        connection_config=config,
    )


def warm_up(request_timeout: Optional[float]) -> None:
    """Builds one SDK sandbox object for no sandbox, and drops it: the first
    one made in a process builds the SDK's shared HTTP transport and its
    first clients (a tenth of a second alone, more under load), which would
    otherwise be the cost of a user's first request. No call is made."""
    placeholder = SandboxAnswer(
        name="", user_id="", sandbox_id="warm-up", state="", path="",
        envd_url="http://127.0.0.1:9", ready=False,
    )
    e2b.Sandbox(**sdk_options(placeholder, request_timeout))


def _no_control_plane(what: str) -> Callable[..., Any]:
    def refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise ControlPlaneNotAvailable(
            f"{what}: this sandbox is kept by spacekeeper; its lifecycle is the UserSpace's "
            "(use client.busy(user) to keep it awake)"
        )

    refuse.__name__ = what
    return refuse


class _Guarded:
    """A view of the SDK's ``commands`` or ``files`` whose calls are retried once."""

    def __init__(self, owner: Any, which: str) -> None:
        self._owner = owner
        self._which = which

    def _inner(self) -> Any:
        return getattr(self._owner._sk_base(), self._which)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner(), name)
        if self._which == "files" and name in _GUARDED_FILES and callable(attr):

            def call(*args: Any, **kwargs: Any) -> Any:
                return self._owner._sk_call(
                    lambda: getattr(self._inner(), name)(*args, **kwargs)
                )

            return call
        return attr


class _GuardedCommands(_Guarded):
    def run(
        self,
        cmd: str,
        background: Optional[bool] = None,
        envs: Any = None,
        user: Any = None,
        cwd: Optional[str] = None,
        on_stdout: Any = None,
        on_stderr: Any = None,
        stdin: Optional[bool] = None,
        timeout: Optional[float] = 60,
        request_timeout: Optional[float] = None,
        **kwargs: Any,
    ) -> Any:
        """``commands.run`` of the SDK; its start is retried once after a
        connection-level failure, never once the command's stream began."""
        handle = self._owner._sk_call(
            lambda: self._inner().run(
                cmd,
                background=True,
                envs=envs,
                user=user,
                cwd=cwd,
                stdin=stdin,
                timeout=timeout,
                request_timeout=request_timeout,
                **kwargs,
            )
        )
        if background:
            return handle
        return handle.wait(on_stdout=on_stdout, on_stderr=on_stderr)


class _AsyncGuarded(_Guarded):
    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner(), name)
        if self._which == "files" and name in _GUARDED_FILES and callable(attr):

            async def call(*args: Any, **kwargs: Any) -> Any:
                return await self._owner._sk_call(
                    lambda: getattr(self._inner(), name)(*args, **kwargs)
                )

            return call
        return attr


class _AsyncGuardedCommands(_AsyncGuarded):
    async def run(
        self,
        cmd: str,
        background: Optional[bool] = None,
        envs: Any = None,
        user: Any = None,
        cwd: Optional[str] = None,
        on_stdout: Any = None,
        on_stderr: Any = None,
        stdin: Optional[bool] = None,
        timeout: Optional[float] = 60,
        request_timeout: Optional[float] = None,
        **kwargs: Any,
    ) -> Any:
        """``commands.run`` of the async SDK, retried as the sync one is."""
        handle = await self._owner._sk_call(
            lambda: self._inner().run(
                cmd,
                background=True,
                envs=envs,
                user=user,
                cwd=cwd,
                on_stdout=on_stdout,
                on_stderr=on_stderr,
                stdin=stdin,
                timeout=timeout,
                request_timeout=request_timeout,
                **kwargs,
            )
        )
        if background:
            return handle
        return await handle.wait()


class SpacekeeperSandbox(e2b.Sandbox):
    """An ``e2b.Sandbox`` handed out by spacekeeper (see the module's doc).

    ``answer`` is the connect answer it was attached from (after a retry, the
    answer of the unhealthy report). Control-plane methods (``kill``,
    ``set_timeout``, ``pause``) raise ControlPlaneNotAvailable.
    """

    def __init__(self, answer: SandboxAnswer, client: "Client") -> None:
        self._sk_client = client
        self._sk_lock = threading.Lock()
        self._sk_generation = 0
        self._sk_attach(answer)

    def _sk_attach(self, answer: SandboxAnswer) -> None:
        e2b.Sandbox.__init__(self, **sdk_options(answer, self._sk_client.request_timeout))
        self._sk_answer = answer
        self._sk_generation += 1

    def _sk_base(self) -> Any:
        return _SyncView(self)

    def _sk_fork(self, answer: SandboxAnswer) -> "SpacekeeperSandbox":
        """A copy for another answer naming the same sandbox: it shares the SDK's
        HTTP clients (thread-safe) and re-attaches on its own."""
        c = copy.copy(self)
        c._sk_answer = answer
        c._sk_lock = threading.Lock()
        return c

    def _sk_call(self, fn: Callable[[], Any]) -> Any:
        gen = self._sk_generation
        try:
            return fn()
        except Exception as e:
            if not connection_level(e):
                raise
            self._sk_recover(gen, e)
        return fn()

    def _sk_recover(self, gen: int, cause: BaseException) -> None:
        with self._sk_lock:
            if self._sk_generation != gen:
                return  # another call already re-attached
            try:
                answer = self._sk_client.unhealthy(self._sk_answer.user_id)
            except Exception as e:
                raise e from cause
            self._sk_attach(answer)

    @property
    def answer(self) -> SandboxAnswer:
        """The connect answer this sandbox is attached from."""
        return self._sk_answer

    @property
    def commands(self) -> Any:  # type: ignore[override]
        return _GuardedCommands(self, "commands")

    @property
    def files(self) -> Any:  # type: ignore[override]
        return _Guarded(self, "files")

    kill = _no_control_plane("kill")  # type: ignore[assignment]
    set_timeout = _no_control_plane("set_timeout")  # type: ignore[assignment]
    pause = _no_control_plane("pause")  # type: ignore[assignment]


class _SyncView:
    """The SDK's own properties of a SpacekeeperSandbox (not the guarded ones)."""

    def __init__(self, sbx: SpacekeeperSandbox) -> None:
        self._sbx = sbx

    @property
    def commands(self) -> Any:
        return e2b.Sandbox.commands.fget(self._sbx)  # type: ignore[attr-defined]

    @property
    def files(self) -> Any:
        return e2b.Sandbox.files.fget(self._sbx)  # type: ignore[attr-defined]


class SpacekeeperAsyncSandbox(e2b.AsyncSandbox):
    """An ``e2b.AsyncSandbox`` handed out by spacekeeper (as SpacekeeperSandbox)."""

    def __init__(self, answer: SandboxAnswer, client: "Client") -> None:
        self._sk_client = client
        self._sk_lock: Optional[asyncio.Lock] = None
        self._sk_generation = 0
        self._sk_attach(answer)

    def _sk_attach(self, answer: SandboxAnswer) -> None:
        e2b.AsyncSandbox.__init__(self, **sdk_options(answer, self._sk_client.request_timeout))
        self._sk_answer = answer
        self._sk_generation += 1

    def _sk_base(self) -> Any:
        return _AsyncView(self)

    async def _sk_call(self, fn: Callable[[], Any]) -> Any:
        gen = self._sk_generation
        try:
            return await fn()
        except Exception as e:
            if not connection_level(e):
                raise
            await self._sk_recover(gen, e)
        return await fn()

    async def _sk_recover(self, gen: int, cause: BaseException) -> None:
        if self._sk_lock is None:
            self._sk_lock = asyncio.Lock()
        async with self._sk_lock:
            if self._sk_generation != gen:
                return
            loop = asyncio.get_running_loop()
            try:
                answer = await loop.run_in_executor(
                    None, self._sk_client.unhealthy, self._sk_answer.user_id
                )
            except Exception as e:
                raise e from cause
            self._sk_attach(answer)

    @property
    def answer(self) -> SandboxAnswer:
        """The connect answer this sandbox is attached from."""
        return self._sk_answer

    @property
    def commands(self) -> Any:  # type: ignore[override]
        return _AsyncGuardedCommands(self, "commands")

    @property
    def files(self) -> Any:  # type: ignore[override]
        return _AsyncGuarded(self, "files")

    kill = _no_control_plane("kill")  # type: ignore[assignment]
    set_timeout = _no_control_plane("set_timeout")  # type: ignore[assignment]
    pause = _no_control_plane("pause")  # type: ignore[assignment]


class _AsyncView:
    def __init__(self, sbx: SpacekeeperAsyncSandbox) -> None:
        self._sbx = sbx

    @property
    def commands(self) -> Any:
        return e2b.AsyncSandbox.commands.fget(self._sbx)  # type: ignore[attr-defined]

    @property
    def files(self) -> Any:
        return e2b.AsyncSandbox.files.fget(self._sbx)  # type: ignore[attr-defined]
