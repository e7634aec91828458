"""A small HTTP/1.1 client over asyncio streams: the benchmark's light request path.

Why not httpx: measured against a loopback server streaming one token per chunk, httpx (h11,
httpcore, anyio) costs the client about 170 us of CPU per streamed chunk; on a 2-core host that
runs the server too, that CPU is taken from the server and every figure is biased against it.
This path reads the socket with asyncio's StreamReader, decodes chunked transfer
encoding and keeps connections alive, and nothing else: plain `http://` or `https://` (TLS by
asyncio), no redirects, no proxies, no compression (it does not ask for any).

What the peer sends is bounded and checked here: the endpoint URL by boundary.endpoint (no
credentials, valid port, IPv6 Host header in brackets), header values sent without CR/LF, a status
line must be HTTP/1.x with a code in 100..599, interim 1xx answers (`100 Continue`) are skipped (at
most MAX_INTERIM_RESPONSES), a line longer than MAX_HEADER_BYTES or a chunk larger than
MAX_CHUNK_BYTES is a ProtocolError (MalformedResponse, never retried), not a ValueError.

Every wait is bounded: the caller wraps a request in one `asyncio.timeout_at` scope and moves its
deadline with `Deadlines` (connect, then first byte, then the whole request), so a server that
trickles keep-alive comments cannot stretch a request past its total deadline.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass

from trnspec_tools.boundary.endpoint import Endpoint, header_value

MAX_HEADER_BYTES = 64 * 1024
MAX_ERROR_BODY = 64 * 1024
#: Largest chunk of a chunked body accepted (a token stream sends a few hundred bytes a chunk).
MAX_CHUNK_BYTES = 16 * 1024 * 1024
#: Interim (1xx) responses skipped before the final one.
MAX_INTERIM_RESPONSES = 8


class ProtocolError(Exception):
    """The peer broke HTTP/1.1 framing, or closed the connection mid-response."""


class MalformedResponse(ProtocolError):
    """The peer answered, but not in HTTP/1.x (never retried: the request may have run)."""


@dataclass(frozen=True)
class Deadlines:
    """Per-request limits, seconds: to open the connection, to the first byte of the response,
    and for the whole request (the first two are also capped by the third)."""

    connect_s: float = 10.0
    first_byte_s: float = 120.0
    total_s: float = 300.0

    @classmethod
    def capped(cls, connect_s: float, first_byte_s: float, total_s: float) -> Deadlines:
        """The three limits, the first two no longer than the whole request's."""
        return cls(min(connect_s, total_s), min(first_byte_s, total_s), total_s)


class _Conn:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def close(self) -> None:
        self.writer.close()


