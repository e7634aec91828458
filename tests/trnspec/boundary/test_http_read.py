"""The bounded network reader (trnspec.boundary.http_read): an answer is whole within its TOTAL
bound or refused in one line; a per-read timeout alone never ends a server that trickles.

Against a local socket server that answers, never answers, or sends one byte at a time (at
most `TRICKLE_FOR_S`, then it closes: a test whose bound is gone fails on the close's outcome
instead of hanging). Tests assert outcomes only (the kind of failure, the message), never an
elapsed time; the read loop's own deadline check runs on a fake clock.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.http_read import (
    BodyLimit,
    Bounds,
    CallTimedOut,
    ReadFailed,
    base_url,
    get,
    host_problem,
    within,
)

#: How long a trickling server goes on before it closes the connection.
TRICKLE_FOR_S = 3.0
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
#: A bound far below TRICKLE_FOR_S (the outcome, not the time, is asserted).
TINY = Bounds(total_s=0.3, max_bytes=1024, connect_s=0.3)
#: A bound no answer of a local server comes near, for outcomes other than a timeout.
AMPLE = Bounds(total_s=30.0, max_bytes=1024, connect_s=30.0)


def _answer(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


def _trickle(conn: socket.socket, data: bytes, stop: threading.Event) -> None:
    end = time.monotonic() + TRICKLE_FOR_S
    for i in range(len(data) * 1000):
        if stop.is_set() or time.monotonic() > end:
            return
        conn.sendall(data[i % len(data) : i % len(data) + 1])
        stop.wait(0.01)


Behaviour = Callable[[socket.socket, threading.Event], None]

BEHAVIOURS: dict[str, Behaviour] = {
    "answers": lambda c, stop: c.sendall(_answer(b'{"ok": true}')),
    "never answers": lambda c, stop: stop.wait(TRICKLE_FOR_S),
    "trickles its header": lambda c, stop: _trickle(c, HEAD[:-4] + b"X-Pad: " + b"a" * 60, stop),
    "trickles its body": lambda c, stop: (c.sendall(HEAD), _trickle(c, b" ", stop)),
    "answers too much": lambda c, stop: c.sendall(_answer(b" " * 4096)),
}


@pytest.fixture
def server() -> Iterator[Callable[[str], str]]:
    """`server(behaviour)` -> the base URL of a local server that behaves so."""
    stop = threading.Event()
    listeners: list[socket.socket] = []

    def start(behaviour: str) -> str:
        listener = socket.create_server(("127.0.0.1", 0))
        listeners.append(listener)

        def serve() -> None:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                with contextlib.suppress(OSError):  # the client gave up and closed
                    BEHAVIOURS[behaviour](conn, stop)

        threading.Thread(target=serve, daemon=True).start()
        return f"http://127.0.0.1:{listener.getsockname()[1]}"

    yield start
    stop.set()
    for listener in listeners:
        listener.close()


def test_a_whole_answer_comes_back_with_its_status_and_body(
    server: Callable[[str], str],
) -> None:
    answer = get(server("answers") + "/api", AMPLE)
    assert (answer.status, answer.body) == (200, b'{"ok": true}')


@pytest.mark.parametrize("behaviour", ["never answers", "trickles its header", "trickles its body"])
def test_a_server_that_answers_too_slowly_is_cut_off_at_the_total_bound(
    server: Callable[[str], str], behaviour: str
) -> None:
    """A per-read timeout never fires on one byte every 10 ms: only the total bound ends it
    (without it, the trickle ends on the server's close and gives another outcome)."""
    with pytest.raises(ReadFailed) as err:
        get(server(behaviour), TINY)
    assert err.value.kind == "timeout"
    assert str(err.value).startswith("no whole answer within 0.3 s")


def test_an_answer_over_the_byte_bound_is_refused(server: Callable[[str], str]) -> None:
    with pytest.raises(ReadFailed) as err:
        get(server("answers too much"), AMPLE)
    assert (err.value.kind, str(err.value)) == ("too_large", "answered more than 1024 bytes")


def test_nothing_listening_is_unreachable_in_one_line() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
    with pytest.raises(ReadFailed) as err:
        get(f"http://127.0.0.1:{port}", AMPLE)
    assert err.value.kind == "unreachable" and "\n" not in str(err.value)


def test_the_read_loop_checks_the_deadline_on_each_chunk_by_its_clock() -> None:
    """The loop's own check, on a fake clock: a chunk that arrives at the bound is refused."""
    now = [100.0]
    limit = BodyLimit(Bounds(total_s=5.0, max_bytes=100), started=100.0, clock=lambda: now[0])
    limit.add(b"ab")
    now[0] = 104.9
    limit.add(b"cd")
    now[0] = 105.0
    with pytest.raises(ReadFailed) as err:
        limit.add(b"ef")
    assert err.value.kind == "timeout" and "within 5 s" in str(err.value)
    assert limit.body() == b"abcd"


def test_the_read_loop_counts_bytes_across_chunks() -> None:
    limit = BodyLimit(Bounds(total_s=5.0, max_bytes=4), started=0.0, clock=lambda: 0.0)
    limit.add(b"abcd")
    with pytest.raises(ReadFailed) as err:
        limit.add(b"e")
    assert err.value.kind == "too_large"


@pytest.mark.parametrize(
    "host", ["a..b", "a" * 64 + ".example.com", ".example.com", "", "x." * 127 + "yz"]
)
def test_a_host_dns_cannot_look_up_is_named(host: str) -> None:
    assert host_problem(host) is not None


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "::1", "example.com", "example.com.", "a" * 63 + ".com", "bücher.de"]
)
def test_a_host_dns_can_look_up_passes(host: str) -> None:
    assert host_problem(host) is None


