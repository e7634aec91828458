"""Choosing a deployment: k, max_num_seqs, replicas, nodes and the autoscaling target, priced as
AWS would bill it, and the same model without speculation beside it.

For each candidate profile and each max_num_seqs b (a compiled batch), every window k the profile
validates with (`trnspec.checks.all_checks`: a DFlash drafter allows only its block size - 1) is
predicted by the Trn2 model (`trnspec.perf.profile_model`). A variant is kept when:
- its TPOT at a full batch b is within the target (a replica never decodes more than b streams);
- for k > 0, it beats the plain server at every batch 1..b, so the deployment is never slower
  than the plain one at any load it sees (the batch is capped at b, and the autoscaler adds
  replicas instead of growing it). "Plain" is the server the plan would deploy without
  speculation (`speculation.method=none`), priced with its own stack overhead: a DFlash server
  schedules synchronously (`--no-async-scheduling`), a plain one does not.
Peak replicas are ceil(peak streams / b) (at least min_replicas), nodes are ceil(replicas /
replicas per node) with replicas per node from `trnspec.hardware.packing` (what the pods request),
and the
cost per 1M output tokens is nodes x instance price / (replicas x tokens/s): partly filled nodes
are billed too. The idle cost is the nodes min_replicas occupy. The cheapest kept variant wins;
ties go to fewer nodes, then the smaller k and batch. Pure apart from reading packaged data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from trnspec.checks.all_checks import validate
from trnspec.config.images import image_spec
from trnspec.config.serving import ConfigError, Problem, ServingConfig, apply_overrides
from trnspec.hardware.packing import placement_for
from trnspec.hardware.pricing import PriceError, cost_per_1m_output_tokens, resolve_price
from trnspec.perf.model import TokensPerStep
from trnspec.perf.profile_model import profile_model

#: KEDA's bound on replicas (serving.max_replicas).
MAX_REPLICAS = 64


@dataclass(frozen=True)
class PlanInputs:
    """What a plan is chosen for."""

    tpot_target_ms: float
    peak_streams: int
    min_replicas: int
    batches: tuple[int, ...]
    context_tokens: int


@dataclass(frozen=True)
class Variant:
    """One deployable choice and what it costs."""

    profile: str
    speculative: bool
    k: int
    max_num_seqs: int
    overrides: tuple[str, ...]
    tpot_ms: float
    tokens_per_s_per_replica: float
    #: Smallest speedup over plain decoding across batches 1..max_num_seqs (1.0 for plain).
    min_speedup: float
    replicas_per_node: int
    packing_reason: str
    replicas_at_peak: int
    nodes_at_peak: int
    price_per_hour_usd: float
    cost_per_1m_output_tokens_usd: float
    idle_nodes: int
    idle_cost_per_hour_usd: float

    @property
    def pays(self) -> bool:
        return self.min_speedup >= 1.0

    @property
    def streams_per_replica(self) -> int:
        """KEDA target of requests in flight per replica: the batch the variant was priced at,
        so the autoscaler keeps replicas_at_peak at peak and no replica runs a larger batch."""
        return self.max_num_seqs


@dataclass(frozen=True)
class ProfilePlan:
    """The best speculative and the best plain variant of one profile (None: nothing meets the
    target), and why variants were left out."""

    profile: str
    speculative: Variant | None
    plain: Variant | None
    skipped: tuple[str, ...]

    @property
    def choice(self) -> Variant | None:
        """The cheapest of the two; a speculative variant only where it pays at every batch."""
        options = [v for v in (self.speculative, self.plain) if v is not None and v.pays]
        return min(options, key=rank) if options else None


def rank(v: Variant) -> tuple[bool, float, int, int, int, int]:
    """Paying variants first, then cost, nodes, k, batch, and the fewest overrides."""
    return (
        v.min_speedup < 1.0,
        round(v.cost_per_1m_output_tokens_usd, 9),
        v.nodes_at_peak,
        v.k,
        v.max_num_seqs,
        len(v.overrides),
    )


def _variant_config(cfg: ServingConfig, k: int, batch: int) -> tuple[ServingConfig, list[str]]:
    overrides = [f"max_num_seqs={batch}"]
    if k == 0:
        if cfg.speculation.method != "none":
            overrides.append("speculation.method=none")
    else:
        overrides.append(f"speculation.num_speculative_tokens={k}")
    return validate(apply_overrides(cfg, overrides)), overrides


def plan_profile(
    cfg: ServingConfig,
    alpha: float | TokensPerStep,
    ks: Sequence[int],
    price_per_hour: float,
    inputs: PlanInputs,
) -> ProfilePlan:
    """The cheapest speculative and plain variants of `cfg` at the target (see module doc)."""
    speculative = cfg.speculation.method != "none"
    plain_cfg = apply_overrides(cfg, ["speculation.method=none"]) if speculative else cfg
    plain_model = profile_model(plain_cfg, inputs.context_tokens)
    spec_model = profile_model(cfg, inputs.context_tokens) if speculative else plain_model
    skipped: list[str] = []
    best: dict[bool, Variant] = {}
    windows = [0, *(k for k in ks if k > 0 and speculative)]
    for batch in inputs.batches:
        for k in windows:
            try:
                variant_cfg, overrides = _variant_config(cfg, k, batch)
            except ConfigError as err:
                skipped.append(f"k={k} b={batch}: {err.problems[0]}")
                continue
            placement = placement_for(variant_cfg)
            if placement is None or placement.packing.replicas < 1:
                why = placement.packing.reason if placement else "storage not sizable offline"
                skipped.append(f"k={k} b={batch}: does not fit a node ({why})")
                continue
            loads = list(range(1, batch + 1))
            plain = plain_model.grid(alpha, [0], loads)
            points = spec_model.grid(alpha, [k], loads) if k > 0 else plain
            full = points[-1]
            tpot_ms = full.tpot_s * 1e3
            if tpot_ms > inputs.tpot_target_ms:
                continue
            min_speedup = min(
                p.output_tokens_per_s / q.output_tokens_per_s
                for p, q in zip(points, plain, strict=True)
            )
            per_node = placement.packing.replicas
            replicas = max(inputs.min_replicas, math.ceil(inputs.peak_streams / batch))
            if replicas > MAX_REPLICAS:
                skipped.append(f"k={k} b={batch}: {replicas} replicas at peak > {MAX_REPLICAS}")
                continue
            nodes = math.ceil(replicas / per_node)
            tps = full.output_tokens_per_s
            cost = cost_per_1m_output_tokens(price_per_hour * nodes, tps * replicas)
            assert cost is not None  # tps > 0 for every predicted point
            idle_nodes = math.ceil(inputs.min_replicas / per_node)
            variant = Variant(
                profile=cfg.name,
                speculative=k > 0,
                k=k,
                max_num_seqs=batch,
                overrides=tuple(sorted(overrides)),
                tpot_ms=tpot_ms,
                tokens_per_s_per_replica=tps,
                min_speedup=min_speedup,
                replicas_per_node=per_node,
                packing_reason=placement.packing.reason,
                replicas_at_peak=replicas,
                nodes_at_peak=nodes,
                price_per_hour_usd=price_per_hour,
                cost_per_1m_output_tokens_usd=cost,
                idle_nodes=idle_nodes,
                idle_cost_per_hour_usd=idle_nodes * price_per_hour,
            )
            cur = best.get(k > 0)
            if cur is None or rank(variant) < rank(cur):
                best[k > 0] = variant
    return ProfilePlan(cfg.name, best.get(True), best.get(False), tuple(skipped))


def plan_profiles(
    cfgs: Sequence[ServingConfig],
    alpha: float,
    price_per_hour: float | None,
    inputs: PlanInputs,
) -> list[ProfilePlan]:
    """Every candidate's plan at windows 1 up to its image's maximum, priced per instance hour
    (`price_per_hour`, else the price table; a ConfigError naming --price-per-hour without one)."""
    plans = []
    for cfg in cfgs:
        try:
            price, _ = resolve_price(cfg.hardware.instance_type, price_per_hour)
        except PriceError as err:
            raise ConfigError([Problem("--price-per-hour", None, str(err))]) from None
        top = max(
            image_spec(cfg.image).max_speculative_tokens, cfg.speculation.num_speculative_tokens
        )
        plans.append(plan_profile(cfg, alpha, range(1, top + 1), price, inputs))
    return plans
