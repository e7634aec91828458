"""Sweep the speculative window k (and concurrency), fit the models, and recommend k.

    python scripts/tune.py --k 1,2,4,6 --out reports/tune.json            # local launcher
    python scripts/tune.py --k 1,2,4,6 --concurrency 1,2,4,8 --fit-concurrency 2 \\
        --out reports/tune.json  # + step-time model fitted at c=2, checked at 1, 4, 8
    python scripts/tune.py --baseline http://h:8000 --endpoint-for-k 3=http://h:8003 \\
        --endpoint-for-k 7=http://h:8007 --model M --out reports/tune.json  # one server per k
    python scripts/tune.py --stack TrnspecPlatform-serving --trn2-profile llama31-8b-eagle3 \\
        --baseline http://h:8000 --concurrency 1,2,4 --out reports/trn2.json \\
        --rows-out reports/trn2_rows.yaml     # a deployed stack; rows for calibrate --add

Each k is measured against the same baseline (speculation off) with the same prompts. From the
runs it fits the acceptance rate (single and per position) and the draft/target cost ratio c, then
predicts the speedup for every k up to --k-max with (1 - a^(k+1)) / (1 - a) / (1 + k c), prints
predicted vs measured, and writes the recommended k as a `--set` override line for
`python -m trnspec render`. On Trn2 every k is a separate Neuron compile, so it also names the k
values worth precompiling.

With several concurrencies it also fits trnspec's step-time model (engine_model.py) to
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
import dataclasses
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from trnspec.boundary import json_io
from trnspec.boundary.errors import BoundaryError, exits_on_bad_input
from trnspec.boundary.write import moved_lines, output_clash, write_file, write_outputs
from trnspec.cli.main import add_set_argument
from trnspec.config.serving import ConfigError
from trnspec.perf.model import decode_context_tokens

from trnspec_tools.bench.bench import Arm, opened
from trnspec_tools.bench.bench_categories import category_groups, sample_groups
from trnspec_tools.bench.bench_options import UsageError
from trnspec_tools.bench.bench_report import (
    plot_k_sweep,
    save_figure,
    tune_markdown,
)
from trnspec_tools.bench.bench_run import run_level
from trnspec_tools.bench.bench_stats import exceeds_tokens_per_step
from trnspec_tools.bench.bench_workload import (
    WorkloadError,
)
from trnspec_tools.bench.json_fields import Fields
from trnspec_tools.bench.run_result import ArmRun, RunResult
from trnspec_tools.bench.workload_args import add_workload_args
from trnspec_tools.client.client_args import (
    add_client_args,
    add_model_args,
)
from trnspec_tools.client.request_spec import RequestSpec
from trnspec_tools.client.served_model import NoServedModel, resolve_model
from trnspec_tools.client.stack_endpoint import StackError, add_stack_arguments
from trnspec_tools.local_engine.local_server import LocalServerError, model_overrides
from trnspec_tools.tune.engine_model import (
    EngineFit,
    EngineSetup,
    SweepPoint,
    conditional_tokens_per_step,
    deployment,
    fit_engine,
    held_out_summary,
    recommend,
    validation_rows,
)
from trnspec_tools.tune.stack_arm import stack_arm
from trnspec_tools.tune.trn2_rows import conditions_for, measured_rows, rows_yaml
from trnspec_tools.tune.tune_options import TuneOptions, tune_options
from trnspec_tools.tune.window_model import KMeasurement, best_k, fit, precompile_set

OVERRIDE_KEY = "speculation.num_speculative_tokens"


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
        type=int,
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
        type=int,
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
        " --trn2-profile, the deployed profile), for `python -m trnspec.cli.calibrate --add FILE`",
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
        type=int,
        default=4,
        help="--schedule: alternated rounds per candidate and level (default 4)",
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tune.py", description="Sweep k and recommend one.")
    add_cli_args(p)
    return p


def check_override(line: str | Sequence[str], profile: str) -> str | None:
    """Problems the config layer finds with the override on the profile, or None if it is clean.

    The line is only useful if `trnspec render --set` accepts it and the profile's checks (e.g. the
    image's k limit) pass; if the config package is not importable here, the check is skipped.
    """
    try:
        from trnspec.checks.all_checks import check
        from trnspec.config.serving import apply_overrides, load_profile
    except ImportError:
        return None
    try:
        items = [line] if isinstance(line, str) else list(line)
        problems = check(apply_overrides(load_profile(profile), items))
    except ValueError as exc:
        return str(exc)
    return "; ".join(f"{p.field}={p.value}: {p.fix}" for p in problems) or None


def k_measurement(k: int, run: RunResult, measured_speedup: float) -> KMeasurement:
    """What the window model fits from one run at window k (its acceptance figures)."""
    acc = run.acceptance
    assert acc.mean_accepted_length is not None, "only runs with acceptance figures are fitted"
    deltas = acc.spec_decode_deltas
    return KMeasurement(
        k=k,
        mean_accepted_length=acc.mean_accepted_length,
        measured_speedup=measured_speedup,
        per_position=acc.acceptance_per_position or None,
        num_drafts=deltas.num_drafts if deltas else 0,
    )


def analyse(baseline: RunResult, runs: Mapping[int, RunResult], k_max: int) -> dict[str, Any]:
    """Fit the model to the runs and build the per-k table and recommendation (pure)."""
    base_tps = baseline.output_tokens_per_s

    def speedup(r: RunResult | None) -> float | None:
        """The run's measured speedup; absent when it exceeds its tokens per step (the baseline
        ran slow: bench_stats.exceeds_tokens_per_step) or there is no baseline."""
        if r is None or base_tps <= 0:
            return None
        value = r.output_tokens_per_s / base_tps
        mal = r.acceptance.mean_accepted_length
        return None if exceeds_tokens_per_step(value, mal) else value

    measurements = [
        k_measurement(k, r, s)
        for k, r in sorted(runs.items())
        if r.acceptance.mean_accepted_length is not None and (s := speedup(r)) is not None
    ]
    if not measurements:
        raise UsageError(
            "no k run produced a usable measurement (no acceptance figures, or every speedup"
            " above its tokens per step: the baseline ran slow; re-measure)"
        )
    speedups = {k: speedup(r) for k, r in runs.items()}  # for the table, once per run
    model = fit(measurements)
    k_top = max(k_max, *runs)
    rows = []
    for k in range(1, k_top + 1):
        r = runs.get(k)
        rows.append(
            {
                "k": k,
                "predicted_speedup": model.predicted_speedup(k),
                "predicted_tokens_per_step": model.tokens_per_step(k),
                "measured_speedup": speedups.get(k),
                "implausible": r is not None and base_tps > 0 and speedups[k] is None,
                "output_tokens_per_s": r.output_tokens_per_s if r else None,
                "mean_accepted_length": r.acceptance.mean_accepted_length if r else None,
                "acceptance_rate": r.acceptance.acceptance_rate if r else None,
                "tpot_p50_ms": r.requests.tpot_ms.p50 if r else None,
            }
        )
    # Evidence first, model for the gaps: a measured k scores its measured speedup, an unmeasured
    # one its prediction. Ties go to the smaller k (fewer wasted drafts, smaller graphs).
    model_best = best_k(model, range(1, k_max + 1))
    in_range = [row for row in rows if row["k"] <= k_max]
    best = max(
        in_range,
        key=lambda row: (
            round(row["measured_speedup"] or row["predicted_speedup"], 9),
            -row["k"],
        ),
    )["k"]
    measured = [row for row in rows if row["measured_speedup"] is not None]
    best_measured = max(measured, key=lambda row: row["measured_speedup"])["k"]
    score = next(r["measured_speedup"] or r["predicted_speedup"] for r in rows if r["k"] == best)
    return {
        "fit": {
            "alpha": model.alpha,
            "conditional": list(model.conditional),
            "cost_ratio": model.cost_ratio,
            "c_per_k": model.c_per_k,
        },
        "rows": rows,
        "recommendation": {
            "k": best,
            "expected_speedup": score,
            "predicted_speedup": model.predicted_speedup(best),
            "model_best_k": model_best,
            "best_measured_k": best_measured,
            "measured": best in runs,
            "precompile": precompile_set(best, k_max),
        },
    }


#: One arm's runs by concurrency level.
Levels = dict[int, ArmRun]
#: Per category, the speculative runs by k (at the fit concurrency).
Categories = dict[str, dict[int, RunResult]]


def arms_of(opts: TuneOptions) -> tuple[Arm, dict[int, Arm]]:
    """The baseline arm and one arm per k: remote servers, or the local launcher's."""
    if opts.remote:
        if opts.k or not opts.baseline:
            raise UsageError("--endpoint-for-k: give --baseline URL and no --k (remote mode)")
        arms = {k: Arm(f"k={k}", url, k=k) for k, url in opts.endpoints.items()}
        return Arm("baseline", opts.baseline), arms
    if not opts.k:
        raise UsageError("--k: give k values for the local launcher, or --endpoint-for-k")
    overrides = list(opts.overrides)
    arms = {k: Arm(f"k={k}", None, [*overrides, f"{OVERRIDE_KEY}={k}"], k=k) for k in opts.k}
    base_arm = (
        Arm("baseline", opts.baseline)
        if opts.baseline
        else Arm("baseline", None, [*overrides, "speculation.method=none"])
    )
    return base_arm, arms