def test_get_refuses_a_bad_host_before_connecting() -> None:
    with pytest.raises(ReadFailed) as err:
        get("http://a..b:9090/api", AMPLE)
    assert err.value.kind == "unreachable" and "'a..b'" in str(err.value)


@pytest.mark.parametrize(
    ("url", "needle"),
    [
        ("http://[::1", "not a valid URL (Invalid IPv6 URL)"),
        ("http://host:99999", "not a valid URL"),
        ("ftp://host", "give an http:// or https:// URL"),
        ("http://host:9090/?q=1", "no query"),
        ("http://a..b:9090", "not a name DNS can look up"),
        ("http://" + "a" * 64 + ".com", "not a name DNS can look up"),
        ("http://host:0", "1..65535"),
        ("http://host /x", "without spaces"),
    ],
)
def test_a_bad_base_url_is_one_line_naming_the_field(url: str, needle: str) -> None:
    with pytest.raises(BoundaryError) as err:
        base_url("--acceptance-from", url)
    message = str(err.value)
    assert message.startswith("--acceptance-from=") and needle in message
    assert "\n" not in message


def test_a_url_with_credentials_is_refused_without_showing_them() -> None:
    with pytest.raises(BoundaryError) as err:
        base_url("--acceptance-from", "http://user:SECRET@host:9090")
    assert "SECRET" not in str(err.value) and "user:password@" in str(err.value)


def test_a_base_url_loses_its_trailing_slash() -> None:
    assert base_url("--x", "http://[::1]:9090/") == "http://[::1]:9090"


def test_within_returns_the_calls_result_or_raises_its_error() -> None:
    assert within(5.0, lambda: 42) == 42
    with pytest.raises(KeyError):
        within(5.0, lambda: {}["missing"])


def test_within_gives_up_on_a_call_that_does_not_return() -> None:
    release = threading.Event()
    try:
        with pytest.raises(CallTimedOut) as err:
            within(0.05, release.wait)
        assert "within 0.05 s" in str(err.value)
    finally:
        release.set()


def test_within_with_no_time_left_does_not_start_the_call() -> None:
    called: list[int] = []
    with pytest.raises(CallTimedOut):
        within(0.0, lambda: called.append(1))
    assert called == []
