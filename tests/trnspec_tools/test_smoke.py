"""trnspec_tools.smoke against a small fake OpenAI-compatible server (real HTTP on 127.0.0.1) whose
faults are switched on per test (`--stack`: tests/trnspec_tools/client/test_stack_endpoint.py)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from trnspec_tools.client.openai_client import Generation
from trnspec_tools.smoke import main, run_smoke

MODEL = "fake-model"


@dataclass
class Faults:
    """What the fake server gets wrong (all off: a healthy speculative server)."""

    stream_differs: bool = False
    bad_usage: bool = False
    no_spec_metrics: bool = False
    frozen_metrics: bool = False
    token_shift: int = 0
    chat_status: int = 200
    no_models: bool = False


@dataclass
class FakeState:
    faults: Faults = field(default_factory=Faults)
    drafts: int = 0


def tokens_for(prompt: str, max_tokens: int, shift: int) -> tuple[list[int], str]:
    """A deterministic 'greedy model': 10 tokens per prompt, one letter each."""
    ids = [(ord(c) % 26 + shift) % 26 for c in (prompt * 10)[:10]][:max_tokens]
    return ids, "".join(chr(ord("a") + i) for i in ids)


def make_handler(state: FakeState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_args: object) -> None:
            pass

        def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            f = state.faults
            if self.path == "/v1/models":
                data = [] if f.no_models else [{"id": MODEL, "object": "model"}]
                self._send(200, json.dumps({"object": "list", "data": data}).encode())
            elif self.path == "/metrics":
                lines = ["# TYPE vllm:num_requests_running gauge", "vllm:num_requests_running 0"]
                if not f.no_spec_metrics:
                    d = 0 if f.frozen_metrics else state.drafts
                    for name, value in (
                        ("drafts", d),
                        ("draft_tokens", 4 * d),
                        ("accepted_tokens", 3 * d),
                    ):
                        lines += [
                            f"# TYPE vllm:spec_decode_num_{name} counter",
                            f'vllm:spec_decode_num_{name}_total{{model_name="{MODEL}"}} {value}',
                        ]
                self._send(200, ("\n".join(lines) + "\n").encode(), "text/plain")
            else:
                self._send(404, b"{}")

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            f = state.faults
            chat = self.path == "/v1/chat/completions"
            if chat and f.chat_status != 200:
                self._send(f.chat_status, b'{"error": "broken on purpose"}')
                return
            prompt = body["messages"][-1]["content"] if chat else body["prompt"]
            max_tokens = body["max_tokens"]
            ids, text = tokens_for(prompt, max_tokens, f.token_shift)
            state.drafts += 3
            finish = "length" if len(ids) == max_tokens else "stop"
            usage = {
                "prompt_tokens": 5,
                "completion_tokens": len(ids),
                "total_tokens": 5 + len(ids) + (1 if f.bad_usage else 0),
            }
            if not body.get("stream"):
                choice = {"index": 0, "finish_reason": finish, "token_ids": ids}
                choice |= (
                    {"message": {"role": "assistant", "content": text}} if chat else {"text": text}
                )
                self._send(200, json.dumps({"choices": [choice], "usage": usage}).encode())
                return
            if f.stream_differs:
                ids, text = [*ids[:-1], (ids[-1] + 1) % 26], text[:-1] + "!"
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for i, (tid, ch) in enumerate(zip(ids, text, strict=True)):
                piece = {"delta": {"content": ch}} if chat else {"text": ch}
                last = i == len(ids) - 1
                choice = {"index": 0, "token_ids": [tid], "finish_reason": finish if last else None}
                self.wfile.write(f"data: {json.dumps({'choices': [choice | piece]})}\n\n".encode())
            self.wfile.write(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")

    return Handler


@dataclass
class FakeServer:
    state: FakeState
    url: str


@pytest.fixture
def fake_server() -> Iterator[FakeServer]:
    yield from _serve()


def _serve() -> Iterator[FakeServer]:
    state = FakeState()
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield FakeServer(state, f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def baseline_server() -> Iterator[FakeServer]:
    yield from _serve()


def failed(result) -> set[str]:
    return {c.name for c in result.failures}


def test_a_healthy_speculative_server_passes_every_check(
    fake_server: FakeServer, baseline_server: FakeServer
) -> None:
    result = run_smoke(fake_server.url, baseline_endpoint=baseline_server.url, max_tokens=8)
    assert result.ok, [(c.name, c.detail) for c in result.failures]
    names = {c.name for c in result.checks}
    assert {
        "models",
        "chat",
        "chat (stream)",
        "lossless vs baseline",
        "spec-decode metrics",
    } <= names
    assert all(isinstance(g, Generation) for g in result.greedy.values())


@pytest.mark.parametrize(
    ("faults", "expected_failures"),
    [
        (Faults(stream_differs=True), {"completion #1 (stream)", "chat (stream)"}),
        (Faults(bad_usage=True), {"completion #1", "chat", "chat (stream)"}),
        (Faults(frozen_metrics=True), {"spec-decode metrics"}),
        (Faults(chat_status=500), {"chat", "chat (stream)"}),
        (Faults(token_shift=1), {"lossless vs baseline"}),
    ],
    ids=["stream-differs", "bad-usage", "frozen-metrics", "chat-500", "lossy"],
)
def test_each_fault_fails_the_check_that_covers_it(
    fake_server: FakeServer,
    baseline_server: FakeServer,
    faults: Faults,
    expected_failures: set[str],
) -> None:
    fake_server.state.faults = faults
    result = run_smoke(fake_server.url, baseline_endpoint=baseline_server.url, max_tokens=8)
    assert expected_failures <= failed(result)
    assert all(c.detail for c in result.failures)


def test_an_endpoint_without_spec_decode_counters_is_not_checked_and_not_failed(
    fake_server: FakeServer,
) -> None:
    """The Neuron fork's fused speculation exports no vllm:spec_decode_* counters at all."""
    fake_server.state.faults = Faults(no_spec_metrics=True)
    result = run_smoke(fake_server.url, max_tokens=8)
    assert result.ok
    check = next(c for c in result.checks if c.name == "spec-decode metrics")
    assert check.ok is None
    assert "acceptance not checked" in check.detail and "no vllm:spec_decode_*" in check.detail


