"""The serve entrypoint: plan (pure), orchestration under moto, and the supervisor with a tiny
fake child server instead of vLLM (signal forwarding, drain, readiness, exit codes)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from trnspec.cli import main as cli_main
from trnspec.config import ConfigError, ServingConfig, apply_overrides, load_profile
from trnspec.render import RenderedCommand
from trnspec.serve import (
    ReadyFile,
    ServeOptions,
    Supervisor,
    execute,
    exit_status,
    http_probe,
    plan_serve,
    probe_url,
    requests_in_flight,
    resolve_options,
)
from trnspec.staging import S3Location, TransferSettings, fetch_manifest, upload

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
    time.sleep(delay)
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    (work / "listening").write_text("")
    server.serve_forever()
    server.server_close()
    (work / "drained").write_text("")
    sys.exit(0)
    '''
)

DRIVER = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from trnspec.serve import ReadyFile, Supervisor, http_busy, http_probe

    work, port, drain = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3])

    def first_ready():
        with (work / "first-ready").open("a") as fh:
            fh.write("x")

    sup = Supervisor(
        [sys.executable, str(work / "fake_server.py"), port, "fake-model", str(work), "0.5"],
        dict(os.environ),
        http_probe(f"http://127.0.0.1:{port}", "fake-model", timeout=0.5),
        ReadyFile(work / "ready"),
        poll_interval=0.1,
        on_first_ready=first_ready,
        busy=http_busy(f"http://127.0.0.1:{port}", timeout=0.5),
        drain_timeout=drain,
        drain_poll=0.1,
    )
    sys.exit(sup.run())
    """
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(condition: Callable[[], bool], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def start_driver(tmp_path: Path) -> Any:
    """Start the supervisor (in its own process, so signals never hit pytest) over a fake child."""
    (tmp_path / "fake_server.py").write_text(FAKE_SERVER)
    (tmp_path / "driver.py").write_text(DRIVER)
    procs: list[subprocess.Popen[bytes]] = []

    def start(drain_timeout: float = 0.0) -> tuple[subprocess.Popen[bytes], Path]:
        argv = [sys.executable, str(tmp_path / "driver.py"), str(tmp_path), str(free_port())]
        procs.append(subprocess.Popen([*argv, str(drain_timeout)]))
        return procs[-1], tmp_path

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    child_pid = tmp_path / "child.pid"
    if child_pid.exists():  # a failed test can leave the fake server (own session) behind
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(child_pid.read_text()), signal.SIGKILL)


@pytest.fixture
def driver(start_driver: Any) -> Any:
    return start_driver()


# --- supervisor with a fake child ---------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_stop_signal_is_forwarded_and_the_child_drains(driver: Any, sig: signal.Signals) -> None:
    proc, work = driver
    ready = work / "ready"
    seen_ready_before_listening = False

    def became_ready() -> bool:
        nonlocal seen_ready_before_listening
        if ready.exists() and not (work / "listening").exists():
            seen_ready_before_listening = True
        return ready.exists()

    assert wait_for(became_ready), "the readiness file never appeared"
    assert not seen_ready_before_listening
    assert wait_for(lambda: (work / "first-ready").exists())
    proc.send_signal(sig)
    assert proc.wait(timeout=20) == 0  # the child's own exit code
    assert (work / "child-signal").read_text() == sig.name
    assert (work / "drained").exists()
    assert not ready.exists()


def test_readiness_follows_the_model_and_first_ready_runs_once(driver: Any) -> None:
    proc, work = driver
    ready = work / "ready"
    assert wait_for(ready.exists)
    (work / "sick").write_text("")
    assert wait_for(lambda: not ready.exists()), "readiness kept while the model fails"
    (work / "sick").unlink()
    assert wait_for(ready.exists)
    proc.terminate()
    proc.wait(timeout=20)
    assert (work / "first-ready").read_text() == "x"


def test_stop_waits_for_in_flight_requests_before_forwarding(start_driver: Any) -> None:
    proc, work = start_driver(drain_timeout=30)
    assert wait_for((work / "ready").exists)
    (work / "busy").write_text("")  # vLLM reports one running request
    proc.terminate()
    assert wait_for(lambda: not (work / "ready").exists(), timeout=5)  # out of the Service now
    time.sleep(1.0)
    assert not (work / "child-signal").exists(), "stopped vLLM while a request was running"
    (work / "busy").unlink()  # the request finishes
    assert proc.wait(timeout=20) == 0
    assert (work / "child-signal").read_text() == "SIGTERM"


