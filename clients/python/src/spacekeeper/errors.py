"""The connect API's errors as exceptions.

Every error answer of the connect API is a JSON object ``{"reason", "message",
...}`` with an HTTP status; each ``reason`` of the error enum of
``docs/connect-api.openapi.yaml`` has its own exception class here, all
derived from :class:`SpacekeeperError`. A reason this version does not know is
raised as :class:`SpacekeeperError` itself, so ``except SpacekeeperError``
catches everything the connect API can answer.

Retry policy: the reasons of :data:`RETRIABLE_REASONS` (``TooManyConnects``,
``QuotaExceeded``, ``Starting``, ``Overloaded``, ``NotShardHolder``,
``ShardUnassigned``, ``ForwardFailed``) are tried again after their
``Retry-After`` (0.5 s without one) as long as the call's timeout leaves room
for the wait; the last answer is raised when it does not. Every other reason is
raised at once: waiting would not change it.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Type

__all__ = [
    "SpacekeeperError",
    "ConnectionFailed",
    "BadTimeout",
    "BadFresh",
    "Unauthorized",
    "NotFound",
    "UnknownEndpoint",
    "MethodNotAllowed",
    "PayloadTooLarge",
    "TooManyConnects",
    "QuotaExceeded",
    "ModePaused",
    "Deleting",
    "ReconcilePaused",
    "DataPlaneUnreachable",
    "Timeout",
    "ShuttingDown",
    "Overloaded",
    "Starting",
    "StoreUnavailable",
    "NotShardHolder",
    "ShardUnassigned",
    "ForwardFailed",
    "ControlPlaneNotAvailable",
    "RETRIABLE_REASONS",
    "error_for",
]


class SpacekeeperError(Exception):
    """An error answer of the connect API (or a failure to get one).

    :ivar status: the HTTP status (0 when no answer came)
    :ivar reason: the answer's ``reason`` (``None`` when no answer came)
    :ivar message: the answer's ``message``
    :ivar retry_after: the ``Retry-After`` header in seconds, if any
    :ivar body: the whole JSON answer (never holds a secret: error answers carry none)
    """

    def __init__(
        self,
        message: str,
        *,
        status: int = 0,
        reason: Optional[str] = None,
        retry_after: Optional[float] = None,
        body: Optional[Mapping[str, Any]] = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message
        self.retry_after = retry_after
        self.body: Dict[str, Any] = dict(body or {})

    def __str__(self) -> str:
        if self.reason:
            return f"{self.status} {self.reason}: {self.message}"
        return self.message


class ConnectionFailed(SpacekeeperError):
    """spacekeeper could not be reached (refused, reset, no answer in time)."""


class BadTimeout(SpacekeeperError):
    """400: the ``timeout`` query parameter is not a positive duration."""


class BadFresh(SpacekeeperError):
    """400: the ``fresh`` query parameter is not 1, true, 0 or false."""


class Unauthorized(SpacekeeperError):
    """401: no bearer token (message ``no token: ...``) or one that matches none
    of the controller's (``token not accepted: ...``). Not retried."""


class NotFound(SpacekeeperError):
    """404: no UserSpace has this user ID or name (or the caller's tenant token
    does not reach it). Not retried."""


class UnknownEndpoint(SpacekeeperError):
    """404: no route of the connect API has this path: the client's URL is not
    the connect listener (``controller.connectListen``). Not retried."""


class MethodNotAllowed(SpacekeeperError):
    """405: the route does not take this method."""


class PayloadTooLarge(SpacekeeperError):
    """413: the connect API takes no request body."""


class TooManyConnects(SpacekeeperError):
    """429: too many connects in progress at the controller, or waiting for a
    slot at the space's provider; retried after ``Retry-After`` within the timeout."""


class QuotaExceeded(SpacekeeperError):
    """429: waking the space would exceed its SpaceQuota's ``hard.running`` and
    nothing in the tenant can be paused to make room (the message names the
    quota); retried after ``Retry-After`` within the timeout."""


class ModePaused(SpacekeeperError):
    """503: the space's ``spec.mode`` is ``Paused``: no sandbox is handed out."""


class Deleting(SpacekeeperError):
    """503: the UserSpace is being deleted."""


class ReconcilePaused(SpacekeeperError):
    """503: the ``spacekeeper.dev/paused`` annotation holds the space."""


class DataPlaneUnreachable(SpacekeeperError):
    """503: the sandbox's data plane does not answer and ``remediation`` is ``Report``.

    Raised at once (never retried): waiting would not help.
    ``body["driftAgeSeconds"]`` says for how long it has been unreachable.
    """


class Timeout(SpacekeeperError, TimeoutError):
    """504 (or the client's own timeout): the sandbox was not ready in time."""


class ShuttingDown(SpacekeeperError):
    """503: the controller is stopping."""


class Overloaded(SpacekeeperError):
    """503: the controller could not start a thread for the connect; retried."""


class Starting(SpacekeeperError):
    """503: the controller has not finished starting; retried."""


class StoreUnavailable(SpacekeeperError):
    """503: the controller cannot read the UserSpace from its store."""


class NotShardHolder(SpacekeeperError):
    """503: the replica asked no longer holds the user's shard; retried."""


class ShardUnassigned(SpacekeeperError):
    """503: no replica holds the user's shard right now; retried."""


class ForwardFailed(SpacekeeperError):
    """502/504: the replica holding the user's shard could not be reached; retried."""


class ControlPlaneNotAvailable(SpacekeeperError):
    """A provider control-plane call on a sandbox handed out by spacekeeper.

    spacekeeper owns the sandbox's lifecycle (its timeout, pause, kill): the
    application holds no provider API key, and a ``set_timeout`` would override
    ``lifecycle.idleTimeout``. Use ``client.busy(user)`` to keep a space awake.
    """


_BY_REASON: Dict[str, Type[SpacekeeperError]] = {
    cls.__name__: cls
    for cls in (
        BadTimeout,
        BadFresh,
        Unauthorized,
        NotFound,
        UnknownEndpoint,
        MethodNotAllowed,
        PayloadTooLarge,
        TooManyConnects,
        QuotaExceeded,
        ModePaused,
        Deleting,
        ReconcilePaused,
        DataPlaneUnreachable,
        Timeout,
        ShuttingDown,
        Overloaded,
        Starting,
        StoreUnavailable,
        NotShardHolder,
        ShardUnassigned,
        ForwardFailed,
    )
}

# Reasons worth another try after Retry-After, within the caller's timeout.
# DataPlaneUnreachable carries a Retry-After too (the resync period) but is
# raised at once: the caller should not wait out its timeout for a known failure.
RETRIABLE_REASONS = frozenset(
    {
        "TooManyConnects",
        "QuotaExceeded",
        "Starting",
        "Overloaded",
        "NotShardHolder",
        "ShardUnassigned",
        "ForwardFailed",
    }
)


def error_for(
    status: int,
    body: Optional[Mapping[str, Any]],
    retry_after: Optional[float] = None,
) -> SpacekeeperError:
    """The exception for an error answer: the class of its ``reason``, else the base."""
    body = body or {}
    reason = body.get("reason") if isinstance(body.get("reason"), str) else None
    message = body.get("message") if isinstance(body.get("message"), str) else None
    cls = _BY_REASON.get(reason or "", SpacekeeperError)
    if reason is None and status == 401:
        cls, reason = Unauthorized, "Unauthorized"
    return cls(
        message or f"HTTP {status}",
        status=status,
        reason=reason,
        retry_after=retry_after,
        body=body,
    )
