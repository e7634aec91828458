"""The fault suite of the client tools (issue 12): bench, smoke and tune against a server that
fails on purpose (fault_server.py). No wrong number reported as valid, no traceback, every wait
bounded by the request deadline, retries only before the first byte of an answer."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from fake_openai_server import running
from fault_server import FAULTS, MODEL, fault_server
from tls_listener import tls_server

from trnspec_tools.bench.bench import main as bench_main
from trnspec_tools.bench.run import RunOptions, run_level
from trnspec_tools.bench.workload import synthetic_prompts
from trnspec_tools.client.retry_rule import parse_retry_after, retry_delay
from trnspec_tools.smoke import main as smoke_main
from trnspec_tools.smoke import run_smoke
from trnspec_tools.tune.tune import main as tune_main

FAST = {
    "timeout_s": 1.0,
    "connect_timeout_s": 1.0,
    "first_byte_timeout_s": 1.0,
    "max_retries": 1,
    "retry_after_cap_s": 0.05,
    "warmup": 0,
}
FAST_FLAGS = [
    "--timeout",
    "1",
    "--connect-timeout",
    "1",
    "--first-byte-timeout",
    "1",
    "--max-retries",
    "1",
    "--retry-after-cap",
    "0.05",
]


def bench_level(url: str, n: int = 2, **opts: object) -> dict:
    specs = synthetic_prompts(n, 4, 6, seed=0)
    options = RunOptions(**{**FAST, **opts})  # type: ignore[arg-type]
    return asyncio.run(run_level(url, MODEL, specs, 2, options)).to_json()


def bench_argv(url: str, out: object, *extra: str, num_prompts: int = 2) -> list[str]:
    """A small bench run against `url`, its report at `out`, no progress bar; `extra` flags."""
    return [
        "--endpoint",
        url,
        *extra,
        "--num-prompts",
        str(num_prompts),
        "--output-len",
        "6",
        "--out",
        str(out),
        "--no-progress",
    ]


# --- the retry rule (pure) ---------------------------------------------------------------------


def test_retry_after_is_honoured_on_429_and_503_and_capped():
    assert retry_delay(0, status=429, retry_after="2", cap_s=10.0) == 2.0
    assert retry_delay(0, status=503, retry_after="3600", cap_s=10.0) == 10.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now_epoch_s=1445412470.0) == 10.0


@pytest.mark.parametrize("header", ["\u00b2", "\u0663", "1" * 400, "-5", "2.5", "soon"])
def test_a_retry_after_that_is_not_ascii_seconds_or_a_date_is_ignored(header):
    """Superscript two and Arabic-Indic three pass str.isdigit() (float() of them raised); 400
    digits, a sign, a fraction or a word are not delay-seconds either: the backoff applies."""
    assert parse_retry_after(header, now_epoch_s=0.0) is None
    assert retry_delay(1, status=503, retry_after=header, backoff_s=0.5, cap_s=10.0) == 1.0


def test_only_answers_without_content_and_connect_failures_are_retried():
    assert retry_delay(0, status=None, backoff_s=0.5) == 0.5  # could not connect
    assert retry_delay(2, status=502, backoff_s=0.5) == 2.0  # exponential backoff
    for final in (400, 401, 404, 422, 501):
        assert retry_delay(0, status=final) is None


# --- bench: each fault ends as a counted error or an absent figure, within the deadline -------


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        ("http_500", "http_5xx"),
        ("http_429_forever", "http_429"),
        ("cut_stream", "dropped_stream"),
        ("json_array", "bad_response"),
        ("not_json", "bad_response"),
        ("non_utf8", "bad_response"),
        ("choices_empty", "bad_response"),
        ("trickle", "timeout"),
        ("silent", "timeout"),
    ],
)
def test_bench_counts_each_stream_fault_by_kind(fault, kind):
    with fault_server(fault) as server:
        r = bench_level(server.url)
    assert r["completed"] == 0
    assert r["errors"] == {"total": 2, kind: 2}
    assert r["output_tokens_per_s"] == 0
    if kind in ("http_5xx", "http_429"):
        assert r["retries"] == 2  # one retry each (the bound), before any byte of content
    else:
        assert r["retries"] == 0  # a request that got an answer is never re-sent


@pytest.mark.parametrize("fault", ["data_no_space", "done_never_closes"])
def test_complete_streams_count_as_complete_however_framed_and_whether_or_not_the_body_ends(
    fault,
):
    """`data:` without its space is the same event; a stream that reached [DONE] is complete
    even when its chunked body never ends (it used to be reported as a timeout)."""
    with fault_server(fault) as server:
        r = bench_level(server.url, timeout_s=10.0, first_byte_timeout_s=10.0)
    assert r["errors"] == {"total": 0}
    assert r["completed"] == 2 and r["output_tokens"] == 2 * 6


def test_keep_alive_trickle_cannot_stretch_a_request_past_its_deadline():
    """Each keep-alive comment arrives well within any per-read timeout; only a deadline for the
    whole request ends it (issue 12: `--timeout 3` used to let a request run 25 s)."""
    with fault_server("trickle") as server:
        r = bench_level(server.url, n=1, timeout_s=0.5, first_byte_timeout_s=0.5)
    assert r["errors"] == {"total": 1, "timeout": 1}
    assert r["duration_s"] < 5.0  # bound: 0.5 s deadline; generous for a loaded host


def test_a_429_is_retried_after_the_delay_the_server_asked_for():
    with fault_server("http_429") as server:
        r = bench_level(server.url, n=1, retry_after_cap_s=10.0, timeout_s=5.0)
        gap = server.attempts[1] - server.attempts[0]
    assert r["completed"] == 1 and r["retries"] == 1
    assert gap >= 1.0  # Retry-After: 1 (a lower bound: sleeps never end early)


def test_usage_that_is_not_an_object_falls_back_to_counting_chunks():
    with fault_server("usage_na") as server:
        r = bench_level(server.url)
    assert r["completed"] == 2
    assert r["usage_reported"] is False
    assert r["output_tokens"] == 2 * 6  # one token per chunk here


@pytest.mark.parametrize(
    ("fault", "reason"),
    [("counters_reset", "reset"), ("counters_inconsistent", "inconsistent counters")],
)
def test_bench_reports_no_acceptance_from_counters_that_reset_or_disagree(fault, reason):
    with fault_server(fault) as server:
        r = bench_level(server.url)
    assert r["completed"] == 2
    assert r["acceptance_rate"] is None and r["mean_accepted_length"] is None
    assert r["acceptance_source"] is None
    assert reason in r["acceptance_note"]


def test_without_counters_bench_labels_its_chunk_estimate_and_says_why():
    with fault_server("no_counters") as server:
        r = bench_level(server.url)
    assert r["acceptance_source"] == "estimate-from-chunks"
    assert "no vllm:spec_decode_* counters" in r["acceptance_note"]


def test_counters_from_a_non_utf8_exposition_are_still_read():
    with fault_server("metrics_non_utf8") as server:
        r = bench_level(server.url)
    assert r["acceptance_source"] == "server-metrics"
    assert r["acceptance_rate"] == pytest.approx(0.75)


@pytest.mark.parametrize("fault", [None, *FAULTS])
def test_bench_cli_never_prints_a_traceback(fault, tmp_path, capsys):
    out = tmp_path / "bench.json"
    with fault_server(fault) as server:
        code = bench_main(bench_argv(server.url, out, *FAST_FLAGS, "--warmup", "0", "--no-plots"))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    if fault in ("silent", "models_list", "model_surrogate", "models_deep"):
        assert code == 2 and "--model" in captured.err  # no model to discover: named, no run
        return
    assert code in (0, 1)
    result = json.loads(out.read_text())
    rate = result["acceptance_rate"]
    assert rate is None or 0.0 <= rate <= 1.0
    assert code == (0 if result["completed"] == 2 else 1)


# --- bench: --out is checked before the run, and a finished run is never lost -----------------


def test_an_out_path_that_is_a_directory_is_refused_before_the_run(tmp_path, capsys):
    with fault_server() as server:
        code = bench_main(["--endpoint", server.url, "--out", str(tmp_path), "--no-progress"])
        assert server.attempts == []  # nothing was sent
    err = capsys.readouterr().err
    assert code == 2 and f"--out={tmp_path}: is a directory" in err


def test_an_out_path_under_a_file_is_refused_before_the_run(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    code = bench_main(
        ["--endpoint", "http://127.0.0.1:9", "--out", str(tmp_path / "file" / "b.json")]
    )
    assert code == 2 and "is a file, not a directory" in capsys.readouterr().err


def test_results_are_kept_elsewhere_when_the_report_cannot_be_written(
    tmp_path, capsys, monkeypatch
):
    import tempfile

    import trnspec.boundary.write as write

    original = write.write_file
    out_dir = tmp_path / "out"

    def full_disk(path: Path, data: bytes | str) -> Path:
        if Path(path).parent == out_dir:
            raise OSError(28, "No space left on device")
        return original(path, data)

    monkeypatch.setattr(write, "write_file", full_disk)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "spare"))
    (tmp_path / "spare").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", None)
    with fault_server() as server:
        code = bench_main(bench_argv(server.url, out_dir / "b.json", "--no-plots"))
    err = capsys.readouterr().err
    assert code == 1
    assert "No space left on device" in err and "kept it at" in err
    kept = next((tmp_path / "spare").glob("trnspec-bench-*/0-b.json"))
    assert str(kept) in err
    assert json.loads(kept.read_text())["completed"] == 2
    assert next((tmp_path / "spare").glob("trnspec-bench-*/1-b.md")).read_text().startswith("#")


def test_an_out_that_is_also_the_markdown_path_is_refused_before_the_run(tmp_path, capsys):
    code = bench_main(["--endpoint", "http://127.0.0.1:9", "--out", str(tmp_path / "r.md")])
    err = capsys.readouterr().err
    assert code == 2 and "one output would overwrite the other" in err
    assert not (tmp_path / "r.md").exists()


def test_report_files_are_readable_by_others_like_any_new_file(tmp_path):
    with fault_server() as server:
        code = bench_main(bench_argv(server.url, tmp_path / "b.json"))
    assert code == 0
    for path in tmp_path.iterdir():
        assert path.stat().st_mode & 0o044, f"{path.name} is not group/world readable"


# --- smoke -------------------------------------------------------------------------------------

SMOKE_OUTCOME = {
    None: (0, set()),
    "http_500": (1, {"completion #1", "completion #1 (stream)", "chat", "chat (stream)"}),
    "http_429": (0, set()),
    "http_429_forever": (1, {"completion #1", "chat"}),
    "cut_stream": (1, {"completion #1 (stream)", "chat (stream)"}),
    "json_array": (1, {"completion #1 (stream)", "chat (stream)"}),
    "not_json": (1, {"completion #1 (stream)", "chat (stream)"}),
    "non_utf8": (1, {"completion #1 (stream)", "chat (stream)"}),
    "trickle": (1, {"completion #1 (stream)", "chat (stream)"}),
    "silent": (1, {"models"}),
    "models_list": (1, {"models"}),
    "choices_empty": (1, {"completion #1", "chat"}),
    "message_null": (1, {"chat"}),
    "usage_na": (1, {"completion #1", "completion #1 (stream)", "chat", "chat (stream)"}),
    "counters_reset": (1, {"spec-decode metrics"}),
    "counters_inconsistent": (1, {"spec-decode metrics"}),
    "no_counters": (0, set()),
    "metrics_non_utf8": (0, set()),
    "usage_inflated": (1, {"completion #1", "completion #1 (stream)", "chat", "chat (stream)"}),
    "counters_nan": (1, {"spec-decode metrics"}),
    "counters_inf": (1, {"spec-decode metrics"}),
    "position_huge": (1, {"spec-decode metrics"}),
    "position_nan": (1, {"spec-decode metrics"}),
    "continue_100": (0, set()),
    "huge_header": (1, {"completion #1 (stream)", "chat (stream)"}),
    "model_markup": (0, set()),
    "model_surrogate": (1, {"models"}),
    "endless_line": (1, {"completion #1 (stream)", "chat (stream)"}),
    "deep_json": (1, {"completion #1 (stream)", "chat (stream)"}),
    "data_no_space": (0, set()),
    "done_never_closes": (0, set()),
    "counters_twice": (0, set()),
    "counters_unlabelled": (1, {"spec-decode metrics"}),
    "models_deep": (1, {"models"}),
    "metrics_401": (1, {"spec-decode metrics"}),
    "metrics_403": (1, {"spec-decode metrics"}),
}


def test_every_fault_has_an_expected_smoke_outcome():
    assert set(SMOKE_OUTCOME) == {None, *FAULTS}


@pytest.mark.parametrize("fault", list(SMOKE_OUTCOME))
def test_smoke_fails_the_checks_a_fault_breaks_and_nothing_else(fault, capsys):
    code, failing = SMOKE_OUTCOME[fault]
    with fault_server(fault) as server:
        got = smoke_main(["--endpoint", server.url, "--max-tokens", "6", *FAST_FLAGS])
    out = capsys.readouterr().out
    assert "Traceback" not in out
    assert got == code, out
    for name in failing:
        assert name in out
    if fault in ("counters_reset", "counters_inconsistent"):
        assert "acceptance" not in out.split("spec-decode metrics")[1].splitlines()[0]


def test_a_dropped_stream_is_a_failed_request_not_a_false_lossless_verdict():
    """A cut stream is never retried and spliced with a second attempt: the check names the
    broken connection, and the comparison with the non-streamed text does not run."""
    with fault_server("cut_stream") as server:
        result = run_smoke(server.url, max_tokens=6)
        posts = len(server.attempts)
    check = next(c for c in result.checks if c.name == "completion #1 (stream)")
    assert check.ok is False and "[DONE]" in check.detail
    assert "streamed != non-streamed" not in check.detail
    assert posts == 2 * 4  # each of the four prompts: one plain, one streamed; no re-sends


def test_smoke_does_not_claim_a_comparison_that_did_not_run():
    with fault_server("choices_empty") as server:
        result = run_smoke(server.url, max_tokens=6)
    for check in result.checks:
        assert "same text as non-streamed" not in check.detail or check.name.endswith("(stream)")
    stream = next(c for c in result.checks if c.name == "completion #1 (stream)")
    assert "same text" not in stream.detail


def test_a_silent_server_is_given_up_on_at_the_first_byte_deadline():
    with fault_server("silent") as server:
        code = smoke_main(["--endpoint", server.url, *FAST_FLAGS])
    assert code == 1


# --- tune --------------------------------------------------------------------------------------


@pytest.mark.parametrize("fault", ["trickle", "http_500", "json_array"])
def test_tune_ends_with_a_line_not_a_traceback(fault, tmp_path, capsys):
    with fault_server(fault) as server:
        code = tune_main(
            [
                "--endpoint-for-k",
                f"2={server.url}",
                "--baseline",
                server.url,
                "--model",
                MODEL,
                "--num-prompts",
                "2",
                "--output-len",
                "6",
                "--timeout",
                "1",
                "--rounds",
                "1",
                "--max-retries",
                "0",
                "--out",
                str(tmp_path / "tune.json"),
                "--no-plots",
            ]
        )
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    assert code != 0


# --- API key -----------------------------------------------------------------------------------


def test_bench_smoke_and_tune_send_the_api_key_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_KEY", "s3cret")
    monkeypatch.setenv("TRNSPEC_API_KEY", "default-key")
    with fault_server() as server:
        bench_main(
            bench_argv(
                server.url,
                tmp_path / "b.json",
                "--api-key-env",
                "MY_KEY",
                "--no-plots",
                num_prompts=1,
            )
        )
        bench_seen = set(server.auth_headers)
        server.auth_headers.clear()
        smoke_main(["--endpoint", server.url, "--api-key-env", "MY_KEY", "--max-tokens", "6"])
        smoke_seen = set(server.auth_headers)
        server.auth_headers.clear()
        tune_main(
            [
                "--endpoint-for-k",
                f"2={server.url}",
                "--baseline",
                server.url,
                "--num-prompts",
                "1",
                "--output-len",
                "6",
                "--out",
                str(tmp_path / "t.json"),
                "--no-plots",
            ]
        )
        tune_seen = set(server.auth_headers)
    assert bench_seen == smoke_seen == {"Bearer s3cret"}
    assert tune_seen == {"Bearer default-key"}  # TRNSPEC_API_KEY when no flag names another


def test_an_api_key_env_that_is_not_set_is_refused_with_the_flag_named(tmp_path, capsys):
    code = bench_main(
        ["--endpoint", "http://127.0.0.1:9", "--api-key-env", "NOPE_NOT_SET", "--out", "x.json"]
    )
    assert code == 2 and "--api-key-env=NOPE_NOT_SET" in capsys.readouterr().err
    assert smoke_main(["--endpoint", "http://127.0.0.1:9", "--api-key-env", "NOPE_NOT_SET"]) == 2


@pytest.mark.parametrize("environment_key", [None, "sk-not-given"])
def test_no_key_given_no_authorization_header(tmp_path, monkeypatch, environment_key):
    """The runner sends only the key its caller gives: not $TRNSPEC_API_KEY on its own."""
    if environment_key is None:
        monkeypatch.delenv("TRNSPEC_API_KEY", raising=False)
    else:
        monkeypatch.setenv("TRNSPEC_API_KEY", environment_key)
    with fault_server() as server:
        bench_level(server.url, n=1)
    assert server.auth_headers == [None]


@pytest.mark.parametrize(
    ("content", "needle"),
    [(b'{"prompt": "caf\xe9"}\n', "not UTF-8"), (b"[1, 2]\n", '"prompt"')],
    ids=["latin-1", "json-array-line"],
)
def test_a_bad_dataset_file_is_one_line_not_a_traceback(tmp_path, capsys, content, needle):
    data = tmp_path / "prompts.jsonl"
    data.write_bytes(content)
    code = bench_main(
        ["--endpoint", "http://127.0.0.1:9", "--dataset", str(data), "--out", str(tmp_path / "o")]
    )
    err = capsys.readouterr().err
    assert code == 2 and needle in err and "Traceback" not in err


# --- what a request that cannot be made at all is counted as ----------------------------------


def test_a_refused_certificate_is_counted_as_such_and_not_retried(tmp_path):
    with tls_server(tmp_path) as url:
        r = bench_level(url, warmup=0, max_retries=2)
    assert r["errors"] == {"total": 2, "tls_certificate": 2}
    assert r["retries"] == 0  # the same handshake would be refused again


def test_a_failed_tls_handshake_is_counted_as_such_and_not_retried():
    with fault_server() as server:
        r = bench_level(server.url.replace("http://", "https://"), warmup=0, max_retries=2)
    assert r["errors"] == {"total": 2, "tls": 2} and r["retries"] == 0


def test_a_404_is_counted_apart_from_other_4xx():
    with running() as url:  # its routes are exact: /api/v1/completions is not one
        r = bench_level(url + "/api", warmup=0)
    assert r["errors"] == {"total": 2, "http_404": 2} and r["retries"] == 0
