"""trnspec_tools.smoke against the fault server (tests/trnspec_tools/fault_server.py: real HTTP
on 127.0.0.1) whose faults are switched on per test (`--stack`:
tests/trnspec_tools/client/test_stack_endpoint.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fault_server import Faults, FaultServer, fault_server

from trnspec_tools.client.openai_client import Generation
from trnspec_tools.smoke import Check, main, run_smoke


@pytest.fixture
def fake_server() -> Iterator[FaultServer]:
    with fault_server() as server:
        yield server


@pytest.fixture
def baseline_server() -> Iterator[FaultServer]:
    with fault_server() as server:
        yield server


def failed(result) -> set[str]:
    return {c.name for c in result.failures}


def check_named(result, name: str) -> Check:
    return next(c for c in result.checks if c.name == name)


def test_a_healthy_speculative_server_passes_every_check(
    fake_server: FaultServer, baseline_server: FaultServer
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
    fake_server: FaultServer,
    baseline_server: FaultServer,
    faults: Faults,
    expected_failures: set[str],
) -> None:
    fake_server.faults = faults
    result = run_smoke(fake_server.url, baseline_endpoint=baseline_server.url, max_tokens=8)
    assert expected_failures <= failed(result)
    assert all(c.detail for c in result.failures)


def test_an_endpoint_without_spec_decode_counters_is_not_checked_and_not_failed(
    fake_server: FaultServer,
) -> None:
    """The Neuron fork's fused speculation exports no vllm:spec_decode_* counters at all."""
    fake_server.fault = "no_counters"
    result = run_smoke(fake_server.url, max_tokens=8)
    assert result.ok
    check = check_named(result, "spec-decode metrics")
    assert check.ok is None
    assert "acceptance not checked" in check.detail and "no vllm:spec_decode_*" in check.detail


def test_a_counter_exported_twice_is_counted_once(fake_server: FaultServer) -> None:
    """`_total` beside the bare name: the server's acceptance (3 of 4 drafted tokens), not half
    of it."""
    fake_server.fault = "counters_twice"
    result = run_smoke(fake_server.url, max_tokens=8)
    check = check_named(result, "spec-decode metrics")
    assert check.ok is True and "acceptance 0.75" in check.detail


def test_a_counter_with_and_without_labels_fails_the_check_and_says_why(
    fake_server: FaultServer,
) -> None:
    fake_server.fault = "counters_unlabelled"
    result = run_smoke(fake_server.url, max_tokens=8)
    check = check_named(result, "spec-decode metrics")
    assert check.ok is False and "different label sets" in check.detail


@pytest.mark.parametrize(("shift", "lossless"), [(0, True), (1, False)], ids=["same", "differs"])
def test_lossless_check_can_use_outputs_recorded_from_an_earlier_baseline_run(
    fake_server: FaultServer, baseline_server: FaultServer, shift: int, lossless: bool
) -> None:
    baseline_server.faults = Faults(token_shift=shift)
    recorded = run_smoke(baseline_server.url, expect_speculation=False, max_tokens=8)
    assert recorded.ok
    result = run_smoke(fake_server.url, baseline_greedy=recorded.greedy, max_tokens=8)
    check = check_named(result, "lossless vs baseline")
    assert check.ok is lossless


def test_finish_reason_length_must_match_max_tokens(fake_server: FaultServer) -> None:
    result = run_smoke(fake_server.url, max_tokens=4)  # the fake stops at 10 tokens: "length"
    assert "completion #1" not in failed(result)
    assert check_named(result, "completion #1").detail.startswith("4 tokens")


def test_no_served_model_stops_early_with_a_named_failure(fake_server: FaultServer) -> None:
    fake_server.faults = Faults(no_models=True)
    result = run_smoke(fake_server.url)
    assert failed(result) == {"models"}


def test_an_unreachable_endpoint_is_a_failed_check_not_a_traceback() -> None:
    from trnspec_tools.local_engine.local_server import free_port

    result = run_smoke(f"http://127.0.0.1:{free_port()}")
    assert failed(result) == {"models"}
    assert "failed after retries" in result.failures[0].detail


