"""`calibrate run` against two fake servers with exactly known timing and counters: the figures it
reports are the known truth, the arms alternate ABBA, and a broken arm is reported as failed."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import pytest
import yaml
from fake_openai_server import running

from trnspec_tools.ab.order import measurement_steps
from trnspec_tools.bench.run import RunOptions
from trnspec_tools.calibration import run as calibrate_run
from trnspec_tools.calibration.measure import ArmEndpoint, measure
from trnspec_tools.calibration.run import main as run_main
from trnspec_tools.tune.trn2_rows import conditions_for

TTFT_MS, ITL_MS, OUTPUT_LEN = 40.0, 25.0, 12
#: The speculative fake emits 3 tokens per step at k=4: 11 decode tokens in steps 3,3,3,2.
SPEC_STEPS = 4
PLAIN_TPOT_MS = ITL_MS  # one token per step
SPEC_TPOT_MS = SPEC_STEPS * ITL_MS / (OUTPUT_LEN - 1)
#: accepted per request 2+2+2+1 of 4 steps x 4 drafts
SPEC_ACCEPTANCE = 7 / 16
SPEC_MEAN_ACCEPTED_LENGTH = 1 + 7 / 4


def _args(plain: str, spec: str, out: Path, *extra: str) -> list[str]:
    return [
        "--plain", plain, "--speculative", spec,
        "--plain-model", "fake", "--speculative-model", "fake",
        "--concurrency", "1,2", "--rounds", "2", "--num-prompts", "4",
        "--output-len", str(OUTPUT_LEN), "--k", "4", "--timeout", "20",
        "--out-dir", str(out), *extra,
    ]  # fmt: skip


def _servers(k: int = 4):
    plain = running("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS),
                    "--tokens-per-step", "1", "--k", "1", "--no-spec-metrics")  # fmt: skip
    spec = running("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS),
                   "--tokens-per-step", "3", "--k", str(k))  # fmt: skip
    return plain, spec


#: the window of the qwen3-4b-dflash profile the rows are written for
DFLASH_K = 15


def close(measured: float, expected: float, rel: float = 0.05, abs_ms: float = 1.0) -> bool:
    return abs(measured - expected) <= rel * expected + abs_ms


def test_the_run_reports_the_servers_known_timing_acceptance_and_verdict(tmp_path: Path) -> None:
    """The speculative fake drafts the profile's k=15 and emits 3 tokens per step."""
    plain_srv, spec_srv = _servers(DFLASH_K)
    with plain_srv as plain, spec_srv as spec:
        code = calibrate_run.main(
            _args(plain, spec, tmp_path, "--plain-profile", "qwen3-4b-baseline",
                  "--speculative-profile", "qwen3-4b-dflash",
                  "--price-per-hour-plain", "2.235", "--price-per-hour-speculative", "2.235",
                  "--k", str(DFLASH_K))
        )  # fmt: skip
    assert code == 0
    doc = json.loads((tmp_path / "calibration.json").read_text())
    results = {(r["arm"], r["concurrency"]): r for r in doc["results"]}
    assert set(results) == {(a, c) for a in ("plain", "speculative") for c in (1, 2)}
    for (arm, _c), r in results.items():
        assert r["status"] == "ok" and r["reason"] is None
        expected = PLAIN_TPOT_MS if arm == "plain" else SPEC_TPOT_MS
        # a busy host can only delay tokens, never hasten them (4 test workers share 2 cores):
        # the quickest round shows the server's timing; a slow round moves only the median
        assert close(r["tpot_ms"]["low"], expected), (arm, r["tpot_ms"])
        assert r["tpot_ms"]["low"] <= r["tpot_ms"]["median"] <= r["tpot_ms"]["high"]
        assert r["tpot_ms"]["rounds"] == len(r["tpot_ms"]["values"]) == 2
        # cost = price / tokens per hour, round by round
        for tps, cost in zip(
            r["output_tokens_per_s"]["values"],
            r["cost_per_1m_output_tokens_usd"]["values"],
            strict=True,
        ):
            assert cost == pytest.approx(2.235 / (tps * 3600) * 1e6)
    for c in (1, 2):
        spec_r = results[("speculative", c)]
        assert spec_r["acceptance_rate"] == pytest.approx(7 / (SPEC_STEPS * DFLASH_K))
        assert spec_r["mean_accepted_length"] == pytest.approx(SPEC_MEAN_ACCEPTED_LENGTH)
        assert spec_r["k_used"] == pytest.approx(DFLASH_K)
        assert results[("plain", c)]["acceptance_rate"] is None
    # Speculation decodes 11 tokens in 4 steps instead of 11: cheaper in every round.
    verdicts = {v["concurrency"]: v for v in doc["verdicts"]}
    for c in (1, 2):
        assert verdicts[c]["decision"] == "speculation", verdicts[c]["text"]
        assert verdicts[c]["cost_ratio"]["high"] < 1.0 < verdicts[c]["speedup"]["low"]
    assert "speculation is cheaper per 1M output tokens at concurrency 1, 2" in doc["verdict"]
    rows = yaml.safe_load((tmp_path / "trn2_rows.yaml").read_text())["measurements"]
    base = {r["batch"]: r for r in rows if r["role"] == "baseline"}
    spec_rows = [r for r in rows if r["role"] == "speculative"]
    assert sorted(base) == [1, 2] and len(spec_rows) == 2
    for row in spec_rows:
        assert row["baseline"] == base[row["batch"]]["id"]
        assert row["k"] == DFLASH_K
        assert row["acceptance_length"] == pytest.approx(SPEC_MEAN_ACCEPTED_LENGTH)
        # each arm's row carries its own profile's stack group (the stack-group rule)
        assert row["stack_group"] == _group("qwen3-4b-dflash")
        assert base[row["batch"]]["stack_group"] == _group("qwen3-4b-baseline")


