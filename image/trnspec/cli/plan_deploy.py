"""`python -m trnspec plan-deploy`: pick the deployment (k, max_num_seqs, replicas, nodes, KEDA
target) for a latency target and a peak load, say how sure the choice is, and write it as a file
`cdk deploy` runs unchanged.

    python -m trnspec plan-deploy --profile qwen3-4b-dflash --acceptance-length 2.1 \\
        --acceptance-k 15 --tpot-ms 30 --peak-streams 16 --out config/plans/default.yaml

`plan` (no suffix) stays the HBM sizing of one config; `plan-deploy` is the deployment choice
(`trnspec.plan.deploy_plan`). It prints, per profile, the cheapest speculative and the cheapest
plain variant that meet the TPOT target, each with the held-out error band of its regime, the
cost per 1M output tokens at peak (what the nodes bill), the idle cost per hour at min_replicas,
what the plan costs at zero load kept at min_replicas and scaled to zero (trnspec.plan.idle_cost),
every variant left out with its reason, and the verdict (trnspec.plan.decision): confident, with
the margin at the bands' edges, or "undecided at this confidence: measure", whose plan file is a
calibration plan (the plain twin serves, `serving.calibration` names the speculative arm).
`--out` writes it (trnspec.plan.document). Acceptance: --acceptance-rate, --acceptance-length
[--acceptance-k], --tune-report (the `fit.alpha` of a `make tune` report) or --acceptance-from
(served, from Prometheus). `--measured` refits on measured rows and never plans speculation
where one was measured slower than plain; `--config` plans for a deployment config's pools.
Bad input exits 2 naming the flag.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from trnspec.boundary.args import path_arg, text_arg
from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.files import read_json
from trnspec.boundary.numbers import finite_in, float_arg, int_arg
from trnspec.boundary.problems import ABSENT
from trnspec.boundary.write import output_clash, write_file
from trnspec.config.pod_contract import DEFAULT_MAX_STARTUP_MINUTES
from trnspec.config.scale_up import RAMP_STEPS, SCALE_UP_PERIOD_SECONDS, scale_up_floor
from trnspec.config.serving import ConfigError, Problem, ServingConfig, load_profile
from trnspec.perf.step_time import decode_context_tokens
from trnspec.plan.acceptance import acceptance_rate
from trnspec.plan.decision import Decision, Verdict, decide
from trnspec.plan.deploy_plan import (
    MAX_REPLICAS,
    Fleet,
    PlanInputs,
    ProfilePlan,
    Skip,
    Variant,
    Veto,
    candidate_ks,
    no_veto,
    plan_profile,
    price_for,
)
from trnspec.plan.document import PLAN_KIND, figures, plan_document
from trnspec.plan.fetch import get_json, http_url, read_rows_text
from trnspec.plan.idle_cost import IdleCost, idle_cost
from trnspec.plan.measured import MeasuredEvidence, measured_evidence
from trnspec.plan.pools import DeploymentConfig, Pool, max_nodes, read_deployment_config
from trnspec.plan.predict import DEFAULT_BATCHES, int_list
from trnspec.plan.ramp import Ramp, ScaleUpPolicy, deployed_policy, ramp
from trnspec.plan.request_fit import request_fit_problems
from trnspec.plan.served_acceptance import ServedAcceptance, served_acceptance, window

__all__ = ["DESCRIPTION", "HELP", "PLAN_KIND", "add_arguments", "build_plans", "main"]

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


def read_served(url: str, span: str) -> ServedAcceptance:
    """The acceptance served over `span`, from the Prometheus HTTP API at `url`."""
    base = http_url("--acceptance-from", url)
    return served_acceptance(
        base, span, lambda q: get_json("--acceptance-from", f"{base}/api/v1/query", {"query": q})
    )


@dataclass(frozen=True)
class Acceptance:
    rate: float
    source: str
    #: The flags that reproduce it (a served figure is recorded as its length and window).
    flags: tuple[str, ...]


def _alpha(args: argparse.Namespace, default_k: int, speculative: bool = True) -> Acceptance:
    """The acceptance asked for; none is needed when no candidate speculates."""
    given = (args.tune_report, args.acceptance_from, args.acceptance_rate, args.acceptance_length)
    if not speculative and all(g is None for g in given):
        return Acceptance(0.0, "no candidate speculates", ())
    if args.tune_report:
        alpha = tune_report_alpha(args.tune_report)
        return Acceptance(
            alpha, f"fit.alpha of {args.tune_report}", ("--tune-report", args.tune_report)
        )
    if args.acceptance_from:
        served = read_served(args.acceptance_from, args.window)
        flags = ("--acceptance-length", f"{served.acceptance_length:.4f}")
        return Acceptance(served.rate, served.describe(), (*flags, "--acceptance-k", str(served.k)))
    k = args.acceptance_k or default_k
    alpha = acceptance_rate(args.acceptance_rate, args.acceptance_length, k)
    if args.acceptance_rate is not None:
        rate = args.acceptance_rate
        return Acceptance(rate, "--acceptance-rate", ("--acceptance-rate", f"{rate:g}"))
    if alpha is not None:
        flags = ["--acceptance-length", f"{args.acceptance_length:g}"]
        if args.acceptance_k is not None:
            flags += ["--acceptance-k", str(args.acceptance_k)]
        return Acceptance(
            alpha, f"--acceptance-length {args.acceptance_length} at k={k}", tuple(flags)
        )
    raise ConfigError(
        [
            Problem(
                "--acceptance-rate",
                ABSENT,
                "give --acceptance-rate A, --acceptance-length TAU [--acceptance-k K],"
                " --tune-report FILE or --acceptance-from URL; acceptance depends on the workload",
            )
        ]
    )


def _plan_inputs(args: argparse.Namespace) -> PlanInputs:
    """The target, the load and the candidate batches of the flags."""
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


@dataclass(frozen=True)
class Planned:
    """Everything plan-deploy decided and the inputs it was decided from."""

    plans: list[ProfilePlan]
    meta: dict[str, Any]
    decision: Decision | None
    #: The verdict over every instance type (with --config: also types no pool has).
    unrestricted: Decision | None = None
    pools: tuple[Pool, ...] = ()
    #: The chosen plan's ramp with the scale-up policy it was timed with (None: no plan).
    ramp: Ramp | None = None
    #: What the plan costs at zero load, kept at min_replicas and scaled to zero.
    idle: IdleCost | None = None


def _instance_overrides(cfg: ServingConfig, pools: Sequence[Pool]) -> list[tuple[str, ...]]:
    """Per pool instance type, the overrides putting `cfg` on it; then `cfg`'s own type when no
    pool has it (priced, to say which pool to add). Without pools: `cfg` as it is."""
    if not pools:
        return [()]
    out: list[tuple[str, ...]] = []
    seen: set[tuple[str, int]] = set()
    for pool in pools:
        if (pool.instance_type, pool.lnc) in seen:
            continue
        seen.add((pool.instance_type, pool.lnc))
        sets = []
        if pool.instance_type != cfg.hardware.instance_type:
            sets.append(f"hardware.instance_type={pool.instance_type}")
        if pool.lnc != cfg.hardware.lnc:
            sets.append(f"hardware.lnc={pool.lnc}")
        out.append(tuple(sets))
    if cfg.hardware.instance_type not in {p.instance_type for p in pools}:
        out.append(())
    return out


def _evidence(args: argparse.Namespace) -> MeasuredEvidence | None:
    if not args.measured:
        return None
    return measured_evidence(
        "--measured", args.measured, read_rows_text("--measured", args.measured)
    )


def build_plans(args: argparse.Namespace) -> Planned:
    """Every profile's plan, the verdict and the inputs they were chosen from."""
    if args.overrides and not args.config:
        raise ConfigError([Problem("--set", args.overrides[0], "--set applies to --config FILE")])
    cfgs = [load_profile(name) for name in args.profile]
    too_long = [p for c in cfgs for p in request_fit_problems(args.input_len, args.output_len, c)]
    if too_long:
        raise ConfigError(too_long)
    speculative = [c for c in cfgs if c.speculation.method != "none"]
    acceptance = _alpha(
        args, (speculative or cfgs)[0].speculation.num_speculative_tokens, bool(speculative)
    )
    inputs = _plan_inputs(args)
    evidence = _evidence(args)
    veto: Veto = evidence.veto if evidence is not None else no_veto
    cal = evidence.calibration if evidence is not None else None
    deployment = read_deployment_config(args.config, args.overrides) if args.config else None
    pools = deployment.pools if deployment is not None else ()
    fleet = Fleet(max_nodes(pools) if pools else None)
    plans = []
    for cfg in cfgs:
        for sets in _instance_overrides(cfg, pools):
            itype = next(
                (s.split("=", 1)[1] for s in sets if s.startswith("hardware.instance_type=")),
                cfg.hardware.instance_type,
            )
            plans.append(
                plan_profile(
                    cfg,
                    acceptance.rate,
                    candidate_ks(cfg),
                    price_for(itype, args.price_per_hour),
                    inputs,
                    cal=cal,
                    base_overrides=sets,
                    veto=veto,
                    fleet=fleet,
                )
            )
    usable = [p for p in plans if p.in_pools is not False]
    decision = decide(usable)
    unrestricted = decide(plans) if len(usable) < len(plans) else None
    ramp_of, idle = _ramp_and_idle(args, decision, deployment)
    meta: dict[str, Any] = {
        "acceptance_rate": round(acceptance.rate, 6),
        "acceptance_source": acceptance.source,
        "tpot_target_ms": args.tpot_ms,
        "peak_streams": args.peak_streams,
        "min_replicas": args.min_replicas,
        "input_len": args.input_len,
        "output_len": args.output_len,
        "candidates": list(args.profile),
    }
    if evidence is not None:
        meta["measured"] = {
            "source": evidence.source,
            "rows": len(evidence.rows),
            "slower_than_plain": [s.describe() for s in evidence.slower],
        }
    if deployment is not None:
        meta["pools"] = [
            {"name": p.name, "instance_type": p.instance_type, "max_size": p.max_size}
            for p in pools
        ]
        meta["scale_to_zero"] = deployment.scale_to_zero
    meta["command"] = _command_line(args, acceptance)
    return Planned(plans, meta, decision, unrestricted, pools, ramp_of, idle)


