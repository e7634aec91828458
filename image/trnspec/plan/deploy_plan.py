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
and the cost per 1M output tokens is nodes x instance price / (replicas x tokens/s): partly filled
nodes are billed too. The idle cost is the nodes min_replicas occupy. The cheapest kept variant
wins; ties go to fewer nodes, then the smaller k and batch. Every variant left out is kept as a
Skip with its reason (a check, the node, the TPOT target, the replica cap, the pools' node bound, a
measured row slower than plain), and every kept variant carries the error band of its figures
from sources the fit never saw (trnspec.perf.error_bands.source_band_for; None: unknown, the plan
then measures). Pure apart from reading packaged data.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from trnspec.boundary.problems import ABSENT, Problem
from trnspec.checks.all_checks import validate
from trnspec.config.images import image_spec
from trnspec.config.serving import ConfigError, ServingConfig, apply_overrides
from trnspec.hardware.packing import placement_for
from trnspec.hardware.pricing import PriceError, cost_per_1m_output_tokens, resolve_price
from trnspec.perf.error_bands import source_band_for
from trnspec.perf.profile_model import ProfileModel, profile_model
from trnspec.perf.step_time import TokensPerStep
from trnspec.perf.trn2_fit import Calibration, trn2_calibration

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
class Skip:
    """One (k, batch) left out and why. `reason` is the same text for every variant left out
    for the same cause (so a table can group them); `figure` is the number that failed, if any
    (the TPOT in ms, the replicas or nodes at peak)."""

    k: int
    batch: int
    reason: str
    figure: float | None = None

    def __str__(self) -> str:
        shown = f" ({self.figure:g})" if self.figure is not None else ""
        return f"k={self.k} b={self.batch}: {self.reason}{shown}"


#: A veto from measured rows: (target name, stack group, batch) -> why speculation is refused
#: there (a measured speculative row slower than the measured plain row), else None.
Veto = Callable[[str, str, int], str | None]


def no_veto(target: str, group: str, batch: int) -> str | None:
    return None


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
    #: The band of its figures from unseen sources, as a fraction (0.19 = +/-19 %; None:
    #: unknown, too few held-out figures extrapolate as far), and the band in words.
    error: float | None = None
    band_note: str = "unknown: no band"
    instance_type: str = ""
    #: The target model's name (speculation and its plain twin serve the same one).
    target: str = ""

    @property
    def pays(self) -> bool:
        return self.min_speedup >= 1.0

    @property
    def streams_per_replica(self) -> int:
        """KEDA target of requests in flight per replica: the batch the variant was priced at,
        so the autoscaler keeps replicas_at_peak at peak and no replica runs a larger batch."""
        return self.max_num_seqs

    @property
    def band_text(self) -> str:
        return f"+/-{self.error:.0%}" if self.error is not None else "unknown"


@dataclass(frozen=True)
class ProfilePlan:
    """The best speculative and the best plain variant of one profile (None: nothing meets the
    target), and why variants were left out."""

    profile: str
    speculative: Variant | None
    plain: Variant | None
    skipped: tuple[Skip, ...]
    #: The instance type planned for, and whether the deployment's pools have it (None: no
    #: pools were given).
    instance_type: str = ""
    in_pools: bool | None = None
    has_speculation: bool = True

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


def _variant_config(
    cfg: ServingConfig, k: int, batch: int, base: Sequence[str]
) -> tuple[ServingConfig, list[str]]:
    overrides = [*base, f"max_num_seqs={batch}"]
    if k == 0:
        if cfg.speculation.method != "none":
            overrides.append("speculation.method=none")
    else:
        overrides.append(f"speculation.num_speculative_tokens={k}")
    return validate(apply_overrides(cfg, overrides)), overrides


def with_calibration(model: ProfileModel, cal: Calibration) -> ProfileModel:
    """The same profile priced with another calibration's constants (a refit on measured rows)."""
    return replace(
        model,
        efficiency=cal.efficiency[model.group],
        plain_efficiency=cal.efficiency[model.plain_group],
        deployment=replace(model.deployment, hardware=cal.hardware),
    )


