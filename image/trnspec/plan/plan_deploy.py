"""`plan_deploy(request) -> PlanResult`: every candidate profile planned on every instance type
it may run on, the verdict (trnspec.plan.decision), the chosen plan's ramp (trnspec.plan.ramp)
and idle cost (trnspec.plan.idle_cost), and the pool to add when the cheapest plan needs an
instance type the config's pools lack. Pure apart from reading packaged data: the request holds
what was read from outside (trnspec.plan.plan_request); printing is trnspec.plan.plan_text and
trnspec.plan.document.

With a deployment config, each profile is planned once per (instance type, LNC) of its pools and
once more on its own instance type when no pool has it (priced, to say which pool to add); only
the plans the pools can run are decided on. Without one, each profile is planned as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trnspec.config.pod_contract import DEFAULT_MAX_STARTUP_MINUTES
from trnspec.config.scale_up import scale_up_floor
from trnspec.config.serving import ConfigError, Problem, ServingConfig
from trnspec.perf.step_time import decode_context_tokens
from trnspec.plan.decision import Decision, decide
from trnspec.plan.deploy_plan import (
    MAX_REPLICAS,
    Fleet,
    PlanInputs,
    ProfilePlan,
    Variant,
    Veto,
    candidate_ks,
    no_veto,
    plan_profile,
    price_for,
)
from trnspec.plan.idle_cost import IdleCost, idle_cost
from trnspec.plan.plan_request import PlanRequest
from trnspec.plan.pools import Pool, max_nodes
from trnspec.plan.ramp import Ramp, ScaleUpPolicy, deployed_policy, ramp
from trnspec.plan.request_fit import request_fit_problems


@dataclass(frozen=True)
class PoolToAdd:
    """The cheapest plan over every instance type needs one no pool of the config has."""

    #: The cheapest plan on any instance type (its variant names the type and the nodes).
    best: Variant
    #: The plan on the config's pools (None: nothing they can run meets the target).
    here: Variant | None

    def describe(self) -> str:
        """The pool the cheapest plan needs, as a trn2_pools entry to add."""
        v, here = self.best, self.here
        pool_line = (
            f"add a pool: trn2_pools: [..., {{name: {v.instance_type.replace('.', '-')},"
            f" instance_type: {v.instance_type}, max_size: {v.nodes_at_peak}}}]"
        )
        cheaper = (
            f" against ${here.cost_per_1m_output_tokens_usd:.3f} on the config's pools"
            if here is not None
            else " (nothing the config's pools can run meets the target)"
        )
        return (
            f"the cheapest plan needs {v.instance_type}, which no pool of the config has:"
            f" {v.profile} {' '.join(v.overrides)} at ${v.cost_per_1m_output_tokens_usd:.3f}"
            f" per 1M output tokens{cheaper}, {v.nodes_at_peak} node(s) at"
            f" ${v.price_per_hour_usd:g}/h; {pool_line}"
        )


@dataclass(frozen=True)
class PlanResult:
    """Everything plan-deploy decided and the request it was decided for."""

    request: PlanRequest
    plans: tuple[ProfilePlan, ...]
    #: The verdict over the plans the pools can run (None: no variant meets the target).
    decision: Decision | None
    #: The verdict over every instance type (with --config: also types no pool has).
    unrestricted: Decision | None = None
    #: The chosen plan's ramp with the scale-up policy it was timed with (None: no plan).
    ramp: Ramp | None = None
    #: What the plan costs at zero load, kept at min_replicas and scaled to zero.
    idle: IdleCost | None = None
    pool_to_add: PoolToAdd | None = None

    @property
    def pools(self) -> tuple[Pool, ...]:
        deployment = self.request.deployment
        return deployment.pools if deployment is not None else ()

    @property
    def acceptance_rate(self) -> float:
        """The acceptance rate as recorded (six decimals)."""
        return round(self.request.acceptance.rate, 6)


def instance_overrides(cfg: ServingConfig, pools: Sequence[Pool]) -> list[tuple[str, ...]]:
    """Per pool (instance type, LNC), the overrides putting `cfg` on it; then `cfg`'s own type
    when no pool has it (priced, to say which pool to add). Without pools: `cfg` as it is."""
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


def _instance_type(cfg: ServingConfig, sets: Sequence[str]) -> str:
    prefix = "hardware.instance_type="
    return next(
        (s[len(prefix) :] for s in sets if s.startswith(prefix)), cfg.hardware.instance_type
    )


def check_request_fit(cfgs: Sequence[ServingConfig], input_len: int, output_len: int) -> None:
    """ConfigError naming --input-len when prompt + output exceed a candidate's max_model_len."""
    too_long = [p for cfg in cfgs for p in request_fit_problems(input_len, output_len, cfg)]
    if too_long:
        raise ConfigError(too_long)


