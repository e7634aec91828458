"""local_engine.local_server: the argv is the rendered one, the env is local and offline, and the
process is always stopped. The lifecycle tests swap the vLLM command for tiny stand-ins (a
script that dies, one that never answers, one that answers /v1/models) so they run in seconds;
the real server is exercised in test_local_e2e.py."""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from trnspec.config.serving import ConfigError, apply_overrides, load_profile
from trnspec.engine.render import RenderedCommand, render

from trnspec_tools.local_engine import local_server
from trnspec_tools.local_engine.local_server import (
    LOCAL_ENV,
    LocalServer,
    LocalServerError,
    server_command,
    server_config,
    server_env,
)

#: How long a stopped server may take to be gone before the test calls it left running: a hang
#: guard (the loop ends as soon as it is gone), generous for a 2-core host at load 8.
HANG_S = 120.0


@pytest.fixture
def model_dirs(tmp_path: Path) -> list[str]:
    """Explicit sources, so these tests never build the tiny models."""
    (tmp_path / "t").mkdir()
    (tmp_path / "d").mkdir()
    return [f"target.source={tmp_path / 't'}", f"speculation.draft.source={tmp_path / 'd'}"]


def test_argv_is_the_rendered_argv_with_only_the_interpreter_swapped(model_dirs: list[str]) -> None:
    cfg = server_config("local-tiny", model_dirs, 8123)
    rendered = render(cfg)
    argv = server_command(rendered, python="/venv/bin/python")
    assert rendered.argv[0] == "python"
    assert argv == ["/venv/bin/python", *rendered.argv[1:]]


def test_server_config_listens_on_loopback_at_the_chosen_port_even_if_told_otherwise(
    model_dirs: list[str],
) -> None:
    cfg = server_config("local-tiny", [*model_dirs, "server.host=0.0.0.0", "server.port=1"], 8123)
    assert (cfg.server.host, cfg.server.port) == ("127.0.0.1", 8123)
    argv = render(cfg).argv
    assert argv[argv.index("--host") + 1] == "127.0.0.1"
    assert argv[argv.index("--port") + 1] == "8123"


@pytest.mark.parametrize(
    ("overrides", "has_spec_config"),
    [(["speculation.method=none"], False), (["speculation.num_speculative_tokens=3"], True)],
    ids=["baseline", "speculative-k3"],
)
def test_baseline_and_speculative_servers_differ_only_by_overrides(
    model_dirs: list[str], overrides: list[str], has_spec_config: bool
) -> None:
    argv = render(server_config("local-tiny", [*model_dirs, *overrides], 8000)).argv
    assert ("--speculative-config" in argv) is has_spec_config
    if has_spec_config:
        assert '"num_speculative_tokens":3' in argv[argv.index("--speculative-config") + 1]


def test_bad_overrides_are_a_config_error_naming_the_field(model_dirs: list[str]) -> None:
    with pytest.raises(ConfigError, match="num_speculative_tokens"):
        server_config("local-tiny", [*model_dirs, "speculation.num_speculative_tokens=-1"], 8000)


def test_env_keeps_the_rendered_values_and_adds_the_local_offline_settings() -> None:
    rendered = RenderedCommand(image="x", argv=["python"], env={"VLLM_CPU_KVCACHE_SPACE": "3"})
    env = server_env(rendered, base={"PATH": "/bin", "HF_HUB_OFFLINE": "0"})
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "3"
    assert env["PATH"] == "/bin"
    assert env["VLLM_CACHE_ROOT"] == str(local_server.REPO_ROOT / ".cache" / "vllm")
    assert {k: env[k] for k in LOCAL_ENV} == LOCAL_ENV
    assert env["HF_HUB_OFFLINE"] == env["TRANSFORMERS_OFFLINE"] == "1"


@pytest.mark.parametrize(
    ("inherited", "expected"),
    [({}, local_server.DEFAULT_KVCACHE_GIB), ({"VLLM_CPU_KVCACHE_SPACE": "2"}, "2")],
)
def test_kv_cache_size_is_set_when_the_render_leaves_it_out(
    inherited: dict[str, str], expected: str
) -> None:
    env = server_env(RenderedCommand(image="x", argv=["python"], env={}), base=inherited)
    assert env["VLLM_CPU_KVCACHE_SPACE"] == expected


