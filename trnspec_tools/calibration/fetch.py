"""`python -m trnspec_tools calibrate fetch --stack NAME [--out DIR]`: bring the newest calibration
home from a deployed serving stack, without kubectl.

The stack is looked up as `bench --stack` does (client.stack_endpoint: the serving stack's
CloudFormation outputs, here its model bucket's name); the newest complete prefix
s3://BUCKET/calibration/<stamp>/ (one holding calibration.json) is downloaded to DIR/<stamp>/,
and its verdict printed, then the next two commands, exactly (`next_commands`): `plan-deploy`
on the measured rows (the deployed plan's own command, from the stack's PlanCommand output, with
`--measured` and `--out DIR/<stamp>/plan.yaml`) and the `cdk deploy` of that plan with the
deploy's own `-c` items (the DeployContext output: profile, cluster admins, every override).
Needs s3:ListBucket on calibration/ and s3:GetObject under it.
"""

from __future__ import annotations

import argparse
import itertools
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from trnspec.boundary.aws_names import arg, region_problem
from trnspec.boundary.errors import BoundaryError, exits_on_bad_input
from trnspec.boundary.json_io import loads
from trnspec.boundary.text import printable
from trnspec.boundary.write import Written, moved_lines, write_outputs
from trnspec.plan.verdict import Verdict

from infra.outputs import ServingOutputs
from trnspec_tools.bench.json_fields import REWRITE_FIX, Fields
from trnspec_tools.boundary.destination import check_out_dir
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
    return stack_bucket_of(read_stack_outputs(cloudformation, stack), stack)


def stack_bucket_of(outputs: dict[str, str], stack: str) -> str:
    """The model bucket in a serving stack's outputs."""
    bucket = outputs.get(ServingOutputs.MODEL_BUCKET_NAME)
    if not bucket:
        have = ", ".join(sorted(outputs)) or "no outputs"
        raise StackError(
            f"--stack={stack}: no {ServingOutputs.MODEL_BUCKET_NAME} output (it has: {have}); "
            "name the serving stack (<platform stack>-serving)"
        )
    return bucket


#: What calibration.json's "kind" says (run.calibration_document writes it).
KIND = "trnspec-calibration"
#: A level's "decision": a Verdict's word, or "failed" (summary.LevelVerdict.decision).
FAILED = "failed"
_DECISIONS = {v.value: v for v in Verdict}


@dataclass(frozen=True)
class FetchedLevel:
    """One level's verdict as calibration.json holds it."""

    concurrency: int
    #: None: "failed" (no verdict at this level)
    verdict: Verdict | None
    text: str

    @classmethod
    def from_json(cls, obj: object, where: str) -> FetchedLevel:
        f = Fields(obj, where)
        decision = f.text("decision")
        if decision != FAILED and decision not in _DECISIONS:
            words = ", ".join([*_DECISIONS, FAILED])
            raise BoundaryError(
                f.path("decision"), decision, f"must be one of {words}; {REWRITE_FIX}"
            )
        return cls(f.count("concurrency", 1), _DECISIONS.get(decision), f.text("text"))


@dataclass(frozen=True)
class FetchedResult:
    """What `calibrate fetch` reads of a calibration.json: the verdicts it prints and the
    arms' profiles the next commands name; every field checked (Fields) where it enters."""

    verdict: str
    levels: tuple[FetchedLevel, ...]
    #: The Trn2 profile of each arm that has one, speculative first (None: not given).
    profiles: tuple[str, ...]

    @classmethod
    def from_json(cls, obj: object, where: str) -> FetchedResult:
        f = Fields(obj, where)
        if (kind := f.raw("kind")) != KIND:
            raise BoundaryError(f.path("kind"), kind, f"must be {KIND!r}; {REWRITE_FIX}")
        levels = f.opt_list("verdicts")
        if levels is None:
            raise BoundaryError(f.path("verdicts"), None, f"must be a JSON list; {REWRITE_FIX}")
        arms = f.sub("arms")
        profiles = tuple(
            profile
            for arm in ("speculative", "plain")
            if (profile := arms.sub(arm).opt_text("profile")) is not None
        )
        return cls(
            verdict=f.text("verdict"),
            levels=tuple(
                FetchedLevel.from_json(level, f"{f.path('verdicts')}[{i}]")
                for i, level in enumerate(levels)
            ),
            profiles=profiles,
        )


def read_result(data: bytes, where: str, shown: str | None = None) -> FetchedResult:
    """calibration.json's bytes as a FetchedResult (json_io: size, depth, finite numbers), or
    BoundaryError naming the field under `where` (a short name: <stamp>/calibration.json) and,
    for a file that is not JSON, `shown` (its S3 URI)."""
    return FetchedResult.from_json(loads(data, where, shown=shown), where)


