"""Shard from any program: drive Shard coding agents from Python.

``query()`` runs one prompt on a private ``shard agent``; ``ShardClient`` talks to the
daemon (unix socket or WebSocket) or to a direct agent; ``shard_sdk.sync`` is the blocking
façade for scripts; ``shard_sdk.wire`` holds the protocol's types, generated from its
JSON Schema.
"""

from ._base import Event, WireObject
from .client import ShardClient, shard_home
from .errors import ConnectionClosed, ShardError, ShardTimeout
from .query import query
from .session import (
    AgentSession,
    CallbackError,
    HistoryPage,
    PermissionCallback,
    TurnResult,
    UiCallback,
    deny_choice,
)
from .websocket import WebCredentials, enroll
from .wire import PROTOCOL_VERSION, PermissionRequest, UiRequest

__version__ = "0.1.0"

__all__ = [
    "AgentSession",
    "CallbackError",
    "ConnectionClosed",
    "Event",
    "HistoryPage",
    "PROTOCOL_VERSION",
    "PermissionCallback",
    "PermissionRequest",
    "ShardClient",
    "ShardError",
    "ShardTimeout",
    "TurnResult",
    "UiCallback",
    "UiRequest",
    "WebCredentials",
    "WireObject",
    "deny_choice",
    "enroll",
    "query",
    "shard_home",
]
