"""`python -m trnspec_tools calibrate run`: measure a speculative arm against its plain twin.

    python -m trnspec_tools calibrate run --plain URL --speculative URL \\
        --concurrency 1,2,4 --rounds 4 --num-prompts 16 --output-len 256 \\
        [--prompts FILE|s3://BUCKET/KEY] [--plain-profile P --speculative-profile Q] \\
        [--price-per-hour-plain X --price-per-hour-speculative Y] \\
        [--bucket BUCKET] [--out-dir DIR]

Waits until both arms answer, runs the ABBA rounds at every level (measure), writes
calibration.json (and, with both Trn2 profiles, trn2_rows.yaml) to --out-dir and to
s3://BUCKET/calibration/<UTC stamp>/, and prints the verdict per level. Exit 0 when every arm
was measured, 1 when an arm failed somewhere (the results are written all the same: the failed
arm is reported as failed) or a result could not be written or uploaded where asked (a local
copy is kept and named), 2 for bad input. Every flag is checked before any work: the URLs
(http(s), no credentials), the bucket name, both profiles, and --out-dir (made, proven
writable, none of its outputs one of the inputs); the arms must serve the same model before a
round runs.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trnspec.boundary.args import price_arg
from trnspec.boundary.errors import BoundaryError, exits_on_bad_input
from trnspec.boundary.json_io import dumps
from trnspec.boundary.numbers import float_arg, int_arg, parse_int_list
from trnspec.boundary.text import printable
from trnspec.boundary.write import moved_lines, write_outputs
from trnspec.config.s3_uri import is_s3_uri

from trnspec_tools.bench.run import RunOptions
from trnspec_tools.bench.workload import WorkloadError
from trnspec_tools.boundary.destination import bucket_name, check_out_dir
from trnspec_tools.boundary.endpoint import Endpoint
from trnspec_tools.calibration import store
from trnspec_tools.calibration.measure import ArmEndpoint, measure, wait_ready
from trnspec_tools.calibration.prompts import DEFAULT_SET, load_prompts
from trnspec_tools.calibration.summary import ARMS, Arm, CalibrationRun, Summary, summarize

PROG = "calibrate run"
#: Files written (store.RESULT_FILES).
RESULT_JSON, ROWS_YAML = store.RESULT_JSON, store.ROWS_YAML


@dataclass(frozen=True)
class CalibrationOptions:
    """Every flag of `calibrate run`, checked."""

    urls: dict[Arm, str]
    models: dict[Arm, str | None]
    profiles: dict[Arm, str | None]
    prices: dict[Arm, float | None]
    levels: tuple[int, ...]
    rounds: int
    num_prompts: int
    output_len: int
    prompts: str
    k: int | None
    bucket: str | None
    out_dir: Path
    wait_ready_s: float
    deadline_s: float | None
    timeout_s: float
    s3_endpoint_url: str | None
    seed: int


def add_cli_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--plain", required=True, help="base URL of the plain arm")
    p.add_argument("--speculative", required=True, help="base URL of the speculative arm")
    p.add_argument("--plain-model", default=None, help="model name (default: its /v1/models)")
    p.add_argument("--speculative-model", default=None)
    p.add_argument("--concurrency", default="1,2,4", help="levels, increasing, e.g. 1,2,4")
    p.add_argument("--rounds", type=int_arg(2, 64), default=4, help="ABBA rounds (even)")
    p.add_argument("--num-prompts", type=int_arg(1, 4096), default=16, help="per arm and round")
    p.add_argument("--output-len", type=int_arg(1, 8192), default=256)
    p.add_argument(
        "--prompts",
        default=DEFAULT_SET,
        help="JSONL prompt file (path or s3://BUCKET/KEY); 'default': the shipped set",
    )
    p.add_argument("--k", type=int_arg(1, 64), default=None, help="the speculative arm's k")
    p.add_argument("--plain-profile", default=None, help="Trn2 profile of the plain arm (rows)")
    p.add_argument("--speculative-profile", default=None, help="Trn2 profile of the speculative")
    p.add_argument("--price-per-hour-plain", type=price_arg(), default=None)
    p.add_argument("--price-per-hour-speculative", type=price_arg(), default=None)
    p.add_argument("--bucket", default=None, help="upload to s3://BUCKET/calibration/<stamp>/")
    p.add_argument("--s3-endpoint-url", default=None, help=argparse.SUPPRESS)
    p.add_argument("--out-dir", type=Path, default=Path("reports/calibration"))
    p.add_argument("--wait-ready-minutes", type=float_arg(0, 24 * 60), default=0.0)
    p.add_argument("--deadline-minutes", type=float_arg(0, 24 * 60, lo_open=True), default=None)
    p.add_argument("--timeout", type=float_arg(1, 3600), default=600.0, help="per request, s")
    p.add_argument("--seed", type=int_arg(0, 2**31), default=0)


def _check_profile(field: str, profile: str | None) -> None:
    """The profile loads, read before any work: a typo is named at once, not after hours of
    rounds that then write no rows."""
    if profile is None:
        return
    from trnspec.config.serving import ConfigError, load_profile

    try:
        load_profile(profile)
    except ConfigError as exc:
        first = exc.problems[0] if exc.problems else None
        raise BoundaryError(field, profile, str(first or exc)[:200]) from None


def options_from_args(args: argparse.Namespace) -> CalibrationOptions:
    for flag, url in (("--plain", args.plain), ("--speculative", args.speculative)):
        Endpoint.parse(url, flag)
    if args.bucket is not None:
        bucket_name("--bucket", args.bucket)
    levels = tuple(parse_int_list("--concurrency", args.concurrency, 1, 1024, 16))
    if any(b <= a for a, b in itertools.pairwise(levels)):
        raise BoundaryError("--concurrency", args.concurrency, "list the levels increasing")
    if args.rounds % 2:
        raise BoundaryError("--rounds", args.rounds, "must be even (ABBA: plain-first, then not)")
    if (args.plain_profile is None) != (args.speculative_profile is None):
        raise BoundaryError(
            "--plain-profile", args.plain_profile, "give both arms' Trn2 profiles, or neither"
        )
    # each profile loads now (a typo is one line, not hours of rounds that write no rows); --k
    # may differ from the profile's own window (a plan's arm overrides it): the rows carry the
    # k measured, and a row whose server drafted another window is left out (trn2_rows)
    _check_profile("--plain-profile", args.plain_profile)
    _check_profile("--speculative-profile", args.speculative_profile)
    inputs = [] if is_s3_uri(args.prompts) or args.prompts == DEFAULT_SET else [
        ("--prompts", Path(args.prompts))
    ]  # fmt: skip
    check_out_dir("--out-dir", args.out_dir, store.RESULT_FILES, inputs)
    return CalibrationOptions(
        urls={"plain": args.plain.rstrip("/"), "speculative": args.speculative.rstrip("/")},
        models={"plain": args.plain_model, "speculative": args.speculative_model},
        profiles={"plain": args.plain_profile, "speculative": args.speculative_profile},
        prices={"plain": args.price_per_hour_plain, "speculative": args.price_per_hour_speculative},
        levels=levels,
        rounds=args.rounds,
        num_prompts=args.num_prompts,
        output_len=args.output_len,
        prompts=args.prompts,
        k=args.k,
        bucket=args.bucket,
        out_dir=args.out_dir,
        wait_ready_s=args.wait_ready_minutes * 60.0,
        deadline_s=None if args.deadline_minutes is None else args.deadline_minutes * 60.0,
        timeout_s=args.timeout,
        s3_endpoint_url=args.s3_endpoint_url,
        seed=args.seed,
    )


def s3_client(endpoint_url: str | None = None) -> Any:
    import boto3

    return boto3.client("s3", endpoint_url=endpoint_url)


def resolve_api_key() -> str | None:
    """$TRNSPEC_API_KEY, else the key from the secret the pod contract names (the Job gets the
    same secret ARN the servers read theirs from), else None."""
    from trnspec.serve.api_key import load_api_key

    from trnspec_tools.client.client_args import default_api_key

    return default_api_key() or load_api_key(os.environ)


def calibration_document(
    opts: CalibrationOptions,
    run_stamp: str,
    models: dict[Arm, str],
    runs: Sequence[CalibrationRun],
    summary: Summary,
    rows_note: RowsNote,
) -> dict[str, object]:
    """calibration.json: the settings, each arm, the figures per arm and level, the verdict per
    level and overall, and every run as bench writes it (in the order run)."""
    return {
        "kind": "trnspec-calibration",
        "stamp": run_stamp,
        "arms": {
            arm: {
                "url": opts.urls[arm],
                "model": models[arm],
                "profile": opts.profiles[arm],
                "price_per_hour_usd": opts.prices[arm],
            }
            for arm in ARMS
        },
        "levels": list(opts.levels),
        "rounds": opts.rounds,
        "num_prompts": opts.num_prompts,
        "output_len": opts.output_len,
        "prompts": opts.prompts,
        "results": [a.to_json() for a in summary.arms],
        "verdicts": [v.to_json() for v in summary.verdicts],
        "verdict": summary.overall(),
        "trn2_rows": rows_note.to_json(),
        "runs": [
            {
                "arm": r.arm,
                "concurrency": r.concurrency,
                "round": r.round,
                "position": r.position,
                "error": r.error,
                "result": None if r.result is None else r.result.to_json(),
            }
            for r in runs
        ],
    }


@dataclass(frozen=True)
class RowsNote:
    """What calibration.json says about trn2_rows.yaml: the rows written, why none were (note)
    and the levels or rows left out with why (skipped; None where the rows were not built)."""

    rows: int
    note: str | None = None
    skipped: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, object]:
        """calibration.json's `trn2_rows` (note and skipped only when there are)."""
        out: dict[str, object] = {"rows": self.rows}
        if self.note is not None:
            out["note"] = self.note
        if self.skipped is not None:
            out["skipped"] = list(self.skipped)
        return out


