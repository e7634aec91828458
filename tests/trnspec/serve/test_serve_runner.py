"""The runner under moto: staging, the re-check of staged models, the compile cache, compile-only
(the precompile Job) and faults while staging. vLLM is a fake that 'compiles' into the artifact
directory."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from serve_fakes import s3_qwen
from trnspec.config.serving import ConfigError, ServingConfig, apply_overrides, load_profile
from trnspec.engine.render import RenderedCommand
from trnspec.serve.runner import ServeOptions, SuperviseVllm, execute
from trnspec.serve.steps import serve_steps
from trnspec.staging.transfer import S3Location, TransferSettings, fetch_manifest, upload

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


def steps_for(cfg: ServingConfig, opts: ServeOptions) -> Any:
    """The steps serve takes for a config under a pod's options (where it stages and caches)."""
    return serve_steps(
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
    steps = steps_for(cfg, first)
    assert execute(cfg, steps, first, fake, s3) == 0
    assert steps.cache is not None
    assert fetch_manifest(s3, S3Location("cache", f"neuron/{steps.cache.key}")) is not None
    second = options(tmp_path, "pod2")
    steps2 = steps_for(cfg, second)
    assert execute(cfg, steps2, second, fake, s3) == 0
    assert [warm for _, warm in fake.calls] == [False, True]


def test_staged_models_are_checked_again_from_their_config_files(s3: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad-draft"
    bad.mkdir()
    (bad / "config.json").write_text(json.dumps(QWEN3_17B | {"vocab_size": 32000}))
    upload(s3, bad, S3Location("models", "Qwen3-1.7B"))  # same name, other tokenizer
    cfg, fake = s3_qwen(), FakeVllm()
    opts = options(tmp_path, "pod")
    steps = steps_for(cfg, opts)
    with pytest.raises(ConfigError, match=r"speculation\.draft\.source=.*vocabulary"):
        execute(cfg, steps, opts, fake, s3)
    assert fake.calls == []  # vLLM never started


def test_a_model_never_published_fails_staging_after_a_bounded_wait_without_starting_vllm(
    s3: Any, tmp_path: Path, capsys: Any, caplog: Any
) -> None:
    cfg = apply_overrides(s3_qwen(), ["speculation.draft.source=s3://models/Qwen3-1.7B-missing"])
    fake = FakeVllm()
    opts = dataclasses.replace(options(tmp_path, "pod"), weights_wait_delays=(30.0, 60.0))
    slept: list[float] = []
    with caplog.at_level(logging.WARNING, logger="trnspec.serve"):
        assert execute(cfg, steps_for(cfg, opts), opts, fake, s3, sleep=slept.append) == 1
    assert slept == [30.0, 60.0]
    assert "nothing published at s3://models/Qwen3-1.7B-missing" in capsys.readouterr().err
    waits = [r.getMessage() for r in caplog.records if "not published yet" in r.getMessage()]
    assert len(waits) == 2  # one line per wait, naming the source and the delay
    assert "s3://models/Qwen3-1.7B-missing" in waits[0] and "waiting 30s, 1 more waits" in waits[0]
    assert fake.calls == []


class PublishedDuringWait:
    """A sleep that records each wait and publishes a model (what the weights Job does) during
    the `at`-th one."""

    def __init__(self, s3: Any, src: Path, name: str, config: dict[str, Any], at: int) -> None:
        src.mkdir()
        (src / "config.json").write_text(json.dumps(config))
        (src / "model.safetensors").write_bytes(os.urandom(1000))
        self.s3, self.src, self.name, self.at = s3, src, name, at
        self.slept: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.slept.append(seconds)
        if len(self.slept) == self.at:
            upload(self.s3, self.src, S3Location("models", self.name))


@pytest.mark.parametrize(
    ("compile", "model", "config", "published_at"),
    [(False, "Qwen3-1.7B", QWEN3_17B, 2), (True, "Qwen3-32B", QWEN3_32B, 1)],
    ids=["replica-waits-for-its-draft", "precompile-job-waits-for-its-target"],
)
def test_a_pod_started_before_its_weights_waits_and_runs_once_they_are_published(
    s3: Any, tmp_path: Path, compile: bool, model: str, config: dict[str, Any], published_at: int
) -> None:
    """The first deploy: the replica, the precompile Job and the weights Job start together;
    the first two wait for what the third publishes, then serve or compile."""
    field = "target.source" if model == "Qwen3-32B" else "speculation.draft.source"
    cfg = apply_overrides(s3_qwen(), [f"{field}=s3://models/{model}-late"])
    sleep = PublishedDuringWait(s3, tmp_path / "late", f"{model}-late", config, published_at)
    fake = FakeVllm()
    base = compile_only(tmp_path, "job") if compile else options(tmp_path, "pod")
    opts = dataclasses.replace(base, weights_wait_delays=(30.0, 60.0, 120.0))
    code = execute(cfg, steps_for(cfg, opts), opts, fake, s3, stop=lambda: None, sleep=sleep)
    assert code == 0 and len(fake.calls) == 1
    assert sleep.slept == [30.0, 60.0][:published_at]


def test_the_default_weights_wait_is_bounded_to_about_two_hours() -> None:
    delays = ServeOptions().weights_wait_delays
    assert delays[:4] == (30.0, 60.0, 120.0, 240.0) and max(delays) == 300.0
    assert 1.9 * 3600 < sum(delays) < 2.1 * 3600


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
    steps = steps_for(cfg, opts)
    with caplog.at_level(logging.WARNING, logger="trnspec.serve"):
        assert execute(cfg, steps, opts, fake, s3) == 0
    assert "could not publish the compile cache" in caplog.text and "AccessDenied" in caplog.text
    assert steps.cache is not None
    assert fetch_manifest(s3, S3Location("cache", f"neuron/{steps.cache.key}")) is None


def test_a_compile_file_holding_the_api_key_never_reaches_the_bucket(
    s3: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    key = "s3cr3t" * 8
    factors = "torch_compile_cache/0f/rank_0_0/backbone/cache_key_factors.json"

    class KeyedVllm(FakeVllm):
        """vLLM 0.24 writes its raw env factors, VLLM_API_KEY included, into the compile dir."""

        def __call__(self, command: RenderedCommand, on_first_ready: Any) -> int:
            path = Path(command.env["NEURON_COMPILED_ARTIFACTS"]) / factors
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"env": {"VLLM_API_KEY": key, "VLLM_TARGET": "neuron"}}))
            return super().__call__(command, on_first_ready)

    cfg, fake = s3_qwen(), KeyedVllm()
    opts = options(tmp_path, "pod")
    steps = steps_for(cfg, opts)
    with caplog.at_level(logging.WARNING, logger="trnspec.serve"):
        assert execute(cfg, steps, opts, fake, s3, api_key=key) == 0
    assert steps.cache is not None
    published = fetch_manifest(s3, S3Location("cache", f"neuron/{steps.cache.key}"))
    assert published is not None
    assert [e.path for e in published.files] == ["model.neff"]
    for obj in s3.list_objects_v2(Bucket="cache")["Contents"]:
        body = s3.get_object(Bucket="cache", Key=obj["Key"])["Body"].read()
        assert key.encode() not in body, obj["Key"]
    assert f"left out of the compile cache: {factors} holds the API key" in caplog.text
    assert key not in caplog.text