def test_drain_gives_up_after_the_timeout(start_driver: Any) -> None:
    proc, work = start_driver(drain_timeout=1.0)
    assert wait_for((work / "ready").exists)
    (work / "busy").write_text("")
    started = time.monotonic()
    proc.terminate()
    assert proc.wait(timeout=20) == 0
    assert time.monotonic() - started >= 1.0
    assert (work / "child-signal").read_text() == "SIGTERM"


def test_a_second_signal_stops_at_once_without_waiting_for_the_drain(start_driver: Any) -> None:
    proc, work = start_driver(drain_timeout=60)
    assert wait_for((work / "ready").exists)
    (work / "busy").write_text("")
    proc.terminate()
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=20) == 0
    assert (work / "child-signal").read_text() == "SIGINT"


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


def never_ready() -> bool:
    return False


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("import sys; sys.exit(3)", 3),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", 128 + 9),
    ],
)
def test_child_exit_status_is_the_supervisors(tmp_path: Path, code: str, expected: int) -> None:
    ready = ReadyFile(tmp_path / "ready")
    sup = Supervisor(
        [sys.executable, "-c", code], dict(os.environ), never_ready, ready, poll_interval=0.05
    )
    assert sup.run() == expected
    assert not ready.path.exists()


def test_signal_handlers_are_restored_after_run(tmp_path: Path) -> None:
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    Supervisor(
        [sys.executable, "-c", "pass"], dict(os.environ), never_ready, ReadyFile(tmp_path / "r")
    ).run()
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


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


@pytest.mark.parametrize(("rc", "status"), [(0, 0), (1, 1), (-15, 143), (-9, 137)])
def test_exit_status_reports_signals_like_a_shell(rc: int, status: int) -> None:
    assert exit_status(rc) == status


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


# --- the plan (pure) ----------------------------------------------------------------------------


def s3_qwen() -> ServingConfig:
    return apply_overrides(
        load_profile("qwen3-32b-draft"),
        ["target.source=s3://models/Qwen3-32B", "speculation.draft.source=s3://models/Qwen3-1.7B"],
    )


def test_plan_stages_s3_models_where_the_command_reads_them() -> None:
    plan = plan_serve(s3_qwen(), models_root="/m", compiled_root="/c", compile_cache="s3://cache/n")
    assert [(s.field, s.source, s.local_dir) for s in plan.stage] == [
        ("target", "s3://models/Qwen3-32B", "/m/models/Qwen3-32B"),
        ("speculation.draft", "s3://models/Qwen3-1.7B", "/m/models/Qwen3-1.7B"),
    ]
    argv = plan.command.argv
    assert argv[:3] == ["vllm", "serve", "/m/models/Qwen3-32B"]
    assert '"model":"/m/models/Qwen3-1.7B"' in argv[argv.index("--speculative-config") + 1]
    assert plan.cache is not None
    assert plan.cache.local_dir == f"/c/{plan.cache.key}"
    assert plan.command.env["NEURON_COMPILED_ARTIFACTS"] == plan.cache.local_dir
    assert plan.cache.remote == f"s3://cache/n/{plan.cache.key}"


def test_plan_for_hub_or_local_sources_stages_nothing() -> None:
    plan = plan_serve(load_profile("qwen3-32b-draft"))
    assert plan.stage == () and plan.cache is not None and plan.cache.remote is None


def test_cpu_plan_has_no_compile_cache_and_runs_this_interpreter() -> None:
    plan = plan_serve(load_profile("local-tiny"), python="/venv/bin/python")
    assert plan.cache is None
    assert plan.command.argv[:3] == ["/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server"]


def test_serve_dry_run_prints_the_plan(capsys: Any) -> None:
    code = cli_main(
        [
            "serve",
            "--profile",
            "qwen3-32b-draft",
            "--compile-cache",
            "s3://cache/x",
            "--dry-run",
            "--set",
            "target.source=s3://models/Qwen3-32B",
        ]
    )
    assert code == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["stage"][0]["source"] == "s3://models/Qwen3-32B"
    assert plan["cache"]["remote"].startswith("s3://cache/x/qwen3-32b_qwen3-1.7b-draft-model-k7-")


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["--set", "tensor_parallel_size=48"], "tensor_parallel_size=48"),
        (["--compile-cache", "not-a-uri"], "--compile-cache=not-a-uri"),
    ],
)
def test_serve_refuses_bad_input_with_exit_2_before_any_io(
    argv: list[str], field: str, capsys: Any
) -> None:
    assert cli_main(["serve", "--profile", "qwen3-32b-draft", "--dry-run", *argv]) == 2
    assert field in capsys.readouterr().err


