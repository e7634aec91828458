"""client.http_stream: the light HTTP/1.1 path, against raw asyncio servers on loopback that
write the bytes of a response in awkward pieces."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from trnspec_tools.client.http_stream import ConnectionPool, ProtocolError

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def with_server(handler: Handler, body: Callable[[str], Awaitable[object]]) -> object:
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        return await body(f"http://127.0.0.1:{port}")
    finally:
        server.close()


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length")
        ),
        0,
    )
    return head + await reader.readexactly(length)


CHUNKED = (
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\n\r\n"
)


def test_a_chunked_body_split_at_every_byte_is_decoded_and_the_connection_reused():
    connections = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        while True:
            try:
                await read_request(reader)
            except asyncio.IncompleteReadError:
                return
            for i in range(len(CHUNKED)):  # one byte per write
                writer.write(CHUNKED[i : i + 1])
                await writer.drain()

    async def body(url: str) -> list[bytes]:
        pool = ConnectionPool(url, {"Authorization": "Bearer k"})
        got = []
        for _ in range(2):
            resp = await pool.request("POST", "/v1/completions", b"{}")
            assert resp.status == 200
            got.append(await resp.read())
        await pool.aclose()
        return got

    assert asyncio.run(with_server(handler, body)) == [b"hello, world"] * 2
    assert connections == 1  # kept alive


def test_a_connection_closed_inside_a_chunk_is_a_protocol_error():
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(CHUNKED[:60])
        await writer.drain()
        writer.close()

    async def body(url: str) -> None:
        pool = ConnectionPool(url)
        resp = await pool.request("GET", "/x")
        with pytest.raises(ProtocolError):
            await resp.read()

    asyncio.run(with_server(handler, body))


def test_a_keep_alive_connection_the_server_dropped_is_replaced_once():
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()  # without "Connection: close": the client keeps a dead connection

    async def body(url: str) -> list[bytes]:
        pool = ConnectionPool(url)
        out = []
        for _ in range(2):
            resp = await pool.request("GET", "/x")
            out.append(await resp.read())
            await asyncio.sleep(0.05)
        return out

    assert asyncio.run(with_server(handler, body)) == [b"ok", b"ok"]


def test_the_request_carries_host_and_the_configured_headers():
    seen: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await read_request(reader))
        writer.write(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()

    async def body(url: str) -> int:
        resp = await ConnectionPool(url + "/prefix", {"Authorization": "Bearer k"}).request(
            "POST", "/v1/completions", b'{"a": 1}'
        )
        return resp.status

    assert asyncio.run(with_server(handler, body)) == 204
    head = seen[0]
    assert head.startswith(b"POST /prefix/v1/completions HTTP/1.1\r\n")
    assert b"\r\nAuthorization: Bearer k\r\n" in head and b"\r\nHost: 127.0.0.1:" in head
    assert head.endswith(b'\r\n\r\n{"a": 1}')