def test_a_corrupt_compile_cache_is_recompiled_and_replaced(s3: Any, tmp_path: Path) -> None:
    cfg, fake = s3_qwen(), FakeVllm()
    first = options(tmp_path, "pod1")
    steps = steps_for(cfg, first)
    assert execute(cfg, steps, first, fake, s3) == 0
    assert steps.cache is not None
    key = f"neuron/{steps.cache.key}/model.neff"
    s3.put_object(Bucket="cache", Key=key, Body=b"garbage!!!!!!!")
    second = options(tmp_path, "pod2")
    steps2 = steps_for(cfg, second)
    assert execute(cfg, steps2, second, fake, s3) == 0
    third = options(tmp_path, "pod3")
    steps3 = steps_for(cfg, third)
    assert execute(cfg, steps3, third, fake, s3) == 0
    assert [warm for _, warm in fake.calls] == [False, False, True]


def compile_only(tmp_path: Path, run: str) -> ServeOptions:
    return dataclasses.replace(options(tmp_path, run), compile_only=True)


def test_compile_only_compiles_publishes_and_stops(s3: Any, tmp_path: Path) -> None:
    cfg, fake, stops = s3_qwen(), FakeVllm(), []
    opts = compile_only(tmp_path, "job")
    steps = steps_for(cfg, opts)
    assert execute(cfg, steps, opts, fake, s3, stop=lambda: stops.append(1)) == 0
    assert stops == [1]
    assert steps.cache is not None
    assert fetch_manifest(s3, S3Location("cache", f"neuron/{steps.cache.key}")) is not None
    # A second run finds the key published and starts nothing, stages nothing.
    again = compile_only(tmp_path, "job2")
    steps2 = steps_for(cfg, again)
    assert execute(cfg, steps2, again, fake, s3) == 0
    assert len(fake.calls) == 1
    assert not Path(again.models_root).exists()


