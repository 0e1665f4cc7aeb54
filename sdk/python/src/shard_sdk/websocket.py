"""The daemon's browser door from Python: enrollment, tickets and a WebSocket client.

A program authenticates exactly as the web client does (docs/web.md): it redeems the
one-time code ``shard web`` prints (``POST /enroll``) for a session cookie and a session
key, and before each connection trades both (the cookie alone mints nothing) for a
single-use ticket (``POST /bootstrap``) that it
presents in ``Sec-WebSocket-Protocol`` on ``GET /ws``. The HTTP and the WebSocket
(RFC 6455, client side, text frames) are implemented here on asyncio streams, so the SDK
needs nothing beyond the standard library.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import json
import os
import ssl as ssl_module
import struct
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .errors import ConnectionClosed, ShardError, ShardTimeout
from .transport import Transport

SUBPROTOCOL = "shard.v1"
TICKET_PREFIX = "shard.ticket."
SESSION_KEY_HEADER = "X-Shard-Session-Key"
MAX_MESSAGE = 64 * 1024 * 1024
_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_COOKIE_NAMES = ("shard_session", "__Host-shard_session")


@dataclasses.dataclass
class WebCredentials:
    """An enrolled session: the daemon's URL, the session cookie and the session key (both
    secrets: store them like a password; ``save`` writes them owner-only)."""

    url: str
    """The daemon's web URL, e.g. ``http://127.0.0.1:7420``."""
    cookie: str
    """``name=value`` of the session cookie."""
    principal_id: str
    """The id ``shard web --list`` shows and ``--revoke`` takes."""
    session_key: str = ""
    """The key ``/bootstrap`` wants beside the cookie (``X-Shard-Session-Key``). Empty in
    credentials saved before keys existed: those get no ticket; enroll again."""

    def __repr__(self) -> str:  # never print the cookie
        return f"WebCredentials(url={self.url!r}, principal_id={self.principal_id!r})"

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the credentials to ``path`` (mode 0600)."""
        data = json.dumps(dataclasses.asdict(self)).encode()
        fd = os.open(os.fspath(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, data)
        finally:
            os.close(fd)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> WebCredentials:
        """Reads what ``save`` wrote."""
        d = json.loads(Path(path).read_text(encoding="utf-8"))
        return cls(
            url=d["url"], cookie=d["cookie"], principal_id=d["principal_id"],
            session_key=d.get("session_key", ""),
        )


def _origin_of(url: str) -> str:
    u = urlsplit(url)
    return f"{u.scheme}://{u.netloc}"


def _ssl_for(scheme: str, ssl: Any) -> Any:
    if scheme in ("https", "wss"):
        return ssl if ssl is not None else ssl_module.create_default_context()
    return None


async def _open(url: str, ssl: Any, timeout: float | None) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    u = urlsplit(url)
    if u.scheme not in ("http", "https"):
        raise ShardError("INVALID_REQUEST", f"{url}: the daemon's web URL is http:// or https://")
    port = u.port or (443 if u.scheme == "https" else 80)
    try:
        return await asyncio.wait_for(
            asyncio.open_connection(u.hostname, port, ssl=_ssl_for(u.scheme, ssl), limit=1 << 20),
            timeout,
        )
    except asyncio.TimeoutError:
        raise ShardTimeout(f"connecting to {u.netloc} took longer than {timeout} s") from None
    except OSError as e:
        raise ConnectionClosed(f"connecting to {u.netloc} failed: {e}") from e


def _request_head(method: str, url: str, headers: dict[str, str]) -> bytes:
    u = urlsplit(url)
    path = u.path or "/"
    lines = [f"{method} {path} HTTP/1.1", f"Host: {u.netloc}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, list[tuple[str, str]]]:
    raw = await reader.readuntil(b"\r\n\r\n")
    lines = raw.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        raise ShardError("HANDSHAKE_FAILED", f"not an HTTP response: {lines[0]!r}")
    headers = []
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers.append((k.strip().lower(), v.strip()))
    return int(parts[1]), headers


async def _http_json(
    method: str, url: str, body: Any, headers: dict[str, str], ssl: Any, timeout: float | None
) -> tuple[int, list[tuple[str, str]], Any]:
    reader, writer = await _open(url, ssl, timeout)
    try:
        payload = json.dumps(body).encode() if body is not None else b""
        h = {"Content-Type": "application/json", "Content-Length": str(len(payload)), "Connection": "close", **headers}
        writer.write(_request_head(method, url, h) + payload)
        await writer.drain()
        status, rh = await asyncio.wait_for(_read_head(reader), timeout)
        length = next((int(v) for k, v in rh if k == "content-length"), None)
        data = await asyncio.wait_for(
            reader.readexactly(length) if length is not None else reader.read(), timeout
        )
    except asyncio.TimeoutError:
        raise ShardTimeout(f"{method} {url} got no answer within {timeout} s") from None
    except (asyncio.IncompleteReadError, OSError) as e:
        raise ConnectionClosed(f"{method} {url} failed: {e}") from e
    finally:
        writer.close()
    try:
        parsed = json.loads(data) if data else None
    except ValueError:
        parsed = data.decode("utf-8", "replace")
    return status, rh, parsed


def _refusal(what: str, status: int, body: Any) -> ShardError:
    detail = body.get("error") if isinstance(body, dict) else body
    code = {401: "PERMISSION_DENIED", 403: "PERMISSION_DENIED", 429: "PERMISSION_DENIED"}.get(status, "HANDSHAKE_FAILED")
    return ShardError(code, f"{what}: HTTP {status}" + (f" ({detail})" if detail else ""))


async def enroll(
    enroll_url: str, *, origin: str | None = None, ssl: Any = None, timeout: float | None = 30.0
) -> WebCredentials:
    """Redeems the one-time URL ``shard web`` prints (``http://HOST:PORT/enroll#CODE``)
    for a session; returns its credentials."""
    u = urlsplit(enroll_url)
    if not u.fragment:
        raise ShardError("INVALID_REQUEST", "the enrollment URL has no #code")
    base = f"{u.scheme}://{u.netloc}"
    status, headers, body = await _http_json(
        "POST", base + "/enroll", {"code": u.fragment}, {"Origin": origin or base}, ssl, timeout
    )
    if status != 200:
        raise _refusal("enrollment refused", status, body)
    cookie = None
    for k, v in headers:
        if k == "set-cookie":
            pair = v.split(";", 1)[0].strip()
            if pair.split("=", 1)[0] in _COOKIE_NAMES:
                cookie = pair
    if cookie is None or not isinstance(body, dict) or not isinstance(body.get("session_key"), str):
        raise ShardError("HANDSHAKE_FAILED", "enrollment answered without a session cookie and key")
    return WebCredentials(
        url=base, cookie=cookie, principal_id=str(body.get("principal_id")),
        session_key=body["session_key"],
    )


async def bootstrap(
    url: str, credentials: WebCredentials, *, origin: str | None = None, ssl: Any = None, timeout: float | None = 30.0
) -> str:
    """``POST /bootstrap``: a fresh single-use ticket (valid 30 s) for one WebSocket."""
    base = _origin_of(url)
    headers = {"Origin": origin or base, "Cookie": credentials.cookie}
    if credentials.session_key:
        headers[SESSION_KEY_HEADER] = credentials.session_key
    status, _, body = await _http_json("POST", base + "/bootstrap", None, headers, ssl, timeout)
    if status != 200 or not isinstance(body, dict) or "ticket" not in body:
        raise _refusal("no ticket", status, body)
    return str(body["ticket"])


def _mask(data: bytes, key: bytes) -> bytes:
    n = len(data)
    if not n:
        return data
    k = int.from_bytes((key * (n // 4 + 1))[:n], "little")
    return (int.from_bytes(data, "little") ^ k).to_bytes(n, "little")


def encode_frame(opcode: int, payload: bytes) -> bytes:
    """One final, masked client frame."""
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
    elif n < 1 << 16:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
    key = os.urandom(4)
    return head + key + _mask(payload, key)


class WebSocketTransport(Transport):
    """The protocol over a WebSocket: one JSON message per text frame each way."""

    kind = "websocket"

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._closed = False
        self.close_code: int | None = None
        """The close code the server sent, if it closed the socket."""

    async def _frame(self) -> tuple[bool, int, bytes]:
        r = self._reader
        b0, b1 = await r.readexactly(2)
        n = b1 & 0x7F
        if n == 126:
            (n,) = struct.unpack("!H", await r.readexactly(2))
        elif n == 127:
            (n,) = struct.unpack("!Q", await r.readexactly(8))
        if n > MAX_MESSAGE:
            raise ConnectionClosed(f"a WebSocket frame of {n} bytes is over the limit")
        key = await r.readexactly(4) if b1 & 0x80 else None
        payload = await r.readexactly(n) if n else b""
        if key:
            payload = _mask(payload, key)
        return bool(b0 & 0x80), b0 & 0x0F, payload

    async def read(self) -> bytes:
        parts: list[bytes] = []
        size = 0
        try:
            while True:
                fin, op, payload = await self._frame()
                if op == 0x9:  # ping
                    self._writer.write(encode_frame(0xA, payload))
                    continue
                if op == 0xA:
                    continue
                if op == 0x8:
                    if len(payload) >= 2:
                        (self.close_code,) = struct.unpack("!H", payload[:2])
                    if not self._closed:
                        self._writer.write(encode_frame(0x8, payload[:2]))
                    return b""
                if op == 0x2:
                    raise ConnectionClosed("the server sent a binary frame")
                if op not in (0x0, 0x1):
                    continue
                parts.append(payload)
                size += len(payload)
                if size > MAX_MESSAGE:
                    raise ConnectionClosed("a WebSocket message is over the 64 MiB limit")
                if fin:
                    parts.append(b"\n")
                    return b"".join(parts)
        except asyncio.IncompleteReadError:
            return b""

    async def write(self, data: bytes) -> None:
        # One message per frame: the connection writes whole lines, one message each.
        for line in data.split(b"\n"):
            if line:
                self._writer.write(encode_frame(0x1, line))
        await self._writer.drain()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._writer.write(encode_frame(0x8, struct.pack("!H", 1000)))
            await asyncio.wait_for(self._writer.drain(), 2)
        except (OSError, asyncio.TimeoutError, RuntimeError):
            pass
        self._writer.close()
        try:
            await asyncio.wait_for(self._writer.wait_closed(), 2)
        except (OSError, asyncio.TimeoutError, RuntimeError):
            pass

    def diagnostics(self) -> str:
        return f"WebSocket closed with code {self.close_code}" if self.close_code else ""


async def open_websocket(
    url: str,
    credentials: WebCredentials,
    *,
    origin: str | None = None,
    ssl: Any = None,
    timeout: float | None = 30.0,
    ticket: str | None = None,
) -> WebSocketTransport:
    """A ticket from ``/bootstrap`` (unless given), then the upgrade on ``/ws``."""
    base = _origin_of(url)
    origin = origin or base
    if ticket is None:
        ticket = await bootstrap(base, credentials, origin=origin, ssl=ssl, timeout=timeout)
    reader, writer = await _open(base + "/ws", ssl, timeout)
    key = base64.b64encode(os.urandom(16)).decode()
    head = _request_head(
        "GET",
        base + "/ws",
        {
            "Upgrade": "websocket",
            "Connection": "Upgrade",
            "Sec-WebSocket-Key": key,
            "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Protocol": f"{SUBPROTOCOL}, {TICKET_PREFIX}{ticket}",
            "Origin": origin,
        },
    )
    try:
        writer.write(head)
        await writer.drain()
        status, headers = await asyncio.wait_for(_read_head(reader), timeout)
    except asyncio.TimeoutError:
        writer.close()
        raise ShardTimeout(f"the WebSocket upgrade got no answer within {timeout} s") from None
    except (asyncio.IncompleteReadError, OSError) as e:
        writer.close()
        raise ConnectionClosed(f"the WebSocket upgrade failed: {e}") from e
    h = dict(headers)
    if status != 101:
        body = b""
        try:
            body = await asyncio.wait_for(reader.read(4096), 2)
        except (asyncio.TimeoutError, OSError):
            pass
        writer.close()
        try:
            detail = json.loads(body)
        except ValueError:
            detail = body.decode("utf-8", "replace").strip() or None
        raise _refusal("WebSocket refused", status, detail)
    accept = base64.b64encode(hashlib.sha1(key.encode() + _GUID).digest()).decode()
    if h.get("sec-websocket-accept") != accept or h.get("sec-websocket-protocol") != SUBPROTOCOL:
        writer.close()
        raise ShardError("HANDSHAKE_FAILED", "the server's WebSocket handshake is not RFC 6455 / shard.v1")
    return WebSocketTransport(reader, writer)
