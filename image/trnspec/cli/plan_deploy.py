"""`python -m trnspec plan-deploy`: pick the deployment (k, max_num_seqs, replicas, nodes, KEDA
target) for a latency target and a peak load, and write it as a file `cdk deploy` runs unchanged.

    python -m trnspec plan-deploy --profile qwen3-4b-dflash --acceptance-length 2.1 \\
        --acceptance-k 15 --tpot-ms 30 --peak-streams 16 --out config/plans/default.yaml

`plan` (no suffix) stays the HBM sizing of one config; `plan-deploy` is the deployment choice
(`trnspec.perf.deploy_plan`). It prints, per profile, the cheapest speculative and the cheapest
plain variant that meet the TPOT target, with the cost per 1M output tokens at peak (what the nodes
bill), the idle cost per hour at min_replicas and the ratio of the two costs; `--out` writes the
cheapest variant over every profile as a plan file (`serving:` fields merged into the deployment's
serving section by `cdk deploy -c serving.plan=FILE`, and `plan:` recording what it was chosen
from). Acceptance: --acceptance-rate, --acceptance-length [--acceptance-k], or --tune-report (the
`fit.alpha` of a `make tune` report). Bad input exits 2 naming the flag.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from trnspec.boundary.args import float_arg, int_arg, path_arg, text_arg
from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.files import read_json
from trnspec.boundary.numbers import finite_in
from trnspec.boundary.write import output_clash, write_file
from trnspec.config.serving import ConfigError, Problem, load_profile
from trnspec.perf.acceptance import acceptance_rate
from trnspec.perf.deploy_plan import PlanInputs, ProfilePlan, Variant, plan_profiles, rank
from trnspec.perf.model import decode_context_tokens
from trnspec.perf.predict import DEFAULT_BATCHES, int_list

#: The plan file's format marker, checked by the deploy (infra/settings/plan_file.py).
PLAN_KIND = "trnspec-deployment-plan"
#: The line `trnspec --help` lists for the subcommand, and its description.
HELP = "pick k, max_num_seqs, replicas, nodes and the KEDA target; write a deploy plan"
DESCRIPTION = (__doc__ or "").split("\n\n")[0]


def tune_report_alpha(path: str) -> float:
    """The per-token acceptance `fit.alpha` of a `tune` report (JSON, read by the bounded
    reader): a number in [0, 1], never a boolean."""
    doc = read_json(path, "--tune-report")
    fit = doc.get("fit") if isinstance(doc, dict) else None
    alpha = fit.get("alpha") if isinstance(fit, dict) else None
    if alpha is None:
        raise BoundaryError("--tune-report", path, "not a tune report with fit.alpha")
    return finite_in(alpha, f"--tune-report {path}: fit.alpha", 0.0, 1.0)


def _alpha(args: argparse.Namespace, default_k: int) -> tuple[float, str]:
    if args.tune_report:
        return tune_report_alpha(args.tune_report), f"fit.alpha of {args.tune_report}"
    k = args.acceptance_k or default_k
    alpha = acceptance_rate(args.acceptance_rate, args.acceptance_length, k)
    if args.acceptance_rate is not None:
        return args.acceptance_rate, "--acceptance-rate"
    if alpha is not None:
        return alpha, f"--acceptance-length {args.acceptance_length} at k={k}"
    raise ConfigError(
        [
            Problem(
                "--acceptance-rate",
                None,
                "give --acceptance-rate A, --acceptance-length TAU [--acceptance-k K], or"
                " --tune-report FILE; acceptance depends on the workload",
            )
        ]
    )


def _positive(flag: str, value: float | None) -> None:
    if value is None or value <= 0:
        raise ConfigError([Problem(flag, value, "give a positive number")])


def _plan_inputs(args: argparse.Namespace) -> PlanInputs:
    """The target, the load and the candidate batches of the flags (build_plans checked the
    first three are positive)."""
    batches = (
        tuple(int_list("--max-num-seqs", args.max_num_seqs, 1))
        if args.max_num_seqs
        else DEFAULT_BATCHES
    )
    return PlanInputs(
        tpot_target_ms=args.tpot_ms,
        peak_streams=args.peak_streams,
        min_replicas=args.min_replicas,
        batches=batches,
        context_tokens=decode_context_tokens(args.input_len, args.output_len),
    )


def build_plans(args: argparse.Namespace) -> tuple[list[ProfilePlan], dict[str, Any]]:
    """Every profile's plan and the inputs they were chosen from."""
    _positive("--tpot-ms", args.tpot_ms)
    _positive("--peak-streams", args.peak_streams)
    _positive("--min-replicas", args.min_replicas)
    cfgs = [load_profile(name) for name in args.profile]
    alpha, alpha_source = _alpha(args, cfgs[0].speculation.num_speculative_tokens)
    inputs = _plan_inputs(args)
    plans = plan_profiles(cfgs, alpha, args.price_per_hour, inputs)
    meta = {
        "acceptance_rate": round(alpha, 6),
        "acceptance_source": alpha_source,
        "tpot_target_ms": args.tpot_ms,
        "peak_streams": args.peak_streams,
        "min_replicas": args.min_replicas,
        "input_len": args.input_len,
        "output_len": args.output_len,
        "candidates": list(args.profile),
    }
    return plans, meta