async def measure_all(
    options: TuneOptions,
    specs: list[RequestSpec],
    categories: dict[str, list[RequestSpec]] | None = None,
    category_level: int | None = None,
) -> tuple[Levels, dict[int, Levels], Categories]:
    """Every arm at every concurrency level (one server per arm, opened once), and per category
    at `category_level` for the speculative arms. Returns baseline[c], runs[k][c], cats[cat][k]."""
    base_arm, arms = arms_of(options)
    opts = options.run
    levels = options.levels
    cats: Categories = {}

    async def one(arm: Arm, k: int | None) -> Levels:
        out: Levels = {}
        with opened(arm) as live:
            assert live.endpoint is not None
            try:
                model = await resolve_model(
                    live.endpoint,
                    options.model,
                    live.model,
                    timeout_s=min(10.0, opts.timeout_s),
                    api_key=opts.api_key,
                )
            except NoServedModel as exc:
                raise UsageError(str(exc)) from None
            run_opts = dataclasses.replace(opts, num_speculative_tokens=k)
            for c in levels:
                print(f"tune.py: measuring {arm.name} at c={c} ({live.endpoint})", file=sys.stderr)
                stats = await run_level(live.endpoint, model, specs, c, run_opts)
                out[c] = ArmRun(arm.name, live.endpoint, model, stats)
            if k is not None and categories and category_level is not None:
                for cat, cat_specs in categories.items():
                    print(f"tune.py: measuring {arm.name} on category {cat}", file=sys.stderr)
                    stats = await run_level(
                        live.endpoint, model, cat_specs, category_level, run_opts
                    )
                    cats.setdefault(cat, {})[k] = stats
        return out

    baseline = await one(base_arm, None)
    runs = {k: await one(arm, k) for k, arm in sorted(arms.items())}
    return baseline, runs, cats


