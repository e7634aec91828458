"""Shared by the serve tests: a stand-in for vLLM (a tiny HTTP server run as a child) and the S3
config the runner and steps tests stage."""

from __future__ import annotations

import socket
import textwrap
import time
from collections.abc import Callable

from trnspec.config.serving import ServingConfig, apply_overrides, load_profile

MODEL = "fake-model"


FAKE_SERVER = textwrap.dedent(
    r'''
    """A stand-in for vLLM: answers /v1/models after a delay, drains on SIGTERM/SIGINT."""
    import json, os, signal, sys, threading, time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from pathlib import Path

    port, model, work, delay = int(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), float(sys.argv[4])

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/metrics":
                running = 1 if (work / "busy").exists() else 0
                body = (
                    "# TYPE vllm:num_requests_running gauge\n"
                    f'vllm:num_requests_running{{model_name="{model}"}} {running}.0\n'
                    f'vllm:num_requests_waiting{{model_name="{model}"}} 0.0\n'
                ).encode()
            elif (work / "sick").exists() or self.path != "/v1/models":
                self.send_response(503); self.end_headers(); return
            else:
                body = json.dumps({"data": [{"id": model}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    def stop(signum, frame):
        (work / "child-signal").write_text(signal.Signals(signum).name)
        threading.Thread(target=server.shutdown).start()  # drain: finish, then stop

    (work / "child.pid").write_text(str(os.getpid()))
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    # a child inherits its parent's signal mask: one started by a thread blocking them unblocks
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    time.sleep(delay)
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    (work / "listening").write_text("")
    server.serve_forever()
    server.server_close()
    (work / "drained").write_text("")
    sys.exit(0)
    '''
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: How long a test waits for something that must happen before it calls it lost. Only a broken
#: program reaches it: a hang guard, not a speed bound (a 2-core host at load 8 takes seconds to
#: start an interpreter), so it is generous.
HANG_S = 180.0


def wait_for(condition: Callable[[], bool], timeout: float = HANG_S) -> bool:
    """Whether `condition` became true, polled until it did (or HANG_S passed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def s3_qwen() -> ServingConfig:
    return apply_overrides(
        load_profile("qwen3-32b-draft"),
        ["target.source=s3://models/Qwen3-32B", "speculation.draft.source=s3://models/Qwen3-1.7B"],
    )
