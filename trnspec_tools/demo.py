"""`make demo`: the whole speculative path on this machine's CPU, measured.

Makes (or reuses) the tiny target/draft pair, then runs the same greedy requests against the
baseline server (speculation off) and the speculative server (k draft tokens), one server at a
time so they do not compete for the cores. The throughput is measured by the bench runner
(`bench.bench_run.run_level`: one request at a time, streamed, EOS ignored, one warm-up
request), so the demo's and bench.py's figures are measured one way; acceptance comes from the
runner's consistent `/metrics` counter deltas over the same window. An untimed non-streamed pass
first records each greedy output's token ids for the token-for-token comparison. Against the
speculative server it also runs the smoke checks. It prints a summary and writes
`reports/demo.json`.

Exit code: 0 when the smoke checks pass and every greedy output matched token for token; 1
otherwise; with `--strict`, also 1 when speedup or acceptance miss the targets. Servers are
stopped on every path out, including Ctrl-C and SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text
from trnspec.boundary import json_io
from trnspec.boundary.errors import exits_on_bad_input
from trnspec.boundary.text import rich_text
from trnspec.boundary.write import moved_lines, write_outputs
from trnspec.cli import add_set_argument

from trnspec_tools.bench.bench_run import RunOptions, run_level
from trnspec_tools.bench.bench_stats import exceeds_tokens_per_step
from trnspec_tools.bench.bench_workload import RequestSpec
from trnspec_tools.client.metrics import Acceptance
from trnspec_tools.client.openai_client import EndpointError, Generation, OpenAIClient
from trnspec_tools.local_engine import tiny_corpus
from trnspec_tools.local_engine.local_server import LocalServer, LocalServerError, exit_on_sigterm
from trnspec_tools.local_engine.tiny_models import ensure_tiny_models
from trnspec_tools.smoke import SmokeResult, report_table, run_smoke

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_REPORT = REPO_ROOT / "reports" / "demo.json"
TARGET_SPEEDUP = 1.3
TARGET_ACCEPTANCE = 0.6


#: the demo as a preset of the bench runner: one request at a time (the latency-bound case
#: speculation is for), one warm-up request, EOS ignored so both servers produce the same tokens
DEMO_RUN = RunOptions(warmup=1, ignore_eos=True)


@dataclass(frozen=True)
class Run:
    """The same workload's results on one server: the greedy outputs (untimed pass) and the
    bench runner's figures for the timed pass (bench.py's JSON fields)."""

    outputs: list[Generation]
    bench: dict[str, Any]

    @property
    def output_tokens(self) -> int:
        return int(self.bench.get("output_tokens") or 0)

    @property
    def tokens_per_s(self) -> float:
        return float(self.bench.get("output_tokens_per_s") or 0.0)


def run_workload(client: OpenAIClient, model: str, prompts: Sequence[str], max_tokens: int) -> Run:
    """Greedy completions of exactly `max_tokens`: an untimed pass for the outputs, then the
    bench runner's measured pass over the same prompts."""
    params = {"temperature": 0.0, "max_tokens": max_tokens, "ignore_eos": True}
    outputs = [client.complete(model, p, **params) for p in prompts]
    specs = [RequestSpec(p, max_tokens) for p in prompts]
    bench = asyncio.run(run_level(client.base_url, model, specs, 1, DEMO_RUN))
    return Run(outputs, bench)


def run_acceptance(run: Run) -> Acceptance:
    """The bench runner's acceptance (server counters, checked for consistency) as figures."""
    deltas = run.bench.get("spec_decode_deltas") or {}
    per_pos = run.bench.get("acceptance_per_position") or []
    from_counters = run.bench.get("acceptance_source") == "server-metrics"
    return Acceptance(
        drafts=float(deltas.get("num_drafts", 0)),
        draft_tokens=float(deltas.get("num_draft_tokens", 0)),
        accepted_tokens=float(deltas.get("num_accepted_tokens", 0)),
        acceptance_rate=run.bench.get("acceptance_rate") if from_counters else None,
        mean_accepted_length=run.bench.get("mean_accepted_length") if from_counters else None,
        per_position=list(per_pos) if from_counters else [],
    )


def greedy_match(baseline: Run, spec: Run) -> tuple[bool, list[int]]:
    """True only if every output matched token for token; also the indices that did not."""
    bad = [
        i
        for i, (a, b) in enumerate(zip(baseline.outputs, spec.outputs, strict=True))
        if a.token_ids is None or a.token_ids != b.token_ids
    ]
    return not bad, bad