def _ramp_and_idle(
    args: argparse.Namespace, decision: Decision | None, deployment: DeploymentConfig | None
) -> tuple[Ramp | None, IdleCost | None]:
    """The chosen plan's ramp (with the policy it was timed with) and its idle cost (both None
    without a plan)."""
    if decision is None:
        return None, None
    v = decision.serving
    arm = decision.speculative if decision.calibrate else None
    # the plan file keeps the config's serving.scale_to_zero: the deployed autoscaler rests at
    # 0 replicas with it, else at --min-replicas
    scales_to_zero = deployment.scale_to_zero if deployment is not None else None
    floor = scale_up_floor(args.min_replicas, scales_to_zero is True)
    ramp_of = ramp(
        floor,
        v.replicas_at_peak,
        v.max_num_seqs,
        args.peak_streams,
        v.tpot_ms,
        args.output_len,
        _policy(args, floor, v.replicas_at_peak),
        args.ttft_ms,
    )
    startup = (
        deployment.max_startup_minutes if deployment is not None else DEFAULT_MAX_STARTUP_MINUTES
    )
    return ramp_of, idle_cost(v, arm, args.min_replicas, scales_to_zero, startup)


def _policy(args: argparse.Namespace, floor: int, peak_replicas: int) -> ScaleUpPolicy:
    """The policy the plan's ScaledObject renders (trnspec.config.scale_up), with what
    --scale-up-pods / --scale-up-period-s give instead, and the pod start when known."""
    start = args.pod_start_minutes * 60 if args.pod_start_minutes is not None else None
    deployed = deployed_policy(floor, peak_replicas, start)
    return ScaleUpPolicy(
        args.scale_up_pods if args.scale_up_pods is not None else deployed.pods,
        args.scale_up_period_s if args.scale_up_period_s is not None else deployed.period_s,
        start,
    )