# --- orchestration under moto ------------------------------------------------------------------

QWEN3_32B = {
    "num_attention_heads": 64,
    "hidden_size": 5120,
    "num_hidden_layers": 64,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "intermediate_size": 25600,
    "vocab_size": 151936,
}
QWEN3_17B = {
    "num_attention_heads": 16,
    "hidden_size": 2048,
    "num_hidden_layers": 28,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "intermediate_size": 6144,
    "vocab_size": 151936,
    "tie_word_embeddings": True,
}


@pytest.fixture
def s3(fake_aws_env: None, tmp_path: Path) -> Any:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-2")
        for bucket in ("models", "cache"):
            client.create_bucket(
                Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "us-east-2"}
            )
        for name, config in (("Qwen3-32B", QWEN3_32B), ("Qwen3-1.7B", QWEN3_17B)):
            src = tmp_path / "publish" / name
            src.mkdir(parents=True)
            (src / "config.json").write_text(json.dumps(config))
            (src / "model.safetensors").write_bytes(os.urandom(1000))
            upload(client, src, S3Location("models", name))
        yield client


class FakeVllm:
    """Records what it was started with; 'compiles' into the artifact dir on a cold start."""

    def __init__(self) -> None:
        self.calls: list[tuple[RenderedCommand, bool]] = []

    def __call__(self, command: RenderedCommand, on_first_ready: Callable[[], None] | None) -> int:
        compiled = Path(command.env["NEURON_COMPILED_ARTIFACTS"])
        warm = (compiled / "model.neff").exists()
        self.calls.append((command, warm))
        target = Path(command.argv[2])
        assert (target / "config.json").exists() and (target / "model.safetensors").exists()
        if not warm:
            (compiled / "model.neff").write_bytes(b"compiled graph")
        if on_first_ready is not None:
            on_first_ready()
        return 0


def options(tmp_path: Path, run: str) -> ServeOptions:
    return ServeOptions(
        models_root=str(tmp_path / run / "models"),
        compiled_root=str(tmp_path / run / "compiled"),
        compile_cache="s3://cache/neuron",
        progress=False,
        transfer=TransferSettings(workers=2),
    )


def plan_for(cfg: ServingConfig, opts: ServeOptions) -> Any:
    """The serve plan for a config under a pod's options (where it stages and caches)."""
    return plan_serve(
        cfg,
        models_root=opts.models_root,
        compiled_root=opts.compiled_root,
        compile_cache=opts.compile_cache,
    )


def test_cold_start_publishes_the_compile_and_the_next_pod_reuses_it(
    s3: Any, tmp_path: Path
) -> None:
    cfg, fake = s3_qwen(), FakeVllm()
    first = options(tmp_path, "pod1")
    plan = plan_for(cfg, first)
    assert execute(cfg, plan, first, fake, s3) == 0
    assert plan.cache is not None
    assert fetch_manifest(s3, S3Location("cache", f"neuron/{plan.cache.key}")) is not None
    second = options(tmp_path, "pod2")
    plan2 = plan_for(cfg, second)
    assert execute(cfg, plan2, second, fake, s3) == 0
    assert [warm for _, warm in fake.calls] == [False, True]