def plan_document(
    choice: Variant, meta: dict[str, Any], plans: list[ProfilePlan]
) -> dict[str, Any]:
    """The plan file: `serving` (what the deploy merges) and `plan` (what it was chosen from:
    the inputs, the choice, and every profile's best speculative and plain variant)."""

    def figures(v: Variant) -> dict[str, Any]:
        return {
            "profile": v.profile,
            "k": v.k,
            "max_num_seqs": v.max_num_seqs,
            "tpot_ms": round(v.tpot_ms, 2),
            "output_tokens_per_s_per_replica": round(v.tokens_per_s_per_replica, 1),
            "min_speedup_over_plain": round(v.min_speedup, 3),
            "replicas_per_node": v.replicas_per_node,
            "replicas_at_peak": v.replicas_at_peak,
            "nodes_at_peak": v.nodes_at_peak,
            "cost_per_1m_output_tokens_usd": round(v.cost_per_1m_output_tokens_usd, 4),
            "idle_cost_per_hour_usd": round(v.idle_cost_per_hour_usd, 2),
        }

    return {
        "kind": PLAN_KIND,
        "serving": {
            "profile": choice.profile,
            "overrides": list(choice.overrides),
            "min_replicas": meta["min_replicas"],
            "max_replicas": choice.replicas_at_peak,
            "streams_per_replica": choice.streams_per_replica,
        },
        "plan": {
            **meta,
            "chosen": figures(choice),
            "compared": [
                {"variant": label, **figures(v)}
                for p in plans
                for label, v in (("speculative", p.speculative), ("plain", p.plain))
                if v is not None
            ],
        },
    }