#: The plan-deploy flags a next command sets itself (the rows, the plan file) or drops.
_REPLACED_FLAGS = frozenset({"--measured", "--out", "--format"})
#: What stands for a value the stack cannot tell (a deploy without a plan command).
TPOT_PLACEHOLDER = "<TPOT_MS>"
PEAK_PLACEHOLDER = "<PEAK_STREAMS>"
ADMIN_PLACEHOLDER = "<YOUR_IAM_ARN>"


@dataclass(frozen=True)
class NextCommands:
    """What to run after a fetch: plan on the measured rows, then deploy that plan."""

    plan_deploy: tuple[str, ...] | None
    """`python -m trnspec plan-deploy ...` (None: the run wrote no rows)."""
    cdk_env: tuple[tuple[str, str], ...]
    """Environment for the cdk command (AWS_REGION: the stack's region)."""
    cdk_deploy: tuple[str, ...]
    """`npx cdk deploy --all -c ... -c serving.plan=PLAN`."""
    plan_file: str
    notes: tuple[str, ...]
    """One line each: what the commands could not take from the stack."""

    def lines(self) -> list[str]:
        """The commands as a shell takes them (shlex-quoted), after their notes."""
        out = list(self.notes)
        if self.plan_deploy is not None:
            out.append(shlex.join(self.plan_deploy))
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.cdk_env)
        out.append(f"{env} {shlex.join(self.cdk_deploy)}".strip())
        return out


def next_commands(
    outputs: dict[str, str], result: FetchedResult, run_dir: str, rows_file: str | None
) -> NextCommands:
    """The exact `plan-deploy --measured` and `cdk deploy` after a calibration: `outputs` are
    the serving stack's, `result` its calibration.json, `run_dir` where the run was written (as
    the commands should name it) and `rows_file` its trn2_rows.yaml (None: no rows)."""
    notes: list[str] = []
    plan_file = f"{run_dir}/plan.yaml"
    context = outputs.get(ServingOutputs.DEPLOY_CONTEXT)
    if context is not None:
        context_args = shlex.split(context)
    else:
        context_args = ["-c", "profile=default", "-c", f"admin_principal_arns={ADMIN_PLACEHOLDER}"]
        notes.append(
            f"the stack has no {ServingOutputs.DEPLOY_CONTEXT} output (deployed before it "
            "existed): repeat the -c items of your deploy (profile, admin_principal_arns, every "
            "override) in the cdk command below"
        )
    plan = None
    if rows_file is None:
        notes.append(
            "this run wrote no trn2_rows.yaml (calibration.json's trn2_rows says why): "
            "nothing to plan on; measure again"
        )
    else:
        plan = _plan_deploy(outputs.get(ServingOutputs.PLAN_COMMAND), result, context_args, notes)
        plan = (*plan, "--measured", rows_file, "--out", plan_file)
    region = outputs.get(ServingOutputs.REGION)
    env = (("AWS_REGION", region),) if region else ()
    cdk = ("npx", "cdk", "deploy", "--all", *context_args, "-c", f"serving.plan={plan_file}")
    return NextCommands(plan, env, cdk, plan_file, tuple(notes))


def _context_items(args: Sequence[str]) -> list[str]:
    """The `KEY=VALUE` after each `-c`."""
    return [item for flag, item in itertools.pairwise(args) if flag == "-c"]


def _context_value(args: Sequence[str], key: str) -> str | None:
    items = _context_items(args)
    found = [item.split("=", 1)[1] for item in items if item.startswith(f"{key}=")]
    return found[-1] if found else None


def _plan_deploy(
    command: str | None, result: FetchedResult, context_args: Sequence[str], notes: list[str]
) -> tuple[str, ...]:
    """The deployed plan's command, its --config the deployed profile's file, without the flags
    the next command sets; with no command, the calibration's two profiles and placeholders."""
    head = ("python", "-m", "trnspec", "plan-deploy")
    if command is None:
        profiles = result.profiles
        notes.append(
            f"the stack has no {ServingOutputs.PLAN_COMMAND} output (no plan deployed): "
            f"replace {TPOT_PLACEHOLDER} and {PEAK_PLACEHOLDER} with your targets"
        )
        flags = [x for name in profiles for x in ("--profile", name)]
        return (*head, *flags, "--tpot-ms", TPOT_PLACEHOLDER, "--peak-streams", PEAK_PLACEHOLDER)
    words = shlex.split(command)
    args = words[len(head) :] if tuple(words[: len(head)]) == head else words
    kept: list[str] = []
    skip = False
    profile = _context_value(context_args, "profile") or "default"
    for word in args:
        if skip:
            skip = False
            continue
        if word in _REPLACED_FLAGS:
            skip = True
            continue
        if word == "--config":
            kept += ["--config", f"config/{profile}.yaml"]
            skip = True
            continue
        kept.append(word)
    if "--config" in kept:
        # The pools the deploy overrode are the pools the plan must fit.
        pools = [item for item in _context_items(context_args) if item.startswith("trn2_pools.")]
        kept += [x for item in pools for x in ("--set", item)]
    return (*head, *kept)