def load_measurements(
    path: Path, levels: Sequence[int]
) -> tuple[Levels, dict[int, Levels], Categories]:
    """baseline[c], runs[k][c] and per-category runs from an earlier tune.py --out JSON, every
    run checked as it is read (RunResult.from_json: a bad figure names its field's path)."""
    try:
        data = json_io.loads(path.read_bytes(), "--from-json", shown=str(path))
    except BoundaryError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"--from-json={path}: cannot read ({exc.strerror or exc})") from None
    try:
        by_c = Fields(data, "").sub("by_concurrency")
        missing = [c for c in levels if str(c) not in by_c.obj]
        if missing:
            raise UsageError(f"--from-json={path}: no measurements at concurrency {missing}")
        baseline = {c: ArmRun.from_json(*by_c.sub(str(c)).item("baseline")) for c in levels}
        runs: dict[int, Levels] = {}
        for c in levels:
            level_runs = by_c.sub(str(c)).sub("runs")
            for k in level_runs.obj:
                runs.setdefault(_k(k, level_runs), {})[c] = ArmRun.from_json(*level_runs.item(k))
        cats = {
            cat: {_k(k, entry): RunResult.from_json(*entry.item(k)) for k in entry.obj}
            for cat, entry in _category_runs(data)
        }
    except BoundaryError as exc:
        raise UsageError(f"--from-json={path}: not a tune.py result: {exc}") from None
    return baseline, runs, cats