def format_plans(plans: list[ProfilePlan], meta: dict[str, Any]) -> str:
    lines = [
        f"TPOT p50 <= {meta['tpot_target_ms']:g} ms, {meta['peak_streams']} streams at peak,"
        f" min_replicas {meta['min_replicas']}, acceptance a={meta['acceptance_rate']:.3f}"
        f" ({meta['acceptance_source']}); cost = nodes x price / (replicas x tokens/s)",
        f"{'profile':<22} {'variant':<8} {'k':>3} {'seqs':>4} {'TPOT ms':>7} {'tok/s':>7}"
        f" {'min spd':>7} {'per node':>8} {'replicas':>8} {'nodes':>5} {'$/1M out':>9}"
        f" {'idle $/h':>8}",
    ]
    for plan in plans:
        for label, v in (("spec", plan.speculative), ("plain", plan.plain)):
            if v is None:
                why = "none meets the target"
                if label == "spec" and plan.plain is not None and not _has_speculation(plan):
                    why = "the profile has no speculation"
                lines.append(f"{plan.profile:<22} {label:<8} {why}")
                continue
            mark = " <- plan" if plan.choice is v else ""
            lines.append(
                f"{plan.profile:<22} {label:<8} {v.k:>3} {v.max_num_seqs:>4} {v.tpot_ms:>7.2f}"
                f" {v.tokens_per_s_per_replica:>7.1f} {v.min_speedup:>6.2f}x"
                f" {v.replicas_per_node:>8} {v.replicas_at_peak:>8} {v.nodes_at_peak:>5}"
                f" {v.cost_per_1m_output_tokens_usd:>9.3f} {v.idle_cost_per_hour_usd:>8.2f}{mark}"
                + ("" if v.pays else " (slower than plain: not deployable)")
            )
        if plan.speculative and plan.plain:
            ratio = plan.plain.cost_per_1m_output_tokens_usd / (
                plan.speculative.cost_per_1m_output_tokens_usd
            )
            verdict = (
                f"speculation is {ratio:.2f}x cheaper per token than plain batching"
                if ratio > 1 and plan.speculative.pays
                else f"plain batching is {1 / ratio:.2f}x cheaper per token than speculation"
            )
            lines.append(f"{'':<22} {verdict}")
    best = _overall(plans)
    if best is not None:
        lines.append(
            f"plan: {best.profile} {' '.join(best.overrides)}; KEDA streams per replica"
            f" {best.streams_per_replica}; replicas {meta['min_replicas']}.."
            f"{best.replicas_at_peak} on up to {best.nodes_at_peak} node(s)"
            f" ({best.packing_reason})"
        )
    return "\n".join(lines)


def _has_speculation(plan: ProfilePlan) -> bool:
    return any("speculation.method=none" in o for o in (plan.plain.overrides if plan.plain else ()))


def _overall(plans: list[ProfilePlan]) -> Variant | None:
    """The cheapest choice over every profile (ties: the fewest overrides, then the order)."""
    choices = [p.choice for p in plans if p.choice is not None]
    return min(choices, key=rank) if choices else None


def main(args: argparse.Namespace) -> int:
    if args.out and (clash := output_clash(_outputs(args))) is not None:
        raise clash
    plans, meta = build_plans(args)
    if args.format == "json":
        print(json.dumps({"inputs": meta, "profiles": [_plan_json(p) for p in plans]}, indent=2))
    else:
        print(format_plans(plans, meta))
    best = _overall(plans)
    if best is None:
        if any("replicas at peak >" in why for p in plans for why in p.skipped):
            fix = (
                "variants that meet --tpot-ms need too many replicas; lower it or raise"
                " --max-num-seqs"
            )
            raise ConfigError([Problem("--peak-streams", args.peak_streams, fix)])
        raise ConfigError(
            [Problem("--tpot-ms", args.tpot_ms, "no variant of any profile meets it; raise it")]
        )
    if args.out:
        doc = plan_document(best, {**meta, "command": _command_line(args)}, plans)
        text = (
            "# A trnspec deployment plan: written by `python -m trnspec plan-deploy`; deploy it\n"
            "# with `cdk deploy -c serving.plan=THIS_FILE`. `serving` is merged into the\n"
            "# deployment's serving section; `plan` records what it was chosen from.\n"
            + yaml.safe_dump(doc, sort_keys=False)
        )
        write_file(Path(args.out), text)
        print(f"wrote {args.out}")
    return 0


