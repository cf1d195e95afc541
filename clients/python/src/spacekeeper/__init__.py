"""spacekeeper: a user's ready sandbox in one call.

::

    from spacekeeper import Client

    sk = Client("http://127.0.0.1:9091", token_file="/etc/spacekeeper/connect-token")
    sbx = sk.sandbox("alice")            # an e2b.Sandbox, no provider API key needed
    print(sbx.commands.run("echo hello").stdout)
    sbx.files.write("/home/user/notes.txt", "hi")

The core uses the standard library only; ``pip install 'spacekeeper[e2b]'``
adds the e2b SDK, which ``Client.sandbox`` then returns objects of.
"""

from .aio import AsyncClient
from .answer import SandboxAnswer
from .client import DEFAULT_TIMEOUT, Busy, Client
from .errors import (
    BadTimeout,
    BadFresh,
    ConnectionFailed,
    ControlPlaneNotAvailable,
    DataPlaneUnreachable,
    Deleting,
    ForwardFailed,
    MethodNotAllowed,
    ModePaused,
    NotFound,
    NotShardHolder,
    Overloaded,
    PayloadTooLarge,
    QuotaExceeded,
    ReconcilePaused,
    ShardUnassigned,
    ShuttingDown,
    SpacekeeperError,
    Starting,
    StoreUnavailable,
    Timeout,
    TooManyConnects,
    Unauthorized,
    UnknownEndpoint,
)

__version__ = "0.1.0"

__all__ = [
    "AsyncClient",
    "Busy",
    "Client",
    "DEFAULT_TIMEOUT",
    "SandboxAnswer",
    "SpacekeeperError",
    "BadTimeout",
    "BadFresh",
    "ConnectionFailed",
    "ControlPlaneNotAvailable",
    "DataPlaneUnreachable",
    "Deleting",
    "ForwardFailed",
    "MethodNotAllowed",
    "ModePaused",
    "NotFound",
    "NotShardHolder",
    "Overloaded",
    "PayloadTooLarge",
    "QuotaExceeded",
    "ReconcilePaused",
    "ShardUnassigned",
    "ShuttingDown",
    "Starting",
    "StoreUnavailable",
    "Timeout",
    "TooManyConnects",
    "Unauthorized",
    "UnknownEndpoint",
]
