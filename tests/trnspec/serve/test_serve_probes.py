"""What the supervisor asks vLLM (the served model, requests in flight) and the readiness file."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from serve_fakes import FAKE_SERVER, MODEL, free_port, wait_for
from trnspec.config.serving import apply_overrides, load_profile
from trnspec.serve import probes
from trnspec.serve.probes import ReadyFile, http_busy, http_probe, probe_url, requests_in_flight


@pytest.mark.parametrize(
    ("text", "count"),
    [
        (
            "# HELP vllm:num_requests_running x\n# TYPE vllm:num_requests_running gauge\n"
            'vllm:num_requests_running{engine="0",model_name="m"} 2.0\n'
            'vllm:num_requests_waiting{engine="0",model_name="m"} 1.0\n'
            'vllm:num_requests_waiting_by_reason{reason="x"} 5.0\n',
            3,
        ),
        ("vllm:num_requests_running 0.0\nvllm:num_requests_waiting 0.0\n", 0),
        ("process_cpu_seconds_total 1.0\n", None),
        ("", None),
    ],
)
def test_requests_in_flight_are_read_from_vllm_metrics(text: str, count: int | None) -> None:
    assert requests_in_flight(text) == count


def test_http_probe_needs_the_served_model_to_answer(tmp_path: Path) -> None:
    port = free_port()
    assert http_probe(f"http://127.0.0.1:{port}", MODEL, timeout=0.5)() is False  # refused
    (tmp_path / "fake_server.py").write_text(FAKE_SERVER)
    child = subprocess.Popen(
        [sys.executable, str(tmp_path / "fake_server.py"), str(port), MODEL, str(tmp_path), "0"]
    )
    try:
        assert wait_for(lambda: (tmp_path / "listening").exists())
        assert http_probe(f"http://127.0.0.1:{port}", MODEL)() is True
        assert http_probe(f"http://127.0.0.1:{port}", "another-model")() is False
    finally:
        child.terminate()
        child.wait(timeout=10)


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("0.0.0.0", "http://127.0.0.1:8000"),
        ("127.0.0.1", "http://127.0.0.1:8000"),
        ("::", "http://127.0.0.1:8000"),
        ("::1", "http://[::1]:8000"),
    ],
)
def test_probe_goes_to_loopback_when_vllm_binds_everything(host: str, url: str) -> None:
    cfg = apply_overrides(load_profile("qwen3-32b-draft"), [f"server.host='{host}'"])
    assert probe_url(cfg) == url


def test_ready_file_that_cannot_be_written_does_not_crash(tmp_path: Path) -> None:
    ready = ReadyFile(tmp_path / "no-such-dir" / "ready")
    ready.set()
    ready.clear()
    assert not ready.path.exists()


@pytest.mark.parametrize("value", ["NaN", "+Inf", "-Inf", "-3"])
def test_a_non_finite_or_negative_gauge_is_not_a_count(value: str) -> None:
    text = f'vllm:num_requests_running{{model_name="m"}} {value}\n'
    assert requests_in_flight(text) is None
    assert requests_in_flight(text + "vllm:num_requests_waiting 2\n") == 2


def test_a_metrics_answer_that_does_not_come_in_time_counts_as_busy() -> None:
    """A loaded vLLM answers /metrics slowly: the drain keeps waiting (bounded by its deadline)
    instead of stopping a server that may hold requests. Nothing listening cannot tell."""

    with socket.socket() as silent:  # accepts (the kernel's backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        port = silent.getsockname()[1]
        assert http_busy(f"http://127.0.0.1:{port}", timeout=0.2)() is True
    assert http_busy(f"http://127.0.0.1:{free_port()}", timeout=0.2)() is None  # refused


#: Seconds between the bytes of a trickled answer: far under any per-read timeout.
TRICKLE_EVERY_S = 0.01
#: Trickled bytes: the whole answer takes at least 150 x 10 ms = 1.5 s, five times the bound.
PADDING = 150
PROBE_BOUND_S = 0.3


def _head(length: int) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % length


@pytest.fixture
def answering() -> Iterator[Callable[[bytes, int], str]]:
    """`answering(answer, trickled)` -> the base URL of a local server that sends `answer`, its
    last `trickled` bytes one every TRICKLE_EVERY_S (it ends with the test)."""
    stop = threading.Event()
    listeners: list[socket.socket] = []

    def start(answer: bytes, trickled: int) -> str:
        listener = socket.create_server(("127.0.0.1", 0))
        listeners.append(listener)

        def serve() -> None:
            with contextlib.suppress(OSError):
                conn, _ = listener.accept()
                with conn:
                    conn.recv(65536)
                    cut = len(answer) - trickled
                    conn.sendall(answer[:cut])
                    for i in range(cut, len(answer)):
                        if stop.wait(TRICKLE_EVERY_S):
                            return
                        conn.sendall(answer[i : i + 1])
                    stop.wait(10)

        threading.Thread(target=serve, daemon=True).start()
        return f"http://127.0.0.1:{listener.getsockname()[1]}"

    yield start
    stop.set()
    for listener in listeners:
        listener.close()


def _listing(model: str, padding: int = 0) -> bytes:
    body = b'{"data": [{"id": "%s"}]}' % model.encode() + b" " * padding
    return _head(len(body)) + body


def _metrics(running: int, padding: int = 0) -> bytes:
    body = b"vllm:num_requests_running %d\n" % running + b" " * padding
    return _head(len(body)) + body


def test_the_model_probe_reads_a_whole_listing(answering) -> None:
    assert http_probe(answering(_listing(MODEL), 0), MODEL, PROBE_BOUND_S)() is True


def test_a_listing_trickled_past_the_bound_is_not_ready(answering) -> None:
    """Each byte comes well within a per-read timeout, and the listing names the model: only a
    bound on the whole answer says no (the probe is not held for as long as the server trickles)."""
    url = answering(_listing(MODEL, PADDING), PADDING)
    assert http_probe(url, MODEL, PROBE_BOUND_S)() is False


def test_a_listing_nested_thousands_deep_is_not_ready_and_does_not_raise(answering) -> None:
    body = b'{"data": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert http_probe(answering(_head(len(body)) + body, 0), MODEL, 5.0)() is False


@pytest.mark.parametrize(("running", "busy"), [(1, True), (0, False)])
def test_the_busy_probe_reads_a_whole_exposition(answering, running: int, busy: bool) -> None:
    assert http_busy(answering(_metrics(running), 0), PROBE_BOUND_S)() is busy


def test_an_exposition_trickled_past_the_bound_counts_as_busy(answering) -> None:
    """It says idle (0 running) once whole, but it is not whole within the bound: busy."""
    url = answering(_metrics(0, PADDING), PADDING)
    assert http_busy(url, PROBE_BOUND_S)() is True


def test_an_exposition_over_the_byte_bound_cannot_tell(
    answering, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(probes, "MAX_METRICS_BYTES", 64)
    assert http_busy(answering(_metrics(1, 100), 0), 5.0)() is None
