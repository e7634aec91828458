"""The text `plan-deploy` prints of a PlanResult (trnspec.plan.plan_deploy): the inputs line, one
table row per profile's best speculative and plain variant with its band, the variants left out
grouped by reason, the measured rows, the verdict and the plan, the pool to add, the ramp and the
idle cost (the last three describe themselves). It formats what was decided and decides nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from trnspec.plan.decision import Decision
from trnspec.plan.deploy_plan import ProfilePlan, Skip, Variant
from trnspec.plan.plan_deploy import PlanResult

HEADER = (
    f"{'profile':<22} {'kind':<6} {'k':>3} {'seqs':>4} {'TPOT ms':>7} {'tok/s':>7}"
    f" {'min spd':>7} {'per node':>8} {'replicas':>8} {'nodes':>5} {'$/1M out':>9}"
    f" {'idle $/h':>8} {'band':>8}"
)


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


def _row(label: str, kind: str, v: Variant, chosen: Variant | None) -> str:
    mark = " <- plan" if chosen is v else ""
    return (
        f"{label:<22} {kind:<6} {v.k:>3} {v.max_num_seqs:>4} {v.tpot_ms:>7.2f}"
        f" {v.tokens_per_s_per_replica:>7.1f} {v.min_speedup:>6.2f}x"
        f" {v.replicas_per_node:>8} {v.replicas_at_peak:>8} {v.nodes_at_peak:>5}"
        f" {v.cost_per_1m_output_tokens_usd:>9.3f} {v.idle_cost_per_hour_usd:>8.2f}"
        f" {v.band_text:>8}{mark}"
        + ("" if v.pays else " (predicted slower than plain at some batch)")
    )


def _profile_lines(plan: ProfilePlan, with_type: bool, chosen: Variant | None) -> list[str]:
    # with pools, the profile and its instance type head the rows (the table keeps its columns)
    label = "" if with_type else plan.profile
    lines = [f"{plan.profile} on {plan.instance_type}:"] if with_type else []
    for kind, v in (("spec", plan.speculative), ("plain", plan.plain)):
        if v is not None:
            lines.append(_row(label, kind, v, chosen))
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
    """The verdict with its reason and margin (or the calibration an undecided plan deploys),
    then the plan."""
    v = decision.serving
    lines = []
    if decision.calibrate:  # undecided: the plain twin serves beside the speculative arm
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


def format_plans(result: PlanResult) -> str:
    request = result.request
    with_type = bool(result.pools)
    chosen = result.decision.serving if result.decision is not None else None
    lines = [
        f"TPOT p50 <= {request.tpot_ms:g} ms, {request.peak_streams} streams at peak,"
        f" min_replicas {request.min_replicas}, acceptance a={result.acceptance_rate:.3f}"
        f" ({request.acceptance.source}); cost = nodes x price / (replicas x tokens/s);"
        " band = held-out error from sources the fit never saw (unknown: measure)",
        HEADER,
    ]
    for plan in result.plans:
        lines += _profile_lines(plan, with_type, chosen)
    if (m := request.measured) is not None:
        lines.append(f"measured: {len(m.rows)} rows from {m.source} (refitted with them)")
        lines += [f"measured: {s.describe()}" for s in m.slower]
    if result.decision is not None:
        lines += decision_lines(result.decision)
    if result.pool_to_add is not None:
        lines.append(result.pool_to_add.describe())
    if result.ramp is not None:
        lines += result.ramp.describe()
    if result.idle is not None:
        lines += result.idle.lines()
    return "\n".join(lines)
