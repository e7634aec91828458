"""The API key path in the engine: Secrets Manager -> vLLM's environment, never argv or logs.

The guard is vLLM's own AuthenticationMiddleware, loaded from the installed vLLM's source file
(its module imports only starlette, so vLLM's heavy package import is skipped) and served by
uvicorn: the readiness probe must pass it with the key and fail without, while /health and
/metrics stay open for the kubelet and Prometheus.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from moto import mock_aws
from trnspec.config.serving import ConfigError
from trnspec.serve.api_key import (
    ENV_API_KEY_SECRET,
    MIN_KEY_LENGTH,
    VLLM_API_KEY_ENV,
    auth_headers,
    child_env,
    load_api_key,
    secrets_manager_fetch,
)

KEY = "k" * 24 + "Z9" * 12
MODEL = "served-model"


def _vllm_auth_middleware() -> Any:
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("vLLM is not installed (make setup installs the local engine)")
    path = Path(next(iter(spec.submodule_search_locations)))
    path = path / "entrypoints" / "serve" / "middleware" / "authenticate.py"
    if not path.exists():
        pytest.skip(f"this vLLM keeps its auth middleware elsewhere than {path}")
    module_spec = importlib.util.spec_from_file_location("vllm_authenticate", path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module.AuthenticationMiddleware


@pytest.fixture(scope="module")
def guarded_server() -> Iterator[str]:
    """A stand-in for vLLM's routes behind vLLM's real API-key middleware."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, PlainTextResponse
    from starlette.routing import Route

    async def models(_: Any) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [{"id": MODEL}]})

    async def health(_: Any) -> PlainTextResponse:
        return PlainTextResponse("")

    async def metrics(_: Any) -> PlainTextResponse:
        return PlainTextResponse("vllm:num_requests_running 0\n")

    app = Starlette(
        routes=[
            Route("/v1/models", models),
            Route("/health", health),
            Route("/metrics", metrics),
        ]
    )
    guarded = _vllm_auth_middleware()(app, tokens=[KEY])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(guarded, host="127.0.0.1", port=port, log_level="error", interface="asgi3")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def test_readiness_probe_passes_vllms_guard_only_with_the_key(guarded_server: str) -> None:
    from trnspec.serve import http_probe

    assert http_probe(guarded_server, MODEL, headers=auth_headers(KEY))() is True
    assert http_probe(guarded_server, MODEL)() is False
    assert http_probe(guarded_server, MODEL, headers=auth_headers("wrong" * 8))() is False


def test_the_readiness_probe_keeps_the_key_out_of_its_repr() -> None:
    """A traceback or a log line that prints the probe must not print the key it sends."""
    from trnspec.serve import http_probe

    probe = http_probe("http://127.0.0.1:1", MODEL, headers=auth_headers(KEY))
    assert probe.headers == auth_headers(KEY)
    assert KEY not in repr(probe)


def test_health_and_metrics_stay_open_for_the_kubelet_and_prometheus(guarded_server: str) -> None:
    assert httpx.get(f"{guarded_server}/health").status_code == 200
    assert httpx.get(f"{guarded_server}/metrics").status_code == 200
    assert httpx.get(f"{guarded_server}/v1/models").status_code == 401


@pytest.fixture
def secret_arn() -> Iterator[tuple[str, Any]]:
    with mock_aws():
        client = boto3.client("secretsmanager", region_name="us-east-2")
        arn = client.create_secret(Name="trnspec-api-key", SecretString=KEY)["ARN"]
        yield arn, client


def test_key_is_read_from_the_secret_the_environment_names(secret_arn: tuple[str, Any]) -> None:
    arn, client = secret_arn
    env = {ENV_API_KEY_SECRET: arn}
    assert load_api_key(env, secrets_manager_fetch(client)) == KEY


def test_no_secret_named_means_no_key() -> None:
    assert load_api_key({}) is None
    assert child_env({"PATH": "/bin"}, None) == {"PATH": "/bin"}
    assert auth_headers(None) == {}


def test_an_unreadable_secret_stops_the_start_without_showing_a_value(
    secret_arn: tuple[str, Any],
) -> None:
    _, client = secret_arn
    missing = "arn:aws:secretsmanager:us-east-2:123456789012:secret:nope-AbCdEf"
    with pytest.raises(ConfigError) as err:
        load_api_key({ENV_API_KEY_SECRET: missing}, secrets_manager_fetch(client))
    (problem,) = err.value.problems
    assert problem.field == ENV_API_KEY_SECRET and problem.value == missing
    # the fix names both things to check (the SDK's error also says GetSecretValue)
    assert problem.fix.endswith(
        "; check the pod identity's secretsmanager:GetSecretValue and the network policy"
    )


def test_a_short_key_is_refused_and_not_echoed() -> None:
    short = "s3cr3t"
    with pytest.raises(ConfigError) as err:
        load_api_key({ENV_API_KEY_SECRET: "arn:x"}, lambda _: short)
    assert short not in str(err.value)
    assert f"at least {MIN_KEY_LENGTH}" in str(err.value)


def test_the_key_goes_to_vllms_environment_only() -> None:
    env = child_env({"PATH": "/bin", ENV_API_KEY_SECRET: "arn:x"}, KEY)
    assert env[VLLM_API_KEY_ENV] == KEY
    assert env["PATH"] == "/bin"


def test_the_rendered_argv_and_serve_steps_never_hold_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The steps (and so the logged `starting: <argv>` line) are built without the key."""
    from trnspec.config.serving import load_profile
    from trnspec.serve import serve_steps

    monkeypatch.setenv(VLLM_API_KEY_ENV, KEY)
    monkeypatch.setenv(ENV_API_KEY_SECRET, "arn:x")
    steps = serve_steps(load_profile("local-tiny"))
    assert KEY not in steps.to_json()
    assert KEY not in " ".join(steps.command.argv)
    assert VLLM_API_KEY_ENV not in steps.command.env


def test_files_holding_the_key_are_found_even_across_read_chunks(tmp_path: Path) -> None:
    from trnspec.serve.api_key import files_holding_key

    key = "k" * 20 + "0123456789abcdef" + "z" * 12  # 48 characters, like the stack's
    cache = tmp_path / "torch_compile_cache" / "abc" / "rank_0_0" / "backbone"
    cache.mkdir(parents=True)
    (cache / "cache_key_factors.json").write_text(json.dumps({"env": {"VLLM_API_KEY": key}}))
    (cache / "graph.bin").write_bytes(b"\0" * 5000)
    split = tmp_path / "split.bin"  # the key straddles the 64-byte read boundary
    split.write_bytes(b"x" * 40 + key.encode() + b"y" * 40)
    (tmp_path / "prefix_only.txt").write_text(key[:-1])
    found = files_holding_key(tmp_path, key, chunk=64)
    assert found == [
        "split.bin",
        "torch_compile_cache/abc/rank_0_0/backbone/cache_key_factors.json",
    ]
    assert files_holding_key(tmp_path, "not-there-" * 4, chunk=64) == []
