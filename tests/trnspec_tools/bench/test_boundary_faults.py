"""Bench against the fault classes of issue 24 (fault_server.py): a figure that breaks an
invariant is absent with its reason, never printed; protocol quirks are handled, not tracebacks."""

from __future__ import annotations

import json

import pytest
from fault_server import fault_server
from test_faults import FAST_FLAGS, bench_argv

from trnspec_tools.bench.bench import main as bench_main
from trnspec_tools.bench.run import spec_decode_fields


def _bench(fault: str, tmp_path, *extra: str) -> tuple[int, dict]:
    out = tmp_path / "b.json"
    with fault_server(fault) as server:
        code = bench_main(bench_argv(server.url, out, *FAST_FLAGS, "--no-plots", *extra))
    return code, json.loads(out.read_text())


def test_usage_inflated_beyond_max_tokens_is_a_bad_response_not_a_throughput(tmp_path, capsys):
    code, result = _bench("usage_inflated", tmp_path)
    assert code == 1 and result["completed"] == 0
    assert result["errors"]["bad_response"] == 2
    assert result["output_tokens"] == 0
    assert result["acceptance_rate"] is None and result["mean_accepted_length"] is None
    assert "no request completed" in result["acceptance_note"]


@pytest.mark.parametrize("fault", ["counters_nan", "counters_inf", "position_huge", "position_nan"])
def test_unusable_counters_give_no_acceptance_and_say_why(fault, tmp_path, capsys):
    code, result = _bench(fault, tmp_path)
    assert code == 0 and result["completed"] == 2  # the run itself is fine
    assert result["acceptance_rate"] is None and result["mean_accepted_length"] is None
    assert "unusable counters" in result["acceptance_note"]


def test_a_counter_exported_twice_counts_once(tmp_path, capsys):
    """`_total` beside the bare name, one value: the acceptance is the server's 0.75, not the
    0.375 that summing both series gave."""
    code, result = _bench("counters_twice", tmp_path)
    assert code == 0 and result["completed"] == 2
    assert result["acceptance_source"] == "server-metrics"
    assert result["acceptance_rate"] == pytest.approx(0.75)


def test_a_counter_with_and_without_labels_gives_no_acceptance_and_says_why(tmp_path, capsys):
    code, result = _bench("counters_unlabelled", tmp_path)
    assert code == 0 and result["completed"] == 2
    assert result["acceptance_rate"] is None and result["mean_accepted_length"] is None
    assert "different label sets" in result["acceptance_note"]


@pytest.mark.parametrize(
    ("fault", "said"),
    [("metrics_401", "HTTP 401 (unauthorized"), ("metrics_403", "HTTP 403 (forbidden")],
)
def test_a_metrics_endpoint_that_refuses_the_client_is_said_as_such(fault, said, tmp_path, capsys):
    """Not "the server has no /metrics endpoint": it has one, and it refused this client."""
    code, result = _bench(fault, tmp_path)
    assert code == 0 and result["completed"] == 2
    assert result["acceptance_source"] == "estimate-from-chunks"  # labelled, with the reason
    assert (
        said in result["acceptance_note"]
        and "no /metrics endpoint" not in result["acceptance_note"]
    )


def test_an_interim_100_continue_is_skipped(tmp_path, capsys):
    code, result = _bench("continue_100", tmp_path)
    assert code == 0 and result["completed"] == 2
    assert result["acceptance_rate"] == pytest.approx(0.75)


def test_a_model_id_made_of_rich_markup_is_used_and_shown_as_written(tmp_path, capsys):
    code, result = _bench("model_markup", tmp_path)
    assert code == 0 and result["completed"] == 2
    assert result["config"]["model"] == "[bold]fake[/]"
    assert "model `[bold]fake[/]`" in capsys.readouterr().out


@pytest.mark.parametrize("fault", ["huge_header", "endless_line", "deep_json"])
def test_oversized_or_too_deep_answers_are_classified_errors(fault, tmp_path, capsys):
    code, result = _bench(fault, tmp_path)
    assert code == 1 and result["completed"] == 0
    assert sum(result["errors"].values()) - result["errors"]["total"] == result["errors"]["total"]


def test_counters_that_allow_more_than_k_draft_tokens_per_draft_are_refused(tmp_path, capsys):
    # the fault server drafts 4 tokens per draft: with k=2 that is impossible
    code, result = _bench(None, tmp_path, "--num-speculative-tokens", "2")
    assert code == 0 and result["acceptance_rate"] is None
    assert "more than k=2 per draft" in result["acceptance_note"]


def test_a_chunk_estimate_above_k_plus_1_is_not_reported():
    out = spec_decode_fields(None, None, tokens_per_step_estimate=4.5, k=2, completed=3)
    assert out.mean_accepted_length is None and out.acceptance_rate is None
    assert "above k+1=3" in str(out.acceptance_note)


def test_the_api_key_goes_only_to_the_endpoint_it_was_given_for(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRNSPEC_API_KEY", "sk-secret")
    out = tmp_path / "b.json"
    with fault_server() as target, fault_server() as baseline:
        code = bench_main(
            bench_argv(target.url, out, *FAST_FLAGS, "--no-plots", "--compare", baseline.url)
        )
        assert code == 0
        assert set(target.auth_headers) == {"Bearer sk-secret"}
        assert set(baseline.auth_headers) == {None}


def test_an_api_key_with_a_line_break_is_refused_before_anything_is_sent(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("TRNSPEC_API_KEY", "sk-secret\r\nX-Injected: 1")
    with fault_server() as server:
        code = bench_main(bench_argv(server.url, tmp_path / "b.json", *FAST_FLAGS))
        assert server.attempts == []
    err = capsys.readouterr().err
    assert code == 2 and "line break" in err and "sk-secret" not in err
