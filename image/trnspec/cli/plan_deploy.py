"""`python -m trnspec plan-deploy`: pick the deployment (k, max_num_seqs, replicas, nodes, KEDA
target) for a latency target and a peak load, say how sure the choice is, and write it as a file
`cdk deploy` runs unchanged.

    python -m trnspec plan-deploy --profile qwen3-4b-dflash --acceptance-length 2.1 \\
        --acceptance-k 15 --tpot-ms 30 --peak-streams 16 --out config/plans/default.yaml

`plan` (no suffix) stays the HBM sizing of one config. This module is the command only: the flags
become a PlanRequest (trnspec.plan.plan_request, outside values read by trnspec.plan.readers),
`trnspec.plan.plan_deploy.plan_deploy` answers it, and trnspec.plan.plan_text prints it
(trnspec.plan.document: the JSON and the plan file --out writes, with `plan.command`, derived
from this parser). Acceptance: --acceptance-rate, --acceptance-length [--acceptance-k],
--tune-report (its `fit.alpha`) or --acceptance-from (served, from Prometheus). `--measured`
refits on measured rows; `--config` plans for a deployment config's pools. Bad input exits 2
naming the flag.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields
from pathlib import Path

from trnspec.boundary import json_io
from trnspec.boundary.args import path_arg, price_arg, text_arg
from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.numbers import float_arg, int_arg
from trnspec.boundary.shell import shell_command
from trnspec.boundary.write import moved_lines, output_clash, write_outputs
from trnspec.config.scale_up import RAMP_STEPS, SCALE_UP_PERIOD_SECONDS
from trnspec.config.serving import ConfigError, Problem, load_profile
from trnspec.plan.deploy_plan import MAX_REPLICAS
from trnspec.plan.document import json_document, plan_file_text
from trnspec.plan.plan_deploy import check_request_fit, nothing_fits, plan_deploy
from trnspec.plan.plan_request import PlanRequest, PoolsGiven
from trnspec.plan.plan_text import format_plans
from trnspec.plan.predict import int_list
from trnspec.plan.readers.evidence import read_acceptance, read_deployment_config, read_measured
from trnspec.plan.served_acceptance import window

__all__ = ["DESCRIPTION", "HELP", "add_arguments", "command_line", "main", "request_from_args"]

#: The line `trnspec --help` lists for the subcommand, and its description.
HELP = "pick k, max_num_seqs, replicas, nodes and the KEDA target; write a deploy plan"
DESCRIPTION = (__doc__ or "").split("\n\n")[0]


#: The request's fields read (or parsed) from their flags rather than taken as given.
_READ = frozenset({"profile", "acceptance", "max_num_seqs", "measured", "config"})


def request_from_args(args: argparse.Namespace) -> PlanRequest:
    """The flags as a PlanRequest, each outside value read by its reader (in the flags' order,
    so that of several problems the first flag's is reported)."""
    if args.overrides and not args.config:
        raise ConfigError([Problem("--set", args.overrides[0], "--set applies to --config FILE")])
    cfgs = tuple(load_profile(name) for name in args.profile)
    check_request_fit(cfgs, args.input_len, args.output_len)
    given = (args.acceptance_rate, args.acceptance_length, args.acceptance_k)
    acceptance = read_acceptance(cfgs, args.tune_report, args.acceptance_from, args.window, given)
    batches = tuple(int_list("--max-num-seqs", args.max_num_seqs, 1)) if args.max_num_seqs else None
    measured = read_measured(args.measured) if args.measured else None
    config = None
    if args.config:
        deployment = read_deployment_config(args.config, args.overrides)
        config = PoolsGiven(args.config, tuple(args.overrides), deployment)
    # every other field is the flag of the same name, as parsed
    as_given = {f.name: getattr(args, f.name) for f in fields(PlanRequest) if f.name not in _READ}
    return PlanRequest(
        cfgs, acceptance, max_num_seqs=batches, measured=measured, config=config, **as_given
    )


def command_line(request: PlanRequest) -> str:
    """The command that gives the plan again: the request's replayed values under the parser's
    own flags, in the parser's order (a repeated flag once per value, a float as `:g`), each
    word quoted for the shell (a path or a --set value may hold spaces or shell syntax)."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    replay = request.replay()
    flags = {a.dest: a.option_strings[0] for a in parser._actions if a.option_strings}
    unknown = sorted(set(replay) - set(flags))
    assert not unknown, f"replayed values without a flag: {unknown}"
    words = ["python", "-m", "trnspec", "plan-deploy"]
    for dest, flag in flags.items():
        value = replay.get(dest)
        values = value if isinstance(value, list) else [] if value is None else [value]
        for v in values:
            words += [flag, f"{v:g}" if isinstance(v, float) else str(v)]
    return shell_command(*words)


def main(args: argparse.Namespace) -> int:
    if args.out and (clash := output_clash(_outputs(args))) is not None:
        raise clash
    request = request_from_args(args)
    result = plan_deploy(request)
    command = command_line(request)
    if args.format == "json":
        print(json_io.dumps(json_document(result, command)), end="")
    else:
        print(format_plans(result))
    if result.decision is None:
        raise nothing_fits(result)
    if args.out:
        # write_outputs: atomic, and a plan that cannot be written where asked (a full disk) is
        # kept in a fallback directory, named in one line, exit 1: the plan is never lost
        text = plan_file_text(result, command)
        written = write_outputs("plan-deploy", [(Path(args.out), text)])
        for line in moved_lines(written):
            print(f"plan-deploy: error: {line}", file=sys.stderr)
            if written[0].path is None:  # no fallback either: the plan on stderr, whole
                print(text, file=sys.stderr)
            return 1
        # With --format json, stdout holds the JSON document alone.
        print(f"wrote {args.out}", file=sys.stderr if args.format == "json" else sys.stdout)
    return 0


def _outputs(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """--out, after the inputs it must not overwrite (--tune-report, --config, --measured)."""
    inputs = [
        (flag, Path(value))
        for flag, value in (
            ("--tune-report", args.tune_report),
            ("--config", args.config),
            ("--measured", args.measured),
        )
        if value and not str(value).startswith("s3://")
    ]
    return [*inputs, ("--out", Path(args.out))]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of `plan-deploy`."""
    p.add_argument(
        "--profile",
        action="append",
        required=True,
        type=text_arg(),
        help="a candidate profile (repeatable)",
    )
    _add_acceptance_flags(p)
    p.add_argument(
        "--tpot-ms", type=float_arg(0, 1e6, lo_open=True), required=True, help="TPOT p50 target"
    )
    p.add_argument(
        "--peak-streams", type=int_arg(1), required=True, help="expected peak concurrent streams"
    )
    p.add_argument(
        "--min-replicas", type=int_arg(1, MAX_REPLICAS), default=1, help="replicas kept (def. 1)"
    )
    p.add_argument(
        "--max-num-seqs", type=text_arg(), help="candidate batches, e.g. 1,2,4 (default 1..32)"
    )
    p.add_argument(
        "--price-per-hour",
        type=price_arg(),
        help="USD per instance hour (default: table)",
    )
    p.add_argument(
        "--input-len", type=int_arg(1, 10_000_000), default=512, help="prompt tokens (def. 512)"
    )
    p.add_argument(
        "--output-len", type=int_arg(1, 10_000_000), default=256, help="output tokens (def. 256)"
    )
    _add_evidence_flags(p)
    p.add_argument(
        "--out", type=path_arg(), help="write the chosen deployment as a plan file (YAML)"
    )
    p.add_argument("--format", choices=("table", "json"), default="table")


def _add_acceptance_flags(p: argparse.ArgumentParser) -> None:
    """The acceptance: given, from a tune report, or served (Prometheus)."""
    acc = p.add_mutually_exclusive_group()
    acc.add_argument(
        "--acceptance-rate", type=float_arg(0, 1), help="per-token acceptance a in [0, 1]"
    )
    acc.add_argument(
        "--acceptance-length", type=float_arg(1, 65), help="tokens per verification step"
    )
    acc.add_argument("--tune-report", type=path_arg(), help="a `tune` report JSON: its fit.alpha")
    acc.add_argument(
        "--acceptance-from",
        metavar="URL",
        type=text_arg(),
        help="the Prometheus the stack deploys (http://HOST:9090): the served acceptance",
    )
    p.add_argument(
        "--window",
        type=_window_arg,
        default="1h",
        help="with --acceptance-from: the window of served traffic (1m..30d, default 1h)",
    )
    p.add_argument(
        "--acceptance-k", type=int_arg(1, 64), help="k of --acceptance-length (default: profile's)"
    )


def _add_evidence_flags(p: argparse.ArgumentParser) -> None:
    """Measured rows, the deployment config's pools and the ramp's policy and targets."""
    p.add_argument(
        "--measured",
        metavar="PATH|s3://BUCKET/KEY",
        type=text_arg(),
        help="measured rows (trn2_rows.yaml of a calibration, or tune --rows-out): refit on"
        " them; speculation measured slower than plain at a batch is never planned there",
    )
    p.add_argument(
        "--config",
        metavar="FILE",
        type=path_arg(),
        help="a deployment config (config/*.yaml): plan for its trn2_pools only",
    )
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="PATH=VALUE",
        type=text_arg(),
        help="with --config: override a field of it, e.g. trn2_pools.0.max_size=4 (repeatable)",
    )
    p.add_argument(
        "--ttft-ms",
        type=float_arg(0, 1e9, lo_open=True),
        help="TTFT target: warn when queueing during the ramp breaks it",
    )
    p.add_argument(
        "--scale-up-pods",
        type=int_arg(1, MAX_REPLICAS),
        help="pods the autoscaler adds per period (default: the deployed policy's,"
        f" ceil((replicas at peak - min_replicas) / {RAMP_STEPS}))",
    )
    p.add_argument(
        "--scale-up-period-s",
        type=int_arg(1, 3600),
        help=f"seconds per scale-up step (default: the deployed {SCALE_UP_PERIOD_SECONDS})",
    )
    p.add_argument(
        "--pod-start-minutes",
        type=float_arg(0, 24 * 60),
        help="minutes from a new pod to Ready (node, weights, compile cache): counted in the ramp",
    )


def _window_arg(text: str) -> str:
    try:
        return window(text)
    except BoundaryError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {exc.fix}") from None


if __name__ == "__main__":
    from trnspec.cli.main import main as cli_main

    sys.exit(cli_main(["plan-deploy", *sys.argv[1:]]))
