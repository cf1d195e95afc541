"""The connect API client: a user's ready sandbox, heartbeats, unhealthy reports.

Standard library only; the e2b SDK is imported only when a sandbox object of
the SDK is asked for (``pip install 'spacekeeper[e2b]'``).
"""

from __future__ import annotations

import collections
import email.utils
import http.client
import logging
import math
import os
import ssl
import threading
import time
import urllib.parse
from typing import TYPE_CHECKING, Any, Dict, Optional, Union

from ._http import Pool, Response, is_timeout
from .answer import SandboxAnswer
from .errors import (
    RETRIABLE_REASONS,
    ConnectionFailed,
    SpacekeeperError,
    Timeout,
    UnknownEndpoint,
    error_for,
)

if TYPE_CHECKING:  # pragma: no cover
    from ._e2b import SpacekeeperAsyncSandbox, SpacekeeperSandbox

__all__ = ["Client", "Busy", "DEFAULT_TIMEOUT"]

log = logging.getLogger("spacekeeper")

DEFAULT_TIMEOUT = 30.0
"""Seconds a call may take, retries included (the connect API's own default)."""

# The server answers 504 at the timeout we pass it; the socket waits this much
# longer for that answer to arrive.
_ANSWER_GRACE_S = 2.0
# Retry-After missing on a retriable answer: wait this long.
_DEFAULT_RETRY_S = 0.5
# Heartbeats when the idle timeout is unknown (no deadline in the last answer).
_DEFAULT_HEARTBEAT_S = 15.0
_MIN_HEARTBEAT_S = 0.5
_MAX_HEARTBEAT_S = 60.0
# SDK sandboxes kept for reuse (one per user's current sandbox).
_SDK_CACHE = 4096


def _retry_after(v: Optional[str]) -> Optional[float]:
    if not v:
        return None
    v = v.strip()
    try:
        return max(0.0, float(v))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _base_url(url: str) -> str:
    """The connect listener's URL without a trailing ``/`` or ``/v1``: every
    route the client calls starts with ``/v1/`` itself, so
    ``http://HOST:9091`` and ``http://HOST:9091/v1/`` (what ``make demo``
    prints) reach the same API."""
    url = url.rstrip("/")
    if urllib.parse.urlsplit(url).path.endswith("/v1"):
        url = url[: -len("/v1")]
    return url


def _duration(seconds: float) -> str:
    return f"{max(1, int(math.floor(seconds * 1000)))}ms"


