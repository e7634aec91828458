"""Sweep the speculative window k (and concurrency), fit the models, and recommend k.

    python scripts/tune.py --k 1,2,4,6 --out reports/tune.json            # local launcher
    python scripts/tune.py --k 1,2,4,6 --concurrency 1,2,4,8 --fit-concurrency 2 \\
        --out reports/tune.json  # + step-time model fitted at c=2, checked at 1, 4, 8
    python scripts/tune.py --baseline http://h:8000 --endpoint-for-k 3=http://h:8003 \\
        --endpoint-for-k 7=http://h:8007 --model M --out reports/tune.json  # one server per k
    python scripts/tune.py --stack TrnspecPlatform-serving --trn2-profile llama31-8b-eagle3 \\
        --baseline http://h:8000 --concurrency 1,2,4 --out reports/trn2.json \\
        --rows-out reports/trn2_rows.yaml     # a deployed stack; rows for trnspec fit --add

Each k is measured against the same plain server (speculation off) with the same prompts,
alternated round by round (ABBA, `--rounds`, alternated.py), so every k has a ratio to plain with
its spread. From the runs it fits the acceptance rate (single and per position) and the
draft/target cost ratio c, predicts the speedup for every k up to --k-max with
(1 - a^(k+1)) / (1 - a) / (1 + k c), prints predicted vs measured, and writes the recommended k
as a `--set` override line for `python -m trnspec render` (k_sweep.py). A window is recommended
only if it measured faster than plain beyond its spread, and slower at no level measured
(versus_plain.py); otherwise the line turns speculation off (`speculation.method=none`). On Trn2
every k is a separate Neuron compile, so it also names the k values worth precompiling.

With several concurrencies it also fits trnspec's step-time model (engine_fit.py) to
the baselines and to the speculative runs at `--fit-concurrency`, predicts the speedup of every
other speculative run from its measured acceptance, and recommends k per batch size and the batch
from which to switch speculation off; `--trn2-profile P` does the same for a Trn2 profile with the
calibrated Trn2 constants and the acceptance measured here. With a JSONL dataset whose prompts
carry a "category", `--per-category` measures acceptance per category and recommends k for each.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from trnspec.boundary import json_io
from trnspec.boundary.errors import exits_on_bad_input
from trnspec.boundary.numbers import MAX_COUNT, int_arg
from trnspec.boundary.problems import ABSENT, InputError
from trnspec.boundary.shell import shell_command
from trnspec.boundary.write import moved_lines, output_clash, write_outputs
from trnspec.cli.main import add_set_argument
from trnspec.config.serving import ConfigError
from trnspec.perf.step_time import decode_context_tokens

from trnspec_tools.ab.order import MAX_ROUNDS
from trnspec_tools.bench.categories import category_groups, sample_groups
from trnspec_tools.bench.options import UsageError
from trnspec_tools.bench.workload import WorkloadError
from trnspec_tools.bench.workload_args import add_workload_args
from trnspec_tools.client.client_args import add_client_args, add_model_args
from trnspec_tools.client.metrics import MAX_POSITIONS
from trnspec_tools.client.request_spec import RequestSpec
from trnspec_tools.client.stack_endpoint import StackError, add_stack_arguments
from trnspec_tools.local_engine.local_server import LocalServerError
from trnspec_tools.tune.alternated import OVERRIDE_KEY, SweepRuns, load_measurements, measure_all
from trnspec_tools.tune.engine_analysis import (
    AdviceFor,
    ConcurrencyAnalysis,
    Trn2Advice,
    category_acceptance,
    concurrency_analysis,
    engine_recommendation,
    engine_setup,
    sweep_points,
    trn2_recommendation,
)
from trnspec_tools.tune.engine_fit import conditional_tokens_per_step, fit_engine
from trnspec_tools.tune.k_sweep import KAnalysis, analyse
from trnspec_tools.tune.override_check import check_override
from trnspec_tools.tune.rows_out import rows_conditions, write_rows
from trnspec_tools.tune.stack_arm import stack_arm
from trnspec_tools.tune.tune_options import TuneOptions, input_clash, tune_options
from trnspec_tools.tune.tune_report import (
    Override,
    TuneReport,
    plot_concurrency,
    plot_k_sweep,
)
from trnspec_tools.tune.versus_plain import PLAIN_OVERRIDE


def add_cli_args(p: argparse.ArgumentParser) -> None:
    """The tuner flags (`python -m trnspec_tools tune` and scripts/tune.py)."""
    p.add_argument("--k", help="k values to run through the local launcher, e.g. 1,2,4,6")
    add_set_argument(p, help="extra profile overrides for the local launcher (repeatable)")
    p.add_argument(
        "--endpoint-for-k",
        action="append",
        default=[],
        metavar="K=URL",
        help="an already running speculative server at window K (repeatable)",
    )
    p.add_argument(
        "--baseline",
        help="baseline URL (speculation off); required with"
        " --endpoint-for-k, default: the local launcher",
    )
    add_model_args(p)
    add_stack_arguments(p)
    p.add_argument(
        "--fit-concurrency",
        type=int_arg(1, MAX_COUNT),
        help="the level the step-time model is fitted at (default: the second level given)",
    )
    p.add_argument(
        "--batch-sizes",
        default="1,2,4,8,16,32",
        help="batch sizes to recommend k for (default 1,2,4,8,16,32)",
    )
    p.add_argument(
        "--trn2-profile",
        help="also recommend k per batch for this Trn2 profile, from the acceptance measured here",
    )
    p.add_argument(
        "--from-json",
        type=Path,
        help="re-analyse the measurements of an earlier --out JSON instead of measuring",
    )
    p.add_argument(
        "--per-category",
        action="store_true",
        help='measure acceptance per "category" of a JSONL --dataset and recommend k for each',
    )
    add_workload_args(p)
    add_client_args(p)
    p.add_argument(
        "--k-max",
        type=int_arg(1, MAX_POSITIONS),
        default=7,
        help="largest k the model may recommend (the Neuron fork allows 1..7)",
    )
    p.add_argument(
        "--profile",
        default="local-tiny",
        help="profile the override line is checked against (trnspec.config.serving)",
    )
    p.add_argument("--out", type=Path, required=True, help="result JSON path")
    p.add_argument(
        "--rows-out",
        type=Path,
        help="also write the measurements as rows of trnspec's Trn2 data file (needs"
        " --trn2-profile, the deployed profile), for `python -m trnspec fit --add FILE`",
    )
    p.add_argument(
        "--override-out", type=Path, help="file for the override line (default: <out>.override)"
    )
    p.add_argument("--no-plots", action="store_true")
    p.add_argument(
        "--schedule",
        action="store_true",
        help="measure plain, each --k and k schedules per --concurrency band, side by side,"
        " and recommend the deployment best at every band (schedule_tune.py)",
    )
    p.add_argument(
        "--rounds",
        type=int_arg(1, MAX_ROUNDS),
        default=4,
        help="rounds of plain and each window (or --schedule candidate), alternated, per level"
        " (default 4)",
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tune.py", description="Sweep k and recommend one.")
    add_cli_args(p)
    return p


def category_specs(
    dataset: str | None, num_prompts: int, output_len: int, seed: int
) -> dict[str, list[RequestSpec]]:
    """tune's per-category workloads: `num_prompts` split evenly over the dataset's categories
    (at least one each), which must be two or more for a recommendation per category."""
    try:
        groups = category_groups(dataset, output_len)
    except WorkloadError as err:
        raise UsageError(err.problems) from None
    if len(groups) < 2:
        raise UsageError.of(
            "--per-category", ABSENT, f'--dataset={dataset} has fewer than two "category" values'
        )
    return sample_groups(groups, max(1, num_prompts // len(groups)), seed)


def _schedule_main(opts: TuneOptions) -> int:
    from trnspec_tools.local_engine.local_server import exit_on_sigterm
    from trnspec_tools.tune.schedule_tune import run

    exit_on_sigterm()  # SIGTERM unwinds the `with LocalServer` blocks: no server outlives tune
    try:
        return run(opts, check_override)
    except InputError as exc:
        print(f"tune.py: error: {exc}", file=sys.stderr)
        return 2
    except LocalServerError as exc:
        print(f"tune.py: the local server failed: {exc}", file=sys.stderr)
        return 1


@dataclass(frozen=True)
class _Measured:
    """What the sweep measured (or read back with --from-json) and how it was asked for."""

    fit_c: int
    #: the options the arms were measured with (--stack fills in its endpoint)
    opts: TuneOptions
    runs: SweepRuns
    load: tuple[float, float, float]


def _check_flags(opts: TuneOptions) -> int:
    """The flag combinations a sweep needs (UsageError naming the flag); the fit concurrency."""
    if opts.k_max < 1:
        raise UsageError.of("--k-max", opts.k_max, "must be >= 1")
    if opts.rounds < 1:
        raise UsageError.of("--rounds", opts.rounds, "at least 1")
    if opts.rows_out:
        rows_conditions(opts)  # the profile must describe the rows before anything is measured
    if (clash := output_clash(opts.output_paths())) is not None:
        raise UsageError(clash.problems)
    if (clash_in := input_clash(opts.output_paths(), opts.input_paths())) is not None:
        raise UsageError([clash_in])
    levels = list(opts.levels)
    fit_c = opts.fit_concurrency or (levels[1] if len(levels) > 1 else levels[0])
    if fit_c not in levels:
        raise UsageError.of("--fit-concurrency", fit_c, f"must be one of --concurrency {levels}")
    return fit_c


def _measure(opts: TuneOptions) -> _Measured:
    """Check the flags, then measure every arm (or read an earlier run's JSON)."""
    fit_c = _check_flags(opts)
    specs = opts.workload.specs()
    w = opts.workload
    categories = (
        category_specs(w.dataset, w.num_prompts, w.output_len, w.seed)
        if opts.per_category
        else None
    )
    load = os.getloadavg()
    if opts.from_json:
        return _Measured(fit_c, opts, load_measurements(opts.from_json, opts.levels), load)
    with stack_arm(opts) as opts:
        runs = asyncio.run(measure_all(opts, specs, categories, fit_c))
    return _Measured(fit_c, opts, runs, load)


def _concurrency_fit(
    m: _Measured, conditional: Sequence[float], alpha: float
) -> tuple[ConcurrencyAnalysis | str, AdviceFor | None]:
    """The engine model fitted over the concurrency levels and its validation (or why there is
    none), and k per batch from any acceptance with its constants (None without a fit)."""
    opts = m.opts
    setup = engine_setup(opts, local=not opts.remote)
    if isinstance(setup, str):
        return setup, None
    if len(opts.levels) < 2:
        return "needs at least two --concurrency levels", None
    base = {c: arm.result for c, arm in m.runs.baseline.items()}
    by_k = {k: {c: arm.result for c, arm in by_c.items()} for k, by_c in m.runs.runs.items()}
    points = sweep_points(base, by_k)
    try:
        fitted = fit_engine(points, setup, m.fit_c)
        analysis = concurrency_analysis(
            points, setup, fitted, conditional, alpha, opts.batches, opts.k_max
        )
    except ValueError as exc:
        return f"could not fit: {exc}", None

    def advice_for(cond: Sequence[float], a: float):  # type: ignore[no-untyped-def]
        tokens = conditional_tokens_per_step(cond, a)
        return engine_recommendation(setup, fitted, tokens, opts.batches, opts.k_max)

    return analysis, advice_for


def _trn2(opts: TuneOptions, conditional: Sequence[float], alpha: float) -> Trn2Advice | str | None:
    if not opts.trn2_profile:
        return None
    try:
        return trn2_recommendation(
            opts.trn2_profile,
            conditional,
            alpha,
            opts.batches,
            decode_context_tokens(opts.workload.input_len, opts.workload.output_len),
        )
    except (ConfigError, ValueError) as exc:
        return f"--trn2-profile={opts.trn2_profile}: {exc}"


def _load(values: tuple[float, float, float], cpus: bool) -> str:
    text = f"{values[0]:.2f} {values[1]:.2f} {values[2]:.2f}"
    return f"{text} ({os.cpu_count()} cpus)" if cpus else text


def _report(m: _Measured, analysis: KAnalysis, override: Override) -> TuneReport:
    """Every analysis of the sweep, and the Trn2 rows written (--rows-out)."""
    opts, fit_c = m.opts, m.fit_c
    load_after = os.getloadavg()
    runs = {k: by_c[fit_c] for k, by_c in m.runs.runs.items()}
    sources = sorted({str(r.result.acceptance.acceptance_source) for r in runs.values()})
    conditional, alpha = analysis.model.conditional, analysis.model.alpha
    concurrency, advice_for = _concurrency_fit(m, conditional, alpha)
    return TuneReport(
        analysis=analysis,
        override=override,
        measured=m.runs,
        levels=list(opts.levels),
        fit_concurrency=fit_c,
        concurrency=concurrency,
        trn2=_trn2(opts, conditional, alpha),
        categories=category_acceptance(m.runs.cats, advice_for) if m.runs.cats else None,
        acceptance_source=", ".join(sources),
        load_average=_load(m.load, cpus=True),
        load_average_after=_load(load_after, cpus=False),
        trn2_rows=write_rows(opts, opts.rows_out, m.runs) if opts.rows_out else None,
    )


def _write(opts: TuneOptions, report: TuneReport) -> int:
    """The override line, the JSON and the Markdown (then the plots); 1 when a file could not
    be written where asked."""
    md = report.markdown()
    written = write_outputs(
        "tune",
        [
            (Path(report.override.path), report.override.line + "\n"),
            (opts.out, json_io.dumps(report.to_json())),
            (opts.out.with_suffix(".md"), md),
        ],
    )
    if moved := moved_lines(written):
        print(md)
        for moved_line in moved:
            print(f"tune.py: error: {moved_line}", file=sys.stderr)
        return 1
    if opts.plots:
        out = opts.out
        with contextlib.suppress(ValueError):
            plot_k_sweep(report.analysis.rows, out.with_name(f"{out.stem}_ksweep.png"))
        cv = report.concurrency
        if isinstance(cv, ConcurrencyAnalysis) and cv.rows:
            plot_concurrency(cv.rows, out.with_name(f"{out.stem}_concurrency.png"))
    print(md)
    return 0


@exits_on_bad_input("tune.py")
def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        opts = tune_options(args)
        if opts.schedule:
            if (clash := output_clash(opts.output_paths()[:3])) is not None:
                raise UsageError(clash.problems)
            if (clash_in := input_clash(opts.output_paths()[:3], opts.input_paths())) is not None:
                raise UsageError([clash_in])
            return _schedule_main(opts)
        measured = _measure(opts)
        fit_c = measured.fit_c
        runs = {k: by_c[fit_c].result for k, by_c in measured.runs.runs.items()}
        baseline = measured.runs.baseline[fit_c].result
        analysis = analyse(baseline, runs, opts.k_max, measured.runs.versus_plain(), fit_c)
        rec = analysis.recommendation
        line = f"{OVERRIDE_KEY}={rec.k}" if rec.speculation else PLAIN_OVERRIDE
        problem = check_override(line, opts.profile)
        override = Override(line, str(opts.override_out), problem or "ok")
        report = _report(measured, analysis, override)
    except (InputError, StackError) as exc:
        print(f"tune.py: error: {exc}", file=sys.stderr)
        return 2
    except LocalServerError as exc:
        print(f"tune.py: the local server failed: {exc}", file=sys.stderr)
        return 1
    if code := _write(opts, report):
        return code
    if problem:
        print(
            f"tune.py: warning: profile {opts.profile} rejects {line}: {problem}", file=sys.stderr
        )
    render = ("python", "-m", "trnspec", "render", "--profile", opts.profile, "--set", line)
    print(f"render with: {shell_command(*render)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