def trn2_rows_text(
    opts: CalibrationOptions,
    summary: Summary,
    runs: Sequence[CalibrationRun],
    models: dict[Arm, str],
    run_stamp: str,
    input_len: int,
) -> tuple[str | None, RowsNote]:
    """(trn2_rows.yaml's text or None, what calibration.json says about it)."""
    plain_p, spec_p = opts.profiles["plain"], opts.profiles["speculative"]
    if plain_p is None or spec_p is None:
        return None, RowsNote(0, "no rows: give --plain-profile and --speculative-profile")
    from trnspec.config.serving import ConfigError, load_profile

    from trnspec_tools.calibration.rows import calibration_rows, combined_rows_yaml
    from trnspec_tools.tune.trn2_rows import conditions_for

    source = f"trnspec calibrate run {run_stamp}"
    date = f"{run_stamp[:4]}-{run_stamp[4:6]}-{run_stamp[6:8]}"
    try:
        plain = conditions_for(plain_p, input_len, opts.output_len, source, date)
        spec = conditions_for(spec_p, input_len, opts.output_len, source, date)
        k = opts.k or load_profile(spec_p).speculation.num_speculative_tokens
    except ConfigError as exc:
        return None, RowsNote(0, f"no rows: {str(exc).splitlines()[-1][:200]}")
    endpoints = {arm: (opts.urls[arm], models[arm]) for arm in ARMS}
    rows, skipped = calibration_rows(summary, runs, plain, spec, k, endpoints)
    if not rows:
        return None, RowsNote(0, "no rows", tuple(skipped))
    return combined_rows_yaml(plain, spec, rows), RowsNote(len(rows), skipped=tuple(skipped))