def summary(
    baseline: Run, spec: Run, accept: Acceptance, k: int, match: bool, smoke: SmokeResult
) -> dict[str, Any]:
    speedup = spec.tokens_per_s / baseline.tokens_per_s if baseline.tokens_per_s else None
    implausible = exceeds_tokens_per_step(speedup, accept.mean_accepted_length)
    return {
        "acceptance_rate": accept.acceptance_rate,
        "mean_accepted_length": accept.mean_accepted_length,
        "acceptance_per_position": accept.per_position,
        "tokens_per_s_baseline": baseline.tokens_per_s,
        "tokens_per_s_spec": spec.tokens_per_s,
        # right or absent: a ratio above the tokens per step measures a slow baseline arm
        "speedup": None if implausible else speedup,
        "implausible_speedup": speedup if implausible else None,
        "greedy_match": match,
        "k": k,
        "requests": len(spec.outputs),
        "output_tokens": spec.output_tokens,
        "smoke_ok": smoke.ok,
        "smoke_failures": [c.name for c in smoke.failures],
    }


def write_report(path: Path, report: dict[str, Any]) -> list[str]:
    """Write through the one writer (atomic, a regular file only); when the path fails the
    report is kept in a named fallback directory. Returns the lines saying so (empty when
    written where asked)."""
    return moved_lines(write_outputs("demo", [(path, json_io.dumps(report))]))


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "n/a" if value is None else format(value, spec)


def summary_table(report: dict[str, Any]) -> Table:
    table = Table(title="demo: speculative decoding on CPU (vLLM, tiny Qwen3 pair)")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_column("target")
    rows = [
        ("tokens/s, baseline", _fmt(report["tokens_per_s_baseline"], ".1f"), ""),
        ("tokens/s, speculative", _fmt(report["tokens_per_s_spec"], ".1f"), ""),
        (
            "speedup",
            _fmt(report["speedup"])
            if report.get("implausible_speedup") is None
            else f"n/a ({report['implausible_speedup']:.2f}x > tokens per step: baseline ran slow)",
            f">= {TARGET_SPEEDUP}",
        ),
        ("acceptance rate", _fmt(report["acceptance_rate"]), f">= {TARGET_ACCEPTANCE}"),
        ("mean accepted length", _fmt(report["mean_accepted_length"]), f"<= {report['k'] + 1}"),
        ("greedy outputs identical", str(report["greedy_match"]), "True"),
        ("smoke checks", "passed" if report["smoke_ok"] else "FAILED", "passed"),
        ("k", str(report["k"]), ""),
        ("model build (s)", _fmt(report["model_build_s"], ".0f"), ""),
        ("wall time (s)", _fmt(report["wall_s"], ".0f"), "<= 480"),
    ]
    for row in rows:
        table.add_row(*row)
    return table


def shortfalls(report: dict[str, Any], strict: bool) -> list[str]:
    """Why the demo failed: functional problems always, the performance targets if strict."""
    problems = []
    if not report["smoke_ok"]:
        problems.append(f"smoke checks failed: {', '.join(report['smoke_failures'])}")
    if not report["greedy_match"]:
        problems.append(f"greedy outputs differ for requests {report['mismatched_requests']}")
    if strict:
        if (report["speedup"] or 0) < TARGET_SPEEDUP:
            problems.append(f"speedup {_fmt(report['speedup'])} < {TARGET_SPEEDUP}")
        if (report["acceptance_rate"] or 0) < TARGET_ACCEPTANCE:
            problems.append(f"acceptance {_fmt(report['acceptance_rate'])} < {TARGET_ACCEPTANCE}")
    return problems