@dataclass(frozen=True)
class Fetched:
    """A fetched run: where each file is (its target, or a fallback copy) and what it says."""

    written: tuple[Written, ...]
    result: FetchedResult

    @property
    def files(self) -> list[Path]:
        return [w.path for w in self.written if w.path is not None]

    def moved(self) -> list[str]:
        """One line per file not written where asked, naming where it is kept."""
        return moved_lines(self.written)


def fetch(
    stack: str,
    out_dir: Path,
    region: str | None = None,
    clients: Callable[[str | None], tuple[object, object]] | None = None,
    log: Callable[[str], None] = print,
    timeout_s: float = DEFAULT_AWS_TIMEOUT_S,
) -> Fetched:
    """Download the newest complete run, print its verdict and the next commands;
    `clients(region)` gives (cloudformation, s3). `out_dir` is proven writable before anything
    is asked of AWS, and calibration.json read through FetchedResult before anything is
    written (BoundaryError otherwise); a file that cannot be written where asked is kept in a
    fallback directory (write_outputs) and named by `Fetched.moved`. Each read of the bucket is
    whole within `timeout_s` (store.StoreError otherwise)."""
    check_out_dir("--out", out_dir, (), ())
    if clients is None:
        clients = _boto_clients
    cloudformation, s3 = clients(region)
    outputs = read_stack_outputs(cloudformation, stack)
    bucket = stack_bucket_of(outputs, stack)
    newest = store.newest_complete(s3, bucket, timeout_s)
    if newest is None:
        raise StackError(
            f"--stack={stack}: no calibration results in s3://{bucket}/{store.PREFIX} yet; the "
            "calibration Job writes them when it finishes (serving.calibration set)"
        )
    prefix = f"s3://{bucket}/{store.run_prefix(newest)}"
    blobs = store.read_run(s3, bucket, newest, timeout_s)
    name = f"{newest}/{store.RESULT_JSON}"
    result = read_result(blobs[store.RESULT_JSON], name, shown=prefix + store.RESULT_JSON)
    written = tuple(
        write_outputs(PROG.replace(" ", "-"), [(out_dir / newest / n, d) for n, d in blobs.items()])
    )
    log(f"{prefix} -> {out_dir / newest}/")
    for level in result.levels:
        log(printable(level.text, 400))
    log(f"verdict: {printable(result.verdict, 400)}")
    where = {w.target.name: w.path for w in written}
    result_path = where[store.RESULT_JSON]
    run_dir = result_path.parent if result_path is not None else out_dir / newest
    rows = where.get(store.ROWS_YAML)
    following = next_commands(
        outputs, result, run_dir.as_posix(), rows.as_posix() if rows is not None else None
    )
    log("next: plan on the measured rows, then deploy that plan (from the repository root):")
    for line in following.lines():
        log(f"  {line}")
    return Fetched(written, result)


def _boto_clients(region: str | None) -> tuple[object, object]:
    clients = AwsClients.for_region(region, DEFAULT_AWS_TIMEOUT_S)
    import boto3

    s3 = boto3.session.Session(region_name=clients.cloudformation.meta.region_name).client(
        "s3", config=aws_config(DEFAULT_AWS_TIMEOUT_S)
    )
    return clients.cloudformation, s3


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stack",
        required=True,
        help="the serving stack (the platform stack's name + -serving): TrnspecPlatform-serving",
    )
    parser.add_argument(
        "--region",
        type=arg(region_problem),
        default=None,
        help="region of the stack (default: AWS config)",
    )
    parser.add_argument("--out", type=Path, default=Path("reports/calibration"))


def run_parsed(args: argparse.Namespace) -> int:
    try:
        fetched = fetch(args.stack, args.out, args.region)
    except (StackError, store.StoreError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    for w in fetched.written:
        if not w.moved:
            print(f"wrote {w.path}")
    for line in fetched.moved():
        print(f"{PROG}: error: {line}", file=sys.stderr)
    return 1 if fetched.moved() else 0


@exits_on_bad_input(PROG)
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m trnspec_tools {PROG}", description=__doc__)
    add_cli_args(parser)
    return run_parsed(parser.parse_args(argv))