class Response:
    """Status and headers of a response whose body has not been read yet."""

    def __init__(self, pool: ConnectionPool, conn: _Conn, status: int, headers: dict[str, str]):
        self._pool = pool
        self._conn: _Conn | None = conn
        self.status = status
        self.headers = headers
        self._chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        length = headers.get("content-length")
        self._length = int(length) if length and length.isdigit() else None
        self._keep = headers.get("connection", "").lower() != "close"

    async def iter_raw(self) -> AsyncIterator[bytes]:
        """Body bytes as they arrive (chunked transfer encoding decoded). The connection goes
        back to the pool only when the body was read to its end."""
        conn = self._conn
        if conn is None:
            return
        reader = conn.reader
        try:
            if self._chunked:
                while True:
                    line = await _readline(reader)
                    if not line.endswith(b"\n"):
                        raise ProtocolError("connection closed inside a chunked body")
                    try:
                        size = int(line.split(b";", 1)[0], 16)
                    except ValueError:
                        raise ProtocolError(f"bad chunk size line {line[:40]!r}") from None
                    if not 0 <= size <= MAX_CHUNK_BYTES:
                        raise ProtocolError(f"chunk size {size} outside 0..{MAX_CHUNK_BYTES}")
                    if size == 0:
                        # trailers (none expected) until the empty line
                        await _read_headers(reader)
                        break
                    data = await reader.readexactly(size + 2)
                    yield data[:-2]
            elif self._length is not None:
                left = self._length
                while left > 0:
                    data = await reader.read(min(left, 65536))
                    if not data:
                        raise ProtocolError("connection closed before the end of the body")
                    left -= len(data)
                    yield data
            else:
                self._keep = False
                while data := await reader.read(65536):
                    yield data
        except asyncio.IncompleteReadError:
            self._discard()
            raise ProtocolError("connection closed inside a chunk") from None
        except BaseException:
            self._discard()
            raise
        self._conn = None
        self._pool.release(conn, reusable=self._keep)

    async def read(self, limit: int = MAX_ERROR_BODY) -> bytes:
        """The whole body (at most `limit` bytes kept)."""
        out = bytearray()
        async for data in self.iter_raw():
            if len(out) < limit:
                out += data[: limit - len(out)]
        return bytes(out)

    def _discard(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def close(self) -> None:
        """Drop the connection if the body was not read to its end (it cannot be reused)."""
        self._discard()


class ConnectionPool:
    """Keep-alive connections to one origin, reused last-in first-out."""

    def __init__(self, base_url: str, headers: Mapping[str, str] | None = None) -> None:
        self.origin = Endpoint.parse(base_url, "endpoint")
        self._idle: list[_Conn] = []
        self._ssl = ssl.create_default_context() if self.origin.scheme == "https" else None
        extra = "".join(f"{k}: {header_value(k, v)}\r\n" for k, v in (headers or {}).items())
        self._fixed_headers = f"Host: {self.origin.host_header}\r\n{extra}"

    async def _connect(self) -> _Conn:
        reader, writer = await asyncio.open_connection(
            self.origin.host, self.origin.port, ssl=self._ssl, limit=MAX_HEADER_BYTES
        )
        return _Conn(reader, writer)

    def release(self, conn: _Conn, reusable: bool) -> None:
        if reusable and not conn.writer.is_closing():
            self._idle.append(conn)
        else:
            conn.close()

    async def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        *,
        content_type: str = "application/json",
        on_connected: asyncio.Timeout | None = None,
        first_byte_at: float | None = None,
    ) -> Response:
        """Send a request and read the status line and headers.

        `on_connected`/`first_byte_at`: the caller's timeout scope is moved to `first_byte_at`
        once a connection is open. A reused connection the server closed in the meantime is
        replaced by a new one once (nothing reached the server on it)."""
        target = self.origin.base_path + path
        head = f"{method} {target} HTTP/1.1\r\n{self._fixed_headers}"
        if body is not None:
            head += f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
        data = (head + "\r\n").encode("latin-1") + (body or b"")
        while True:
            reused = bool(self._idle)
            conn = self._idle.pop() if reused else await self._connect()
            if on_connected is not None and first_byte_at is not None:
                on_connected.reschedule(first_byte_at)
            try:
                conn.writer.write(data)
                status, headers = await _read_head(conn.reader)
            except MalformedResponse:
                conn.close()
                raise
            except (ProtocolError, ConnectionError, asyncio.IncompleteReadError) as exc:
                conn.close()
                if reused:
                    continue  # a stale keep-alive connection: nothing was processed on it
                raise ProtocolError(f"{type(exc).__name__}: {exc}") from None
            except BaseException:
                conn.close()
                raise
            return Response(self, conn, status, headers)

    async def aclose(self) -> None:
        for conn in self._idle:
            conn.close()
        self._idle.clear()


async def _readline(reader: asyncio.StreamReader) -> bytes:
    """One line, at most MAX_HEADER_BYTES (the reader's limit): a longer one is a ProtocolError,
    not the ValueError asyncio raises."""
    try:
        return await reader.readline()
    except ValueError:  # asyncio.LimitOverrunError, re-raised by readline as ValueError
        raise MalformedResponse(f"a line longer than {MAX_HEADER_BYTES} bytes") from None


def status_code(status_line: bytes) -> int:
    """The status code of an HTTP/1.x status line (100..599), else ProtocolError."""
    parts = status_line.split(None, 2)
    if (
        len(parts) < 2
        or not parts[0].startswith(b"HTTP/1.")
        or len(parts[1]) != 3
        or not parts[1].isdigit()
        or not 100 <= int(parts[1]) <= 599
    ):
        raise MalformedResponse(f"not an HTTP/1.x status line: {status_line[:60]!r}")
    return int(parts[1])


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    """The final response's status and headers; interim 1xx responses (`100 Continue`, `103
    Early Hints`) are skipped, at most MAX_INTERIM_RESPONSES of them."""
    for _ in range(MAX_INTERIM_RESPONSES + 1):
        status_line = await _readline(reader)
        if not status_line:
            raise ProtocolError("connection closed before the status line")
        status = status_code(status_line)
        headers = await _read_headers(reader)
        if not 100 <= status <= 199 or status == 101:
            return status, headers
    raise MalformedResponse(f"more than {MAX_INTERIM_RESPONSES} interim (1xx) responses")


async def _read_headers(reader: asyncio.StreamReader) -> dict[str, str]:
    headers: dict[str, str] = {}
    total = 0
    while True:
        line = await _readline(reader)
        if not line.endswith(b"\n"):
            raise ProtocolError("connection closed inside the response headers")
        total += len(line)
        if total > MAX_HEADER_BYTES:
            raise MalformedResponse("response headers too large")
        if line in (b"\r\n", b"\n"):
            return headers
        name, sep, value = line.decode("latin-1").partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
