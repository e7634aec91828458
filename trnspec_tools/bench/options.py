"""bench's command line, parsed once at the edge into one typed, frozen options object.

`bench_options(args)` checks every flag (one line naming the flag, the value and the fix, as a
UsageError) before anything is started or sent, and returns the BenchOptions the run reads; no
module below bench.main sees the argparse namespace.
"""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import dataclass
from pathlib import Path

from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.numbers import parse_int_list as boundary_int_list
from trnspec.boundary.problems import ABSENT, InputError, Problem
from trnspec.boundary.write import output_clash

from trnspec_tools.bench.run import RunOptions, run_options_from_args
from trnspec_tools.bench.stats import Slo
from trnspec_tools.bench.workload import Workload
from trnspec_tools.bench.workload_args import workload_of
from trnspec_tools.boundary.endpoint import Endpoint
from trnspec_tools.client.client_args import client_arg_problems

#: `--compare local` / the endpoint of the local launcher
LOCAL = "local"


class UsageError(InputError):
    """Bad command-line input of bench or tune: every problem naming the flag, the value and the
    fix, one a line; exit code 2."""

    @classmethod
    def of(cls, flag: str, value: object, fix: str) -> UsageError:
        """One problem (`value` ABSENT when there is none to show: `flag: fix`)."""
        return cls([Problem(flag, value, fix)])


def parse_int_list(flag: str, text: str) -> list[int]:
    """Integers in 1..MAX_COUNT (trnspec.boundary.numbers.parse_int_list), as a UsageError."""
    try:
        return boundary_int_list(flag, text)
    except BoundaryError as exc:
        raise UsageError(exc.problems) from None


@dataclass(frozen=True)
class BenchOptions:
    """Everything a bench run reads, checked."""

    #: the target URL (after --stack), None with --local
    endpoint: str | None
    local: bool
    #: --set profile overrides (for --local and --profile)
    overrides: tuple[str, ...]
    model: str | None
    #: --compare: a baseline URL, LOCAL, or None
    compare: str | None
    workload: Workload
    levels: tuple[int, ...]
    #: runs of every arm at every level (--rounds), alternated
    rounds: int
    per_category: bool
    run: RunOptions
    #: the price table entry (cpu-local with --local, else trn2.48xlarge unless given)
    instance_type: str
    price_per_hour: float | None
    #: the Trn2 profile whose prediction is set next to each level (--profile)
    profile: str | None
    out: Path
    plots: bool
    progress: bool


def bench_options(args: argparse.Namespace) -> BenchOptions:
    """The checked options of a parsed bench command line (args.endpoint already resolved)."""
    validate(args)
    return BenchOptions(
        endpoint=args.endpoint,
        local=bool(args.local),
        overrides=tuple(args.overrides),
        model=args.model,
        compare=args.compare,
        workload=workload_of(args),
        levels=tuple(parse_int_list("--concurrency", args.concurrency)),
        rounds=args.rounds,
        per_category=bool(args.per_category),
        run=run_options_from_args(
            args,
            request_rate=args.request_rate,
            ignore_eos=not args.no_ignore_eos,
            slo=Slo(args.slo_ttft_ms, args.slo_tpot_ms, args.slo_e2e_ms),
            num_speculative_tokens=args.num_speculative_tokens,
        ),
        instance_type=args.instance_type or ("cpu-local" if args.local else "trn2.48xlarge"),
        price_per_hour=args.price_per_hour,
        profile=args.profile,
        out=args.out,
        plots=not args.no_plots,
        progress=not args.no_progress,
    )


def validate(args: argparse.Namespace) -> None:
    if bool(args.endpoint) == bool(args.local):
        raise UsageError.of(
            "--endpoint/--local", ABSENT, "give exactly one (a URL or --stack, or --local)"
        )
    if args.overrides and not (args.local or args.profile):
        raise UsageError.of(
            "--set", ABSENT, "only applies to --local or --profile (the profile it changes)"
        )
    for flag, value in (("--endpoint", args.endpoint), ("--compare", args.compare)):
        if value and value != LOCAL:
            try:
                Endpoint.parse(value, flag)
            except BoundaryError as exc:
                fix = exc.fix + (" (or 'local')" if flag == "--compare" else "")
                raise UsageError.of(exc.field, exc.value, fix) from None
    if args.warmup is not None and args.warmup < 0:
        raise UsageError.of("--warmup", args.warmup, "must be >= 0")
    if problems := client_arg_problems(args):
        raise UsageError(problems)
    check_out_path("--out", args.out)
    if (clash := output_clash(output_paths(args.out, not args.no_plots))) is not None:
        raise UsageError(clash.problems)
    if args.num_speculative_tokens is not None and args.num_speculative_tokens < 1:
        raise UsageError.of("--num-speculative-tokens", args.num_speculative_tokens, "must be >= 1")


def check_out_path(flag: str, out: Path) -> None:
    """Refuse an --out the run could not write at its end, before the run starts: a directory,
    a parent that is a file, or a directory this user cannot write into."""
    if out.is_dir():
        raise UsageError.of(
            flag, str(out), f"is a directory; give a file path such as {out}/bench.json"
        )
    parent = out.parent
    existing = next((p for p in (parent, *parent.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise UsageError.of(flag, str(out), f"{existing} is a file, not a directory")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as exc:
        raise UsageError.of(
            flag, str(out), f"cannot write in {parent} ({exc.strerror or exc}); choose another path"
        ) from None


def output_paths(out: Path, plots: bool) -> list[tuple[str, Path]]:
    """Every file a run writes, named for messages: JSON, Markdown, and the plots."""
    paths = [("--out", out), ("the Markdown summary", out.with_suffix(".md"))]
    if plots:
        paths += [
            ("the latency plot", out.with_name(f"{out.stem}_latency.png")),
            ("the acceptance plot", out.with_name(f"{out.stem}_acceptance.png")),
        ]
    return paths