def _outputs(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """--out, after the inputs it must not overwrite (--tune-report)."""
    inputs = [("--tune-report", Path(args.tune_report))] if args.tune_report else []
    return [*inputs, ("--out", Path(args.out))]


def _command_line(args: argparse.Namespace) -> str:
    """The command that reproduces the plan (the flags that decide it)."""
    parts = [f"--profile {p}" for p in args.profile]
    for flag in ("acceptance_rate", "acceptance_length", "acceptance_k", "tune_report"):
        if getattr(args, flag) is not None:
            parts.append(f"--{flag.replace('_', '-')} {getattr(args, flag)}")
    parts += [f"--tpot-ms {args.tpot_ms:g}", f"--peak-streams {args.peak_streams}"]
    parts.append(f"--min-replicas {args.min_replicas}")
    if args.max_num_seqs:
        parts.append(f"--max-num-seqs {args.max_num_seqs}")
    if args.price_per_hour is not None:
        parts.append(f"--price-per-hour {args.price_per_hour:g}")
    parts += [f"--input-len {args.input_len}", f"--output-len {args.output_len}"]
    return "python -m trnspec plan-deploy " + " ".join(parts)


def _plan_json(plan: ProfilePlan) -> dict[str, Any]:
    def one(v: Variant | None) -> dict[str, Any] | None:
        if v is None:
            return None
        return {
            "k": v.k,
            "max_num_seqs": v.max_num_seqs,
            "overrides": list(v.overrides),
            "tpot_ms": round(v.tpot_ms, 3),
            "output_tokens_per_s_per_replica": round(v.tokens_per_s_per_replica, 2),
            "min_speedup": round(v.min_speedup, 3),
            "replicas_per_node": v.replicas_per_node,
            "replicas_at_peak": v.replicas_at_peak,
            "nodes_at_peak": v.nodes_at_peak,
            "cost_per_1m_output_tokens_usd": round(v.cost_per_1m_output_tokens_usd, 4),
            "idle_cost_per_hour_usd": round(v.idle_cost_per_hour_usd, 2),
            "streams_per_replica": v.streams_per_replica,
        }

    return {
        "profile": plan.profile,
        "speculative": one(plan.speculative),
        "plain": one(plan.plain),
        "skipped": list(plan.skipped),
    }


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of `plan-deploy`."""
    p.add_argument(
        "--profile",
        action="append",
        required=True,
        type=text_arg(),
        help="a candidate profile (repeatable)",
    )
    acc = p.add_mutually_exclusive_group()
    acc.add_argument(
        "--acceptance-rate", type=float_arg(0, 1), help="per-token acceptance a in [0, 1]"
    )
    acc.add_argument(
        "--acceptance-length", type=float_arg(1, 1000), help="tokens per verification step"
    )
    acc.add_argument("--tune-report", type=path_arg(), help="a `tune` report JSON: its fit.alpha")
    p.add_argument(
        "--acceptance-k",
        type=int_arg(1, 1000),
        help="k of --acceptance-length (default: profile's)",
    )
    p.add_argument(
        "--tpot-ms",
        type=float_arg(0, 1e6, lo_open=True),
        required=True,
        help="TPOT p50 target, ms",
    )
    p.add_argument(
        "--peak-streams",
        type=int_arg(1),
        required=True,
        help="expected peak concurrent streams",
    )
    p.add_argument(
        "--min-replicas", type=int_arg(1, 10_000), default=1, help="replicas kept idle (default 1)"
    )
    p.add_argument(
        "--max-num-seqs", type=text_arg(), help="candidate batches, e.g. 1,2,4 (default 1..32)"
    )
    p.add_argument(
        "--price-per-hour",
        type=float_arg(0, 1e6, lo_open=True),
        help="USD per instance hour (default: table)",
    )
    p.add_argument(
        "--input-len", type=int_arg(1, 10_000_000), default=512, help="prompt tokens (default 512)"
    )
    p.add_argument(
        "--output-len", type=int_arg(1, 10_000_000), default=256, help="output tokens (default 256)"
    )
    p.add_argument(
        "--out", type=path_arg(), help="write the chosen deployment as a plan file (YAML)"
    )
    p.add_argument("--format", choices=("table", "json"), default="table")


if __name__ == "__main__":
    from trnspec.cli.main import main as cli_main

    sys.exit(cli_main(["plan-deploy", *sys.argv[1:]]))