def _category_runs(data: Any) -> list[tuple[str, Fields]]:
    """The per-category "runs" objects of a tune result (categories without runs left out)."""
    cats = data.get("categories") if isinstance(data, dict) else None
    return [
        (cat, Fields(entry, f"categories.{cat}").sub("runs"))
        for cat, entry in (cats or {}).items()
        if isinstance(entry, dict) and entry.get("runs")
    ]


def _k(key: str, where: Fields) -> int:
    """A window k written as a JSON key ("2")."""
    if not key.isdigit() or int(key) < 1:
        raise BoundaryError(where.path(key), key, "a run's key must be its window k >= 1")
    return int(key)


def engine_setup(opts: TuneOptions, local: bool) -> EngineSetup | str:
    """The served models' shapes and the workload's context, or why they are unknown."""
    from trnspec.config.serving import apply_overrides, load_profile
    from trnspec.hardware.model_shapes import ShapeError, resolve_shape
    from trnspec.hardware.sizing import BYTES_PER_DTYPE

    profile, overrides = opts.profile, list(opts.overrides)
    try:
        extra = model_overrides(profile, overrides) if local else []
        cfg = apply_overrides(load_profile(profile), [*extra, *overrides])
        target = resolve_shape(cfg.target)
        draft = resolve_shape(cfg.speculation.draft) if cfg.speculation.draft else None
    except (ShapeError, ValueError, KeyError) as exc:
        return f"--profile={profile}: {exc}"
    if target is None:
        return f"--profile={profile}: the target's shape is unknown ({cfg.target.source})"
    method = cfg.speculation.method
    if method == "draft_model" and draft is None:
        return f"--profile={profile}: the draft's shape is unknown"
    return EngineSetup(
        target=target,
        draft=draft,
        method=method,
        weight_bytes=BYTES_PER_DTYPE[cfg.dtype],
        context_tokens=decode_context_tokens(opts.workload.input_len, opts.workload.output_len),
        max_batch=cfg.max_num_seqs,
    )


def sweep_points(
    baseline: Mapping[int, RunResult], runs: Mapping[int, Mapping[int, RunResult]]
) -> list[SweepPoint]:
    """The measured points the step-time model is fitted to (runs without throughput, and
    speculative runs without acceptance, left out)."""
    out = [
        SweepPoint(c, 0, r.output_tokens_per_s)
        for c, r in baseline.items()
        if r.output_tokens_per_s
    ]
    for k, by_c in runs.items():
        for c, r in by_c.items():
            mal = r.acceptance.mean_accepted_length
            if r.output_tokens_per_s and mal:
                out.append(SweepPoint(c, k, r.output_tokens_per_s, mal))
    return out


def engine_recommendation(
    setup: EngineSetup,
    fit: EngineFit,
    tokens_per_step: Callable[[int], float],
    batches: Sequence[int],
    k_max: int,
) -> dict[str, Any]:
    """k per batch on the local engine with its fitted constants (pure)."""
    return recommend(
        setup.target,
        setup.method,
        setup.draft,
        tokens_per_step,
        deployment(setup, fit.hardware),
        fit.efficiency,
        batches,
        k_max,
    )