def test_compile_only_fails_when_vllm_dies_before_answering(s3: Any, tmp_path: Path) -> None:
    cfg, opts = s3_qwen(), compile_only(tmp_path, "job")
    steps = steps_for(cfg, opts)
    assert execute(cfg, steps, opts, lambda command, ready: 7, s3) == 7


def test_compile_only_needs_a_compile_cache() -> None:
    cfg = load_profile("qwen3-32b-draft")
    opts = ServeOptions(compile_only=True, progress=False)
    with pytest.raises(ConfigError, match="--compile-only"):
        execute(cfg, serve_steps(cfg), opts, FakeVllm())


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
    assert execute(cfg, steps_for(cfg, opts), opts, fake, s3, sleep=slept.append) == 0
    assert slept == [3.0, 6.0] and len(fake.calls) == 1


def test_serve_without_credentials_exits_1_after_a_bounded_wait(
    s3: Any, tmp_path: Path, capsys: Any
) -> None:
    credentials_arrive_after(s3, 10**6)
    cfg, fake = s3_qwen(), FakeVllm()
    opts = dataclasses.replace(options(tmp_path, "pod"), stage_retry_delays=(1.0, 2.0))
    slept: list[float] = []
    assert execute(cfg, steps_for(cfg, opts), opts, fake, s3, sleep=slept.append) == 1
    err = capsys.readouterr().err
    assert slept == [1.0, 2.0] and fake.calls == []
    assert err.startswith("staging failed:") and "NoCredentialsError" in err
    assert "Traceback" not in err


def test_a_permanent_staging_failure_is_not_retried(s3: Any, tmp_path: Path) -> None:
    cfg = apply_overrides(s3_qwen(), ["target.source=s3://no-such-bucket/m"])
    opts = options(tmp_path, "pod")
    slept: list[float] = []
    assert execute(cfg, steps_for(cfg, opts), opts, FakeVllm(), s3, sleep=slept.append) == 1
    assert slept == []


def test_restaging_removes_files_of_an_earlier_version(s3: Any, tmp_path: Path) -> None:
    cfg, fake = s3_qwen(), FakeVllm()
    opts = options(tmp_path, "pod")
    steps = steps_for(cfg, opts)
    assert execute(cfg, steps, opts, fake, s3) == 0
    stale = Path(steps.stage[0].local_dir) / "model-00002-of-00002.safetensors"
    stale.write_bytes(b"from the previous version")
    assert execute(cfg, steps, opts, fake, s3) == 0
    assert not stale.exists()


def test_the_precompile_job_waits_for_credentials_too(s3: Any, tmp_path: Path) -> None:
    credentials_arrive_after(s3, 1)
    cfg, fake = s3_qwen(), FakeVllm()
    opts = dataclasses.replace(compile_only(tmp_path, "job"), stage_retry_delays=(2.0,))
    slept: list[float] = []
    code = execute(cfg, steps_for(cfg, opts), opts, fake, s3, stop=lambda: None, sleep=slept.append)
    assert code == 0 and slept == [2.0] and len(fake.calls) == 1


# --- the pod's supervise function -------------------------------------------------------------

KEY = "k" * 48


def test_the_pods_supervise_gives_the_key_to_vllms_environment_only(tmp_path: Path) -> None:
    """The child sees the command's env plus VLLM_API_KEY; its exit code comes back; the key
    is in no argv and not in the supervise object's repr (which a traceback could print)."""
    check_env = (
        "import os, sys; "
        f"sys.exit(0 if os.environ.get('VLLM_API_KEY') == {KEY!r} "
        "and os.environ.get('FROM_COMMAND') == '1' else 5)"
    )
    command = RenderedCommand(
        image="test", argv=[sys.executable, "-c", check_env], env={"FROM_COMMAND": "1"}
    )
    opts = dataclasses.replace(
        ServeOptions(progress=False), ready_file=str(tmp_path / "ready"), poll_interval=0.05
    )
    supervise = SuperviseVllm(load_profile("local-tiny"), opts, KEY)
    assert supervise(command, None) == 0
    assert KEY not in repr(supervise)
    assert SuperviseVllm(load_profile("local-tiny"), opts, None)(command, None) == 5