def input_len_estimate(prompts: Sequence[str]) -> int:
    """Prompt tokens, estimated as 4/3 tokens per whitespace-separated word (median prompt): the
    rows' context condition, which barely moves a short prompt's decode step."""
    words = sorted(len(p.split()) for p in prompts)
    return max(1, round(words[len(words) // 2] * 4 / 3))


def print_summary(summary: Summary, out: Callable[[str], None] = print) -> None:
    out("")
    out(f"{'arm':<12} {'conc':>4} {'status':<7} {'TPOT p50 ms':>22} {'tok/s':>24} {'accept':>7}")
    for a in summary.arms:
        if a.status == "failed":
            out(f"{a.arm:<12} {a.concurrency:>4} FAILED  {a.reason}")
            continue
        tpot = a.tpot_ms
        tps = a.output_tokens_per_s
        out(
            f"{a.arm:<12} {a.concurrency:>4} {'ok':<7} "
            + (f"{tpot.median:>8.2f} ({tpot.low:.2f}-{tpot.high:.2f})" if tpot else f"{'-':>22}")
            + (f" {tps.median:>9.1f} ({tps.low:.1f}-{tps.high:.1f})" if tps else f" {'-':>24}")
            + (f" {a.acceptance_rate:>7.3f}" if a.acceptance_rate is not None else f" {'-':>7}")
        )
    out("")
    for v in summary.verdicts:
        out(v.text)
    out(f"verdict: {summary.overall()}")


@dataclass(frozen=True)
class Outcome:
    """What a calibration produced: its stamp, summary, files and where they were uploaded."""

    stamp: str
    summary: Summary
    files: dict[str, Path]
    uploaded: str | None
    #: outputs not written or uploaded where asked, each with where it is kept
    problems: tuple[str, ...] = ()

    @property
    def any_failed(self) -> bool:
        return bool(self.problems) or any(a.status == "failed" for a in self.summary.arms)


def calibrate(
    opts: CalibrationOptions,
    s3: Any | None = None,
    log: Callable[[str], None] = print,
    api_key: str | None = None,
) -> Outcome:
    """The whole run (see the module doc); `s3` a boto3 client (made from the options when a
    bucket is given and none is passed)."""
    if opts.bucket and s3 is None:
        s3 = s3_client(opts.s3_endpoint_url)

    def download(bucket: str, key: str, path: Path) -> None:
        store.download_to(s3, bucket, key, path)

    specs = load_prompts(
        opts.prompts, opts.num_prompts, opts.output_len, opts.seed, download if s3 else None
    )
    run_stamp = store.stamp()
    started = time.monotonic()
    models = asyncio.run(_models(opts, api_key, log))
    if models["plain"] != models["speculative"]:
        raise ValueError(
            f"the arms serve different models (plain {models['plain']!r}, speculative"
            f" {models['speculative']!r}): both arms must serve the same target for their costs"
            " to compare; point --plain and --speculative at the two arms of one deployment"
        )
    options = {
        arm: RunOptions(
            seed=opts.seed,
            timeout_s=opts.timeout_s,
            api_key=api_key,
            num_speculative_tokens=opts.k if arm == "speculative" else None,
        )
        for arm in ARMS
    }
    arms = {arm: ArmEndpoint(arm, opts.urls[arm], models[arm], options[arm]) for arm in ARMS}
    spent = time.monotonic() - started  # waiting for the servers counts against the deadline
    budget = None if opts.deadline_s is None else max(0.0, opts.deadline_s - spent)
    runs = asyncio.run(measure(arms, specs, opts.levels, opts.rounds, deadline_s=budget, log=log))
    summary = summarize(runs, opts.levels, opts.prices)
    rows_text, rows_note = trn2_rows_text(
        opts, summary, runs, models, run_stamp, input_len_estimate([s.prompt for s in specs])
    )
    doc = calibration_document(opts, run_stamp, models, runs, summary, rows_note)
    payload = {RESULT_JSON: dumps(doc).encode()}
    if rows_text is not None:
        payload[ROWS_YAML] = rows_text.encode()
    written = write_outputs(
        "calibrate", [(opts.out_dir / name, data) for name, data in payload.items()]
    )
    files = {w.target.name: w.path for w in written if w.path is not None}
    problems = moved_lines(written)
    uploaded = None
    if opts.bucket:
        try:
            uploaded = store.upload(s3, opts.bucket, run_stamp, payload)
        except Exception as exc:  # any failure of the upload keeps the local copies, named
            kept = ", ".join(str(p) for p in files.values()) or "nowhere"
            problems.append(
                f"cannot upload to s3://{opts.bucket}/{store.run_prefix(run_stamp)}"
                f" ({type(exc).__name__}: {printable(str(exc), 200)}); the results are at {kept}"
            )
    print_summary(summary, log)
    for name, path in files.items():
        log(f"wrote {path}" + (f" and {uploaded}{name}" if uploaded else ""))
    for line in problems:
        log(f"error: {line}")
    if rows_text is None:
        log(f"trn2 rows: {rows_note.note}")
    return Outcome(run_stamp, summary, files, uploaded, tuple(problems))


async def _models(
    opts: CalibrationOptions, api_key: str | None, log: Callable[[str], None]
) -> dict[Arm, str]:
    """Each arm's model name: given, else its /v1/models once it answers (waiting up to
    --wait-ready-minutes: the Job starts with the Deployments, before they are Ready)."""
    found = await wait_ready(
        {arm: opts.urls[arm] for arm in ARMS if not opts.models[arm]},
        max(opts.wait_ready_s, 1.0),
        api_key,
        poll_s=10.0 if opts.wait_ready_s > 60 else 1.0,
        log=log,
    )
    return {arm: opts.models[arm] or found[arm] for arm in ARMS}


def run_parsed(args: argparse.Namespace) -> int:
    opts = options_from_args(args)
    try:
        outcome = calibrate(opts, api_key=resolve_api_key())
    except (WorkloadError, store.StoreError, TimeoutError, ValueError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    return 1 if outcome.any_failed else 0


@exits_on_bad_input(PROG)
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m trnspec_tools {PROG}", description=__doc__)
    add_cli_args(parser)
    return run_parsed(parser.parse_args(argv))