# ------------------------------------------------------------------------------------ printing


def _label(plan: ProfilePlan, with_type: bool) -> str:
    """The profile, with the instance type it was planned on when pools were given (on a line
    of its own then, so the table keeps its columns)."""
    return plan.profile if not with_type else ""


def _ranges(values: Sequence[int]) -> str:
    vs = sorted(set(values))
    out, start = [], vs[0]
    for a, b in zip(vs, [*vs[1:], None], strict=True):
        if b != a + 1:
            out.append(f"{start}" if start == a else f"{start}-{a}")
            start = b if b is not None else a
    return ",".join(out)


def skip_lines(skipped: Sequence[Skip]) -> list[str]:
    """Skips grouped by reason, then by the batches left out (the windows sharing them on one
    line), with the range of the failing figures."""
    groups: dict[tuple[str, tuple[int, ...]], list[Skip]] = {}
    by_k: dict[tuple[str, int], list[int]] = {}
    for s in skipped:
        by_k.setdefault((s.reason, s.k), []).append(s.batch)
    for s in skipped:
        key = (s.reason, tuple(sorted(by_k[(s.reason, s.k)])))
        groups.setdefault(key, []).append(s)
    lines = []
    for (reason, batches), group in groups.items():
        figures = [s.figure for s in group if s.figure is not None]
        shown = ""
        if figures:
            lo, hi = min(figures), max(figures)
            shown = f": {lo:g}" if lo == hi else f": {lo:g}-{hi:g}"
        lines.append(f"k={_ranges([s.k for s in group])} b={_ranges(batches)}: {reason}{shown}")
    return lines


