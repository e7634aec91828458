"""Acceptance from served traffic: the spec-decode counters' increase over a window, read from a
Prometheus HTTP API (here a fake one on 127.0.0.1), turned into the model's per-token rate by the
mean accepted length at the served window; every failure is one line naming --acceptance-from
(trnspec.plan.served_acceptance, trnspec.cli.plan_deploy)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml
from trnspec.boundary.errors import BoundaryError
from trnspec.cli.main import main
from trnspec.perf.step_time import tokens_per_step
from trnspec.plan.served_acceptance import (
    ACCEPTED,
    DRAFT_TOKENS,
    DRAFTS,
    served_acceptance,
    window,
)

#: What the fake answers: the query it was asked -> (status, body).
Answer = Callable[[str], tuple[int, bytes]]


def _vector(value: float | None) -> bytes:
    result = [] if value is None else [{"metric": {}, "value": [1733097600.0, f"{value}"]}]
    return json.dumps(
        {"status": "success", "data": {"resultType": "vector", "result": result}}
    ).encode()


def counters(accepted: float | None, drafted: float | None, drafts: float | None) -> Answer:
    def answer(query: str) -> tuple[int, bytes]:
        for metric, value in ((ACCEPTED, accepted), (DRAFT_TOKENS, drafted), (DRAFTS, drafts)):
            if f"increase({metric}[" in query:
                return 200, _vector(value)
        return 400, b'{"status":"error"}'

    return answer


class FakePrometheus:
    """/api/v1/query on 127.0.0.1, answering from `answer`; records the queries asked."""

    def __init__(self) -> None:
        self.answer: Answer = counters(None, None, None)
        self.queries: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = parse_qs(parts.query).get("query", [""])[0]
                fake.queries.append(query)
                status, body = fake.answer(query) if parts.path == "/api/v1/query" else (404, b"")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def prometheus() -> Iterator[FakePrometheus]:
    fake = FakePrometheus()
    yield fake
    fake.close()


def _plan(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    args = ["plan-deploy", "--profile", "qwen3-4b-dflash", "--tpot-ms", "30", "--peak-streams"]
    try:
        code = main([*args, "4", *argv])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_the_served_acceptance_is_the_rate_whose_window_gives_the_mean_accepted_length(
    prometheus: FakePrometheus, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # 1000 drafts of k=15, 1100 tokens accepted: 2.1 tokens per step, as the DFlash README.
    prometheus.answer = counters(1100.0, 15000.0, 1000.0)
    out_file = tmp_path / "plan.yaml"
    code, out, err = _plan(
        capsys, "--acceptance-from", prometheus.url, "--window", "2h", "--out", str(out_file)
    )
    assert code == 0, err
    line = out.splitlines()[0]
    rate = float(line.split("acceptance a=")[1].split(" ")[0])
    assert tokens_per_step(rate, 15) == pytest.approx(2.1, abs=0.01)
    assert "acceptance length 2.100 at k=15" in line and "accepted/drafted 0.073" in line
    assert all("[2h]" in q for q in prometheus.queries) and len(prometheus.queries) == 3
    # the plan file reproduces without the server: the served figure is recorded as flags
    command = yaml.safe_load(out_file.read_text())["plan"]["command"]
    assert "--acceptance-length 2.1000 --acceptance-k 15" in command
    assert "--acceptance-from" not in command


@pytest.mark.parametrize(
    ("answer", "needle"),
    [
        (counters(None, None, None), "no speculative decoding in the last 1h"),
        (counters(0.0, 0.0, 0.0), "no speculative decoding in the last 1h"),
        (counters(2000.0, 1000.0, 100.0), "inconsistent counters"),
        (lambda q: (500, b"oops"), "answered HTTP 500"),
        (lambda q: (200, b"<html>"), "not JSON"),
        (lambda q: (200, b'{"status": "error"}'), "not a Prometheus answer"),
        (lambda q: (200, b"[" + b"0," * 600_000 + b"0]"), "more than 1048576 bytes"),
    ],
    ids=["no-series", "no-drafts", "accepted-above-drafted", "http-500", "html", "error", "huge"],
)
def test_what_the_server_cannot_answer_is_one_line_naming_the_flag(
    prometheus: FakePrometheus, capsys: pytest.CaptureFixture[str], answer: Answer, needle: str
) -> None:
    prometheus.answer = answer
    code, out, err = _plan(capsys, "--acceptance-from", prometheus.url)
    assert code == 2 and out == ""
    assert err.startswith(f"--acceptance-from={prometheus.url}") and needle in err
    assert err.count("\n") == 1


def test_an_unreachable_prometheus_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    fake = FakePrometheus()
    url = fake.url
    fake.close()
    code, _, err = _plan(capsys, "--acceptance-from", url)
    assert code == 2 and "unreachable (ConnectError" in err and err.count("\n") == 1


@pytest.mark.parametrize("text", ["1h", "30m", "7d", "1w"])
def test_a_window_is_a_prometheus_duration(text: str) -> None:
    assert window(text) == text


@pytest.mark.parametrize("text", ["0h", "30s", "31d", "1h30m", "-1h", "1.5h", "true", ""])
def test_a_window_outside_a_minute_to_thirty_days_is_refused(text: str) -> None:
    with pytest.raises(BoundaryError):
        window(text)


def test_a_bad_window_flag_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _plan(capsys, "--acceptance-from", "http://127.0.0.1:1", "--window", "1y")
    assert code == 2 and "argument --window" in err


def test_the_query_sums_every_series_increase_over_the_window() -> None:
    asked: list[str] = []

    def query(q: str) -> object:
        asked.append(q)
        return json.loads(_vector(10.0))

    served_acceptance("http://p", "1h", query)
    assert asked == [
        f"sum(increase({ACCEPTED}[1h]))",
        f"sum(increase({DRAFT_TOKENS}[1h]))",
        f"sum(increase({DRAFTS}[1h]))",
    ]