def test_tiny_profile_without_sources_uses_the_built_models(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from trnspec_tools.local_engine import tiny_models

    built = tiny_models.TinyModels(tmp_path / "t", tmp_path / "d", "k")
    monkeypatch.setattr(tiny_models, "ensure_tiny_models", lambda: built)
    cfg = apply_overrides(
        load_profile("local-tiny"), local_server.model_overrides("local-tiny", [])
    )
    assert cfg.target.source == str(built.target)
    assert cfg.speculation.draft is not None
    assert cfg.speculation.draft.source == str(built.draft)
    assert local_server.model_overrides("local-tiny", ["target.source=/x"]) == []


# --- lifecycle, with stand-in commands ---------------------------------------------------------

DIES = "import sys; print('loading model'); print('RuntimeError: no such model'); sys.exit(3)"
HANGS = "import time; print('starting', flush=True); time.sleep(600)"
SERVES = """
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b'{"data": []}')
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Replace the vLLM command with `python -c <script> <port>`; the test picks the script."""
    script: list[str] = [DIES]

    def command(rendered: RenderedCommand, python: str = sys.executable) -> list[str]:
        port = rendered.argv[rendered.argv.index("--port") + 1]
        return [python, "-c", script[0], port]

    monkeypatch.setattr(local_server, "server_command", command)
    yield script


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_server_that_dies_during_start_up_is_an_error_quoting_its_log(
    stand_in: list[str], model_dirs: list[str], tmp_path: Path
) -> None:
    stand_in[0] = DIES
    server = LocalServer(model_dirs, log_path=tmp_path / "server.log")
    with pytest.raises(LocalServerError, match=r"exited with code 3") as err:
        server.start()
    assert "RuntimeError: no such model" in str(err.value)
    assert str(tmp_path / "server.log") in str(err.value)


def test_a_server_that_never_answers_is_stopped_after_the_timeout(
    stand_in: list[str], model_dirs: list[str], tmp_path: Path
) -> None:
    stand_in[0] = HANGS
    server = LocalServer(model_dirs, log_path=tmp_path / "s.log", startup_timeout_s=1.5)
    with pytest.raises(LocalServerError, match=r"did not answer .*/v1/models within 2 s") as err:
        server.start()
    assert "starting" in str(err.value)
    assert server.pid is None


def test_a_port_in_use_is_refused_before_anything_starts(model_dirs: list[str]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(LocalServerError, match=f"port {port} on 127.0.0.1 is already in use"):
            LocalServer(model_dirs, port=port).start()


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
def test_the_server_is_stopped_when_the_block_raises(
    stand_in: list[str], model_dirs: list[str], tmp_path: Path, exc: type[BaseException]
) -> None:
    stand_in[0] = SERVES
    with pytest.raises(exc), LocalServer(model_dirs, log_path=tmp_path / "s.log") as server:
        pid = server.pid
        assert pid is not None
        assert httpx.get(f"{server.base_url}/v1/models").status_code == 200
        assert server.model == "tiny-target"
        raise exc()
    deadline = time.monotonic() + HANG_S
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(pid)


def test_default_port_is_a_free_ephemeral_one_and_the_log_goes_under_cache_logs(
    stand_in: list[str], model_dirs: list[str]
) -> None:
    stand_in[0] = SERVES
    with LocalServer(model_dirs) as server:
        assert server.port not in (None, 8000)
        assert server.log_path is not None
        assert server.log_path.parent == local_server.LOG_DIR
    server.log_path.unlink()


def test_entering_a_started_server_does_not_start_a_second_one(
    stand_in: list[str], model_dirs: list[str], tmp_path: Path
) -> None:
    stand_in[0] = SERVES
    server = LocalServer(model_dirs, log_path=tmp_path / "s.log")
    server.start()
    pid = server.pid
    assert pid is not None
    with server:
        assert server.pid == pid
    deadline = time.monotonic() + HANG_S
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(pid)


REPORTS_GROUPS = """
import http.server, json, os, sys
seen = {"pid": os.getpid(), "pgid": os.getpgid(0), "sid": os.getsid(0)}
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(json.dumps(seen).encode())
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def test_the_server_leads_its_own_process_group_inside_the_launchers_session(
    stand_in: list[str], model_dirs: list[str], tmp_path: Path
) -> None:
    """Its own group: Ctrl-C reaches only the launcher and stop() ends the whole group. The same
    session: a session of its own is a scheduling autogroup of its own, where vLLM's busy-polling
    worker starved the rest of the server (plain decoding serialised to one request's speed)."""
    stand_in[0] = REPORTS_GROUPS
    with LocalServer(model_dirs, log_path=tmp_path / "s.log") as server:
        seen = httpx.get(f"{server.base_url}/v1/models").json()
        assert seen["pid"] == server.pid
    assert seen["pgid"] == seen["pid"] != os.getpgid(0)
    assert seen["sid"] == os.getsid(0)