@pytest.mark.parametrize(("shift", "lossless"), [(0, True), (1, False)], ids=["same", "differs"])
def test_lossless_check_can_use_outputs_recorded_from_an_earlier_baseline_run(
    fake_server: FakeServer, baseline_server: FakeServer, shift: int, lossless: bool
) -> None:
    baseline_server.state.faults = Faults(token_shift=shift)
    recorded = run_smoke(baseline_server.url, expect_speculation=False, max_tokens=8)
    assert recorded.ok
    result = run_smoke(fake_server.url, baseline_greedy=recorded.greedy, max_tokens=8)
    check = next(c for c in result.checks if c.name == "lossless vs baseline")
    assert check.ok is lossless


def test_finish_reason_length_must_match_max_tokens(fake_server: FakeServer) -> None:
    result = run_smoke(fake_server.url, max_tokens=4)  # the fake stops at 10 tokens: "length"
    assert "completion #1" not in failed(result)
    assert next(c for c in result.checks if c.name == "completion #1").detail.startswith("4 tokens")


def test_no_served_model_stops_early_with_a_named_failure(fake_server: FakeServer) -> None:
    fake_server.state.faults = Faults(no_models=True)
    result = run_smoke(fake_server.url)
    assert failed(result) == {"models"}


def test_an_unreachable_endpoint_is_a_failed_check_not_a_traceback() -> None:
    from trnspec_tools.local_engine.local_server import free_port

    result = run_smoke(f"http://127.0.0.1:{free_port()}")
    assert failed(result) == {"models"}
    assert "failed after retries" in result.failures[0].detail


def test_cli_exits_non_zero_naming_each_failure(
    fake_server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_server.state.faults = Faults(frozen_metrics=True, chat_status=500)
    assert main(["--endpoint", fake_server.url, "--max-tokens", "8"]) == 1
    out = capsys.readouterr().out
    assert "FAILED (3)" in out
    for name in ("chat", "chat (stream)", "spec-decode metrics"):
        assert name in out


def test_cli_passes_against_a_healthy_server(
    fake_server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--endpoint", fake_server.url, "--max-tokens", "8"]) == 0
    assert "all checks passed" in capsys.readouterr().out


def test_cli_rejects_a_bad_max_tokens_with_the_field_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--endpoint", "http://127.0.0.1:9", "--max-tokens", "0"]) == 2
    assert "--max-tokens=0" in capsys.readouterr().out
