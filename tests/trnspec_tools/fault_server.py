"""A fault-injecting OpenAI-compatible server on loopback, for the fault suite (issue 12).

One server, one fault at a time (`FaultServer.fault`, switched per test). With no fault it is a
healthy streaming server: /v1/models, /metrics with consistent spec-decode counters (and their
`_created` samples), completions and chat, streamed and not. Each fault breaks one thing the way a
real server, proxy or network does; the bytes are written by hand so the framing can be wrong on
purpose. HTTP/1.0 style: every response ends by closing the connection.

`FaultServer.faults` holds what smoke's checks look for (a stream that differs from its
non-streamed twin, wrong usage, frozen counters, ...), any combination at once
(tests/trnspec_tools/test_smoke.py).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "fake-model"

#: every fault the server can inject, with what it does
FAULTS = {
    "http_500": "every generation request answers 500",
    "http_429": "the first generation attempt answers 429 with Retry-After (retry_after_s)",
    "http_429_forever": "every generation attempt answers 429 with Retry-After: 3600",
    "cut_stream": "a stream is cut (connection closed) after two events, without [DONE]",
    "json_array": "a stream event is a JSON array",
    "not_json": "a stream event is not JSON",
    "trickle": "headers, then an SSE keep-alive comment every 0.1 s, forever",
    "silent": "accepts the connection and never answers",
    "non_utf8": "a stream event carries bytes that are not UTF-8",
    "models_list": "/v1/models answers a JSON list instead of an object",
    "choices_empty": "replies (and stream events) have choices: []",
    "message_null": "non-streamed chat replies have message: null",
    "usage_na": 'usage is "n/a"',
    "counters_reset": "spec-decode counters drop, with a new _created, after a scrape",
    "counters_inconsistent": "accepted tokens grow faster than drafted tokens",
    "no_counters": "/metrics has no spec-decode counters",
    "metrics_non_utf8": "/metrics carries bytes that are not UTF-8",
    # issue 24: classes at boundaries that had no case
    "usage_inflated": "usage reports 100x the completion tokens that were streamed",
    "counters_nan": "the accepted-tokens counter is NaN after the first scrape",
    "counters_inf": "the accepted-tokens counter is +Inf after the first scrape",
    "position_huge": 'a per-position counter is labelled position="999999999"',
    "position_nan": 'a per-position counter is labelled position="NaN"',
    # issue 50: a counter exported twice must not be summed
    "counters_twice": "the draft-tokens counter also under its bare name (same labels, value)",
    "counters_unlabelled": "the draft-tokens counter also without labels (same value)",
    "models_deep": "the /v1/models answer is a list nested 100,000 levels deep",
    "metrics_401": "/metrics answers 401 (behind authentication)",
    "metrics_403": "/metrics answers 403",
    "continue_100": "every POST is answered with an interim 100 Continue before the real answer",
    "huge_header": "a response header line longer than 64 KiB",
    "model_markup": "the served model id is rich markup ([bold]...[/])",
    "model_surrogate": "the served model id is a lone surrogate (\\ud800)",
    "endless_line": "a stream event line of 2 MiB with no newline",
    "deep_json": "a stream event nested 100,000 levels deep",
    "data_no_space": "every stream line is `data:{...}`, without the space after the colon",
    "done_never_closes": "a chunked stream sends [DONE], then never ends its body or connection",
}


@dataclass
class Faults:
    """What the server gets wrong in the answers smoke checks (all off: a healthy server)."""

    stream_differs: bool = False
    bad_usage: bool = False
    frozen_metrics: bool = False
    token_shift: int = 0
    chat_status: int = 200
    no_models: bool = False
    #: finish_reason "length" although the reply stopped short of max_tokens
    early_length: bool = False
    #: /metrics answers 404 (a server that exports no metrics at all)
    no_metrics_endpoint: bool = False
    #: model ids /v1/models lists before the server's own (a server with several models)
    other_models: tuple[str, ...] = ()


@dataclass
class FaultServer:
    url: str
    fault: str | None = None
    faults: Faults = field(default_factory=Faults)
    retry_after_s: int = 1
    drafts: int = 0
    scrapes: int = 0
    attempts: list[float] = field(default_factory=list)
    auth_headers: list[str | None] = field(default_factory=list)
    #: every generation request's JSON body, in arrival order
    bodies: list[dict] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)


def _tokens(prompt: str, max_tokens: int, shift: int = 0) -> tuple[list[int], str]:
    """A deterministic 'greedy model': 10 tokens per prompt, one letter each."""
    ids = [(ord(c) % 26 + shift) % 26 for c in (prompt * 10)[:10]][:max_tokens]
    return ids, "".join(chr(ord("a") + i) for i in ids)


def _metrics(s: FaultServer) -> bytes:
    s.scrapes += 1
    if s.fault == "no_counters":
        return b"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 0\n"
    drafts, created = (0 if s.faults.frozen_metrics else s.drafts), 1.7e9
    accepted = 3 * drafts
    if s.fault == "counters_reset" and s.scrapes > 1:
        drafts, accepted, created = 1, 1, 1.8e9
    if s.fault == "counters_inconsistent":
        accepted = 10 * drafts + 10 * s.scrapes
    labels = f'model_name="{MODEL}"'
    lines = []
    for name, value in (
        ("num_drafts", drafts),
        ("num_draft_tokens", 4 * drafts),
        ("num_accepted_tokens", accepted),
    ):
        lines += [
            f"# TYPE vllm:spec_decode_{name} counter",
            f"vllm:spec_decode_{name}_total{{{labels}}} {float(value)}",
            f"vllm:spec_decode_{name}_created{{{labels}}} {created}",
        ]
    text = ("\n".join(lines) + "\n").encode()
    if s.fault in ("counters_nan", "counters_inf") and s.scrapes > 1:
        bad = "NaN" if s.fault == "counters_nan" else "+Inf"
        text = text.replace(
            f"vllm:spec_decode_num_accepted_tokens_total{{{labels}}} {float(accepted)}".encode(),
            f"vllm:spec_decode_num_accepted_tokens_total{{{labels}}} {bad}".encode(),
        )
    if s.fault in ("position_huge", "position_nan"):
        position = "999999999" if s.fault == "position_huge" else "NaN"
        text += (
            "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos counter\n"
            f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="{position}"}}'
            f" {float(drafts)}\n"
        ).encode()
    if s.fault in ("counters_twice", "counters_unlabelled"):
        name = "vllm:spec_decode_num_draft_tokens"
        series = name if s.fault == "counters_twice" else f"{name}_total"
        labels_shown = f"{{{labels}}}" if s.fault == "counters_twice" else ""
        text += f"{series}{labels_shown} {float(4 * drafts)}\n".encode()
    if s.fault == "metrics_non_utf8":
        text = b"# HELP vllm:x caf\xe9\n" + text
    return text


#: the model id /v1/models lists under the model_* faults
MODEL_IDS = {"model_markup": "[bold]fake[/]", "model_surrogate": "\ud800"}


def _handler(s: FaultServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_args: object) -> None:
            pass

        def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if s.fault == "silent":
                s.stop.wait()
                return
            if self.path == "/v1/models" and s.fault == "models_deep":
                self._send(200, b"[" * 100_000 + b"]" * 100_000)
            elif self.path == "/v1/models":
                model = MODEL_IDS.get(s.fault or "", MODEL)
                ids = [] if s.faults.no_models else [*s.faults.other_models, model]
                data = [{"id": i, "object": "model"} for i in ids]
                doc: object = data if s.fault == "models_list" else {"object": "list", "data": data}
                self._send(200, json.dumps(doc).encode())
            elif self.path == "/metrics" and s.fault in ("metrics_401", "metrics_403"):
                self._send(int(s.fault[-3:]), b'{"error": "refused"}')
            elif self.path == "/metrics" and not s.faults.no_metrics_endpoint:
                self._send(200, _metrics(s), {"Content-Type": "text/plain"})
            else:
                self._send(404, b'{"error": "not found"}')

        def do_POST(self) -> None:
            s.attempts.append(time.monotonic())
            s.auth_headers.append(self.headers.get("Authorization"))
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            s.bodies.append(body)
            f = s.fault
            if f == "continue_100":
                self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            if f == "silent":
                s.stop.wait()
                return
            if f == "http_500":
                self._send(500, b'{"error": "injected"}')
                return
            if f == "http_429" and len(s.attempts) == 1:
                self._send(429, b'{"error": "slow down"}', {"Retry-After": str(s.retry_after_s)})
                return
            if f == "http_429_forever":
                self._send(429, b'{"error": "slow down"}', {"Retry-After": "3600"})
                return
            chat = self.path.endswith("/chat/completions")
            if chat and s.faults.chat_status != 200:
                self._send(s.faults.chat_status, b'{"error": "broken on purpose"}')
                return
            prompt = body["messages"][-1]["content"] if chat else body["prompt"]
            max_tokens = int(body.get("max_tokens") or 8)
            ids, text = _tokens(prompt, max_tokens, s.faults.token_shift)
            s.drafts += len(ids)
            usage: object = {
                "prompt_tokens": 5,
                "completion_tokens": len(ids),
                "total_tokens": 5 + len(ids) + (1 if s.faults.bad_usage else 0),
            }
            if f == "usage_na":
                usage = "n/a"
            if f == "usage_inflated":
                usage = {"prompt_tokens": 5, "completion_tokens": 100 * len(ids)}
            finish = "length" if len(ids) == max_tokens or s.faults.early_length else "stop"
            if not body.get("stream"):
                choice: dict[str, object] = {"index": 0, "finish_reason": finish, "token_ids": ids}
                if chat:
                    choice["message"] = (
                        None if f == "message_null" else {"role": "assistant", "content": text}
                    )
                else:
                    choice["text"] = text
                choices = [] if f == "choices_empty" else [choice]
                self._send(200, json.dumps({"choices": choices, "usage": usage}).encode())
                return
            if s.faults.stream_differs:
                ids, text = [*ids[:-1], (ids[-1] + 1) % 26], text[:-1] + "!"
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            if f == "done_never_closes":
                self.send_header("Transfer-Encoding", "chunked")
            if f == "huge_header":
                self.send_header("X-Padding", "x" * (65 * 1024))
            self.end_headers()
            if f == "endless_line":
                self.wfile.write(b"data: " + b"x" * (2 * 1024 * 1024))
                self.wfile.flush()
                return
            if f == "deep_json":
                self.wfile.write(b"data: " + b"[" * 100_000 + b"\n\n")
                self.wfile.flush()
                return
            if f == "trickle":
                while not s.stop.is_set():
                    try:
                        self.wfile.write(b": keep-alive\n\n")
                        self.wfile.flush()
                    except OSError:
                        return
                    s.stop.wait(0.1)
                return
            for i, (tid, ch) in enumerate(zip(ids, text, strict=True)):
                if i == 2 and f == "cut_stream":
                    self.wfile.flush()
                    self.connection.close()
                    return
                if i == 2 and f == "json_array":
                    self.wfile.write(b"data: [1, 2, 3]\n\n")
                    continue
                if i == 2 and f == "not_json":
                    self.wfile.write(b"data: {oops\n\n")
                    continue
                if i == 2 and f == "non_utf8":
                    self.wfile.write(b'data: {"choices": [{"text": "caf\xe9"}]}\n\n')
                    continue
                piece = {"delta": {"content": ch}} if chat else {"text": ch}
                last = i == len(ids) - 1
                choice = {"index": 0, "token_ids": [tid], "finish_reason": finish if last else None}
                event = {"choices": [] if f == "choices_empty" else [choice | piece]}
                self._event(f"data: {json.dumps(event)}\n\n".encode())
            final = {"choices": [], "usage": usage}
            self._event(f"data: {json.dumps(final)}\n\ndata: [DONE]\n\n".encode())
            if f == "done_never_closes":
                s.stop.wait()

        def _event(self, data: bytes) -> None:
            """Stream bytes as the fault says (no space after `data:`, chunk framing)."""
            if s.fault == "data_no_space":
                data = data.replace(b"data: ", b"data:")
            if s.fault == "done_never_closes":
                data = f"{len(data):x}\r\n".encode() + data + b"\r\n"
            self.wfile.write(data)
            self.wfile.flush()

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that hangs up on a broken reply is expected here: no traceback on stderr
        (the tests look for tracebacks of the tools, not of this server)."""


@contextmanager
def fault_server(fault: str | None = None) -> Iterator[FaultServer]:
    """A server on 127.0.0.1 with `fault` switched on (None: healthy); stopped afterwards, its
    hanging handlers released."""
    if fault is not None and fault not in FAULTS:
        raise ValueError(f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")
    state = FaultServer(url="", fault=fault)
    httpd = _Server(("127.0.0.1", 0), _handler(state))
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.stop.set()
        httpd.shutdown()
        httpd.server_close()


@contextmanager
def silent_endpoint() -> Iterator[str]:
    """A URL whose host accepts connections and never answers (a hung API server)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()
