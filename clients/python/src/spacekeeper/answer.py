"""The connect API's 200 answer: what an application needs to reach its sandbox."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional

__all__ = ["SandboxAnswer"]


def _time(v: Any) -> Optional[_dt.datetime]:
    if not isinstance(v, str) or not v:
        return None
    try:
        return _dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        return None


def _str(v: Any) -> Optional[str]:
    return v if isinstance(v, str) and v else None


@dataclass(frozen=True)
class SandboxAnswer:
    """A user's ready sandbox, as the connect API answered it.

    This is also what :meth:`spacekeeper.Client.sandbox` returns when the e2b SDK
    is not installed (or with ``sdk=False``): everything needed to drive envd
    with any HTTP client. :attr:`envd_access_token` is a secret: it is left out
    of ``repr()``; do not log :attr:`headers` or :attr:`raw`.
    """

    name: str
    """The UserSpace's name."""
    user_id: str
    sandbox_id: str
    state: str
    """The space's phase, ``Running`` when handed out."""
    path: str
    """How the controller answered: ``fast`` (from memory, no provider call),
    ``reconcile``, ``wake``, ``create``, ``replace``, ..."""
    envd_url: str
    """Where envd answers (``sandbox_url`` of the e2b SDK)."""
    envd_headers: Dict[str, str] = field(default_factory=dict)
    """Routing headers the provider needs (``E2b-Sandbox-Id``, ...), maybe empty."""
    envd_version: Optional[str] = None
    envd_access_token: Optional[str] = field(default=None, repr=False)
    """envd's ``X-Access-Token`` of a secure sandbox (a secret), else ``None``."""
    provider: Optional[str] = None
    deadline: Optional[_dt.datetime] = None
    """The provider timeout spacekeeper set (``None`` for always-on spaces)."""
    previous_sandbox_id: Optional[str] = None
    """Set after a replacement: the files of that sandbox were not carried over."""
    replaced_at: Optional[_dt.datetime] = None
    workspace_lost: bool = False
    """True while the space's files are known lost (a resume without them, or a
    sandbox gone while asleep), until the loss is acknowledged."""
    ready: bool = True
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The whole JSON answer (holds the token, if any)."""

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "SandboxAnswer":
        """Builds the answer from the decoded JSON object (unknown fields are kept in raw)."""
        headers = obj.get("envdHeaders")
        return cls(
            name=str(obj.get("name", "")),
            user_id=str(obj.get("userID", "")),
            sandbox_id=str(obj.get("sandboxID", "")),
            state=str(obj.get("state", "")),
            path=str(obj.get("path", "")),
            envd_url=str(obj.get("envdURL", "")),
            envd_headers={str(k): str(v) for k, v in headers.items()}
            if isinstance(headers, dict)
            else {},
            envd_version=_str(obj.get("envdVersion")),
            envd_access_token=_str(obj.get("envdAccessToken")),
            provider=_str(obj.get("provider")),
            deadline=_time(obj.get("deadline")),
            previous_sandbox_id=_str(obj.get("previousSandboxID")),
            replaced_at=_time(obj.get("replacedAt")),
            workspace_lost=obj.get("workspaceLost") is True,
            ready=bool(obj.get("ready", True)),
            raw=dict(obj),
        )

    @property
    def headers(self) -> Dict[str, str]:
        """Every header an envd request needs: the routing headers, plus
        ``X-Access-Token`` for a secure sandbox."""
        h = dict(self.envd_headers)
        if self.envd_access_token:
            h["X-Access-Token"] = self.envd_access_token
        return h

    @property
    def replaced(self) -> bool:
        """True when this answer handed out a replacement (files not carried over)."""
        return self.previous_sandbox_id is not None