def test_staged_models_are_checked_again_from_their_config_files(s3: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad-draft"
    bad.mkdir()
    (bad / "config.json").write_text(json.dumps(QWEN3_17B | {"vocab_size": 32000}))
    upload(s3, bad, S3Location("models", "Qwen3-1.7B"))  # same name, other tokenizer
    cfg, fake = s3_qwen(), FakeVllm()
    opts = options(tmp_path, "pod")
    plan = plan_for(cfg, opts)
    with pytest.raises(ConfigError, match=r"speculation\.draft\.source=.*vocabulary"):
        execute(cfg, plan, opts, fake, s3)
    assert fake.calls == []  # vLLM never started


def test_missing_model_in_s3_fails_staging_without_starting_vllm(
    s3: Any, tmp_path: Path, capsys: Any
) -> None:
    cfg = apply_overrides(s3_qwen(), ["speculation.draft.source=s3://models/Qwen3-1.7B-missing"])
    fake, opts = FakeVllm(), options(tmp_path, "pod")
    plan = plan_for(cfg, opts)
    assert execute(cfg, plan, opts, fake, s3) == 1
    assert "nothing published at s3://models/Qwen3-1.7B-missing" in capsys.readouterr().err
    assert fake.calls == []


def test_cache_publish_denied_is_logged_and_the_pod_keeps_serving(
    s3: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def deny(params: dict[str, Any], **_: Any) -> None:
        if params["Bucket"] == "cache":
            raise ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "PutObject")

    # The serving role may read the compile cache but not write it (only the precompile Job may).
    s3.meta.events.register("before-parameter-build.s3.PutObject", deny)
    cfg, fake = s3_qwen(), FakeVllm()
    opts = options(tmp_path, "pod")
    plan = plan_for(cfg, opts)
    with caplog.at_level(logging.WARNING, logger="trnspec.serve"):
        assert execute(cfg, plan, opts, fake, s3) == 0
    assert "could not publish the compile cache" in caplog.text and "AccessDenied" in caplog.text
    assert plan.cache is not None
    assert fetch_manifest(s3, S3Location("cache", f"neuron/{plan.cache.key}")) is None


# --- compile-only (the precompile Job) ----------------------------------------------------------


def compile_only(tmp_path: Path, run: str) -> ServeOptions:
    return dataclasses.replace(options(tmp_path, run), compile_only=True)


def test_compile_only_compiles_publishes_and_stops(s3: Any, tmp_path: Path) -> None:
    cfg, fake, stops = s3_qwen(), FakeVllm(), []
    opts = compile_only(tmp_path, "job")
    plan = plan_for(cfg, opts)
    assert execute(cfg, plan, opts, fake, s3, stop=lambda: stops.append(1)) == 0
    assert stops == [1]
    assert plan.cache is not None
    assert fetch_manifest(s3, S3Location("cache", f"neuron/{plan.cache.key}")) is not None
    # A second run finds the key published and starts nothing, stages nothing.
    again = compile_only(tmp_path, "job2")
    plan2 = plan_for(cfg, again)
    assert execute(cfg, plan2, again, fake, s3) == 0
    assert len(fake.calls) == 1
    assert not Path(again.models_root).exists()


def test_compile_only_fails_when_vllm_dies_before_answering(s3: Any, tmp_path: Path) -> None:
    cfg, opts = s3_qwen(), compile_only(tmp_path, "job")
    plan = plan_for(cfg, opts)
    assert execute(cfg, plan, opts, lambda command, ready: 7, s3) == 7


def test_compile_only_needs_a_compile_cache() -> None:
    cfg = load_profile("qwen3-32b-draft")
    opts = ServeOptions(compile_only=True, progress=False)
    with pytest.raises(ConfigError, match="--compile-only"):
        execute(cfg, plan_serve(cfg), opts, FakeVllm())


# --- options from flags and the pod's environment ----------------------------------------------


def parse_serve(argv: list[str]) -> Any:
    from trnspec.cli import build_parser

    return build_parser().parse_args(["serve", "--profile", "local-tiny", *argv])


@pytest.mark.parametrize(
    ("argv", "environ", "expected"),
    [
        (
            [],
            {},
            ("/var/lib/trnspec/models", "/var/lib/trnspec/compiled", None, "/tmp/trnspec-ready"),
        ),
        (
            [],
            {
                "TRNSPEC_DATA_DIR": "/data",
                "TRNSPEC_COMPILE_CACHE_URI": "s3://b/compile-cache/",
                "TRNSPEC_READY_FILE": "/run/ready",
            },
            ("/data/models", "/data/compiled", "s3://b/compile-cache/", "/run/ready"),
        ),
        (
            [
                "--models-root",
                "/m",
                "--compiled-root",
                "/c",
                "--compile-cache",
                "s3://x/y",
                "--ready-file",
                "/r",
            ],
            {"TRNSPEC_DATA_DIR": "/data", "TRNSPEC_COMPILE_CACHE_URI": "s3://b/c"},
            ("/m", "/c", "s3://x/y", "/r"),
        ),
    ],
    ids=["defaults", "pod-environment", "flags-win"],
)
def test_options_come_from_flags_then_the_pod_environment(
    argv: list[str], environ: dict[str, str], expected: tuple[Any, ...]
) -> None:
    o = resolve_options(parse_serve(argv), environ)
    assert (o.models_root, o.compiled_root, o.compile_cache, o.ready_file) == expected


def test_ready_file_that_cannot_be_written_does_not_crash(tmp_path: Path) -> None:
    ready = ReadyFile(tmp_path / "no-such-dir" / "ready")
    ready.set()
    ready.clear()
    assert not ready.path.exists()


def test_a_corrupt_compile_cache_is_recompiled_and_replaced(s3: Any, tmp_path: Path) -> None:
    cfg, fake = s3_qwen(), FakeVllm()
    first = options(tmp_path, "pod1")
    plan = plan_for(cfg, first)
    assert execute(cfg, plan, first, fake, s3) == 0
    assert plan.cache is not None
    s3.put_object(Bucket="cache", Key=f"neuron/{plan.cache.key}/model.neff", Body=b"garbage!!!!!!!")
    second = options(tmp_path, "pod2")
    plan2 = plan_for(cfg, second)
    assert execute(cfg, plan2, second, fake, s3) == 0
    third = options(tmp_path, "pod3")
    plan3 = plan_for(cfg, third)
    assert execute(cfg, plan3, third, fake, s3) == 0
    assert [warm for _, warm in fake.calls] == [False, False, True]


# --- faults while staging -------------------------------------------------------------------------


def credentials_arrive_after(s3: Any, failures: int) -> list[int]:
    """Make the first `failures` S3 reads fail as they do before a pod's credentials exist."""
    from botocore.exceptions import NoCredentialsError

    seen = [0]

    def hook(**_: Any) -> None:
        seen[0] += 1
        if seen[0] <= failures:
            raise NoCredentialsError()

    s3.meta.events.register("before-parameter-build.s3.GetObject", hook)
    return seen


def test_serve_waits_for_credentials_that_arrive_late(s3: Any, tmp_path: Path) -> None:
    credentials_arrive_after(s3, 2)
    cfg, fake = s3_qwen(), FakeVllm()
    opts = dataclasses.replace(options(tmp_path, "pod"), stage_retry_delays=(3.0, 6.0, 12.0))
    slept: list[float] = []
    assert execute(cfg, plan_for(cfg, opts), opts, fake, s3, sleep=slept.append) == 0
    assert slept == [3.0, 6.0] and len(fake.calls) == 1


def test_serve_without_credentials_exits_1_after_a_bounded_wait(
    s3: Any, tmp_path: Path, capsys: Any
) -> None:
    credentials_arrive_after(s3, 10**6)
    cfg, fake = s3_qwen(), FakeVllm()
    opts = dataclasses.replace(options(tmp_path, "pod"), stage_retry_delays=(1.0, 2.0))
    slept: list[float] = []
    assert execute(cfg, plan_for(cfg, opts), opts, fake, s3, sleep=slept.append) == 1
    err = capsys.readouterr().err
    assert slept == [1.0, 2.0] and fake.calls == []
    assert err.startswith("staging failed:") and "NoCredentialsError" in err
    assert "Traceback" not in err


def test_a_permanent_staging_failure_is_not_retried(s3: Any, tmp_path: Path) -> None:
    cfg = apply_overrides(s3_qwen(), ["target.source=s3://models/not-published"])
    opts = options(tmp_path, "pod")
    slept: list[float] = []
    assert execute(cfg, plan_for(cfg, opts), opts, FakeVllm(), s3, sleep=slept.append) == 1
    assert slept == []


def test_restaging_removes_files_of_an_earlier_version(s3: Any, tmp_path: Path) -> None:
    cfg, fake = s3_qwen(), FakeVllm()
    opts = options(tmp_path, "pod")
    plan = plan_for(cfg, opts)
    assert execute(cfg, plan, opts, fake, s3) == 0
    stale = Path(plan.stage[0].local_dir) / "model-00002-of-00002.safetensors"
    stale.write_bytes(b"from the previous version")
    assert execute(cfg, plan, opts, fake, s3) == 0
    assert not stale.exists()


@pytest.mark.parametrize("raw", ["soon", "-1", "nan", "inf"])
def test_a_bad_drain_seconds_environment_value_is_a_named_problem(raw: str) -> None:
    with pytest.raises(ConfigError) as err:
        resolve_options(parse_serve([]), {"TRNSPEC_DRAIN_SECONDS": raw})
    assert err.value.problems[0].field == "TRNSPEC_DRAIN_SECONDS"


def test_the_precompile_job_waits_for_credentials_too(s3: Any, tmp_path: Path) -> None:
    credentials_arrive_after(s3, 1)
    cfg, fake = s3_qwen(), FakeVllm()
    opts = dataclasses.replace(compile_only(tmp_path, "job"), stage_retry_delays=(2.0,))
    slept: list[float] = []
    code = execute(cfg, plan_for(cfg, opts), opts, fake, s3, stop=lambda: None, sleep=slept.append)
    assert code == 0 and slept == [2.0] and len(fake.calls) == 1