def concurrency_analysis(
    points: Sequence[SweepPoint],
    setup: EngineSetup,
    fit: EngineFit,
    conditional: Sequence[float],
    alpha: float,
    batches: Sequence[int],
    k_max: int,
) -> dict[str, Any]:
    """Check the step-time model fitted at one concurrency on the others, recommend k (pure)."""
    rows = validation_rows(points, setup, fit)
    rec = engine_recommendation(
        setup, fit, conditional_tokens_per_step(conditional, alpha), batches, k_max
    )
    return {
        "fit_concurrency": fit.fit_concurrency,
        "constants": fit.constants(),
        "fit_rms_log_error": fit.rms_log_error,
        "rows": rows,
        "held_out": held_out_summary(rows),
        "recommendation_by_batch": rec,
    }


def trn2_recommendation(
    profile: str,
    conditional: Sequence[float],
    alpha: float,
    batches: Sequence[int],
    context_tokens: int,
) -> dict[str, Any]:
    """k per batch, precompile set and switch-off batch for a Trn2 profile, from the measured
    acceptance and the calibrated Trn2 constants."""
    from trnspec.config.images import image_spec
    from trnspec.config.serving import load_profile
    from trnspec.perf.profile_model import profile_model

    cfg = load_profile(profile)
    model = profile_model(cfg, context_tokens)
    k_max = image_spec(cfg.image).max_speculative_tokens
    rec = recommend(
        model.target,
        model.method,
        model.draft,
        conditional_tokens_per_step(conditional, alpha),
        model.deployment,
        model.efficiency,
        batches,
        k_max,
    )
    return {"profile": profile, "k_max": k_max, **rec}


