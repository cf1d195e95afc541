"""A small thread-safe keep-alive pool over http.client (standard library only)."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import time
import urllib.parse
from typing import Any, Dict, List, Optional, Tuple

# A reused connection the server closed while it sat idle (the connect
# listener closes clients silent for 10 s) fails like this before any answer;
# such a request is sent again once on a fresh connection. Connections idle
# longer than _IDLE_S are not reused at all.
_IDLE_S = 5.0
_STALE = (
    http.client.RemoteDisconnected,
    http.client.BadStatusLine,
    BrokenPipeError,
    ConnectionResetError,
    ConnectionAbortedError,
)


class Response:
    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: Dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        try:
            return json.loads(self.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return None


class Pool:
    """Idle connections to one origin, handed to one request at a time."""

    def __init__(
        self,
        base_url: str,
        *,
        ssl_context: Optional[ssl.SSLContext] = None,
        max_idle: int = 32,
    ) -> None:
        u = urllib.parse.urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"spacekeeper URL must be http(s)://HOST[:PORT], got {base_url!r}")
        self.https = u.scheme == "https"
        self.host = u.hostname
        self.port = u.port or (443 if self.https else 80)
        self.prefix = u.path.rstrip("/")
        self.ssl_context = ssl_context
        self.max_idle = max_idle
        self._idle: List[Tuple[http.client.HTTPConnection, float]] = []
        self._lock = threading.Lock()
        self._closed = False

    def _new(self, timeout: float) -> http.client.HTTPConnection:
        if self.https:
            ctx = self.ssl_context or ssl.create_default_context()
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=ctx)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def _take(self, timeout: float, fresh: bool) -> Tuple[http.client.HTTPConnection, bool]:
        stale = []
        conn = None
        now = time.monotonic()
        with self._lock:
            while self._idle and not fresh:
                c, since = self._idle.pop()
                if now - since < _IDLE_S:
                    conn = c
                    break
                stale.append(c)
        for c in stale:
            c.close()
        if conn is None:
            return self._new(timeout), False
        if conn.sock is not None:
            conn.sock.settimeout(timeout)
        conn.timeout = timeout
        return conn, True

    def _give(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < self.max_idle:
                self._idle.append((conn, time.monotonic()))
                return
        conn.close()

    def request(
        self,
        method: str,
        path: str,
        headers: Dict[str, str],
        timeout: float,
    ) -> Response:
        """Sends one request (no body) and reads the whole answer.

        Raises OSError / http.client.HTTPException when no answer came.
        """
        for attempt in (0, 1):
            conn, reused = self._take(timeout, fresh=attempt > 0)
            try:
                conn.request(method, self.prefix + path, headers=headers)
                r = conn.getresponse()
                body = r.read()
            except _STALE:
                conn.close()
                if reused and attempt == 0:
                    continue
                raise
            except BaseException:
                conn.close()
                raise
            hdrs = {k.lower(): v for k, v in r.getheaders()}
            if r.will_close:
                conn.close()
            else:
                self._give(conn)
            return Response(r.status, hdrs, body)
        raise AssertionError("unreachable")

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for c, _ in idle:
            c.close()


def is_timeout(e: BaseException) -> bool:
    return isinstance(e, (socket.timeout, TimeoutError))
