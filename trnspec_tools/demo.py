"""`make demo`: the whole speculative path on this machine's CPU, measured.

Makes (or reuses) the tiny target/draft pair, then starts two servers with max_num_seqs 32: the
baseline (speculation off) and the tuned deployment (`tune --schedule`'s recommendation from
`reports/tune_schedule.json` when present, else the recommendation recorded in TUNED_DEFAULT,
measured on this machine class: docs/performance.md, "Batch-aware speculation"). It records each
server's greedy outputs (an untimed non-streamed pass, for the token-for-token comparison), runs
the smoke checks, then sweeps concurrency 1, 8 and 32: at each level the two servers are measured
alternately (ABBA rounds, the idle one stopped) by the bench runner
(`bench.run.run_level`: streamed, EOS ignored, one warm-up request per slot), so each ratio
is measured side by side. Acceptance and the window used come from the runner's consistent
`/metrics` counter deltas. It prints the sweep as a table, plots it (reports/demo_sweep.png) and
writes `reports/demo.json`; the headline speedup is the tuned deployment's at concurrency 1.

Exit code: 0 when the smoke checks pass and every greedy output matched token for token; 1
otherwise; with `--strict`, also 1 when speedup or acceptance miss the targets. Servers are
stopped on every path out, including Ctrl-C and SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text
from trnspec.boundary import json_io
from trnspec.boundary.errors import exits_on_bad_input
from trnspec.boundary.text import rich_text
from trnspec.boundary.write import moved_lines, output_clash, write_outputs
from trnspec.cli.main import add_set_argument
from trnspec.plan.verdict import Verdict

from trnspec_tools.ab.comparison import exceeds_tokens_per_step
from trnspec_tools.bench.run import RunOptions
from trnspec_tools.boundary.destination import check_out_dir
from trnspec_tools.client.metrics import Acceptance
from trnspec_tools.client.openai_client import EndpointError, Generation, OpenAIClient
from trnspec_tools.client.request_spec import RequestSpec
from trnspec_tools.local_engine import tiny_corpus
from trnspec_tools.local_engine.local_server import LocalServer, LocalServerError, exit_on_sigterm
from trnspec_tools.local_engine.tiny_models import TinyModels, ensure_tiny_models
from trnspec_tools.smoke import SmokeResult, report_table, run_smoke
from trnspec_tools.tune.round_run import RoundPair, RoundRun

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_REPORT = REPO_ROOT / "reports" / "demo.json"
TARGET_SPEEDUP = 1.3
TARGET_ACCEPTANCE = 0.6


#: the demo as a preset of the bench runner: one warm-up request per slot (every connection
#: the measured window uses is open), EOS ignored so both servers produce the same tokens
DEMO_RUN = RunOptions(warmup=None, ignore_eos=True)


@dataclass(frozen=True)
class Run:
    """The same workload's results on one server: the greedy outputs (untimed pass) and the
    bench runner's figures for the timed pass (the round's kept run)."""

    outputs: list[Generation]
    bench: RoundRun

    @property
    def output_tokens(self) -> int:
        return self.bench.output_tokens

    @property
    def tokens_per_s(self) -> float:
        return self.bench.output_tokens_per_s


def run_acceptance(run: Run) -> Acceptance:
    """The bench runner's acceptance (server counters, checked for consistency) as figures."""
    acc = run.bench.acceptance
    deltas = acc.spec_decode_deltas
    from_counters = acc.acceptance_source == "server-metrics"
    return Acceptance(
        drafts=float(deltas.num_drafts if deltas else 0),
        draft_tokens=float(deltas.num_draft_tokens if deltas else 0),
        accepted_tokens=float(deltas.num_accepted_tokens if deltas else 0),
        acceptance_rate=acc.acceptance_rate if from_counters else None,
        mean_accepted_length=acc.mean_accepted_length if from_counters else None,
        per_position=list(acc.acceptance_per_position or []) if from_counters else [],
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


def sweep_plot_path(report: Path) -> Path:
    """Where the sweep's plot goes: beside the report (reports/demo.json -> demo_sweep.png)."""
    return report.with_name(f"{report.stem}_sweep.png")


def check_report_destination(report: Path, tuned: Path) -> None:
    """Before any work: the report and its plot are distinct regular-file paths (or new ones) in
    a directory that is made and proven writable, and neither is the --tuned input;
    BoundaryError naming --report and the fix otherwise (trnspec_tools.boundary.destination)."""
    plot = sweep_plot_path(report)
    check_out_dir("--report", report.parent, (report.name, plot.name), [("--tuned", tuned)])
    if (clash := output_clash([("--report", report), ("--report's plot", plot)])) is not None:
        raise clash


def write_report(path: Path, report: dict[str, Any], plot_png: bytes | None = None) -> list[str]:
    """Write the report (and the sweep's plot beside it) through the one writer (atomic, a
    regular file only); a file whose path fails is kept in a named fallback directory. Returns
    the lines saying so (empty when all went where asked)."""
    files: list[tuple[Path, bytes | str]] = [(path, json_io.dumps(report))]
    if plot_png is not None:
        files.append((sweep_plot_path(path), plot_png))
    return moved_lines(write_outputs("demo", files))


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "n/a" if value is None else format(value, spec)


def summary_table(report: dict[str, Any]) -> Table:
    table = Table(title="demo: speculative decoding on CPU (vLLM, tiny Qwen3 pair)")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_column("target")
    rows = [
        ("tokens/s, baseline (concurrency 1)", _fmt(report["tokens_per_s_baseline"], ".1f"), ""),
        ("tokens/s, tuned (concurrency 1)", _fmt(report["tokens_per_s_spec"], ".1f"), ""),
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
        ("tuned deployment", report["tuned"]["name"], ""),
        ("k (largest window)", str(report["k"]), ""),
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


#: The sweep's concurrency levels and the batch limit both servers run with.
SWEEP_LEVELS = (1, 8, 32)
MAX_NUM_SEQS = 32
#: Where `tune --schedule` writes its recommendation (`make tune-schedule`).
DEFAULT_TUNED = REPO_ROOT / "reports" / "tune_schedule.json"


@dataclass(frozen=True)
class TunedChoice:
    """The deployment the demo runs against the baseline, and where the choice comes from."""

    name: str
    overrides: tuple[str, ...]
    source: str

    @property
    def k(self) -> int:
        """Its largest window (what the counters' mean accepted length is bounded by)."""
        for item in self.overrides:
            key, _, value = item.partition("=")
            if key == "speculation.num_speculative_tokens":
                return int(value)
        return 0


#: `make tune-schedule` on the tiny-corpus workload (2026-12-01, shared 2-core host), recorded with
#: its figures in docs/performance.md ("Batch-aware speculation"): static k=4 (the schedule it
#: built, [[1,8,4],[9,32,1]], was within the measured spread of every static k). Used when no
#: reports/tune_schedule.json is at hand, so a fresh clone's demo runs a measured choice without
#: spending minutes tuning.
TUNED_DEFAULT = TunedChoice(
    name="k=4",
    overrides=("speculation.num_speculative_tokens=4",),
    source="the recommendation recorded in docs/performance.md (make tune-schedule)",
)


def tuned_choice(path: Path) -> TunedChoice:
    """The recommendation of a `tune --schedule` result file, else TUNED_DEFAULT. A file that is
    there but unreadable is an error (ValueError), never silently replaced."""
    if not path.exists():
        return TUNED_DEFAULT
    try:
        text = path.read_text(encoding="utf-8")
        rec = json_io.loads(text, "--tuned", shown=str(path))["recommendation"]
        return TunedChoice(rec["candidate"], tuple(rec["candidate_overrides"]), str(path))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(
            f"--tuned={path}: not a tune --schedule result ({exc}); rerun make tune-schedule"
            " or pass another file"
        ) from None


@dataclass(frozen=True)
class SweepRow:
    """One level of the demo's sweep: the median tok/s of each arm over the rounds, the A/B
    core's speedup (median ratio of the paired rounds, with its interval) and verdict, and the
    tuned server's window (draft tokens per draft; None without counters)."""

    concurrency: int
    tokens_per_s_baseline: float
    tokens_per_s_tuned: float
    speedup: float | None
    speedup_low: float | None
    speedup_high: float | None
    #: the rounds paired (a round either arm could not measure is left out)
    rounds: int
    verdict: Verdict | None
    k_used: float | None

    def to_json(self) -> dict[str, object]:
        """The row as reports/demo.json's `sweep` holds it (the verdict as its word)."""
        return {
            "concurrency": self.concurrency,
            "tokens_per_s_baseline": self.tokens_per_s_baseline,
            "tokens_per_s_tuned": self.tokens_per_s_tuned,
            "speedup": self.speedup,
            "speedup_low": self.speedup_low,
            "speedup_high": self.speedup_high,
            "rounds": self.rounds,
            "verdict": None if self.verdict is None else self.verdict.value,
            "k_used": self.k_used,
        }


def sweep_rows(sweep: Mapping[int, list[RoundPair]]) -> list[SweepRow]:
    """Per level: the median tok/s of each arm over the rounds, the ratio's spread and the
    tuned server's window (draft tokens per draft)."""
    from trnspec_tools.tune.schedule_tune import k_used_of
    from trnspec_tools.tune.versus_plain import rounds_comparison

    rows = []
    k_used = k_used_of(dict(sweep))
    for c, pairs in sorted(sweep.items()):
        ab = rounds_comparison(pairs)
        med = ab.speedup
        rows.append(
            SweepRow(
                concurrency=c,
                tokens_per_s_baseline=median(p.plain.output_tokens_per_s for p in pairs),
                tokens_per_s_tuned=median(p.candidate.output_tokens_per_s for p in pairs),
                speedup=med.median if med else None,
                speedup_low=med.low if med else None,
                speedup_high=med.high if med else None,
                rounds=len(ab.pairs),
                verdict=ab.verdict,
                k_used=k_used[c],
            )
        )
    return rows


def sweep_table(rows: Sequence[SweepRow], tuned: str) -> Table:
    table = Table(title=f"concurrency sweep: baseline vs tuned ({tuned}), max_num_seqs 32")
    for col in ("concurrency", "baseline tok/s", "tuned tok/s", "speedup [spread]", "k used"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(
            str(r.concurrency),
            _fmt(r.tokens_per_s_baseline, ".1f"),
            _fmt(r.tokens_per_s_tuned, ".1f"),
            "n/a"
            if r.speedup is None
            else f"{r.speedup:.2f}x [{_fmt(r.speedup_low)}-{_fmt(r.speedup_high)}]",
            _fmt(r.k_used),
        )
    return table


def slower_than_baseline(rows: Sequence[SweepRow]) -> list[int]:
    """The levels at which the A/B verdict (trnspec_tools.ab.comparison) is plain: the tuned
    deployment measured slower than the baseline over the whole interval of its rounds."""
    return [r.concurrency for r in rows if r.verdict is Verdict.PLAIN]


def slower_lines(rows: Sequence[SweepRow], tuned: str) -> list[str]:
    """What to do where the tuned deployment measured slower than plain: measure k per batch
    before serving that load with it (the demo's few rounds rank nothing on their own: two demos
    on one idle host gave k=4 at concurrency 32 0.94x and 1.02x, tune's four rounds 1.22x)."""
    return [
        f"concurrency {r.concurrency}: {tuned} measured slower than the baseline over its"
        f" {r.rounds} rounds ({_fmt(r.speedup)}x, rounds"
        f" {_fmt(r.speedup_low)}-{_fmt(r.speedup_high)}): do not serve this"
        " load with it before `make tune-schedule` has measured k per batch on more rounds (it"
        " picks k=0 where speculation does not pay)"
        for r in rows
        if r.verdict is Verdict.PLAIN
    ]


def plot_sweep(rows: Sequence[SweepRow], tuned: str) -> bytes:
    """Output tok/s per concurrency level, baseline and tuned, with the speedup annotated, as
    PNG bytes (write_report writes them beside the report)."""
    from matplotlib.figure import Figure

    from trnspec_tools.bench.report import figure_png
    from trnspec_tools.tune.schedule_report import concurrency_axes

    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    xs = [r.concurrency for r in rows]
    ax.plot(xs, [r.tokens_per_s_baseline for r in rows], marker="o", label="baseline")
    ax.plot(xs, [r.tokens_per_s_tuned for r in rows], marker="s", label=f"tuned: {tuned}")
    for r in rows:
        if r.speedup is not None:
            ax.annotate(
                f"{r.speedup:.2f}x",
                (r.concurrency, r.tokens_per_s_tuned),
                textcoords="offset points",
                xytext=(0, 6),
                ha="center",
                fontsize=8,
            )
    concurrency_axes(
        ax,
        xs,
        "output tokens/s (median of the rounds)",
        "make demo: baseline vs tuned deployment (CPU, tiny pair)",
    )
    return figure_png(fig)


def _pass(client: OpenAIClient, model: str, prompts: Sequence[str], max_tokens: int) -> list:
    params = {"temperature": 0.0, "max_tokens": max_tokens, "ignore_eos": True}
    return [client.complete(model, p, **params) for p in prompts]


def _serve_and_measure(
    models: TinyModels,
    tuned: TunedChoice,
    prompts: Sequence[str],
    specs: Sequence[RequestSpec],
    max_tokens: int,
    rounds: int,
    overrides: Sequence[str],
    console: Console,
) -> tuple[list, list, SmokeResult, SmokeResult, dict[int, list[RoundPair]]]:
    """Both servers, one up at a time: smoke checks and a greedy pass on each (the tuned one
    compared with the baseline's outputs), then the alternated concurrency sweep. Returns the
    greedy outputs of both, both smoke results and the sweep."""
    from trnspec_tools.tune.schedule_tune import alternate, stopped

    base = [
        f"target.source={models.target}",
        f"speculation.draft.source={models.draft}",
        f"max_num_seqs={MAX_NUM_SEQS}",
        *overrides,
    ]
    baseline_server = LocalServer([*base, "speculation.method=none"])
    tuned_server = LocalServer([*base, *tuned.overrides])
    with console.status("baseline server: starting"):
        baseline_server.start()
    with baseline_server:
        with console.status("tuned server: starting"), stopped(baseline_server):
            tuned_server.start()
        with tuned_server:
            console.log(f"servers up: {baseline_server.base_url}, {tuned_server.base_url}")
            with stopped(tuned_server), OpenAIClient(baseline_server.base_url) as client:
                baseline_smoke = run_smoke(
                    baseline_server.base_url, model=baseline_server.model, expect_speculation=False
                )
                base_out = _pass(client, baseline_server.model, prompts, max_tokens)
            with stopped(baseline_server), OpenAIClient(tuned_server.base_url) as client:
                smoke = run_smoke(
                    tuned_server.base_url,
                    model=tuned_server.model,
                    baseline_greedy=baseline_smoke.greedy,
                )
                tuned_out = _pass(client, tuned_server.model, prompts, max_tokens)
            console.print(report_table(smoke))
            with console.status(
                f"sweep: concurrency {', '.join(map(str, SWEEP_LEVELS))}, {rounds} rounds"
            ):
                sweep = asyncio.run(
                    alternate(
                        baseline_server,
                        tuned_server,
                        specs,
                        SWEEP_LEVELS,
                        rounds,
                        dataclasses.replace(DEMO_RUN, num_speculative_tokens=tuned.k),
                    )
                )
    return base_out, tuned_out, baseline_smoke, smoke, sweep


@dataclass(frozen=True)
class DemoOptions:
    """Everything a demo run reads, checked (demo_options)."""

    tuned: TunedChoice
    #: greedy requests compared token for token
    requests: int
    #: output tokens per request
    max_tokens: int
    #: alternated rounds per sweep level
    rounds: int
    #: --set profile overrides for both servers
    overrides: tuple[str, ...] = ()
    report: Path = DEFAULT_REPORT
    strict: bool = False
    #: the tiny-model cache (None: .cache/tiny-models)
    cache_dir: Path | None = None


def demo_options(args: argparse.Namespace) -> DemoOptions:
    """The checked options of a parsed demo command line; ValueError naming the flag."""
    for name in ("requests", "max_tokens", "rounds"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')}: must be at least 1")
    check_report_destination(args.report, args.tuned)
    return DemoOptions(
        tuned=tuned_choice(args.tuned),
        requests=args.requests,
        max_tokens=args.max_tokens,
        rounds=args.rounds,
        overrides=tuple(args.overrides),
        report=args.report,
        strict=bool(args.strict),
        cache_dir=args.cache_dir,
    )


@dataclass(frozen=True)
class DemoRun:
    """A demo run: its report (reports/demo.json's document) and the sweep it holds, typed."""

    report: dict[str, Any]
    sweep: tuple[SweepRow, ...]


def run_demo(opts: DemoOptions, console: Console) -> DemoRun:
    from trnspec_tools.tune.schedule_tune import prompts_for_level

    tuned, requests, max_tokens, rounds = opts.tuned, opts.requests, opts.max_tokens, opts.rounds

    start = time.perf_counter()
    with console.status("making the tiny models (cached after the first run)"):
        models = ensure_tiny_models(opts.cache_dir, log=lambda m: console.log(m))
    model_build_s = time.perf_counter() - start
    console.log(f"models ready ({models.key}) in {model_build_s:.0f} s")
    console.log(f"tuned deployment: {tuned.name} (from {tuned.source})")
    prompts = tiny_corpus.completion_prompts(max(requests, 2 * max(SWEEP_LEVELS)), seed=2024)
    specs = [RequestSpec(p, max_tokens) for p in prompts]
    measured = _serve_and_measure(
        models, tuned, prompts[:requests], specs, max_tokens, rounds, opts.overrides, console
    )
    base_out, tuned_out, baseline_smoke, smoke, sweep = measured
    rows = sweep_rows(sweep)
    first = sweep[SWEEP_LEVELS[0]]
    baseline = Run(base_out, first[0].plain)
    spec = Run(tuned_out, first[0].candidate)
    match, mismatched = greedy_match(baseline, spec)
    report = summary(baseline, spec, run_acceptance(spec), tuned.k, match, smoke)
    headline = rows[0]
    report |= {
        # the headline: the median over the alternated rounds at concurrency 1
        "tokens_per_s_baseline": headline.tokens_per_s_baseline,
        "tokens_per_s_spec": headline.tokens_per_s_tuned,
        "speedup": headline.speedup,
        "implausible_speedup": None,
    }
    if exceeds_tokens_per_step(report["speedup"], report["mean_accepted_length"]):
        report["implausible_speedup"], report["speedup"] = report["speedup"], None
    if not baseline_smoke.ok:
        report["smoke_ok"] = False
        report["smoke_failures"] += [f"baseline: {c.name}" for c in baseline_smoke.failures]
    report |= {
        "tuned": {"name": tuned.name, "overrides": list(tuned.overrides), "source": tuned.source},
        "sweep": [r.to_json() for r in rows],
        "slower_than_baseline_at": slower_than_baseline(rows),
        "sweep_size": {
            "levels": list(SWEEP_LEVELS),
            "max_num_seqs": MAX_NUM_SEQS,
            "rounds": rounds,
            "prompts_per_level": {str(c): len(prompts_for_level(specs, c)) for c in SWEEP_LEVELS},
            "max_tokens": max_tokens,
        },
        "mismatched_requests": mismatched,
        "max_tokens": max_tokens,
        "model_key": models.key,
        "model_build_s": model_build_s,
        "models_simulated_acceptance": models.info["evaluation"]["acceptance_rate"],
        "sweep_runs": {str(c): [p.to_json() for p in pairs] for c, pairs in sweep.items()},
        "acceptance_note": spec.bench.acceptance.acceptance_note,
        "wall_s": time.perf_counter() - start,
        "load_average_1m": os.getloadavg()[0],
        "cpu_count": os.cpu_count(),
    }
    return DemoRun(report, tuple(rows))


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    """The demo flags (`python -m trnspec_tools demo` and scripts/demo.py)."""
    parser.add_argument(
        "--tuned",
        type=Path,
        default=DEFAULT_TUNED,
        help="a tune --schedule result whose recommendation the demo runs"
        " (default reports/tune_schedule.json, else the recorded recommendation)",
    )
    parser.add_argument(
        "--requests",
        type=int,
        default=8,
        help="greedy requests compared token for token",
    )
    parser.add_argument("--max-tokens", type=int, default=48, help="output tokens per request")
    parser.add_argument(
        "--rounds",
        type=int,
        default=2,
        help="alternated rounds per sweep level (default 2)",
    )
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
    console = Console()
    try:
        opts = demo_options(parser.parse_args(argv))
    except ValueError as exc:
        console.print(Text.assemble(("error: ", "red"), rich_text(exc, 2000)), soft_wrap=True)
        return 2
    tuned = opts.tuned
    exit_on_sigterm()
    try:
        ran = run_demo(opts, console)
    except (LocalServerError, EndpointError, ValueError) as exc:
        console.print(
            Text.assemble(("demo failed: ", "red"), rich_text(exc, 4000, keep_newlines=True))
        )
        return 1
    except KeyboardInterrupt:
        console.print("[yellow]interrupted; servers stopped")
        return 130
    report = ran.report
    moved = write_report(opts.report, report, plot_sweep(ran.sweep, tuned.name))
    console.print(sweep_table(ran.sweep, tuned.name))
    for line in slower_lines(ran.sweep, tuned.name):
        console.print(Text(line, style="yellow"))
    if not moved:
        console.print(Text.assemble("plot: ", rich_text(sweep_plot_path(opts.report), 1000)))
    console.print(summary_table(report))
    for line in moved:
        console.print(Text.assemble(("error: ", "red"), rich_text(line, 2000)))
    if moved:
        return 1
    console.print(Text.assemble("report: ", rich_text(opts.report, 1000)))
    problems = shortfalls(report, opts.strict)
    for problem in problems:
        console.print(f"[red]{problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
