"""Sweep the speculative window k, fit the window model, and recommend k.

    python scripts/tune.py --k 1,2,4,6 --out reports/tune.json            # local launcher
    python scripts/tune.py --baseline http://h:8000 --endpoint-for-k 3=http://h:8003 \\
        --endpoint-for-k 7=http://h:8007 --model M --out reports/tune.json  # one server per k

Each k is measured against the same baseline (speculation off) with the same prompts. From the
runs it fits the acceptance rate (single and per position) and the draft/target cost ratio c, then
predicts the speedup for every k up to --k-max with (1 - a^(k+1)) / (1 - a) / (1 + k c), prints
predicted vs measured, and writes the recommended k as a `--set` override line for
`python -m trnspec render`. On Trn2 every k is a separate Neuron compile, so it also names the k
values worth precompiling.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trnspec.config import ConfigError

from scripts.bench import Arm, UsageError, opened, parse_int_list
from scripts.bench_report import atomic_write_text, plot_k_sweep, tune_markdown
from scripts.bench_run import RunOptions, discover_model, run_level
from scripts.bench_workload import TINY_CORPUS, RequestSpec, WorkloadError, select_workload
from scripts.local_server import LocalServerError
from scripts.window_model import KMeasurement, best_k, fit, precompile_set

OVERRIDE_KEY = "speculation.num_speculative_tokens"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tune.py", description="Sweep k and recommend one.")
    p.add_argument("--k", help="k values to run through the local launcher, e.g. 1,2,4,6")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="PATH=VALUE",
        help="extra profile overrides for the local launcher (repeatable)",
    )
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
    p.add_argument("--model", help="served model name (default: first of /v1/models)")
    p.add_argument("--api", choices=("completions", "chat"), default="completions")
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--num-prompts", type=int, default=16)
    p.add_argument("--input-len", type=int, default=32)
    p.add_argument("--output-len", type=int, default=128)
    p.add_argument("--dataset", help=f'JSONL prompts, or "{TINY_CORPUS}" (see bench.py)')
    p.add_argument("--warmup", type=int, help="default: one per concurrency slot")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument(
        "--k-max",
        type=int,
        default=7,
        help="largest k the model may recommend (the Neuron fork allows 1..7)",
    )
    p.add_argument(
        "--profile",
        default="local-tiny",
        help="profile the override line is checked against (trnspec.config)",
    )
    p.add_argument("--out", type=Path, required=True, help="result JSON path")
    p.add_argument(
        "--override-out", type=Path, help="file for the override line (default: <out>.override)"
    )
    p.add_argument("--no-plots", action="store_true")
    return p


def parse_endpoints(items: Sequence[str]) -> dict[int, str]:
    out: dict[int, str] = {}
    for item in items:
        k_text, sep, url = item.partition("=")
        if not sep or not k_text.strip().isdigit() or int(k_text) < 1:
            raise UsageError(f"--endpoint-for-k={item}: use K=URL with K >= 1, e.g. 4=http://h:80")
        if not url.startswith(("http://", "https://")):
            raise UsageError(f"--endpoint-for-k={item}: {url!r} is not an http(s):// URL")
        out[int(k_text)] = url
    return out


def check_override(line: str, profile: str) -> str | None:
    """Problems the config layer finds with the override on the profile, or None if it is clean.

    The line is only useful if `trnspec render --set` accepts it and the profile's checks (e.g. the
    image's k limit) pass; if the config package is not importable here, the check is skipped.
    """
    try:
        from trnspec.checks import check
        from trnspec.config import apply_overrides, load_profile
    except ImportError:
        return None
    try:
        problems = check(apply_overrides(load_profile(profile), [line]))
    except ValueError as exc:
        return str(exc)
    return "; ".join(f"{p.field}={p.value}: {p.fix}" for p in problems) or None


def analyse(
    baseline: dict[str, Any], runs: dict[int, dict[str, Any]], k_max: int
) -> dict[str, Any]:
    """Fit the model to the runs and build the per-k table and recommendation (pure)."""
    base_tps = float(baseline["output_tokens_per_s"])
    measurements = []
    for k, r in sorted(runs.items()):
        mal = r.get("mean_accepted_length")
        if mal is None or base_tps <= 0:
            continue
        deltas = r.get("spec_decode_deltas") or {}
        per_pos = r.get("acceptance_per_position")
        measurements.append(
            KMeasurement(
                k=k,
                mean_accepted_length=float(mal),
                measured_speedup=float(r["output_tokens_per_s"]) / base_tps,
                per_position=tuple(per_pos) if per_pos else None,
                num_drafts=int(deltas.get("num_drafts", 0)),
            )
        )
    if not measurements:
        raise UsageError("no k run produced acceptance figures (all requests failed?)")
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
                "measured_speedup": (float(r["output_tokens_per_s"]) / base_tps) if r else None,
                "output_tokens_per_s": r["output_tokens_per_s"] if r else None,
                "mean_accepted_length": r.get("mean_accepted_length") if r else None,
                "acceptance_rate": r.get("acceptance_rate") if r else None,
                "tpot_p50_ms": (r.get("tpot_ms") or {}).get("p50") if r else None,
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


async def measure_all(
    args: argparse.Namespace, specs: list[RequestSpec]
) -> tuple[dict[str, Any], dict[int, dict[str, Any]]]:
    opts = RunOptions(api=args.api, warmup=args.warmup, seed=args.seed, timeout_s=args.timeout)
    endpoints = parse_endpoints(args.endpoint_for_k)
    if endpoints:
        if args.k or not args.baseline:
            raise UsageError("--endpoint-for-k: give --baseline URL and no --k (remote mode)")
        arms = {k: Arm(f"k={k}", url, k=k) for k, url in endpoints.items()}
        base_arm = Arm("baseline", args.baseline)
    else:
        if not args.k:
            raise UsageError("--k: give k values for the local launcher, or --endpoint-for-k")
        ks = parse_int_list("--k", args.k)
        arms = {k: Arm(f"k={k}", None, [*args.overrides, f"{OVERRIDE_KEY}={k}"], k=k) for k in ks}
        base_arm = (
            Arm("baseline", args.baseline)
            if args.baseline
            else Arm("baseline", None, [*args.overrides, "speculation.method=none"])
        )

    async def one(arm: Arm, k: int | None) -> dict[str, Any]:
        with opened(arm) as live:
            assert live.endpoint is not None
            model = args.model or live.model or await discover_model(live.endpoint)
            if model is None:
                raise UsageError(f"--model: {live.endpoint}/v1/models did not answer")
            run_opts = dataclasses.replace(opts, num_speculative_tokens=k)
            print(f"tune.py: measuring {arm.name} at {live.endpoint}", file=sys.stderr)
            stats = await run_level(live.endpoint, model, specs, args.concurrency, run_opts)
            return {"arm": arm.name, "endpoint": live.endpoint, "model": model, **stats}

    baseline = await one(base_arm, None)
    runs = {k: await one(arm, k) for k, arm in sorted(arms.items())}
    return baseline, runs


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.k_max < 1:
            raise UsageError(f"--k-max={args.k_max}: must be >= 1")
        specs = select_workload(
            args.dataset, args.num_prompts, args.input_len, args.output_len, args.seed
        )
        load = os.getloadavg()
        baseline, runs = asyncio.run(measure_all(args, specs))
        analysis = analyse(baseline, runs, args.k_max)
    except (UsageError, WorkloadError, ConfigError) as exc:
        print(f"tune.py: error: {exc}", file=sys.stderr)
        return 2
    except LocalServerError as exc:
        print(f"tune.py: the local server failed: {exc}", file=sys.stderr)
        return 1
    rec = analysis["recommendation"]
    line = f"{OVERRIDE_KEY}={rec['k']}"
    problem = check_override(line, args.profile)
    override_out = args.override_out or args.out.with_suffix(".override")
    rec.update(override=line, override_file=str(override_out), override_check=problem or "ok")
    sources = sorted({str(r.get("acceptance_source")) for r in runs.values()})
    result = {
        **analysis,
        "baseline": baseline,
        "runs": {str(k): r for k, r in runs.items()},
        "acceptance_source": ", ".join(sources),
        "load_average": f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} cpus)",
    }
    atomic_write_text(override_out, line + "\n")
    atomic_write_text(args.out, json.dumps(result, indent=2) + "\n")
    md = tune_markdown(result)
    atomic_write_text(args.out.with_suffix(".md"), md)
    if not args.no_plots:
        with contextlib.suppress(ValueError):
            plot_k_sweep(analysis["rows"], args.out.with_name(f"{args.out.stem}_ksweep.png"))
    print(md)
    if problem:
        print(
            f"tune.py: warning: profile {args.profile} rejects {line}: {problem}", file=sys.stderr
        )
    print(f"render with: python -m trnspec render --profile {args.profile} --set {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