def test_cli_exits_non_zero_naming_each_failure(
    fake_server: FaultServer, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_server.faults = Faults(frozen_metrics=True, chat_status=500)
    assert main(["--endpoint", fake_server.url, "--max-tokens", "8"]) == 1
    out = capsys.readouterr().out
    assert "FAILED (3)" in out
    for name in ("chat", "chat (stream)", "spec-decode metrics"):
        assert name in out


def test_cli_passes_against_a_healthy_server(
    fake_server: FaultServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--endpoint", fake_server.url, "--max-tokens", "8"]) == 0
    assert "all checks passed" in capsys.readouterr().out


def test_cli_rejects_a_bad_max_tokens_with_the_field_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--endpoint", "http://127.0.0.1:9", "--max-tokens", "0"]) == 2
    assert "--max-tokens=0" in capsys.readouterr().out


def test_a_model_the_server_does_not_list_fails_the_models_check_naming_both(
    fake_server: FaultServer,
) -> None:
    result = run_smoke(fake_server.url, model="another-model", max_tokens=8)
    assert failed(result) == {"models"}
    assert "'another-model' not served" in result.failures[0].detail
    assert "fake-model" in result.failures[0].detail


def test_every_request_to_either_server_is_greedy_and_the_baseline_is_asked_for_the_same_model(
    fake_server: FaultServer, baseline_server: FaultServer
) -> None:
    """Lossless is only defined under greedy decoding, model for model: a baseline that serves
    several models is asked for the target's, not its first."""
    baseline_server.faults = Faults(other_models=("listed-first",))
    result = run_smoke(fake_server.url, baseline_endpoint=baseline_server.url, max_tokens=8)
    assert result.ok, [(c.name, c.detail) for c in result.failures]
    bodies = fake_server.bodies + baseline_server.bodies
    assert len(baseline_server.bodies) == len(result.greedy) > 0
    assert {b["temperature"] for b in bodies} == {0.0}
    assert {b["model"] for b in bodies} == {"fake-model"}


def test_a_server_not_expected_to_speculate_is_not_scraped_for_counters(
    fake_server: FaultServer,
) -> None:
    result = run_smoke(fake_server.url, expect_speculation=False, max_tokens=8)
    assert result.ok
    assert fake_server.scrapes == 0
    check = check_named(result, "spec-decode metrics")
    assert (check.ok, check.detail) == (None, "speculation not expected")


def test_cli_no_speculation_does_not_require_or_scrape_counters(fake_server: FaultServer) -> None:
    fake_server.faults = Faults(frozen_metrics=True)
    assert main(["--endpoint", fake_server.url, "--max-tokens", "8", "--no-speculation"]) == 0
    assert fake_server.scrapes == 0


def test_cli_sends_the_key_of_the_named_variable_with_every_request(
    fake_server: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TRNSPEC_API_KEY", raising=False)
    monkeypatch.setenv("SMOKE_TEST_KEY", "sekret")
    argv = ["--endpoint", fake_server.url, "--max-tokens", "8", "--api-key-env", "SMOKE_TEST_KEY"]
    assert main(argv) == 0
    assert set(fake_server.auth_headers) == {"Bearer sekret"}


def test_cli_asks_for_the_max_tokens_given_and_retries_a_refusal_as_often_as_told(
    fake_server: FaultServer,
) -> None:
    fake_server.fault = "http_429"  # the first generation attempt: 429, Retry-After 1 s
    assert main(["--endpoint", fake_server.url, "--max-tokens", "4", "--max-retries", "1"]) == 0
    assert {b["max_tokens"] for b in fake_server.bodies} == {4}


def test_cli_waits_no_longer_than_the_retry_after_cap_given(fake_server: FaultServer) -> None:
    """A 429 asks for 30 s. With the cap given (0.1 s) the retry fits the 9 s deadline and the
    run passes; at the default cap (10 s) the wait would outlast the deadline, so the client gives
    up at once: the outcome tells the caps apart without timing anything."""
    fake_server.fault, fake_server.retry_after_s = "http_429", 30
    argv = ["--endpoint", fake_server.url, "--timeout", "9", "--max-retries", "1"]
    assert main([*argv, "--retry-after-cap", "0.1"]) == 0


def test_cli_fails_the_models_check_for_a_model_the_server_does_not_list(
    fake_server: FaultServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--endpoint", fake_server.url, "--model", "another-model"]) == 1
    assert "not served" in capsys.readouterr().out


@pytest.mark.timeout(60)  # the deadline given is 1 s; smoke's default first-byte wait is 120 s
def test_cli_gives_up_on_a_silent_server_at_the_deadline_given(fake_server: FaultServer) -> None:
    fake_server.fault = "silent"
    argv = ["--endpoint", fake_server.url, "--timeout", "1", "--max-retries", "0"]
    assert main(argv) == 1


def test_a_server_without_metrics_is_reported_as_acceptance_not_checked_not_as_a_failure(
    fake_server: FaultServer,
) -> None:
    fake_server.faults = Faults(no_metrics_endpoint=True)
    result = run_smoke(fake_server.url, max_tokens=8)
    assert result.ok, [(c.name, c.detail) for c in result.failures]
    check = check_named(result, "spec-decode metrics")
    assert check.ok is None
    assert check.detail == "acceptance not checked: the endpoint has no /metrics"


def test_finish_reason_length_short_of_max_tokens_fails_every_generation_check(
    fake_server: FaultServer,
) -> None:
    fake_server.faults = Faults(early_length=True)
    result = run_smoke(fake_server.url, max_tokens=16)  # the fake stops at 10 tokens
    assert failed(result) == {
        "completion #1", "completion #1 (stream)", "completion #2", "completion #2 (stream)",
        "completion #3", "completion #3 (stream)", "chat", "chat (stream)",
    }  # fmt: skip
    assert "finish_reason='length' but completion_tokens=10 (max_tokens=16)" in (
        result.failures[0].detail
    )


def test_stack_waking_gets_the_tools_timeout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--timeout bounds each AWS and Kubernetes call of --stack, the wake step's too (it used
    the 60 s default, three attempts: 194 s against a silent endpoint with --timeout 5)."""
    from trnspec_tools import smoke
    from trnspec_tools.client.stack_endpoint import StackError

    seen: list[float] = []

    def wake(*_: object, timeout_s: float, **__: object) -> None:
        seen.append(timeout_s)
        raise StackError("--stack=S: stopped here")

    monkeypatch.setattr(smoke, "wake_stack", wake)
    assert main(["--stack", "S", "--region", "us-east-2", "--timeout", "7"]) == 2
    assert seen == [7.0] and "stopped here" in capsys.readouterr().out