@dataclass(frozen=True)
class Fleet:
    """Bounds the deployment's pools put on a plan: nodes of each instance type (None: no
    pools given, any instance type and node count)."""

    max_nodes: Mapping[str, int] | None = None

    def node_limit(self, instance_type: str) -> int | None:
        if self.max_nodes is None:
            return None
        return self.max_nodes.get(instance_type, 0)


@dataclass(frozen=True)
class _Planning:
    """What every (k, batch) of one profile is judged with."""

    cfg: ServingConfig
    alpha: float | TokensPerStep
    price_per_hour: float
    inputs: PlanInputs
    cal: Calibration
    base_overrides: tuple[str, ...]
    veto: Veto
    fleet: Fleet
    spec_model: ProfileModel
    plain_model: ProfileModel
    instance_type: str


def _first_veto(p: _Planning, k: int, batch: int) -> str | None:
    """Why measured rows refuse speculation at some batch 1..batch, or None."""
    if k == 0:
        return None
    m = p.spec_model
    return next(
        (v for b in range(1, batch + 1) if (v := p.veto(m.target.name, m.group, b)) is not None),
        None,
    )


def _judge(p: _Planning, k: int, batch: int) -> Variant | Skip:
    """The variant (k, batch) of the profile, or why it is left out (see the module doc)."""
    try:
        variant_cfg, overrides = _variant_config(p.cfg, k, batch, p.base_overrides)
    except ConfigError as err:
        problem = err.problems[0]  # k and b are the Skip's: the reason is the fix
        return Skip(k, batch, f"{problem.field}: {problem.fix}")
    placement = placement_for(variant_cfg)
    if placement is None or placement.packing.replicas < 1:
        why = placement.packing.reason if placement else "storage not sizable offline"
        return Skip(k, batch, f"does not fit a node ({why})")
    vetoed = _first_veto(p, k, batch)
    if vetoed is not None:
        return Skip(k, batch, vetoed)
    model = p.spec_model if k > 0 else p.plain_model
    loads = list(range(1, batch + 1))
    plain = p.plain_model.grid(p.alpha, [0], loads)
    points = p.spec_model.grid(p.alpha, [k], loads) if k > 0 else plain
    full = points[-1]
    tpot_ms = full.tpot_s * 1e3
    if tpot_ms > p.inputs.tpot_target_ms:
        reason = f"TPOT (ms) above the {p.inputs.tpot_target_ms:g} ms target"
        return Skip(k, batch, reason, round(tpot_ms, 2))
    min_speedup = min(
        q.output_tokens_per_s / r.output_tokens_per_s for q, r in zip(points, plain, strict=True)
    )
    per_node = placement.packing.replicas
    replicas = max(p.inputs.min_replicas, math.ceil(p.inputs.peak_streams / batch))
    if replicas > MAX_REPLICAS:
        reason = f"replicas at peak above the cap of {MAX_REPLICAS} (serving.max_replicas)"
        return Skip(k, batch, reason, replicas)
    nodes = math.ceil(replicas / per_node)
    limit = p.fleet.node_limit(p.instance_type)
    if limit is not None and limit > 0 and nodes > limit:
        reason = f"nodes at peak above the {limit} the config's {p.instance_type} pools allow"
        return Skip(k, batch, reason, nodes)
    tps = full.output_tokens_per_s
    # Every replica on every billed node serves: the fleet's throughput is replicas x one
    # replica's, and the bill is the nodes'.
    cost = cost_per_1m_output_tokens(p.price_per_hour * nodes, tps * replicas)
    assert cost is not None  # tps > 0 for every predicted point
    idle_nodes = math.ceil(p.inputs.min_replicas / per_node)
    band = source_band_for(
        p.cal,
        model.group_for(k),
        model.method,
        k,
        batch,
        tp=variant_cfg.tensor_parallel_size,
        context_tokens=p.inputs.context_tokens,
        target=model.target,
    )
    return Variant(
        profile=p.cfg.name,
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
        price_per_hour_usd=p.price_per_hour,
        cost_per_1m_output_tokens_usd=cost,
        idle_nodes=idle_nodes,
        idle_cost_per_hour_usd=idle_nodes * p.price_per_hour,
        error=band.max_abs_error,
        band_note=band.describe(),
        instance_type=p.instance_type,
        target=model.target.name,
    )