def _group(profile: str) -> str:
    return conditions_for(profile, 50, OUTPUT_LEN, "s", "2026-12-02").stack_group


def test_a_broken_arm_is_reported_as_failed_never_as_slow(tmp_path: Path) -> None:
    plain_srv, _ = _servers()
    with plain_srv as plain:
        # Nothing listens on port 9 of the loopback: every request of that arm fails to connect.
        code = calibrate_run.main(_args(plain, "http://127.0.0.1:9", tmp_path))
    assert code == 1
    doc = json.loads((tmp_path / "calibration.json").read_text())
    results = {(r["arm"], r["concurrency"]): r for r in doc["results"]}
    for c in (1, 2):
        broken = results[("speculative", c)]
        assert broken["status"] == "failed"
        assert "requests failed" in broken["reason"] and "connect" in broken["reason"]
        assert broken["tpot_ms"] is None and broken["output_tokens_per_s"] is None
        assert broken["cost_per_1m_output_tokens_usd"] is None
        assert results[("plain", c)]["status"] == "ok"
        assert results[("plain", c)]["output_tokens_per_s"]["median"] > 0
    assert {v["decision"] for v in doc["verdicts"]} == {"failed"}
    assert "speculative arm failed" in doc["verdicts"][0]["text"]
    assert not (tmp_path / "trn2_rows.yaml").exists()


def test_arms_alternate_abba_within_every_level() -> None:
    assert [
        (s.level, s.round, s.arm) for s in measurement_steps(("plain", "speculative"), (1, 4), 4)
    ] == [
        (c, r, arm)
        for c in (1, 4)
        for r, pair in enumerate([("plain", "speculative"), ("speculative", "plain")] * 2)
        for arm in pair
    ]
    calls: list[tuple[str, int]] = []

    async def runner(url, model, specs, c, opts):  # records the order only
        calls.append((url, c))
        raise RuntimeError("not measured")

    opts = RunOptions(api_key=None)
    arms = {
        "plain": ArmEndpoint("plain", "P", "m", opts),
        "speculative": ArmEndpoint("speculative", "S", "m", opts),
    }
    runs = asyncio.run(measure(arms, [], (1, 2), 4, runner=runner, log=lambda _: None))
    assert [u for u, c in calls if c == 1] == list("PSSPPSSP")
    assert [u for u, c in calls if c == 2] == list("PSSPPSSP")
    assert [r.position for r in runs if r.concurrency == 2] == list(range(8))
    assert all(r.error == "RuntimeError: not measured" for r in runs)


