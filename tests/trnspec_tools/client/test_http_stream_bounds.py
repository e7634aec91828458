"""client.http_stream at its bounds (issue 24): interim 1xx answers skipped (a bounded number),
an oversized header line or chunk refused as a ProtocolError, any status line either a code in
100..599 or a MalformedResponse, and the Host header of an IPv6 endpoint in brackets."""

from __future__ import annotations

import asyncio
import socket

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_http_stream import read_request, with_server

from trnspec_tools.client.http_stream import (
    MAX_HEADER_BYTES,
    MAX_INTERIM_RESPONSES,
    ConnectionPool,
    MalformedResponse,
    ProtocolError,
    status_code,
)

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


@SETTINGS
@given(
    st.one_of(
        st.binary(max_size=40),
        st.builds(
            lambda v, c, r: b"HTTP/" + v + b" " + c + b" " + r + b"\r\n",
            st.sampled_from([b"1.1", b"1.0", b"2", b"0.9"]),
            st.one_of(st.integers(-5, 1200).map(lambda n: str(n).encode()), st.binary(max_size=4)),
            st.binary(max_size=10),
        ),
    )
)
def test_a_status_line_is_a_code_in_100_to_599_or_malformed(line):
    try:
        code = status_code(line)
    except MalformedResponse:
        return
    assert 100 <= code <= 599 and line.startswith(b"HTTP/1.")


def _serve(answer: bytes):
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer)
        await writer.drain()
        writer.close()

    return handler


async def _get(url: str) -> tuple[int, bytes]:
    pool = ConnectionPool(url)
    try:
        resp = await pool.request("GET", "/x")
        return resp.status, await resp.read()
    finally:
        await pool.aclose()


def _run(answer: bytes) -> tuple[int, bytes]:
    return asyncio.run(with_server(_serve(answer), _get))  # type: ignore[return-value]


def test_interim_100_continue_and_103_early_hints_are_skipped():
    continue_ = b"HTTP/1.1 100 Continue\r\n\r\n"
    hints = b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
    assert _run(continue_ + hints + OK) == (200, b"ok")


def test_endless_interim_answers_are_a_protocol_error():
    with pytest.raises(MalformedResponse, match="interim"):
        _run(b"HTTP/1.1 100 Continue\r\n\r\n" * (MAX_INTERIM_RESPONSES + 1) + OK)


def test_a_header_line_over_64_kib_is_a_protocol_error_not_a_value_error():
    huge = b"X-Padding: " + b"x" * (MAX_HEADER_BYTES + 10) + b"\r\n"
    with pytest.raises(ProtocolError, match="longer than"):
        _run(b"HTTP/1.1 200 OK\r\n" + huge + b"Content-Length: 2\r\n\r\nok")


def test_an_absurd_chunk_size_is_a_protocol_error():
    answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffff\r\n"
    with pytest.raises(ProtocolError, match="chunk size"):
        _run(answer)


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback on this host")
def test_an_ipv6_endpoint_sends_a_bracketed_host_header():
    seen: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await read_request(reader))
        writer.write(OK)
        await writer.drain()
        writer.close()

    async def main() -> tuple[int, bytes]:
        server = await asyncio.start_server(handler, "::1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            return await _get(f"http://[::1]:{port}")
        finally:
            server.close()

    assert asyncio.run(main()) == (200, b"ok")
    assert b"\r\nHost: [::1]:" in seen[0]