def plan_profile(
    cfg: ServingConfig,
    alpha: float | TokensPerStep,
    ks: Sequence[int],
    price_per_hour: float,
    inputs: PlanInputs,
    *,
    cal: Calibration | None = None,
    base_overrides: Sequence[str] = (),
    veto: Veto = no_veto,
    fleet: Fleet = Fleet(),
) -> ProfilePlan:
    """The cheapest speculative and plain variants of `cfg` at the target (see module doc);
    `base_overrides` apply to every variant (e.g. the instance type of a pool)."""
    cal = cal or trn2_calibration()
    cfg_in = apply_overrides(cfg, list(base_overrides)) if base_overrides else cfg
    speculative = cfg_in.speculation.method != "none"
    plain_cfg = apply_overrides(cfg_in, ["speculation.method=none"]) if speculative else cfg_in
    plain_model = with_calibration(profile_model(plain_cfg, inputs.context_tokens), cal)
    spec_model = (
        with_calibration(profile_model(cfg_in, inputs.context_tokens), cal)
        if speculative
        else plain_model
    )
    itype = cfg_in.hardware.instance_type
    planning = _Planning(
        cfg,
        alpha,
        price_per_hour,
        inputs,
        cal,
        tuple(base_overrides),
        veto,
        fleet,
        spec_model,
        plain_model,
        itype,
    )
    skipped: list[Skip] = []
    best: dict[bool, Variant] = {}
    windows = [0, *(k for k in ks if k > 0 and speculative)]
    for batch in inputs.batches:
        for k in windows:
            judged = _judge(planning, k, batch)
            if isinstance(judged, Skip):
                skipped.append(judged)
                continue
            cur = best.get(k > 0)
            if cur is None or rank(judged) < rank(cur):
                best[k > 0] = judged
    limit = fleet.node_limit(itype)
    return ProfilePlan(
        cfg.name,
        best.get(True),
        best.get(False),
        tuple(skipped),
        instance_type=itype,
        in_pools=None if limit is None else limit > 0,
        has_speculation=speculative,
    )


def candidate_ks(cfg: ServingConfig) -> range:
    """Windows 1 up to the image's maximum (or the profile's k, if larger)."""
    top = max(image_spec(cfg.image).max_speculative_tokens, cfg.speculation.num_speculative_tokens)
    return range(1, top + 1)


def price_for(instance_type: str, price_per_hour: float | None) -> float:
    """`price_per_hour`, else the table's; a ConfigError naming --price-per-hour without one."""
    try:
        price, _ = resolve_price(instance_type, price_per_hour)
    except PriceError as err:
        raise ConfigError(
            [Problem("--price-per-hour", ABSENT, f"{err.value}: {err.fix}")]
        ) from None
    return price


def plan_profiles(
    cfgs: Sequence[ServingConfig],
    alpha: float,
    price_per_hour: float | None,
    inputs: PlanInputs,
    *,
    cal: Calibration | None = None,
    veto: Veto = no_veto,
) -> list[ProfilePlan]:
    """Every candidate's plan at windows 1 up to its image's maximum, priced per instance hour
    (`price_per_hour`, else the price table; a ConfigError naming --price-per-hour without one)."""
    return [
        plan_profile(
            cfg,
            alpha,
            candidate_ks(cfg),
            price_for(cfg.hardware.instance_type, price_per_hour),
            inputs,
            cal=cal,
            veto=veto,
        )
        for cfg in cfgs
    ]
