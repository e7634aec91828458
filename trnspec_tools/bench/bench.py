"""Benchmark an OpenAI-compatible endpoint: latency, throughput, acceptance, cost per token.

    python scripts/bench.py --endpoint http://127.0.0.1:8000 --concurrency 1,4 \\
        --num-prompts 32 --input-len 64 --output-len 128 --out reports/bench.json \\
        --compare http://127.0.0.1:8001
    python scripts/bench.py --local --compare local --concurrency 1,2 --out reports/local.json
    python scripts/bench.py --stack TrnspecPlatform-serving --out reports/trn2.json

`--local` starts the embedded default (the real vLLM CPU server, speculative) through
`local_server.LocalServer`; `--compare local` restarts it with speculation.method=none for
the baseline. Both arms get the same prompts in the same order. Writes the JSON (every figure),
a Markdown summary next to it and PNG plots; exit code 2 on bad input, 1 if no request completed.

`--profile P` (a Trn2 profile) adds the performance model's prediction next to each measured
level (bench_predict.py); `--per-category` measures acceptance per "category" of a JSONL dataset,
each category alone (bench_categories.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import socket
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from trnspec.boundary import json_io
from trnspec.boundary.errors import BoundaryError, exits_on_bad_input
from trnspec.boundary.numbers import float_arg, int_arg
from trnspec.boundary.numbers import parse_int_list as boundary_int_list
from trnspec.boundary.write import Written, moved_lines, output_clash
from trnspec.boundary.write import write_outputs as write_report_files
from trnspec.cli.main import add_set_argument
from trnspec.config.serving import ConfigError
from trnspec.hardware.pricing import PriceError, resolve_price

from trnspec_tools.bench.bench_categories import (
    add_category_arguments,
    category_workloads,
    dataset_categories,
    run_categories,
)
from trnspec_tools.bench.bench_predict import add_predict_arguments, attach, setup
from trnspec_tools.bench.bench_report import (
    bench_markdown,
    plot_acceptance_by_position,
    plot_latency_vs_throughput,
)
from trnspec_tools.bench.bench_run import RunOptions, run_level, run_options_from_args
from trnspec_tools.bench.bench_stats import Slo, compare
from trnspec_tools.bench.bench_workload import (
    WorkloadError,
    select_workload,
)
from trnspec_tools.bench.workload_args import add_workload_args
from trnspec_tools.client.client_args import (
    add_client_args,
    add_model_args,
    client_arg_problems,
)
from trnspec_tools.client.metrics import MAX_POSITIONS
from trnspec_tools.client.request_spec import RequestSpec
from trnspec_tools.client.served_model import NoServedModel, resolve_model
from trnspec_tools.client.stack_endpoint import StackError, add_stack_arguments, resolve_endpoint
from trnspec_tools.inbound.endpoint import Endpoint
from trnspec_tools.local_engine.local_server import LocalServerError

LOCAL = "local"


class UsageError(ValueError):
    """Bad command-line input: printed as one line naming the flag, exit code 2."""


@dataclass
class Arm:
    """One side of the comparison: a URL, or the local launcher with some overrides."""

    name: str
    endpoint: str | None
    local_overrides: list[str] | None = None
    model: str | None = None
    k: int | None = None
    #: the target model directory of a local server (holds its tokenizer)
    model_path: str | None = None


def parse_int_list(flag: str, text: str) -> list[int]:
    """Integers in 1..MAX_COUNT (trnspec.boundary.numbers.parse_int_list), as a UsageError."""
    try:
        return boundary_int_list(flag, text)
    except BoundaryError as exc:
        raise UsageError(str(exc)) from None


def add_cli_args(p: argparse.ArgumentParser) -> None:
    """The benchmark flags (`python -m trnspec_tools bench` and scripts/bench.py)."""
    target = p.add_argument_group("target")
    target.add_argument("--endpoint", help="base URL, e.g. http://127.0.0.1:8000")
    add_stack_arguments(p, target)
    target.add_argument(
        "--local", action="store_true", help="start the local speculative server (LocalServer)"
    )
    add_set_argument(
        target,
        help="profile override for --local or --profile (repeatable),"
        " e.g. speculation.num_speculative_tokens=2",
    )
    add_model_args(target)
    target.add_argument(
        "--compare",
        metavar="BASELINE_URL|local",
        help="baseline endpoint for A/B, or 'local' to restart the local server with method none",
    )
    load = p.add_argument_group("load")
    add_workload_args(load)
    load.add_argument(
        "--request-rate",
        type=float_arg(0, lo_open=True, allow_inf=True),
        default=float("inf"),
        help="Poisson arrivals per second (default: inf = closed loop)",
    )
    add_category_arguments(load)
    add_client_args(p.add_argument_group("client (deadlines per request, retries, API key)"))
    load.add_argument(
        "--no-ignore-eos",
        action="store_true",
        help="let requests stop at EOS (default: always produce --output-len)",
    )
    slo = p.add_argument_group("goodput SLO (a request is good if it meets every one set)")
    slo.add_argument("--slo-ttft-ms", type=float_arg(0, lo_open=True))
    slo.add_argument("--slo-tpot-ms", type=float_arg(0, lo_open=True))
    slo.add_argument("--slo-e2e-ms", type=float_arg(0, lo_open=True))
    cost = p.add_argument_group("speculation and cost")
    cost.add_argument(
        "--num-speculative-tokens",
        type=int_arg(1, MAX_POSITIONS),
        help="server k, to turn a chunk-based estimate into an acceptance rate",
    )
    cost.add_argument(
        "--instance-type",
        help="price table entry (default: cpu-local with --local, else trn2.48xlarge)",
    )
    cost.add_argument(
        "--price-per-hour", type=float_arg(0, lo_open=True), help="override the price table, USD/h"
    )
    add_predict_arguments(cost)
    out = p.add_argument_group("output")
    out.add_argument("--out", type=Path, required=True, help="result JSON path")
    out.add_argument("--no-plots", action="store_true")
    out.add_argument("--no-progress", action="store_true")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bench.py",
        description="Benchmark an OpenAI-compatible endpoint (speculative vs baseline).",
    )
    add_cli_args(p)
    return p


def workload(args: argparse.Namespace) -> list[RequestSpec]:
    return select_workload(
        args.dataset, args.num_prompts, args.input_len, args.output_len, args.seed
    )


def validate(args: argparse.Namespace) -> None:
    if bool(args.endpoint) == bool(args.local):
        raise UsageError("--endpoint/--local: give exactly one (a URL or --stack, or --local)")
    if args.overrides and not (args.local or args.profile):
        raise UsageError("--set: only applies to --local or --profile (the profile it changes)")
    for flag, value in (("--endpoint", args.endpoint), ("--compare", args.compare)):
        if value and value != LOCAL:
            try:
                Endpoint.parse(value, flag)
            except BoundaryError as exc:
                raise UsageError(
                    str(exc) + (" (or 'local')" if flag == "--compare" else "")
                ) from None
    if args.warmup is not None and args.warmup < 0:
        raise UsageError(f"--warmup={args.warmup}: must be >= 0")
    if problems := client_arg_problems(args):
        raise UsageError("; ".join(problems))
    check_out_path("--out", args.out)
    if (clash := output_clash(output_paths(args.out, not args.no_plots))) is not None:
        raise UsageError(str(clash))
    if args.num_speculative_tokens is not None and args.num_speculative_tokens < 1:
        raise UsageError(f"--num-speculative-tokens={args.num_speculative_tokens}: must be >= 1")


@contextlib.contextmanager
def opened(arm: Arm) -> Iterator[Arm]:
    """Resolve an arm to a live endpoint, starting (and always stopping) a local server."""
    if arm.local_overrides is None:
        yield arm
        return
    from trnspec_tools.local_engine.local_server import LocalServer

    with LocalServer(overrides=arm.local_overrides) as server:
        spec = server.config.speculation
        k = spec.num_speculative_tokens if spec.method != "none" else None
        yield Arm(
            arm.name,
            server.base_url,
            arm.local_overrides,
            server.model,
            k,
            server.config.target.source,
        )


def check_out_path(flag: str, out: Path) -> None:
    """Refuse an --out the run could not write at its end, before the run starts: a directory,
    a parent that is a file, or a directory this user cannot write into."""
    if out.is_dir():
        raise UsageError(f"{flag}={out}: is a directory; give a file path such as {out}/bench.json")
    parent = out.parent
    existing = next((p for p in (parent, *parent.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise UsageError(f"{flag}={out}: {existing} is a file, not a directory")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as exc:
        raise UsageError(
            f"{flag}={out}: cannot write in {parent} ({exc.strerror or exc}); choose another path"
        ) from None


def _progress(disabled: bool) -> Progress:
    # A slow refresh: the bar redraws in a thread that takes the GIL from the timing loop.
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        disable=disabled,
        transient=False,
        refresh_per_second=1,
    )


async def run_arm_levels(
    arm: Arm,
    specs: Sequence[RequestSpec],
    levels: Sequence[int],
    opts: RunOptions,
    price: float,
    progress: Progress,
    model_flag: str | None,
) -> list[dict[str, Any]]:
    """All concurrency levels for one live arm."""
    assert arm.endpoint is not None
    try:
        model = await resolve_model(
            arm.endpoint,
            model_flag,
            arm.model,
            timeout_s=min(10.0, opts.timeout_s),
            api_key=opts.api_key,
        )
    except NoServedModel as exc:
        raise UsageError(str(exc)) from None
    runs = []
    for c in levels:
        task = progress.add_task(f"{arm.name} c={c}", total=len(specs))
        k = opts.num_speculative_tokens or arm.k
        arm_opts = dataclasses.replace(opts, num_speculative_tokens=k)
        stats = await run_level(
            arm.endpoint,
            model,
            specs,
            c,
            arm_opts,
            price,
            on_done=lambda t=task: progress.advance(t),
        )
        runs.append({"arm": arm.name, "endpoint": arm.endpoint, "model": model, **stats})
    return runs


async def run(args: argparse.Namespace) -> dict[str, Any]:
    validate(args)
    levels = parse_int_list("--concurrency", args.concurrency)
    specs = workload(args)
    ps = setup(args.profile, args.overrides, specs, args.output_len, args.local)
    categories = (
        category_workloads(args.dataset, args.num_prompts, args.output_len, args.seed)
        if args.per_category
        else None
    )
    per_category: dict[str, Any] | None = None
    instance_type = args.instance_type or ("cpu-local" if args.local else "trn2.48xlarge")
    price, price_source = resolve_price(instance_type, args.price_per_hour)
    opts = run_options_from_args(
        args,
        request_rate=args.request_rate,
        ignore_eos=not args.no_ignore_eos,
        slo=Slo(args.slo_ttft_ms, args.slo_tpot_ms, args.slo_e2e_ms),
        num_speculative_tokens=args.num_speculative_tokens,
    )
    target = Arm("target", args.endpoint, list(args.overrides) if args.local else None)
    arms = [target]
    if args.compare == LOCAL:
        arms.append(Arm("baseline", None, [*args.overrides, "speculation.method=none"]))
    elif args.compare:
        arms.append(Arm("baseline", args.compare))
    load = os.getloadavg()
    on_server_host = bool(args.local) or any(
        is_local_url(a.endpoint) for a in arms if a.endpoint is not None
    )
    runs: list[dict[str, Any]] = []
    with _progress(args.no_progress) as progress:
        if all(a.local_overrides is None for a in arms):
            # Remote arms: interleave per level so slow drift on the host hits both alike.
            for c in levels:
                for arm in arms:
                    runs += await run_arm_levels(arm, specs, [c], opts, price, progress, args.model)
            if categories:
                per_category = await run_categories(
                    target.endpoint or "",
                    runs[0]["model"],
                    None,
                    categories,
                    levels[0],
                    opts,
                    price,
                    ps,
                )
        else:
            # A local server is (re)started per arm: run all its levels while it is up.
            for arm in arms:
                with opened(arm) as live:
                    runs += await run_arm_levels(
                        live, specs, levels, opts, price, progress, args.model
                    )
                    if categories and live.name == "target":
                        per_category = await run_categories(
                            live.endpoint or "",
                            runs[0]["model"],
                            live.k,
                            categories,
                            levels[0],
                            opts,
                            price,
                            ps,
                        )
    comparison = []
    if len(arms) == 2:
        for c in levels:
            t = next(r for r in runs if r["arm"] == "target" and r["concurrency"] == c)
            b = next(r for r in runs if r["arm"] == "baseline" and r["concurrency"] == c)
            comparison.append({"concurrency": c, **compare(t, b)})
    attach(ps, runs, comparison, len(specs))
    headline = next(r for r in runs if r["arm"] == "target")
    return {
        **{k: v for k, v in headline.items() if k not in ("arm",)},
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "config": {
            "endpoint": args.endpoint or "local",
            "model": headline["model"],
            "api": args.api,
            "compare": args.compare,
            "concurrency": levels,
            "num_prompts": len(specs),
            "input_desc": f"dataset {args.dataset}" if args.dataset else f"{args.input_len} words",
            "output_len": args.output_len,
            "warmup": args.warmup,
            "request_rate": None if args.request_rate == float("inf") else args.request_rate,
            "seed": args.seed,
            "instance_type": instance_type,
            "price_per_hour_usd": price,
            "price_source": price_source,
            "overrides": args.overrides,
            "profile": args.profile,
            "dataset_categories": dataset_categories(args.dataset),
            "load_average": f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} cpus)",
            "cpu_count": os.cpu_count(),
            "client_on_server_host": on_server_host,
        },
        "runs": runs,
        "comparison": comparison,
        "per_category": per_category,
    }


def output_paths(out: Path, plots: bool) -> list[tuple[str, Path]]:
    """Every file a run writes, named for messages: JSON, Markdown, and the plots."""
    paths = [("--out", out), ("the Markdown summary", out.with_suffix(".md"))]
    if plots:
        paths += [
            ("the latency plot", out.with_name(f"{out.stem}_latency.png")),
            ("the acceptance plot", out.with_name(f"{out.stem}_acceptance.png")),
        ]
    return paths


def write_outputs(result: dict[str, Any], out: Path, plots: bool) -> list[Written]:
    """JSON and Markdown through the one writer (trnspec.boundary.write: atomic, regular files
    only, kept in a named fallback directory when the target fails), then the plots."""
    written = write_report_files(
        "bench", [(out, json_io.dumps(result)), (out.with_suffix(".md"), bench_markdown(result))]
    )
    if plots and not any(w.moved for w in written):
        latency = out.with_name(f"{out.stem}_latency.png")
        written.append(Written(latency, plot_latency_vs_throughput(result["runs"], latency)))
        target = out.with_name(f"{out.stem}_acceptance.png")
        if (acc := plot_acceptance_by_position(result["runs"], target)) is not None:
            written.append(Written(acc, acc))
    return written


def is_local_url(url: str) -> bool:
    """True when a URL names this host (loopback or one of its names)."""
    host = (urlsplit(url).hostname or "").lower()
    if host in ("localhost", socket.gethostname().lower()) or host.startswith("127."):
        return True
    return host in ("::1", "0.0.0.0")


@exits_on_bad_input("bench.py")
def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        with resolve_endpoint(args) as args.endpoint:
            result = asyncio.run(run(args))
    except (UsageError, WorkloadError, PriceError, ConfigError, StackError) as exc:
        print(f"bench.py: error: {exc}", file=sys.stderr)
        return 2
    except LocalServerError as exc:
        print(f"bench.py: the local server failed: {exc}", file=sys.stderr)
        return 1
    except UnicodeDecodeError as exc:
        print(f"bench.py: error: an input file is not UTF-8 text ({exc.reason})", file=sys.stderr)
        return 2
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"bench.py: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench.py: interrupted; no report written", file=sys.stderr)
        return 130
    written = write_outputs(result, args.out, plots=not args.no_plots)
    print(bench_markdown(result))
    if moved := moved_lines(written):
        for line in moved:
            print(f"bench.py: error: {line}", file=sys.stderr)
        return 1
    print("wrote " + ", ".join(str(w.path) for w in written))
    completed = all(r["completed"] > 0 for r in result["runs"])
    return 0 if completed else 1


if __name__ == "__main__":
    sys.exit(main())
