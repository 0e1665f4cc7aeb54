"""Exceptions of the SDK: one base class carrying the protocol's error code."""

from __future__ import annotations

from typing import Any


class ShardError(Exception):
    """A failed command, or a failure of the SDK itself.

    ``code`` is the protocol error code of a failed command (``"NOT_FOUND"``,
    ``"CONFLICT"``, …, an open registry) or one of the SDK's own codes:
    ``"CONNECTION_CLOSED"``, ``"TIMEOUT"``, ``"BINARY_NOT_FOUND"``, ``"HANDSHAKE_FAILED"``.
    ``message`` is the human-readable text; ``data`` the failed response's data, if any.
    """

    def __init__(self, code: str, message: str, data: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data


class ConnectionClosed(ShardError):
    """The connection (daemon socket, WebSocket or agent process) ended."""

    def __init__(self, message: str = "the connection is closed") -> None:
        super().__init__("CONNECTION_CLOSED", message)


class ShardTimeout(ShardError, TimeoutError):
    """A command or a turn did not finish within its timeout."""

    def __init__(self, message: str) -> None:
        super().__init__("TIMEOUT", message)
