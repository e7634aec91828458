"""The plan file `plan-deploy --out` writes (kind: trnspec-deployment-plan).

`serving:` is what the deployment merges into its serving section (infra/settings/plan_file.py);
`plan:` records what it was chosen from: the inputs, the verdict with its reason and margin,
the chosen variant and every profile's best speculative and plain variant, each figure with the
held-out error band of its regime. An undecided plan is a calibration plan: `serving` is the
plain twin, and `serving.calibration` names the speculative arm and the concurrency levels the
calibration Job measures both at (1 up to the arms' max_num_seqs).

`plan_file_text` is the file of a PlanResult (trnspec.plan.plan_deploy), `json_document` the
document `plan-deploy --format json` prints; both record the inputs the same way
(`InputsRecord`, typed, with the command that regenerates the plan).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

from trnspec.plan.decision import Decision
from trnspec.plan.deploy_plan import ProfilePlan, Variant
from trnspec.plan.deployment_schema import PLAN_KIND

if TYPE_CHECKING:  # plan_deploy imports idle_cost, which imports this module's constants
    from trnspec.plan.idle_cost import IdleCost
    from trnspec.plan.measured import MeasuredEvidence
    from trnspec.plan.plan_deploy import PlanResult, PoolToAdd
    from trnspec.plan.pools import DeploymentConfig
    from trnspec.plan.ramp import Ramp

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


@dataclass(frozen=True)
class MeasuredRecord:
    """The measured rows a plan was refitted with, as `plan.measured` records them."""

    source: str
    rows: int
    #: each veto of speculation measured slower than plain, described
    slower_than_plain: tuple[str, ...]

    @classmethod
    def of(cls, evidence: MeasuredEvidence) -> MeasuredRecord:
        return cls(
            evidence.source, len(evidence.rows), tuple(s.describe() for s in evidence.slower)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "rows": self.rows,
            "slower_than_plain": list(self.slower_than_plain),
        }


@dataclass(frozen=True)
class PoolRecord:
    """One pool of the deployment config, as `plan.pools` records it."""

    name: str
    instance_type: str
    max_size: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "instance_type": self.instance_type, "max_size": self.max_size}


@dataclass(frozen=True)
class DeploymentRecord:
    """What a plan read of a deployment config (--config): written as `plan.pools` and
    `plan.scale_to_zero`."""

    pools: tuple[PoolRecord, ...]
    scale_to_zero: bool

    @classmethod
    def of(cls, deployment: DeploymentConfig) -> DeploymentRecord:
        pools = tuple(PoolRecord(p.name, p.instance_type, p.max_size) for p in deployment.pools)
        return cls(pools, deployment.scale_to_zero)


@dataclass(frozen=True)
class InputsRecord:
    """What the plan was chosen from, as the plan file's `plan:` and the JSON's `inputs` hold
    it (each field is the key of the same name; `deployment` gives `pools` and
    `scale_to_zero`), with the command that regenerates it."""

    acceptance_rate: float
    acceptance_source: str
    tpot_target_ms: float
    peak_streams: int
    min_replicas: int
    input_len: int
    output_len: int
    candidates: tuple[str, ...]
    command: str
    measured: MeasuredRecord | None = None
    deployment: DeploymentRecord | None = None

    @classmethod
    def of(cls, result: PlanResult, command: str) -> InputsRecord:
        request = result.request
        m, deployment = request.measured, request.deployment
        return cls(
            acceptance_rate=result.acceptance_rate,
            acceptance_source=request.acceptance.source,
            tpot_target_ms=request.tpot_ms,
            peak_streams=request.peak_streams,
            min_replicas=request.min_replicas,
            input_len=request.input_len,
            output_len=request.output_len,
            candidates=tuple(cfg.name for cfg in request.profile),
            command=command,
            measured=MeasuredRecord.of(m) if m is not None else None,
            deployment=DeploymentRecord.of(deployment) if deployment is not None else None,
        )

    def to_json(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "acceptance_rate": self.acceptance_rate,
            "acceptance_source": self.acceptance_source,
            "tpot_target_ms": self.tpot_target_ms,
            "peak_streams": self.peak_streams,
            "min_replicas": self.min_replicas,
            "input_len": self.input_len,
            "output_len": self.output_len,
            "candidates": list(self.candidates),
        }
        if self.measured is not None:
            record["measured"] = self.measured.to_json()
        if (deployment := self.deployment) is not None:
            record["pools"] = [p.to_json() for p in deployment.pools]
            record["scale_to_zero"] = deployment.scale_to_zero
        record["command"] = self.command
        return record


@dataclass(frozen=True)
class PlanExtras:
    """The records a decided plan adds under `plan:` (each field is the key of the same name;
    None: not recorded)."""

    ramp: Ramp | None = None
    idle_cost: IdleCost | None = None
    pool_to_add: PoolToAdd | None = None

    @classmethod
    def of(cls, result: PlanResult) -> PlanExtras:
        return cls(result.ramp, result.idle, result.pool_to_add)

    def to_json(self) -> dict[str, Any]:
        record: dict[str, Any] = {}
        if self.ramp is not None:
            record["ramp"] = self.ramp.describe()
        if self.idle_cost is not None:
            record["idle_cost"] = self.idle_cost.record()
        if self.pool_to_add is not None:
            record["pool_to_add"] = self.pool_to_add.describe()
        return record


def plan_document(
    decision: Decision,
    inputs: InputsRecord,
    plans: Sequence[ProfilePlan],
    extras: PlanExtras = PlanExtras(),
) -> dict[str, Any]:
    """The plan file (see the module doc); `extras` adds records under `plan:` (the ramp, the
    idle cost, a pool to add)."""
    chosen = decision.serving
    serving: dict[str, Any] = {
        "profile": chosen.profile,
        "overrides": list(chosen.overrides),
        "min_replicas": inputs.min_replicas,
        "max_replicas": chosen.replicas_at_peak,
        "streams_per_replica": chosen.streams_per_replica,
    }
    calibration = calibration_section(decision, inputs.output_len)
    if calibration is not None:
        serving["calibration"] = calibration
    return {
        "kind": PLAN_KIND,
        "serving": serving,
        "plan": {
            **inputs.to_json(),
            "decision": decision_record(decision),
            "chosen": figures(chosen),
            **({"speculative_arm": figures(decision.speculative)} if calibration else {}),
            **extras.to_json(),
            "compared": [
                {"variant": label, **figures(v)}
                for p in plans
                for label, v in (("speculative", p.speculative), ("plain", p.plain))
                if v is not None
            ],
        },
    }


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
    inputs = InputsRecord.of(result, command)
    doc = plan_document(result.decision, inputs, result.plans, PlanExtras.of(result))
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
        "inputs": InputsRecord.of(result, command).to_json(),
        "profiles": [_plan_json(p) for p in result.plans],
        "decision": _decision_json(result.decision),
        "ramp": result.ramp.describe() if result.ramp is not None else None,
        "idle_cost": result.idle.record() if result.idle is not None else None,
    }