def plan_deploy(request: PlanRequest) -> PlanResult:
    """Plan every candidate, decide, and time the chosen plan's ramp and idle cost (see the
    module doc); ConfigError naming --input-len when a request does not fit a profile."""
    check_request_fit(request.profile, request.input_len, request.output_len)
    inputs = PlanInputs(
        tpot_target_ms=request.tpot_ms,
        peak_streams=request.peak_streams,
        min_replicas=request.min_replicas,
        batches=request.batches,
        context_tokens=decode_context_tokens(request.input_len, request.output_len),
    )
    evidence = request.measured
    veto: Veto = evidence.veto if evidence is not None else no_veto
    pools = request.deployment.pools if request.deployment is not None else ()
    fleet = Fleet(max_nodes(pools) if pools else None)
    plans = tuple(
        plan_profile(
            cfg,
            request.acceptance.rate,
            candidate_ks(cfg),
            price_for(_instance_type(cfg, sets), request.price_per_hour),
            inputs,
            cal=evidence.calibration if evidence is not None else None,
            base_overrides=sets,
            veto=veto,
            fleet=fleet,
        )
        for cfg in request.profile
        for sets in instance_overrides(cfg, pools)
    )
    usable = [p for p in plans if p.in_pools is not False]
    decision = decide(usable)
    unrestricted = decide(plans) if len(usable) < len(plans) else None
    if decision is None:
        return PlanResult(
            request, plans, None, unrestricted, pool_to_add=_pool_to_add(unrestricted, None, pools)
        )
    ramp_of, idle = _ramp_and_idle(request, decision)
    return PlanResult(
        request,
        plans,
        decision,
        unrestricted,
        ramp_of,
        idle,
        _pool_to_add(unrestricted, decision, pools),
    )


def _pool_to_add(
    unrestricted: Decision | None, decision: Decision | None, pools: Sequence[Pool]
) -> PoolToAdd | None:
    if unrestricted is None or unrestricted.serving.instance_type in max_nodes(pools):
        return None
    return PoolToAdd(unrestricted.serving, decision.serving if decision is not None else None)


def _ramp_and_idle(request: PlanRequest, decision: Decision) -> tuple[Ramp, IdleCost]:
    """The chosen plan's ramp (with the policy it was timed with) and its idle cost."""
    v = decision.serving
    arm = decision.speculative if decision.calibrate else None
    deployment = request.deployment
    # the plan file keeps the config's serving.scale_to_zero: the deployed autoscaler rests at
    # 0 replicas with it, else at --min-replicas
    scales_to_zero = deployment.scale_to_zero if deployment is not None else None
    floor = scale_up_floor(request.min_replicas, scales_to_zero is True)
    ramp_of = ramp(
        floor,
        v.replicas_at_peak,
        v.max_num_seqs,
        request.peak_streams,
        v.tpot_ms,
        request.output_len,
        scale_up_policy(request, floor, v.replicas_at_peak),
        request.ttft_ms,
    )
    startup = (
        deployment.max_startup_minutes if deployment is not None else DEFAULT_MAX_STARTUP_MINUTES
    )
    return ramp_of, idle_cost(v, arm, request.min_replicas, scales_to_zero, startup)


def scale_up_policy(request: PlanRequest, floor: int, peak_replicas: int) -> ScaleUpPolicy:
    """The policy the plan's ScaledObject renders (trnspec.config.scale_up), with what
    --scale-up-pods / --scale-up-period-s give instead, and the pod start when known."""
    minutes = request.pod_start_minutes
    start = minutes * 60 if minutes is not None else None
    deployed = deployed_policy(floor, peak_replicas, start)
    return ScaleUpPolicy(
        request.scale_up_pods if request.scale_up_pods is not None else deployed.pods,
        request.scale_up_period_s if request.scale_up_period_s is not None else deployed.period_s,
        start,
    )


def nothing_fits(result: PlanResult) -> ConfigError:
    """Why no variant of any profile was kept, naming the flag to change: the replica cap
    (--peak-streams), the pools' node bound (--config), else the TPOT target (--tpot-ms)."""
    request = result.request
    reasons = {s.reason for p in result.plans for s in p.skipped}
    if any("cap of" in r for r in reasons):
        return ConfigError(
            [
                Problem(
                    "--peak-streams",
                    request.peak_streams,
                    f"every variant within the TPOT target needs more than {MAX_REPLICAS}"
                    " replicas at peak; plan for fewer streams per deployment or allow larger"
                    " batches (--max-num-seqs)",
                )
            ]
        )
    if any("pools allow" in r for r in reasons):
        config = request.config.path if request.config is not None else None
        return ConfigError(
            [Problem("--config", config, "no variant fits the pools' max_size; raise it")]
        )
    return ConfigError(
        [Problem("--tpot-ms", request.tpot_ms, "no variant of any profile meets it; raise it")]
    )