def category_specs(
    dataset: str | None, num_prompts: int, output_len: int, seed: int
) -> dict[str, list[RequestSpec]]:
    """tune's per-category workloads: `num_prompts` split evenly over the dataset's categories
    (at least one each), which must be two or more for a recommendation per category."""
    try:
        groups = category_groups(dataset, output_len)
    except WorkloadError as err:
        raise UsageError(str(err)) from None
    if len(groups) < 2:
        raise UsageError(
            f'--per-category: --dataset={dataset} has fewer than two "category" values'
        )
    return sample_groups(groups, max(1, num_prompts // len(groups)), seed)


def category_analysis(cats: Categories, k_max: int, recommend_for: Any) -> dict[str, Any]:
    """Acceptance per category and k (and its recommendation), from the per-category runs."""
    out: dict[str, Any] = {}
    for cat, by_k in sorted(cats.items()):
        # acceptance only: no per-category baseline, so the speedup is a placeholder
        ms = [
            k_measurement(k, r, 1.0)
            for k, r in sorted(by_k.items())
            if r.acceptance.mean_accepted_length
        ]
        if not ms:
            out[cat] = {"error": "no acceptance measured"}
            continue
        model = fit(ms)
        entry: dict[str, Any] = {
            "acceptance": {
                str(k): {
                    "mean_accepted_length": r.acceptance.mean_accepted_length,
                    "acceptance_rate": r.acceptance.acceptance_rate,
                    "acceptance_per_position": _listed(r.acceptance.acceptance_per_position),
                }
                for k, r in sorted(by_k.items())
            },
            "alpha": model.alpha,
            "conditional": list(model.conditional),
            "runs": {str(k): r.to_json() for k, r in sorted(by_k.items())},
        }
        if recommend_for is not None:
            entry["recommendation_by_batch"] = recommend_for(list(model.conditional), model.alpha)
        out[cat] = entry
    return out


def _listed(values: Sequence[float] | None) -> list[float] | None:
    return None if values is None else list(values)


def results(levels: Mapping[int, ArmRun]) -> dict[int, RunResult]:
    """The runs of an arm by level, without the arm's name and endpoint."""
    return {c: arm.result for c, arm in levels.items()}


def plot_concurrency(rows: Sequence[dict[str, Any]], path: Path) -> Path:
    """Predicted against measured speedup, fit rows and held-out rows apart."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 5))
    ax = fig.subplots()
    for used, marker, label in ((True, "o", "used for the fit"), (False, "s", "held out")):
        sel = [r for r in rows if r["used_for_fit"] is used]
        ax.scatter(
            [r["measured_speedup"] for r in sel],
            [r["predicted_speedup"] for r in sel],
            marker=marker,
            label=label,
        )
        for r in sel:
            ax.annotate(
                f"c={r['concurrency']},k={r['k']}",
                (r["measured_speedup"], r["predicted_speedup"]),
                fontsize=6,
            )
    values = [r["measured_speedup"] for r in rows] + [r["predicted_speedup"] for r in rows]
    lo, hi = min(values) * 0.9, max(values) * 1.1
    ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8)
    ax.plot([lo, hi], [lo * 1.15, hi * 1.15], color="grey", lw=0.5, ls="--")
    ax.plot([lo, hi], [lo * 0.85, hi * 0.85], color="grey", lw=0.5, ls="--")
    ax.set_xlabel("measured speedup")
    ax.set_ylabel("predicted speedup (step-time model)")
    ax.set_title("Speedup across concurrency: predicted vs measured (+-15 %)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    save_figure(fig, path)
    return path


def concurrency_markdown(result: dict[str, Any]) -> str:
    cv = result.get("concurrency_validation")
    lines = ["", "## Speedup across concurrency (step-time model)", ""]
    if not isinstance(cv, dict):
        lines.append(f"Not run: {cv}")
        return "\n".join(lines) + "\n"
    ho = cv["held_out"]
    lines += [
        f"Fitted at concurrency {cv['fit_concurrency']} (RMS log error of step time"
        f" {cv['fit_rms_log_error']:.3f}); held out: {ho['rows']} rows,"
        + (
            f" mean |error| {ho['mean_abs_error']:.1%}, max {ho['max_abs_error']:.1%},"
            f" {ho['within_15pct']} of {ho['rows']} within 15 %."
            if ho["rows"]
            else " none."
        )
        + (
            f" {ho['implausible_rows']} held-out row(s) left out: measured speedup above the"
            " tokens per step, i.e. the baseline at that concurrency ran slow (re-measure)."
            if ho.get("implausible_rows")
            else ""
        ),
        "",
        "| concurrency | k | mean acc. len | measured speedup | predicted speedup | error |"
        " used for fit |",
        "|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for r in cv["rows"]:
        lines.append(
            f"| {r['concurrency']} | {r['k']} | {r['mean_accepted_length']:.2f}"
            f" | {r['measured_speedup']:.2f}x | {r['predicted_speedup']:.2f}x"
            f" | {r['error']:+.1%}{' (implausible)' if r.get('implausible') else ''}"
            f" | {'yes' if r['used_for_fit'] else 'no'} |"
        )
    rec = cv["recommendation_by_batch"]
    lines += ["", "Recommended k per batch on this engine: " + _by_batch(rec)]
    trn2 = result.get("trn2")
    if isinstance(trn2, dict):
        lines += ["", f"On Trn2 ({trn2['profile']}) with this acceptance: " + _by_batch(trn2)]
    for cat, entry in (result.get("categories") or {}).items():
        if "recommendation_by_batch" in entry:
            lines.append(
                f"- category {cat} (alpha {entry['alpha']:.3f}): "
                + _by_batch(entry["recommendation_by_batch"])
            )
    return "\n".join(lines) + "\n"


def _by_batch(rec: dict[str, Any]) -> str:
    best = ", ".join(f"{b}: k={v['k']}" for b, v in rec["best_k_per_batch"].items())
    stop = rec["disable_speculation_at_batch"]
    tail = (
        f"; switch speculation off from batch {stop}"
        if stop
        else "; speculation pays at every batch"
    )
    return f"{best}{tail}; precompile k in {rec['precompile']}"


def write_trn2_rows(
    opts: TuneOptions, rows_out: Path, baseline: Levels, runs: dict[int, Levels]
) -> dict[str, Any]:
    """--rows-out: the run as data-file rows (trn2_rows), or why not."""
    if not opts.trn2_profile:
        return {"path": None, "note": "--rows-out needs --trn2-profile (the deployed profile)"}
    try:
        cond = conditions_for(
            opts.trn2_profile,
            opts.workload.input_len,
            opts.workload.output_len,
            f"trnspec tune --out {opts.out}",
            date.today().isoformat(),
        )
    except ConfigError as exc:
        return {"path": None, "note": f"--trn2-profile={opts.trn2_profile}: {exc}"}
    rows, skipped = measured_rows(cond, baseline, runs)
    write_file(rows_out, rows_yaml(cond, rows))
    return {"path": str(rows_out), "rows": len(rows), "skipped": skipped}


def _schedule_main(opts: TuneOptions) -> int:
    from trnspec_tools.local_engine.local_server import exit_on_sigterm
    from trnspec_tools.tune.schedule_tune import run

    exit_on_sigterm()  # SIGTERM unwinds the `with LocalServer` blocks: no server outlives tune
    try:
        return run(opts, check_override)
    except (UsageError, WorkloadError, ConfigError) as exc:
        print(f"tune.py: error: {exc}", file=sys.stderr)
        return 2
    except LocalServerError as exc:
        print(f"tune.py: the local server failed: {exc}", file=sys.stderr)
        return 1


@dataclass(frozen=True)
class _Measured:
    """What the sweep measured (or read back with --from-json), by concurrency and by k."""

    levels: list[int]
    fit_c: int
    batches: list[int]
    #: the options the arms were measured with (--stack fills in its endpoint)
    opts: TuneOptions
    baseline_by_c: Levels
    runs_by_c: dict[int, Levels]
    cats: Categories
    load: tuple[float, float, float]


def _measure(opts: TuneOptions) -> _Measured:
    """Check the flags, then measure every arm (or read an earlier run's JSON)."""
    if opts.k_max < 1:
        raise UsageError(f"--k-max={opts.k_max}: must be >= 1")
    if (clash := output_clash(opts.output_paths())) is not None:
        raise UsageError(str(clash))
    levels = list(opts.levels)
    fit_c = opts.fit_concurrency or (levels[1] if len(levels) > 1 else levels[0])
    if fit_c not in levels:
        raise UsageError(f"--fit-concurrency={fit_c}: must be one of --concurrency {levels}")
    batches = list(opts.batches)
    specs = opts.workload.specs()
    w = opts.workload
    categories = (
        category_specs(w.dataset, w.num_prompts, w.output_len, w.seed)
        if opts.per_category
        else None
    )
    load = os.getloadavg()
    if opts.from_json:
        baseline_by_c, runs_by_c, cats = load_measurements(opts.from_json, levels)
    else:
        with stack_arm(opts) as opts:
            baseline_by_c, runs_by_c, cats = asyncio.run(
                measure_all(opts, specs, categories, fit_c)
            )
    return _Measured(levels, fit_c, batches, opts, baseline_by_c, runs_by_c, cats, load)


def _concurrency_fit(
    m: _Measured, conditional: list[float], alpha: float
) -> tuple[dict[str, Any] | str, Any]:
    """The engine model fitted over the concurrency levels and its validation (or why there is
    none), and the fitted engine (None without one)."""
    opts = m.opts
    setup = engine_setup(opts, local=not opts.remote)
    if isinstance(setup, str):
        return setup, None
    if len(m.levels) < 2:
        return "needs at least two --concurrency levels", None
    points = sweep_points(
        results(m.baseline_by_c), {k: results(by_c) for k, by_c in m.runs_by_c.items()}
    )
    try:
        fitted = fit_engine(points, setup, m.fit_c)
        analysis = concurrency_analysis(
            points, setup, fitted, conditional, alpha, m.batches, opts.k_max
        )
    except ValueError as exc:
        return f"could not fit: {exc}", None
    return analysis, (setup, fitted)


def _trn2(
    opts: TuneOptions, conditional: list[float], alpha: float, batches: list[int]
) -> dict[str, Any] | str | None:
    if not opts.trn2_profile:
        return None
    try:
        return trn2_recommendation(
            opts.trn2_profile,
            conditional,
            alpha,
            batches,
            decode_context_tokens(opts.workload.input_len, opts.workload.output_len),
        )
    except (ConfigError, ValueError) as exc:
        return f"--trn2-profile={opts.trn2_profile}: {exc}"


def _result(m: _Measured, analysis: dict[str, Any]) -> dict[str, Any]:
    """The tune JSON: the k analysis, the measured runs, the fits and the Trn2 rows."""
    baseline = m.baseline_by_c[m.fit_c]
    runs = {k: by_c[m.fit_c] for k, by_c in m.runs_by_c.items()}
    load_after = os.getloadavg()
    sources = sorted({str(r.result.acceptance.acceptance_source) for r in runs.values()})
    conditional, alpha = analysis["fit"]["conditional"], analysis["fit"]["alpha"]
    opts = m.opts
    concurrency, engine = _concurrency_fit(m, conditional, alpha)
    recommend_for = None
    if engine is not None:
        setup, fitted = engine

        def recommend_for(cond: list[float], a: float) -> dict[str, Any]:
            return engine_recommendation(
                setup, fitted, conditional_tokens_per_step(cond, a), m.batches, opts.k_max
            )

    load = m.load
    result = {
        **analysis,
        "baseline": baseline.to_json(),
        "runs": {str(k): r.to_json() for k, r in runs.items()},
        "fit_concurrency": m.fit_c,
        "by_concurrency": {
            str(c): {
                "baseline": m.baseline_by_c[c].to_json(),
                "runs": {str(k): by_c[c].to_json() for k, by_c in m.runs_by_c.items()},
            }
            for c in m.levels
        },
        "concurrency_validation": concurrency,
        "trn2": _trn2(opts, conditional, alpha, m.batches),
        "categories": category_analysis(m.cats, opts.k_max, recommend_for) if m.cats else None,
        "acceptance_source": ", ".join(sources),
        "load_average": f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} cpus)",
        "load_average_after": f"{load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}",
    }
    if isinstance(concurrency, dict):
        result["rows_by_concurrency"] = concurrency["rows"]
    if opts.rows_out:
        result["trn2_rows"] = write_trn2_rows(opts, opts.rows_out, m.baseline_by_c, m.runs_by_c)
    return result


def _write(opts: TuneOptions, result: dict[str, Any], line: str) -> int:
    """The override line, the JSON and the Markdown (then the plots); 1 when a file could not
    be written where asked."""
    rec = result["recommendation"]
    md = tune_markdown(result) + concurrency_markdown(result)
    written = write_outputs(
        "tune",
        [
            (Path(rec["override_file"]), line + "\n"),
            (opts.out, json_io.dumps(result)),
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
            plot_k_sweep(result["rows"], out.with_name(f"{out.stem}_ksweep.png"))
        concurrency = result["concurrency_validation"]
        if isinstance(concurrency, dict) and concurrency["rows"]:
            plot_concurrency(concurrency["rows"], out.with_name(f"{out.stem}_concurrency.png"))
    print(md)
    return 0


@exits_on_bad_input("tune.py")
def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        opts = tune_options(args)
        if opts.schedule:
            if (clash := output_clash(opts.output_paths()[:3])) is not None:
                raise UsageError(str(clash))
            return _schedule_main(opts)
        measured = _measure(opts)
        baseline = measured.baseline_by_c[measured.fit_c].result
        runs = {k: by_c[measured.fit_c].result for k, by_c in measured.runs_by_c.items()}
        analysis = analyse(baseline, runs, opts.k_max)
    except (UsageError, WorkloadError, ConfigError, StackError) as exc:
        print(f"tune.py: error: {exc}", file=sys.stderr)
        return 2
    except LocalServerError as exc:
        print(f"tune.py: the local server failed: {exc}", file=sys.stderr)
        return 1
    rec = analysis["recommendation"]
    line = f"{OVERRIDE_KEY}={rec['k']}"
    problem = check_override(line, opts.profile)
    rec.update(override=line, override_file=str(opts.override_out), override_check=problem or "ok")
    if code := _write(opts, _result(measured, analysis), line):
        return code
    if problem:
        print(
            f"tune.py: warning: profile {opts.profile} rejects {line}: {problem}", file=sys.stderr
        )
    print(f"render with: python -m trnspec render --profile {opts.profile} --set {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
