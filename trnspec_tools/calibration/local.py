"""`python -m trnspec_tools calibrate local` (`make calibrate`): the calibration loop, here.

1. Two local vLLM CPU servers of the tiny pair (trnspec_tools.local_engine): the plain arm
   (speculation off) and the speculative arm (k = --k), each at max_num_seqs = the top level;
2. moto's in-process S3 stands in for the model bucket: the prompt file (tiny-corpus prompts,
   what the tiny pair was trained on) is put at calibration/prompts.jsonl, as a user would;
3. `calibrate run`'s own code measures both (ABBA rounds at every level) and uploads
   calibration.json and trn2_rows.yaml to s3://BUCKET/calibration/<stamp>/;
4. the newest run is read back from the bucket the way `calibrate fetch` does, into
   reports/calibration.json and reports/trn2_rows.yaml;
5. `python -m trnspec plan-deploy --measured reports/trn2_rows.yaml ... --out reports/plan.yaml`
   writes the plan (`make calibrate` then synthesizes it: cdk synth -c serving.plan=...).

The rows carry the Trn2 profiles' conditions (--plain-profile / --speculative-profile) and say in
their source that they were measured on local CPU servers with tiny models: they exercise the
loop, they are not Trn2 figures (do not add them to the data file).
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from trnspec.boundary.errors import exits_on_bad_input
from trnspec.boundary.numbers import int_arg
from trnspec.boundary.write import write_file

from trnspec_tools.calibration import run as calibrate_run
from trnspec_tools.calibration import store

PROG = "calibrate local"
BUCKET = "trnspec-calibration-local"
PROMPTS_KEY = "calibration/prompts.jsonl"
#: What the plan is asked (the shipped default plan's goal: config/plans/default.yaml).
PLAN_ARGS = [
    "--profile", "qwen3-4b-dflash", "--profile", "qwen3-4b-baseline",
    "--acceptance-length", "2.1", "--acceptance-k", "15", "--tpot-ms", "30",
    "--peak-streams", "16", "--min-replicas", "1", "--input-len", "512", "--output-len", "256",
]  # fmt: skip


def add_cli_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--concurrency", default="1,4", help="levels, increasing (default 1,4)")
    p.add_argument("--rounds", type=int_arg(2, 64), default=2, help="ABBA rounds (even)")
    p.add_argument("--num-prompts", type=int_arg(1, 4096), default=8)
    p.add_argument("--output-len", type=int_arg(1, 8192), default=48)
    p.add_argument("--k", type=int_arg(1, 16), default=4, help="the speculative arm's k")
    p.add_argument("--plain-profile", default="qwen3-4b-baseline")
    p.add_argument("--speculative-profile", default="qwen3-4b-dflash")
    p.add_argument("--reports", type=Path, default=Path("reports"))
    p.add_argument("--no-plan", action="store_true", help="stop after the results")


@contextlib.contextmanager
def _moto_bucket() -> Iterator[object]:
    """A boto3 S3 client on moto's in-process mock, with the bucket created."""
    import os

    from moto import mock_aws

    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
    try:
        with mock_aws():
            import boto3

            s3 = boto3.client("s3", region_name="us-east-1")
            s3.create_bucket(Bucket=BUCKET)
            yield s3
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _prompts_jsonl(count: int) -> bytes:
    from trnspec.boundary.json_io import dumps

    from trnspec_tools.local_engine.tiny_corpus import completion_prompts

    return "".join(dumps({"prompt": p}, indent=None) + "\n" for p in completion_prompts(count))


def plan_command(rows: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "trnspec", "plan-deploy", *PLAN_ARGS,
            "--measured", str(rows), "--out", str(out)]  # fmt: skip


def write_plan(rows: Path, out: Path) -> int:
    """plan-deploy refitted on the measured rows; its output passed through, its exit code
    returned."""
    cmd = plan_command(rows, out)
    print("$ " + " ".join(["python", *cmd[1:]]))
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    return done.returncode


def run_parsed(args: argparse.Namespace) -> int:
    from trnspec_tools.local_engine.local_server import LocalServer

    levels = [int(x) for x in args.concurrency.split(",") if x]
    top = max(levels)
    base = [f"max_num_seqs={top}"]
    reports: Path = args.reports
    work = reports / "calibration-local"
    with (
        _moto_bucket() as s3,
        LocalServer([*base, "speculation.method=none"]) as plain,
        LocalServer([*base, f"speculation.num_speculative_tokens={args.k}"]) as spec,
    ):
        s3.put_object(Bucket=BUCKET, Key=PROMPTS_KEY, Body=_prompts_jsonl(64))  # type: ignore[attr-defined]
        run_argv = [
            "--plain", plain.base_url, "--speculative", spec.base_url,
            "--plain-model", plain.model, "--speculative-model", spec.model,
            "--concurrency", args.concurrency, "--rounds", str(args.rounds),
            "--num-prompts", str(args.num_prompts), "--output-len", str(args.output_len),
            "--k", str(args.k), "--prompts", f"s3://{BUCKET}/{PROMPTS_KEY}",
            "--plain-profile", args.plain_profile,
            "--speculative-profile", args.speculative_profile,
            "--bucket", BUCKET, "--out-dir", str(work),
        ]  # fmt: skip
        parser = argparse.ArgumentParser()
        calibrate_run.add_cli_args(parser)
        opts = calibrate_run.options_from_args(parser.parse_args(run_argv))
        outcome = calibrate_run.calibrate(opts, s3=s3)
        # Home the way `calibrate fetch` brings it: the newest complete prefix of the bucket.
        newest = store.newest_complete(s3, BUCKET)
        assert newest == outcome.stamp, (newest, outcome.stamp)
        fetched = store.fetch_run(s3, BUCKET, newest, work)
    for path in fetched:
        target = reports / path.name
        write_file(target, path.read_bytes())
        print(f"reports: {target} (from s3://{BUCKET}/{store.run_prefix(newest)}{path.name})")
    shutil.rmtree(work / newest, ignore_errors=True)
    if outcome.any_failed:
        print(f"{PROG}: an arm failed (see above); no plan written", file=sys.stderr)
        return 1
    if args.no_plan:
        return 0
    rows = reports / store.ROWS_YAML
    if not rows.exists():
        print(f"{PROG}: no trn2 rows were written; no plan", file=sys.stderr)
        return 1
    return write_plan(rows, reports / "plan.yaml")


@exits_on_bad_input(PROG)
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m trnspec_tools {PROG}", description=__doc__)
    add_cli_args(parser)
    return run_parsed(parser.parse_args(argv))