@pytest.mark.parametrize(("deadline_s", "started"), [(None, 8), (0.05, 1)])
def test_past_the_deadline_no_run_is_started_and_each_is_recorded_as_not_run(
    deadline_s: float | None, started: int
) -> None:
    """Each run takes at least 0.1 s (a sleep: a lower bound, whatever the machine's speed), so
    with 0.05 s to spend only the first run starts; without a deadline every run does."""
    calls: list[str] = []

    async def runner(url, model, specs, c, opts):
        calls.append(url)
        await asyncio.sleep(0.1)
        raise RuntimeError("not measured")

    opts = RunOptions()
    arms = {arm: ArmEndpoint(arm, arm, "m", opts) for arm in ("plain", "speculative")}
    runs = asyncio.run(
        measure(arms, [], (1, 2), 2, deadline_s=deadline_s, runner=runner, log=lambda _: None)
    )
    assert len(calls) == started and len(runs) == 8
    not_run = [r for r in runs if r.error and r.error.startswith("not run: the deadline passed")]
    assert len(not_run) == 8 - started
    assert runs[: len(calls)] == [r for r in runs if r not in not_run]  # the first ones ran


def _spec_runs(doc: dict) -> list[dict]:
    return [r["result"] for r in doc["runs"] if r["arm"] == "speculative"]


def test_without_server_counters_each_speculative_run_is_read_with_the_given_k(
    tmp_path: Path,
) -> None:
    """A server without spec-decode counters: each speculative run's acceptance comes from the
    stream's chunks, (tokens per step - 1) / k, which needs the arm's k (--k 4); the plain arm
    has none to read."""
    plain_srv, _ = _servers()
    spec_srv = running("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS),
                       "--tokens-per-step", "3", "--k", "4", "--no-spec-metrics")  # fmt: skip
    with plain_srv as plain, spec_srv as spec:
        code = calibrate_run.main(_args(plain, spec, tmp_path))
    assert code == 0
    runs = _spec_runs(json.loads((tmp_path / "calibration.json").read_text()))
    assert len(runs) == 4
    for result in runs:
        assert result["acceptance_source"] == "estimate-from-chunks"
        assert result["acceptance_rate"] == pytest.approx(SPEC_ACCEPTANCE)


