"""The plan file `plan-deploy --out` writes (kind: trnspec-deployment-plan).

`serving:` is what the deployment merges into its serving section (infra/settings/plan_file.py);
`plan:` records what it was chosen from: the inputs, the verdict with its reason and margin,
the chosen variant and every profile's best speculative and plain variant, each figure with the
held-out error band of its regime. An undecided plan is a calibration plan: `serving` is the
plain twin, and `serving.calibration` names the speculative arm and the concurrency levels the
calibration Job measures both at (1 up to the arms' max_num_seqs).

`plan_file_text` is the file of a PlanResult (trnspec.plan.plan_deploy), `json_document` the
document `plan-deploy --format json` prints; both record the inputs the same way
(`inputs_record`) with the command that regenerates the plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import yaml

from trnspec.plan.decision import Decision
from trnspec.plan.deploy_plan import ProfilePlan, Variant
from trnspec.plan.deployment_schema import PLAN_KIND

if TYPE_CHECKING:  # plan_deploy imports idle_cost, which imports this module's constants
    from trnspec.plan.plan_deploy import PlanResult

#: Alternated (ABBA) rounds per concurrency level of a calibration.
CALIBRATION_ROUNDS = 4
#: The calibration Job's bound.
CALIBRATION_DEADLINE_MINUTES = 120
#: The longest output a calibration request asks for (the calibration settings' bound).
CALIBRATION_MAX_OUTPUT_LEN = 8192


def concurrency_levels(max_num_seqs: int) -> list[int]:
    """1, 2, 4, ... below max_num_seqs, then max_num_seqs itself."""
    levels, c = [], 1
    while c < max_num_seqs:
        levels.append(c)
        c *= 2
    return [*levels, max_num_seqs]


def figures(v: Variant) -> dict[str, Any]:
    """One variant's figures as the plan records them (rounded as printed)."""
    return {
        "profile": v.profile,
        "k": v.k,
        "max_num_seqs": v.max_num_seqs,
        "overrides": list(v.overrides),
        "tpot_ms": round(v.tpot_ms, 2),
        "output_tokens_per_s_per_replica": round(v.tokens_per_s_per_replica, 1),
        "min_speedup_over_plain": round(v.min_speedup, 3),
        "replicas_per_node": v.replicas_per_node,
        "replicas_at_peak": v.replicas_at_peak,
        "nodes_at_peak": v.nodes_at_peak,
        "cost_per_1m_output_tokens_usd": round(v.cost_per_1m_output_tokens_usd, 4),
        "idle_cost_per_hour_usd": round(v.idle_cost_per_hour_usd, 2),
        "error_band": round(v.error, 3) if v.error is not None else None,
        "error_band_note": v.band_note,
    }


def calibration_section(decision: Decision, output_len: int) -> dict[str, Any] | None:
    """`serving.calibration` of an undecided plan (None when the plan is confident)."""
    spec, twin = decision.speculative, decision.serving
    if not decision.calibrate or spec is None:
        return None
    top = min(spec.max_num_seqs, twin.max_num_seqs)
    return {
        "speculative": {"profile": spec.profile, "overrides": list(spec.overrides)},
        "concurrency": concurrency_levels(top),
        "rounds": CALIBRATION_ROUNDS,
        "prompts_key": None,
        "output_len": min(output_len, CALIBRATION_MAX_OUTPUT_LEN),
        "deadline_minutes": CALIBRATION_DEADLINE_MINUTES,
    }


def decision_record(decision: Decision) -> dict[str, Any]:
    return {
        "verdict": decision.verdict.value,
        "reason": decision.reason,
        "plain_over_speculative_cost": (
            round(decision.ratio, 3) if decision.ratio is not None else None
        ),
        "margin_at_band_edges": round(decision.margin, 3) if decision.margin is not None else None,
    }


