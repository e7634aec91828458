"""`--stack` under hostile or silent AWS endpoints: every AWS call is bounded by the tool's
--timeout (botocore Config), and an answer that is not AWS's XML is a StackError, not a
traceback."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import boto3
import pytest
from fault_server import silent_endpoint

from trnspec_tools.client.stack_endpoint import (
    AWS_MAX_ATTEMPTS,
    StackError,
    aws_config,
    read_stack_outputs,
)


def test_aws_calls_use_the_tool_timeout_and_bounded_retries() -> None:
    cfg = aws_config(7.0)
    assert cfg.read_timeout == 7.0 and cfg.connect_timeout == 7.0
    assert aws_config(300.0).connect_timeout == 10.0
    assert cfg.retries == {"total_max_attempts": AWS_MAX_ATTEMPTS, "mode": "standard"}


class _NotXml(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = b"<<< this is a captive portal, not AWS >>>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


@contextmanager
def _serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _cloudformation(url: str, timeout_s: float):
    return boto3.session.Session(
        aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="x", region_name="us-east-2"
    ).client("cloudformation", endpoint_url=url, config=aws_config(timeout_s))


def test_a_non_xml_aws_answer_is_one_stack_error() -> None:
    with _serving(_NotXml) as url, pytest.raises(StackError, match="cannot query CloudFormation"):
        read_stack_outputs(_cloudformation(url, 5.0), "TrnspecPlatform-serving")


def test_a_silent_aws_endpoint_ends_in_a_stack_error_within_the_timeout() -> None:
    with silent_endpoint() as url, pytest.raises(StackError, match="cannot query CloudFormation"):
        read_stack_outputs(_cloudformation(url, 0.3), "TrnspecPlatform-serving")