def test_both_arms_are_called_with_the_key_the_run_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Servers that answer 401 without the key (vLLM --api-key): the key calibrate is given (in
    the Job, the serving secret's; no $TRNSPEC_API_KEY to fall back on) reaches both arms."""
    monkeypatch.delenv("TRNSPEC_API_KEY", raising=False)
    timing = ("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS), "--api-key", "s3cret")
    plain_srv = running(*timing, "--k", "1", "--tokens-per-step", "1", "--no-spec-metrics")
    spec_srv = running(*timing, "--k", "4", "--tokens-per-step", "3")
    parser = argparse.ArgumentParser()
    calibrate_run.add_cli_args(parser)
    with plain_srv as plain, spec_srv as spec:
        opts = calibrate_run.options_from_args(parser.parse_args(_args(plain, spec, tmp_path)))
        outcome = calibrate_run.calibrate(opts, api_key="s3cret", log=lambda _: None)
    assert {a.status for a in outcome.summary.arms} == {"ok"}


def test_the_timeout_bounds_every_request(tmp_path: Path) -> None:
    """--timeout 1 against servers that answer after 5 s: every arm fails, saying it timed out,
    instead of waiting for the answer."""
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(json.dumps({"prompt": "FAULT:SLOW write a haiku"}) + "\n")
    plain_srv, spec_srv = _servers()
    with plain_srv as plain, spec_srv as spec:
        code = calibrate_run.main(
            ["--plain", plain, "--speculative", spec,
             "--plain-model", "fake", "--speculative-model", "fake",
             "--concurrency", "1", "--rounds", "2", "--num-prompts", "1",
             "--output-len", str(OUTPUT_LEN), "--k", "4", "--timeout", "1",
             "--prompts", str(prompts), "--out-dir", str(tmp_path / "out")]
        )  # fmt: skip
    assert code == 1
    doc = json.loads((tmp_path / "out" / "calibration.json").read_text())
    assert sorted(r["status"] for r in doc["results"]) == ["failed", "failed"]
    assert all("timed out" in r["reason"] or "timeout" in r["reason"] for r in doc["results"])


@pytest.mark.parametrize(
    ("prompts", "tokens"),
    [(["a", "a b c", " ".join(["w"] * 30)], 4), (["a b", "a b c d", "w " * 10, "w " * 20], 13)],
)
def test_the_rows_input_length_is_the_median_prompts_words_at_four_thirds(
    prompts: list[str], tokens: int
) -> None:
    assert calibrate_run.input_len_estimate(prompts) == tokens


def test_the_deadline_counts_the_wait_for_the_servers(tmp_path: Path) -> None:
    """A 0.6 s deadline, and a speculative server that is still loading at the first look: the
    readiness poll sleeps 1 s, so the deadline has passed before the first round and no round is
    started (each is recorded as not run). A budget that left out the wait would run rounds."""
    timing = ("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS))
    plain_srv = running(*timing, "--k", "1", "--tokens-per-step", "1", "--no-spec-metrics")
    spec_srv = running(*timing, "--k", "4", "--tokens-per-step", "3", "--unready-models", "1")
    with plain_srv as plain, spec_srv as spec:
        args = _args(plain, spec, tmp_path, "--wait-ready-minutes", "1", "--deadline-minutes",
                     "0.01")  # fmt: skip
        del args[args.index("--speculative-model") : args.index("--speculative-model") + 2]
        assert calibrate_run.main(args) == 1
    doc = json.loads((tmp_path / "calibration.json").read_text())
    assert len(doc["results"]) == 4  # 2 levels x 2 arms, each over its 2 rounds
    not_run = "not run: the deadline passed (0 s were left for the rounds)"
    assert all(r["reason"] == f"round 1: {not_run}; round 2: {not_run}" for r in doc["results"])


def _discovering(tmp_path: Path, plain_model: str, spec_model: str) -> int:
    timing = ("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS))
    plain_srv = running(*timing, "--k", "1", "--tokens-per-step", "1", "--no-spec-metrics",
                        "--model", plain_model)  # fmt: skip
    spec_srv = running(*timing, "--k", "4", "--tokens-per-step", "3", "--model", spec_model)
    with plain_srv as plain, spec_srv as spec:
        args = _args(plain, spec, tmp_path)
        for flag in ("--plain-model", "--speculative-model"):
            del args[args.index(flag) : args.index(flag) + 2]
        return calibrate_run.main(args)


def test_an_arm_without_a_model_name_uses_the_one_its_server_lists(tmp_path: Path) -> None:
    assert _discovering(tmp_path, "target-m", "target-m") == 0
    doc = json.loads((tmp_path / "calibration.json").read_text())
    assert {arm: a["model"] for arm, a in doc["arms"].items()} == {
        "plain": "target-m",
        "speculative": "target-m",
    }


def test_arms_serving_different_models_are_refused_before_a_round(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Their costs would not compare: the calibration pairs two arms of one deployment."""
    assert _discovering(tmp_path, "plain-m", "spec-m") == 2
    err = capsys.readouterr().err
    assert "the arms serve different models" in err and "'plain-m'" in err
    assert not (tmp_path / "calibration.json").exists()


@pytest.mark.parametrize(
    ("extra", "field", "says"),
    [
        (("--plain", "http://user:pw@127.0.0.1:9"), "--plain", "credentials in the URL"),
        (("--speculative", "ftp://127.0.0.1:9"), "--speculative", "http:// or https://"),
        (("--bucket", "../etc"), "--bucket", "not an S3 bucket name"),
        (("--bucket", "Bad_Bucket"), "--bucket", "not an S3 bucket name"),
        (
            ("--plain-profile", "qwen3-4b-baselin", "--speculative-profile", "qwen3-4b-dflash"),
            "--plain-profile",
            "",
        ),
    ],
)  # fmt: skip
def test_bad_flags_are_refused_in_one_line_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra, field, says
) -> None:
    """No server answers at port 9: a run that got past the flags would wait or fail later."""
    argv = ["--plain", "http://127.0.0.1:9", "--speculative", "http://127.0.0.1:9"]
    argv += ["--out-dir", str(tmp_path / "out"), *extra]
    code = run_main(argv)
    err = capsys.readouterr().err
    assert code == 2 and field in err and says in err and len(err.strip().splitlines()) == 1
    assert "pw" not in err
    assert not (tmp_path / "out" / "calibration.json").exists()


def test_an_out_dir_that_cannot_hold_the_results_is_refused_before_the_rounds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a_file = tmp_path / "taken"
    a_file.write_text("x")
    prompts = tmp_path / "calibration.json"
    prompts.write_text('{"prompt": "hello"}\n')
    for out_dir, says in ((a_file, "is not a directory"), (tmp_path, "would overwrite --prompts")):
        argv = ["--plain", "http://127.0.0.1:9", "--speculative", "http://127.0.0.1:9"]
        argv += ["--out-dir", str(out_dir), "--prompts", str(prompts)]
        assert run_main(argv) == 2
        err = capsys.readouterr().err
        assert "--out-dir" in err and says in err
    assert prompts.read_text() == '{"prompt": "hello"}\n'


class _UnwritableBucket:
    """An S3 client whose every upload fails, as a bucket without the Job's write grant does."""

    def put_object(self, **_: object) -> None:
        raise RuntimeError("AccessDenied: s3:PutObject")


def test_a_failed_upload_keeps_the_results_on_disk_and_names_them(tmp_path: Path) -> None:
    plain_srv, spec_srv = _servers()
    lines: list[str] = []
    with plain_srv as plain, spec_srv as spec:
        parser = argparse.ArgumentParser()
        calibrate_run.add_cli_args(parser)
        args = parser.parse_args(_args(plain, spec, tmp_path, "--bucket", "trnspec-results"))
        opts = calibrate_run.options_from_args(args)
        outcome = calibrate_run.calibrate(opts, s3=_UnwritableBucket(), log=lines.append)
    assert outcome.uploaded is None and outcome.any_failed
    assert (tmp_path / "calibration.json").exists()
    [problem] = outcome.problems
    assert "cannot upload to s3://trnspec-results/calibration/" in problem
    assert str(tmp_path / "calibration.json") in problem
    assert any(line.startswith("error: cannot upload") for line in lines)


def _rows_note(tmp_path: Path, *profiles: str) -> tuple[str | None, calibrate_run.RowsNote]:
    """trn2_rows_text for a run whose rounds all failed to start (no verdict at any level)."""
    from trnspec_tools.calibration.summary import summarize

    parser = argparse.ArgumentParser()
    calibrate_run.add_cli_args(parser)
    argv = _args("http://p:8000", "http://s:8000", tmp_path, "--concurrency", "1,2", *profiles)
    opts = calibrate_run.options_from_args(parser.parse_args(argv))
    summary = summarize([], opts.levels, opts.prices)
    models: dict = {"plain": "fake", "speculative": "fake"}
    return calibrate_run.trn2_rows_text(opts, summary, [], models, "20261201T120000Z", 64)


def test_without_profiles_no_rows_are_built_and_the_note_says_which_flags_to_give(
    tmp_path: Path,
) -> None:
    text, note = _rows_note(tmp_path)
    assert text is None
    assert note == calibrate_run.RowsNote(
        0, "no rows: give --plain-profile and --speculative-profile"
    )


def test_levels_without_a_verdict_give_no_rows_each_named_with_why(tmp_path: Path) -> None:
    profiles = ("--plain-profile", "qwen3-4b-baseline", "--speculative-profile", "qwen3-4b-dflash")
    text, note = _rows_note(tmp_path, *profiles)
    assert text is None and (note.rows, note.note) == (0, "no rows")
    assert note.skipped is not None and [s.split(":")[0] for s in note.skipped] == [
        "concurrency 1",
        "concurrency 2",
    ]


def test_the_rows_note_is_written_with_every_field_under_its_own_name() -> None:
    """calibration.json's trn2_rows: rows first, then note and skipped, each only when set."""
    note = calibrate_run.RowsNote(3, "a note", ("a level left out",))
    assert list(note.to_json().items()) == [
        ("rows", 3),
        ("note", "a note"),
        ("skipped", ["a level left out"]),
    ]
    assert calibrate_run.RowsNote(2, skipped=()).to_json() == {"rows": 2, "skipped": []}
    assert calibrate_run.RowsNote(0, "why").to_json() == {"rows": 0, "note": "why"}