def plan_document(
    decision: Decision,
    meta: Mapping[str, Any],
    plans: Sequence[ProfilePlan],
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The plan file (see the module doc); `extra` adds records under `plan:` (the ramp, a pool
    to add)."""
    chosen = decision.serving
    serving: dict[str, Any] = {
        "profile": chosen.profile,
        "overrides": list(chosen.overrides),
        "min_replicas": meta["min_replicas"],
        "max_replicas": chosen.replicas_at_peak,
        "streams_per_replica": chosen.streams_per_replica,
    }
    calibration = calibration_section(decision, int(meta["output_len"]))
    if calibration is not None:
        serving["calibration"] = calibration
    return {
        "kind": PLAN_KIND,
        "serving": serving,
        "plan": {
            **meta,
            "decision": decision_record(decision),
            "chosen": figures(chosen),
            **({"speculative_arm": figures(decision.speculative)} if calibration else {}),
            **dict(extra or {}),
            "compared": [
                {"variant": label, **figures(v)}
                for p in plans
                for label, v in (("speculative", p.speculative), ("plain", p.plain))
                if v is not None
            ],
        },
    }


def inputs_record(result: PlanResult, command: str) -> dict[str, Any]:
    """What the plan was chosen from, as the plan file's `plan:` and the JSON's `inputs` hold
    it, with the command that regenerates it."""
    request = result.request
    record: dict[str, Any] = {
        "acceptance_rate": result.acceptance_rate,
        "acceptance_source": request.acceptance.source,
        "tpot_target_ms": request.tpot_ms,
        "peak_streams": request.peak_streams,
        "min_replicas": request.min_replicas,
        "input_len": request.input_len,
        "output_len": request.output_len,
        "candidates": [cfg.name for cfg in request.profile],
    }
    if (m := request.measured) is not None:
        record["measured"] = {
            "source": m.source,
            "rows": len(m.rows),
            "slower_than_plain": [s.describe() for s in m.slower],
        }
    if (deployment := request.deployment) is not None:
        record["pools"] = [
            {"name": p.name, "instance_type": p.instance_type, "max_size": p.max_size}
            for p in deployment.pools
        ]
        record["scale_to_zero"] = deployment.scale_to_zero
    record["command"] = command
    return record


#: The plan file's head: what it is and how it is deployed.
PLAN_FILE_HEAD = (
    "# A trnspec deployment plan: written by `python -m trnspec plan-deploy`; deploy it\n"
    "# with `cdk deploy -c serving.plan=THIS_FILE`. `serving` is merged into the\n"
    "# deployment's serving section; `plan` records what it was chosen from, and\n"
    "# `plan.command` regenerates this file.\n"
)


def plan_file_text(result: PlanResult, command: str) -> str:
    """The plan file of a decided PlanResult: its head, then the document as YAML."""
    assert result.decision is not None, "a plan file needs a decision"
    extra: dict[str, Any] = {}
    if result.ramp is not None:
        extra["ramp"] = result.ramp.describe()
    if result.idle is not None:
        extra["idle_cost"] = result.idle.record()
    if result.pool_to_add is not None:
        extra["pool_to_add"] = result.pool_to_add.describe()
    doc = plan_document(result.decision, inputs_record(result, command), result.plans, extra)
    return PLAN_FILE_HEAD + yaml.safe_dump(doc, sort_keys=False)


def _variant_json(v: Variant | None) -> dict[str, Any] | None:
    """A variant as the plan file records it (`figures`: the same keys and rounding), with the
    instance type and the streams per replica its autoscaler targets."""
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


def json_document(result: PlanResult, command: str) -> dict[str, Any]:
    """What `plan-deploy --format json` prints."""
    return {
        "inputs": inputs_record(result, command),
        "profiles": [_plan_json(p) for p in result.plans],
        "decision": _decision_json(result.decision),
        "ramp": result.ramp.describe() if result.ramp is not None else None,
        "idle_cost": result.idle.record() if result.idle is not None else None,
    }