class _Stats:
    """Counters of what the client did (read with Client.stats())."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts: Dict[str, int] = {}

    def add(self, key: str, n: int = 1) -> None:
        with self._lock:
            self.counts[key] = self.counts.get(key, 0) + n

    def snapshot(self) -> Dict[str, int]:
        with self._lock:
            return dict(self.counts)


class Client:
    """A client of spacekeeper's connect API. Thread-safe; keeps connections alive.

    :param url: the connect listener, e.g. ``http://spacekeeper-connect.spacekeeper.svc:9091``
        (with or without a trailing ``/v1``: the routes' own prefix)
    :param token: the bearer token (``controller.connectTokenFile``'s content)
    :param token_file: a file holding the token (one line), read once here
    :param timeout: seconds a call may take by default, retries of 429/503 included
    :param ssl_context: for an ``https://`` URL (e.g. with the issuing CA loaded)
    :param request_timeout: the e2b SDK's per-request timeout of the sandboxes
        handed out (seconds; ``None``: the SDK's default)
    """

    def __init__(
        self,
        url: str,
        token: Optional[str] = None,
        *,
        token_file: Optional[Union[str, "os.PathLike[str]"]] = None,
        timeout: float = DEFAULT_TIMEOUT,
        ssl_context: Optional[ssl.SSLContext] = None,
        request_timeout: Optional[float] = None,
    ) -> None:
        if token is not None and token_file is not None:
            raise ValueError("give token or token_file, not both")
        if token_file is not None:
            with open(token_file, encoding="utf-8") as f:
                token = f.readline().rstrip("\r\n")
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self.url = _base_url(url)
        self.timeout = float(timeout)
        self.request_timeout = request_timeout
        self._pool = Pool(self.url, ssl_context=ssl_context)
        self._headers = {"Accept": "application/json", "User-Agent": "spacekeeper-python/0.1.0"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._stats = _Stats()
        self._last: Dict[str, SandboxAnswer] = {}
        self._last_lock = threading.Lock()
        # SDK sandboxes by what they were built from: the SDK builds six HTTP
        # clients per Sandbox (a third of a millisecond); an answer naming the
        # same sandbox, URL, headers and token gets a copy of the one built.
        self._sdk: "collections.OrderedDict[tuple, Any]" = collections.OrderedDict()
        self._sdk_lock = threading.Lock()

    # ---- plumbing ----

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Closes the idle connections (the client stays usable)."""
        self._pool.close()
        self._pool = Pool(self.url, ssl_context=self._pool.ssl_context)

    def stats(self) -> Dict[str, int]:
        """What this client did: ``requests`` (HTTP requests to spacekeeper),
        ``retries`` (429/503 retried), ``unhealthy`` (reports made by sandboxes
        handed out), ``heartbeats``."""
        return self._stats.snapshot()

    def _call(
        self,
        method: str,
        path: str,
        timeout: Optional[float],
        query: Optional[Dict[str, str]] = None,
        wait: bool = True,
    ) -> Response:
        """One route, retried on the reasons of ``RETRIABLE_REASONS`` (429
        ``TooManyConnects`` and ``QuotaExceeded``, the transient 503s,
        ``ForwardFailed``) after their ``Retry-After``, within the timeout.

        ``wait``: the route takes ``?timeout=`` (the server answers within it).
        Returns a 2xx answer; raises the answer's exception otherwise.
        """
        budget = self.timeout if timeout is None else float(timeout)
        deadline = time.monotonic() + budget
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout(f"no answer within {budget:g}s", reason="Timeout")
            q = dict(query or {})
            if wait:
                q["timeout"] = _duration(left)
            full = path + ("?" + urllib.parse.urlencode(q) if q else "")
            self._stats.add("requests")
            try:
                r = self._pool.request(
                    method, full, self._headers, left + (_ANSWER_GRACE_S if wait else 0)
                )
            except (OSError, http.client.HTTPException) as e:
                if is_timeout(e):
                    raise Timeout(f"spacekeeper at {self.url}: no answer in time") from e
                raise ConnectionFailed(f"spacekeeper at {self.url}: {e}") from e
            if 200 <= r.status < 300:
                return r
            body = r.json()
            err = error_for(
                r.status,
                body if isinstance(body, dict) else None,
                _retry_after(r.headers.get("retry-after")),
            )
            if isinstance(err, UnknownEndpoint):
                raise UnknownEndpoint(
                    f"{err.message} (the client's URL is {self.url}: give the connect "
                    "listener, controller.connectListen, as http(s)://HOST:PORT)",
                    status=err.status,
                    reason=err.reason,
                    body=err.body,
                )
            if err.reason not in RETRIABLE_REASONS:
                raise err
            pause = err.retry_after if err.retry_after is not None else _DEFAULT_RETRY_S
            if time.monotonic() + pause >= deadline:
                raise err
            self._stats.add("retries")
            time.sleep(pause)

    def _answer(self, r: Response) -> SandboxAnswer:
        body = r.json()
        if not isinstance(body, dict) or not body.get("sandboxID"):
            raise SpacekeeperError(
                f"spacekeeper answered {r.status} without a sandbox", status=r.status
            )
        a = SandboxAnswer.from_json(body)
        with self._last_lock:
            self._last[a.user_id] = a
        return a

    @staticmethod
    def _user_path(user_id: str, what: str) -> str:
        if not user_id:
            raise ValueError("user_id must not be empty")
        return f"/v1/users/{urllib.parse.quote(user_id, safe='')}/{what}"

    # ---- the connect API ----

    def connect(
        self, user_id: str, *, timeout: Optional[float] = None, fresh: bool = False
    ) -> SandboxAnswer:
        """``GET /v1/users/{user_id}/sandbox``: the user's sandbox, ready.

        Wakes an idle space, creates a missing sandbox; ``fresh=True`` makes the
        controller probe the data plane first instead of answering from memory.
        Raises a :class:`~spacekeeper.errors.SpacekeeperError` subclass per reason.
        """
        q = {"fresh": "1"} if fresh else None
        return self._answer(self._call("GET", self._user_path(user_id, "sandbox"), timeout, q))

    def connect_name(
        self, name: str, *, timeout: Optional[float] = None, fresh: bool = False
    ) -> SandboxAnswer:
        """``POST /v1/userspaces/{name}/connect``: as :meth:`connect`, by UserSpace name."""
        q = {"fresh": "1"} if fresh else None
        path = f"/v1/userspaces/{urllib.parse.quote(name, safe='')}/connect"
        return self._answer(self._call("POST", path, timeout, q))

    def unhealthy(self, user_id: str, *, timeout: Optional[float] = None) -> SandboxAnswer:
        """``POST /v1/users/{user_id}/unhealthy``: says the sandbox's data plane failed.

        The controller probes at once; under ``remediation: Replace`` the answer
        is the replacement (``path == "replace"``), under ``Report`` it raises
        :class:`~spacekeeper.errors.DataPlaneUnreachable` when the probe fails,
        and either way answers the same sandbox when the probe succeeds.
        """
        self._stats.add("unhealthy")
        return self._answer(self._call("POST", self._user_path(user_id, "unhealthy"), timeout))

    def activity(self, user_id: str, *, timeout: Optional[float] = None) -> None:
        """``POST /v1/users/{user_id}/activity``: a heartbeat (keeps an awake space
        awake; does not wake an idle one)."""
        t = min(self.timeout, 10.0) if timeout is None else timeout
        self._stats.add("heartbeats")
        self._call("POST", self._user_path(user_id, "activity"), t, wait=False)

    def busy(
        self,
        user_id: str,
        *,
        interval: Optional[float] = None,
        idle_timeout: Optional[float] = None,
    ) -> "Busy":
        """A context manager that keeps the user's space awake while long work runs::

            with client.busy("alice"):
                sbx.commands.run("pip install -r requirements.txt", timeout=0)

        A background thread sends a heartbeat at once and then every
        ``interval`` seconds until the block ends (default: a quarter of
        ``idle_timeout``, else of the time the last answer's deadline had left).
        """
        if interval is None:
            interval = self._heartbeat_interval(user_id, idle_timeout)
        return Busy(self, user_id, interval)

    def _heartbeat_interval(self, user_id: str, idle_timeout: Optional[float]) -> float:
        if idle_timeout is None:
            with self._last_lock:
                a = self._last.get(user_id)
            if a is not None and a.deadline is not None:
                idle_timeout = a.deadline.timestamp() - time.time()
        if idle_timeout is None or idle_timeout <= 0:
            return _DEFAULT_HEARTBEAT_S
        return min(_MAX_HEARTBEAT_S, max(_MIN_HEARTBEAT_S, idle_timeout / 4))

    # ---- sandboxes ----

    def sandbox(
        self,
        user_id: str,
        *,
        async_: bool = False,
        timeout: Optional[float] = None,
        fresh: bool = False,
        sdk: Optional[bool] = None,
    ) -> Any:
        """The user's sandbox, ready to use, from one connect call.

        With the e2b SDK installed: an ``e2b.Sandbox`` (``async_=True``: an
        ``e2b.AsyncSandbox``) attached from the answer with no control-plane
        call and no provider API key. Its ``answer`` attribute is the
        :class:`SandboxAnswer` (``.path``, ``.deadline``, ...). When an envd call
        fails at the connection level (502/503/504, refused, a connect timeout)
        before a command started, it reports :meth:`unhealthy` and retries that
        call once on the sandbox the answer names; a command that may have run
        is never retried.

        Without the SDK (or ``sdk=False``): the :class:`SandboxAnswer` itself
        (envd URL, headers, token, sandbox ID, path). ``sdk=True`` requires it.
        """
        answer = self.connect(user_id, timeout=timeout, fresh=fresh)
        return self.attach(answer, async_=async_, sdk=sdk)

    def attach(
        self, answer: SandboxAnswer, *, async_: bool = False, sdk: Optional[bool] = None
    ) -> Any:
        """The SDK sandbox for an answer already in hand (no call at all)."""
        if sdk is False:
            return answer
        try:
            from . import _e2b
        except ImportError:
            if sdk:
                raise
            return answer
        if async_:  # its HTTP clients belong to one event loop: never shared
            return _e2b.SpacekeeperAsyncSandbox(answer, self)
        key = (
            answer.sandbox_id,
            answer.envd_url,
            tuple(sorted(answer.headers.items())),
            answer.envd_version,
        )
        with self._sdk_lock:
            base = self._sdk.get(key)
            if base is not None:
                self._sdk.move_to_end(key)
        if base is None:
            base = _e2b.SpacekeeperSandbox(answer, self)
            with self._sdk_lock:
                self._sdk[key] = base
                while len(self._sdk) > _SDK_CACHE:
                    self._sdk.popitem(last=False)
        return base._sk_fork(answer)


class Busy:
    """Heartbeats for one user from a background thread while the block runs.

    :ivar beats: heartbeats sent and answered 204
    :ivar last_error: the last heartbeat's failure, if any (heartbeats go on)
    """

    def __init__(self, client: Client, user_id: str, interval: float) -> None:
        self.client = client
        self.user_id = user_id
        self.interval = max(_MIN_HEARTBEAT_S / 5, float(interval))
        self.beats = 0
        self.last_error: Optional[BaseException] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def _run(self) -> None:
        while True:
            try:
                self.client.activity(self.user_id, timeout=min(10.0, self.interval * 2))
                self.beats += 1
            except Exception as e:  # keep beating: the work is still running
                self.last_error = e
                log.warning("spacekeeper heartbeat for %s failed: %s", self.user_id, e)
            if self._stop.wait(self.interval):
                return

    def start(self) -> "Busy":
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name=f"spacekeeper-busy-{self.user_id}", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stops the heartbeats and waits for the thread (at most one heartbeat's time)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> "Busy":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    async def __aenter__(self) -> "Busy":
        return self.start()

    async def __aexit__(self, *exc: Any) -> None:
        import asyncio

        await asyncio.get_running_loop().run_in_executor(None, self.stop)