def run_demo(
    k: int,
    requests: int,
    max_tokens: int,
    console: Console,
    overrides: Sequence[str] = (),
    cache_dir: Path | None = None,
) -> dict[str, Any]:
    start = time.perf_counter()
    with console.status("making the tiny models (cached after the first run)"):
        models = ensure_tiny_models(cache_dir, log=lambda m: console.log(m))
    model_build_s = time.perf_counter() - start
    console.log(f"models ready ({models.key}) in {model_build_s:.0f} s")
    prompts = tiny_corpus.completion_prompts(requests, seed=2024)
    overrides = [
        f"target.source={models.target}",
        f"speculation.draft.source={models.draft}",
        *overrides,
    ]

    baseline_server = LocalServer([*overrides, "speculation.method=none"])
    with console.status("baseline server: starting"):
        baseline_server.start()
    with baseline_server, OpenAIClient(baseline_server.base_url) as client:
        console.log(f"baseline server up at {baseline_server.base_url}")
        with console.status("smoke checks (baseline)"):
            baseline_smoke = run_smoke(
                baseline_server.base_url, model=baseline_server.model, expect_speculation=False
            )
        with console.status(f"baseline: {requests} greedy requests x {max_tokens} tokens"):
            baseline = run_workload(client, baseline_server.model, prompts, max_tokens)
    console.log(f"baseline: {baseline.tokens_per_s:.1f} tokens/s; server stopped")

    spec_overrides = [*overrides, f"speculation.num_speculative_tokens={k}"]
    spec_server = LocalServer(spec_overrides)
    with console.status(f"speculative server (k={k}): starting"):
        spec_server.start()
    with spec_server, OpenAIClient(spec_server.base_url) as client:
        console.log(f"speculative server up at {spec_server.base_url}")
        with console.status("smoke checks"):
            smoke = run_smoke(
                spec_server.base_url,
                model=spec_server.model,
                baseline_greedy=baseline_smoke.greedy,
            )
        console.print(report_table(smoke))
        with console.status(f"speculative: {requests} greedy requests x {max_tokens} tokens"):
            spec = run_workload(client, spec_server.model, prompts, max_tokens)
    console.log(f"speculative: {spec.tokens_per_s:.1f} tokens/s; server stopped")

    match, mismatched = greedy_match(baseline, spec)
    report = summary(baseline, spec, run_acceptance(spec), k, match, smoke)
    if not baseline_smoke.ok:
        report["smoke_ok"] = False
        report["smoke_failures"] += [f"baseline: {c.name}" for c in baseline_smoke.failures]
    report |= {
        "mismatched_requests": mismatched,
        "max_tokens": max_tokens,
        "model_key": models.key,
        "model_build_s": model_build_s,
        "models_simulated_acceptance": models.info["evaluation"]["acceptance_rate"],
        "bench": {"baseline": baseline.bench, "spec": spec.bench},
        "acceptance_note": spec.bench.get("acceptance_note"),
        "wall_s": time.perf_counter() - start,
        "load_average_1m": os.getloadavg()[0],
        "cpu_count": os.cpu_count(),
    }
    return report


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    """The demo flags (`python -m trnspec_tools demo` and scripts/demo.py)."""
    parser.add_argument("--k", type=int, default=4, help="draft tokens per step")
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=128)
    add_set_argument(parser, help="profile override for both servers (repeatable)")
    parser.add_argument("--report", type=Path, default=DEFAULT_REPORT)
    parser.add_argument("--strict", action="store_true", help="fail below the targets too")
    parser.add_argument(
        "--cache-dir", type=Path, default=None, help="tiny-model cache (default .cache/tiny-models)"
    )


@exits_on_bad_input("demo.py")
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="demo.py", description=__doc__.split("\n\n")[0])
    add_cli_args(parser)
    args = parser.parse_args(argv)
    console = Console()
    for name in ("k", "requests", "max_tokens"):
        if getattr(args, name) < 1:
            console.print(f"[red]error:[/red] --{name.replace('_', '-')}: must be at least 1")
            return 2
    exit_on_sigterm()
    try:
        report = run_demo(
            args.k, args.requests, args.max_tokens, console, args.overrides, args.cache_dir
        )
    except (LocalServerError, EndpointError, ValueError) as exc:
        console.print(
            Text.assemble(("demo failed: ", "red"), rich_text(exc, 4000, keep_newlines=True))
        )
        return 1
    except KeyboardInterrupt:
        console.print("[yellow]interrupted; servers stopped")
        return 130
    moved = write_report(args.report, report)
    console.print(summary_table(report))
    for line in moved:
        console.print(Text.assemble(("error: ", "red"), rich_text(line, 2000)))
    if moved:
        return 1
    console.print(Text.assemble("report: ", rich_text(args.report, 1000)))
    problems = shortfalls(report, args.strict)
    for problem in problems:
        console.print(f"[red]{problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
