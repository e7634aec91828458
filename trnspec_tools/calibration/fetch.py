"""`python -m trnspec_tools calibrate fetch --stack NAME [--out DIR]`: bring the newest calibration
home from a deployed serving stack, without kubectl.

The stack is looked up as `bench --stack` does (client.stack_endpoint: the serving stack's
CloudFormation outputs, here its model bucket's name); the newest complete prefix
s3://BUCKET/calibration/<stamp>/ (one holding calibration.json) is downloaded to DIR/<stamp>/,
and its verdict printed. Needs s3:ListBucket on calibration/ and s3:GetObject under it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from trnspec.boundary.errors import exits_on_bad_input
from trnspec.boundary.json_io import loads
from trnspec.boundary.text import printable

from infra.outputs import ServingOutputs
from trnspec_tools.calibration import store
from trnspec_tools.client.stack_endpoint import (
    DEFAULT_AWS_TIMEOUT_S,
    AwsClients,
    StackError,
    aws_config,
    read_stack_outputs,
)

PROG = "calibrate fetch"


def stack_bucket(cloudformation: object, stack: str) -> str:
    """The serving stack's model bucket (its ModelBucketName output)."""
    outputs = read_stack_outputs(cloudformation, stack)
    bucket = outputs.get(ServingOutputs.MODEL_BUCKET_NAME)
    if not bucket:
        have = ", ".join(sorted(outputs)) or "no outputs"
        raise StackError(
            f"--stack={stack}: no {ServingOutputs.MODEL_BUCKET_NAME} output (it has: {have}); "
            "name the serving stack (<platform stack>-serving)"
        )
    return bucket


def fetch(
    stack: str,
    out_dir: Path,
    region: str | None = None,
    clients: Callable[[str | None], tuple[object, object]] | None = None,
    log: Callable[[str], None] = print,
) -> list[Path]:
    """Download the newest complete run; `clients(region)` gives (cloudformation, s3)."""
    if clients is None:
        clients = _boto_clients
    cloudformation, s3 = clients(region)
    bucket = stack_bucket(cloudformation, stack)
    newest = store.newest_complete(s3, bucket)
    if newest is None:
        raise StackError(
            f"--stack={stack}: no calibration results in s3://{bucket}/{store.PREFIX} yet; the "
            "calibration Job writes them when it finishes (serving.calibration set)"
        )
    files = store.fetch_run(s3, bucket, newest, out_dir)
    log(f"s3://{bucket}/{store.run_prefix(newest)} -> {out_dir / newest}/")
    result = files[0]
    doc = loads(result.read_bytes(), str(result))
    verdict = doc.get("verdict") if isinstance(doc, dict) else None
    for line in doc.get("verdicts", []) if isinstance(doc, dict) else []:
        if isinstance(line, dict) and isinstance(line.get("text"), str):
            log(printable(line["text"], 400))
    if isinstance(verdict, str):
        log(f"verdict: {printable(verdict, 400)}")
    return files


def _boto_clients(region: str | None) -> tuple[object, object]:
    clients = AwsClients.for_region(region, DEFAULT_AWS_TIMEOUT_S)
    import boto3

    s3 = boto3.session.Session(region_name=clients.cloudformation.meta.region_name).client(
        "s3", config=aws_config(DEFAULT_AWS_TIMEOUT_S)
    )
    return clients.cloudformation, s3


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stack", required=True, help="the serving stack, e.g. trnspec-serving")
    parser.add_argument("--region", default=None, help="region of the stack (default: AWS config)")
    parser.add_argument("--out", type=Path, default=Path("reports/calibration"))


def run_parsed(args: argparse.Namespace) -> int:
    try:
        files = fetch(args.stack, args.out, args.region)
    except (StackError, store.StoreError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    for path in files:
        print(f"wrote {path}")
    return 0


@exits_on_bad_input(PROG)
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m trnspec_tools {PROG}", description=__doc__)
    add_cli_args(parser)
    return run_parsed(parser.parse_args(argv))