def _row(plan: ProfilePlan, label: str, kind: str, v: Variant, chosen: Variant | None) -> str:
    mark = " <- plan" if chosen is v else ""
    return (
        f"{label:<22} {kind:<6} {v.k:>3} {v.max_num_seqs:>4} {v.tpot_ms:>7.2f}"
        f" {v.tokens_per_s_per_replica:>7.1f} {v.min_speedup:>6.2f}x"
        f" {v.replicas_per_node:>8} {v.replicas_at_peak:>8} {v.nodes_at_peak:>5}"
        f" {v.cost_per_1m_output_tokens_usd:>9.3f} {v.idle_cost_per_hour_usd:>8.2f}"
        f" {(v.band_text if v.error is not None else 'none'):>8}{mark}"
        + ("" if v.pays else " (predicted slower than plain at some batch)")
    )


def _profile_lines(plan: ProfilePlan, with_type: bool, chosen: Variant | None) -> list[str]:
    label = _label(plan, with_type)
    lines = [f"{plan.profile} on {plan.instance_type}:"] if with_type else []
    for kind, v in (("spec", plan.speculative), ("plain", plan.plain)):
        if v is not None:
            lines.append(_row(plan, label, kind, v, chosen))
        elif kind == "spec" and not plan.has_speculation:
            lines.append(f"{label:<22} {kind:<6} the profile has no speculation")
        else:
            lines.append(f"{label:<22} {kind:<6} none kept: every variant left out (below)")
    if plan.in_pools is False:
        lines.append(f"{'':<22} no pool of the config has {plan.instance_type}: priced to compare")
    if plan.speculative and plan.plain:
        s, p = plan.speculative, plan.plain
        ratio = p.cost_per_1m_output_tokens_usd / s.cost_per_1m_output_tokens_usd
        verdict = (
            f"speculation is {ratio:.2f}x cheaper per token than plain batching"
            if ratio > 1 and s.pays
            else f"plain batching is {1 / ratio:.2f}x cheaper per token than speculation"
        )
        bands = f"speculation {s.band_text}, plain {p.band_text}"
        lines.append(f"{'':<22} {verdict} (held-out bands: {bands})")
    lines += [f"{'':<22} left out {line}" for line in skip_lines(plan.skipped)]
    return lines


