"""Benchmark an OpenAI-compatible endpoint: latency, throughput, acceptance, cost per token.

    python scripts/bench.py --endpoint http://127.0.0.1:8000 --concurrency 1,4 \\
        --num-prompts 32 --input-len 64 --output-len 128 --out reports/bench.json \\
        --compare http://127.0.0.1:8001
    python scripts/bench.py --local --compare local --concurrency 1,2 --out reports/local.json
    python scripts/bench.py --stack TrnspecPlatform-serving --out reports/trn2.json

`--local` starts the embedded default (the real vLLM CPU server, speculative) through
`local_server.LocalServer`; `--compare local` starts a second one with speculation.method=none
for the baseline. Both arms get the same prompts in the same order, level by level, their order
reversed at every step (arm_order.py), a local server stopped while the other arm is measured.
`--rounds N` measures every arm N times per level (ABBA): each level's speedup is then the median
of the rounds' paired ratios, with its range (rounds.py). Writes the JSON (every figure), a
Markdown summary next to it and PNG plots; exit code 2 on bad input, 1 if no request completed.

`--profile P` (a Trn2 profile) adds the performance model's prediction next to each measured
level (versus_predicted.py); `--per-category` measures acceptance per "category" of a JSONL dataset,
each category alone (categories.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import socket
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from trnspec.boundary import json_io
from trnspec.boundary.args import price_arg
from trnspec.boundary.errors import exits_on_bad_input
from trnspec.boundary.numbers import float_arg, int_arg
from trnspec.boundary.problems import InputError
from trnspec.boundary.write import Written, moved_lines
from trnspec.boundary.write import write_outputs as write_report_files
from trnspec.cli.config_args import add_set_argument
from trnspec.hardware.pricing import resolve_price

from trnspec_tools.ab import comparison as ab
from trnspec_tools.ab.order import MAX_ROUNDS, measurement_steps
from trnspec_tools.bench.categories import (
    add_category_arguments,
    category_workloads,
    dataset_categories,
    run_categories,
)
from trnspec_tools.bench.options import (
    LOCAL,
    BenchOptions,
    UsageError,
    bench_options,
)
from trnspec_tools.bench.report import (
    bench_markdown,
    plot_acceptance_by_position,
    plot_latency_vs_throughput,
)
from trnspec_tools.bench.rounds import LevelComparison, combined, median_runs
from trnspec_tools.bench.run import RunOptions, run_level
from trnspec_tools.bench.run_result import ArmRun
from trnspec_tools.bench.stats import compare
from trnspec_tools.bench.versus_predicted import (
    PredictionSetup,
    add_predict_arguments,
    attach,
    setup,
)
from trnspec_tools.bench.workload_args import add_workload_args
from trnspec_tools.client.client_args import (
    add_client_args,
    add_model_args,
)
from trnspec_tools.client.metrics import MAX_POSITIONS
from trnspec_tools.client.request_spec import RequestSpec
from trnspec_tools.client.served_model import NoServedModel, resolve_model
from trnspec_tools.client.stack_endpoint import StackError, add_stack_arguments, resolve_endpoint
from trnspec_tools.local_engine.local_server import LocalServerError
from trnspec_tools.local_engine.paused import paused


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
    #: the process group of a local server (None for a URL)
    pid: int | None = None


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
    load.add_argument(
        "--rounds",
        type=int_arg(1, MAX_ROUNDS),
        default=1,
        help="runs of every arm at every level, alternated (default 1); with --compare and 2 or"
        " more, each level's speedup is the median of the rounds' paired ratios, with its range",
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
    cost.add_argument("--price-per-hour", type=price_arg(), help="override the price table, USD/h")
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
            server.pid,
        )


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


async def served_model(arm: Arm, opts: RunOptions, model_flag: str | None) -> str:
    """The model a live arm serves (--model, the launcher's, or the one /v1/models lists)."""
    assert arm.endpoint is not None
    try:
        return await resolve_model(
            arm.endpoint,
            model_flag,
            arm.model,
            timeout_s=min(10.0, opts.timeout_s),
            api_key=opts.api_key,
        )
    except NoServedModel as exc:
        raise UsageError(exc.problems) from None


async def run_arm_level(
    arm: Arm,
    model: str,
    specs: Sequence[RequestSpec],
    c: int,
    opts: RunOptions,
    price: float,
    progress: Progress,
) -> ArmRun:
    """One concurrency level of one live arm."""
    assert arm.endpoint is not None
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
        on_done=lambda: progress.advance(task),
    )
    return ArmRun(arm.name, arm.endpoint, model, stats)


def arms_of(o: BenchOptions) -> list[Arm]:
    """The target, and the baseline of --compare (a URL, or the local server with the target's
    every --set and speculation off)."""
    arms = [Arm("target", o.endpoint, list(o.overrides) if o.local else None)]
    if o.compare == LOCAL:
        arms.append(Arm("baseline", None, [*o.overrides, "speculation.method=none"]))
    elif o.compare:
        arms.append(Arm("baseline", o.compare))
    return arms


