"""trnspec_tools.smoke against the fault server (tests/trnspec_tools/fault_server.py: real HTTP
on 127.0.0.1) whose faults are switched on per test (`--stack`:
tests/trnspec_tools/client/test_stack_endpoint.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fault_server import Faults, FaultServer, fault_server

from trnspec_tools.client.openai_client import Generation
from trnspec_tools.smoke import main, run_smoke


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
    check = next(c for c in result.checks if c.name == "spec-decode metrics")
    assert check.ok is None
    assert "acceptance not checked" in check.detail and "no vllm:spec_decode_*" in check.detail


@pytest.mark.parametrize(("shift", "lossless"), [(0, True), (1, False)], ids=["same", "differs"])
def test_lossless_check_can_use_outputs_recorded_from_an_earlier_baseline_run(
    fake_server: FaultServer, baseline_server: FaultServer, shift: int, lossless: bool
) -> None:
    baseline_server.faults = Faults(token_shift=shift)
    recorded = run_smoke(baseline_server.url, expect_speculation=False, max_tokens=8)
    assert recorded.ok
    result = run_smoke(fake_server.url, baseline_greedy=recorded.greedy, max_tokens=8)
    check = next(c for c in result.checks if c.name == "lossless vs baseline")
    assert check.ok is lossless


def test_finish_reason_length_must_match_max_tokens(fake_server: FaultServer) -> None:
    result = run_smoke(fake_server.url, max_tokens=4)  # the fake stops at 10 tokens: "length"
    assert "completion #1" not in failed(result)
    assert next(c for c in result.checks if c.name == "completion #1").detail.startswith("4 tokens")


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