def decision_lines(decision: Decision) -> list[str]:
    v = decision.serving
    lines = []
    if decision.verdict is Verdict.UNDECIDED:
        spec = decision.speculative
        assert spec is not None
        lines.append(f"verdict: {decision.reason}")
        lines.append(
            f"plan: a calibration: {v.profile} {' '.join(v.overrides)} serves (plain), beside"
            f" {spec.profile} {' '.join(spec.overrides)} (speculative) measured against it;"
            " deploy, then plan again with --measured"
        )
    else:
        margin = (
            f"; margin {decision.margin:.2f}x at the edges of the bands"
            if decision.margin is not None
            else ""
        )
        lines.append(f"verdict: {decision.verdict.value} ({decision.reason}{margin})")
    lines.append(
        f"plan: {v.profile} {' '.join(v.overrides)}; KEDA streams per replica"
        f" {v.streams_per_replica}; replicas up to {v.replicas_at_peak} on up to"
        f" {v.nodes_at_peak} node(s) of {v.instance_type} ({v.packing_reason})"
    )
    return lines


def _pool_advice(planned: Planned) -> list[str]:
    best, here = planned.unrestricted, planned.decision
    if best is None or best.serving.instance_type in max_nodes(planned.pools):
        return []
    v = best.serving
    pool_line = (
        f"add a pool: trn2_pools: [..., {{name: {v.instance_type.replace('.', '-')},"
        f" instance_type: {v.instance_type}, max_size: {v.nodes_at_peak}}}]"
    )
    cheaper = (
        f" against ${here.serving.cost_per_1m_output_tokens_usd:.3f} on the config's pools"
        if here is not None
        else " (nothing the config's pools can run meets the target)"
    )
    return [
        f"the cheapest plan needs {v.instance_type}, which no pool of the config has:"
        f" {v.profile} {' '.join(v.overrides)} at ${v.cost_per_1m_output_tokens_usd:.3f} per 1M"
        f" output tokens{cheaper}, {v.nodes_at_peak} node(s) at ${v.price_per_hour_usd:g}/h;"
        f" {pool_line}"
    ]


def format_plans(planned: Planned) -> str:
    meta = planned.meta
    with_type = bool(planned.pools)
    chosen = planned.decision.serving if planned.decision is not None else None
    lines = [
        f"TPOT p50 <= {meta['tpot_target_ms']:g} ms, {meta['peak_streams']} streams at peak,"
        f" min_replicas {meta['min_replicas']}, acceptance a={meta['acceptance_rate']:.3f}"
        f" ({meta['acceptance_source']}); cost = nodes x price / (replicas x tokens/s);"
        " band = held-out error of the row's regime",
        f"{'profile':<22} {'kind':<6} {'k':>3} {'seqs':>4} {'TPOT ms':>7} {'tok/s':>7}"
        f" {'min spd':>7} {'per node':>8} {'replicas':>8} {'nodes':>5} {'$/1M out':>9}"
        f" {'idle $/h':>8} {'band':>8}",
    ]
    for plan in planned.plans:
        lines += _profile_lines(plan, with_type, chosen)
    if "measured" in meta:
        m = meta["measured"]
        lines.append(f"measured: {m['rows']} rows from {m['source']} (refitted with them)")
        lines += [f"measured: {s}" for s in m["slower_than_plain"]]
    if planned.decision is not None:
        lines += decision_lines(planned.decision)
    lines += _pool_advice(planned)
    if planned.ramp is not None:
        lines += planned.ramp.describe()
    if planned.idle is not None:
        lines += planned.idle.lines()
    return "\n".join(lines)


def _nothing_fits(planned: Planned, args: argparse.Namespace) -> ConfigError:
    reasons = {s.reason for p in planned.plans for s in p.skipped}
    if any("cap of" in r for r in reasons):
        return ConfigError(
            [
                Problem(
                    "--peak-streams",
                    args.peak_streams,
                    f"every variant within the TPOT target needs more than {MAX_REPLICAS}"
                    " replicas at peak; plan for fewer streams per deployment or allow larger"
                    " batches (--max-num-seqs)",
                )
            ]
        )
    if any("pools allow" in r for r in reasons):
        return ConfigError(
            [Problem("--config", args.config, "no variant fits the pools' max_size; raise it")]
        )
    return ConfigError(
        [Problem("--tpot-ms", args.tpot_ms, "no variant of any profile meets it; raise it")]
    )