@dataclass(frozen=True)
class _Plan:
    """What every arm is measured with: prompts, levels, options, price, prediction setup."""

    specs: list[RequestSpec]
    levels: list[int]
    rounds: int
    price: float
    ps: PredictionSetup | None
    categories: dict[str, list[RequestSpec]] | None


#: one arm's runs at one level, in round order, keyed by (arm name, level)
Rounds = dict[tuple[str, int], list[ArmRun]]


async def _measure_arms(
    o: BenchOptions, arms: list[Arm], plan: _Plan
) -> tuple[Rounds, dict[str, Any] | None]:
    """Every arm's server up at once (a local arm's started here), every round of every level of
    every arm in `measurement_steps` (alternating, so drift of the host weighs on both arms
    alike), each local server but the measured arm's stopped meanwhile (`paused`), then the
    per-category runs of the target."""
    with contextlib.ExitStack() as stack, _progress(not o.progress) as progress:
        live = {arm.name: stack.enter_context(opened(arm)) for arm in arms}
        models = {name: await served_model(arm, o.run, o.model) for name, arm in live.items()}

        def others(name: str) -> list[int | None]:
            return [arm.pid for other, arm in live.items() if other != name]

        measured: Rounds = {}
        for step in measurement_steps(list(live), plan.levels, plan.rounds):
            name, c = step.arm, step.level
            with paused(others(name)):
                run = await run_arm_level(
                    live[name], models[name], plan.specs, c, o.run, plan.price, progress
                )
            measured.setdefault((name, c), []).append(run)
        per_category = None
        if plan.categories:
            target = live["target"]
            with paused(others(target.name)):
                per_category = await run_categories(
                    target.endpoint or "",
                    models[target.name],
                    target.k,
                    plan.categories,
                    plan.levels[0],
                    o.run,
                    plan.price,
                    plan.ps,
                )
    return measured, per_category


def _comparison(measured: Rounds, levels: list[int]) -> list[LevelComparison]:
    """Target against baseline at each level, round by round, combined (rounds.py); [] without
    a baseline."""
    if not any(name == "baseline" for name, _ in measured):
        return []
    out = []
    for c in levels:
        targets, baselines = measured["target", c], measured["baseline", c]
        per_round = [compare(t.result, b.result) for t, b in zip(targets, baselines, strict=True)]
        rounds = ab.compare(
            [b.result.as_round(i) for i, b in enumerate(baselines)],
            [t.result.as_round(i) for i, t in enumerate(targets)],
        )
        out.append(combined(c, per_round, rounds))
    return out


async def run(o: BenchOptions) -> dict[str, Any]:
    levels = list(o.levels)
    specs = o.workload.specs()
    w = o.workload
    ps = setup(o.profile, o.overrides, specs, w.output_len, o.local)
    categories = (
        category_workloads(w.dataset, w.num_prompts, w.output_len, w.seed)
        if o.per_category
        else None
    )
    price, price_source = resolve_price(o.instance_type, o.price_per_hour)
    arms = arms_of(o)
    load = os.getloadavg()
    on_server_host = o.local or any(
        is_local_url(a.endpoint) for a in arms if a.endpoint is not None
    )
    plan = _Plan(specs, levels, o.rounds, price, ps, categories)
    measured, per_category = await _measure_arms(o, arms, plan)
    comparison = _comparison(measured, levels)
    runs = median_runs(measured, levels, [a.name for a in arms])
    runs, comparison = attach(ps, runs, comparison, len(specs))
    headline = next(r for r in runs if r.arm == "target")
    return {
        **{k: v for k, v in headline.to_json().items() if k != "arm"},
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "config": {
            "endpoint": o.endpoint or "local",
            "model": headline.model,
            "api": o.run.api,
            "compare": o.compare,
            "measurement_order": [
                [s.arm, s.level]
                for s in measurement_steps([a.name for a in arms], levels, o.rounds)
            ],
            "rounds": o.rounds,
            "concurrency": levels,
            "num_prompts": len(specs),
            "input_desc": w.description,
            "output_len": w.output_len,
            "warmup": o.run.warmup,
            "request_rate": None if o.run.request_rate == float("inf") else o.run.request_rate,
            "seed": w.seed,
            "instance_type": o.instance_type,
            "price_per_hour_usd": price,
            "price_source": price_source,
            "overrides": list(o.overrides),
            "profile": o.profile,
            "dataset_categories": dataset_categories(w.dataset),
            "load_average": f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} cpus)",
            "cpu_count": os.cpu_count(),
            "client_on_server_host": on_server_host,
        },
        "runs": [r.to_json() for r in runs],
        # every round when there were several (`runs` holds each arm's median round per level)
        **(
            {
                "runs_by_round": [
                    {"round": i + 1, **r.to_json()}
                    for c in levels
                    for a in arms
                    for i, r in enumerate(measured[a.name, c])
                ]
            }
            if o.rounds > 1
            else {}
        ),
        "comparison": [c.to_json() for c in comparison],
        "per_category": per_category,
    }


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
            options = bench_options(args)
            result = asyncio.run(run(options))
    except (InputError, StackError) as exc:
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
    written = write_outputs(result, options.out, plots=options.plots)
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