def main(args: argparse.Namespace) -> int:
    if args.out and (clash := output_clash(_outputs(args))) is not None:
        raise clash
    planned = build_plans(args)
    if args.format == "json":
        doc = {
            "inputs": planned.meta,
            "profiles": [_plan_json(p) for p in planned.plans],
            "decision": _decision_json(planned.decision),
            "ramp": _ramp_lines(planned),
            "idle_cost": planned.idle.record() if planned.idle is not None else None,
        }
        print(json.dumps(doc, indent=2))
    else:
        print(format_plans(planned))
    if planned.decision is None:
        raise _nothing_fits(planned, args)
    if args.out:
        extra = {}
        if (ramp_lines := _ramp_lines(planned)) is not None:
            extra["ramp"] = ramp_lines
        if planned.idle is not None:
            extra["idle_cost"] = planned.idle.record()
        advice = _pool_advice(planned)
        if advice:
            extra["pool_to_add"] = advice[0]
        doc = plan_document(planned.decision, planned.meta, planned.plans, extra)
        text = (
            "# A trnspec deployment plan: written by `python -m trnspec plan-deploy`; deploy it\n"
            "# with `cdk deploy -c serving.plan=THIS_FILE`. `serving` is merged into the\n"
            "# deployment's serving section; `plan` records what it was chosen from, and\n"
            "# `plan.command` regenerates this file.\n" + yaml.safe_dump(doc, sort_keys=False)
        )
        write_file(Path(args.out), text)
        # With --format json, stdout holds the JSON document alone.
        print(f"wrote {args.out}", file=sys.stderr if args.format == "json" else sys.stdout)
    return 0


def _ramp_lines(planned: Planned) -> list[str] | None:
    if planned.ramp is None:
        return None
    return planned.ramp.describe()


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


def _command_line(args: argparse.Namespace, acceptance: Acceptance) -> str:
    """The command that reproduces the plan (the flags that decide it)."""
    parts = [f"--profile {p}" for p in args.profile]
    if acceptance.flags:
        parts.append(" ".join(acceptance.flags))
    parts += [f"--tpot-ms {args.tpot_ms:g}", f"--peak-streams {args.peak_streams}"]
    parts.append(f"--min-replicas {args.min_replicas}")
    if args.max_num_seqs:
        parts.append(f"--max-num-seqs {args.max_num_seqs}")
    if args.price_per_hour is not None:
        parts.append(f"--price-per-hour {args.price_per_hour:g}")
    parts += [f"--input-len {args.input_len}", f"--output-len {args.output_len}"]
    if args.measured:
        parts.append(f"--measured {args.measured}")
    if args.config:
        parts.append(f"--config {args.config}")
        parts += [f"--set {s}" for s in args.overrides]
    if args.ttft_ms is not None:
        parts.append(f"--ttft-ms {args.ttft_ms:g}")
    if args.scale_up_pods is not None:
        parts.append(f"--scale-up-pods {args.scale_up_pods}")
    if args.scale_up_period_s is not None:
        parts.append(f"--scale-up-period-s {args.scale_up_period_s}")
    if args.pod_start_minutes is not None:
        parts.append(f"--pod-start-minutes {args.pod_start_minutes:g}")
    return "python -m trnspec plan-deploy " + " ".join(parts)


def _variant_json(v: Variant | None) -> dict[str, Any] | None:
    """A variant as the plan file records it (trnspec.plan.document.figures: the same keys and
    rounding), with the instance type and the streams per replica its autoscaler targets."""
    if v is None:
        return None
    return {
        **figures(v),
        "instance_type": v.instance_type,
        "streams_per_replica": v.streams_per_replica,
    }


def _plan_json(plan: ProfilePlan) -> dict[str, Any]:
    return {
        "profile": plan.profile,
        "instance_type": plan.instance_type,
        "in_pools": plan.in_pools,
        "speculative": _variant_json(plan.speculative),
        "plain": _variant_json(plan.plain),
        "skipped": [str(s) for s in plan.skipped],
    }


def _decision_json(decision: Decision | None) -> dict[str, Any] | None:
    if decision is None:
        return None
    return {
        "verdict": decision.verdict.value,
        "reason": decision.reason,
        "margin_at_band_edges": decision.margin,
        "serving": _variant_json(decision.serving),
        "speculative": _variant_json(decision.speculative),
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
        type=float_arg(0, 1e6, lo_open=True),
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
