"""What `trnspec predict` prints: decode speed and cost per 1M output tokens of a profile on Trn2.

For every (batch, k): TPOT, output tokens/s of one replica, the speedup over k=0 at the same
batch and the cost per million output tokens of the whole instance (all replicas busy), then the
best k per batch and the batch from which speculation no longer pays. The numbers come from
`trnspec.perf.step_time` with constants fitted to published Trn2 figures (`trnspec.perf.trn2_fit`);
the document lists every constant used with its source. Each figure carries its band from sources
the fit never saw (`trnspec.perf.error_bands.source_band_for`) and how often bands of that kind
held; a figure without one is unknown and decides nothing. The flags are read by
trnspec.cli.predict into a PredictQuery; bad input is a ConfigError naming the flag.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from functools import cache
from typing import Any

from trnspec.boundary import json_io
from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.numbers import parse_int_list
from trnspec.boundary.problems import ABSENT
from trnspec.config.images import image_spec
from trnspec.config.serving import ConfigError, Problem, ServingConfig
from trnspec.hardware.packing import ReplicaPlacement, placement_for
from trnspec.hardware.pricing import PriceError, cost_per_1m_output_tokens, resolve_price
from trnspec.perf.error_bands import outside_data, source_band_for
from trnspec.perf.profile_model import ProfileModel, profile_model
from trnspec.perf.step_time import (
    ModelInputError,
    Prediction,
    best_k_per_batch,
    decode_context_tokens,
    speculation_stops_paying,
)
from trnspec.perf.trn2_fit import DATA_FILE, Calibration, trn2_calibration
from trnspec.perf.validation import ErrorBand
from trnspec.plan.acceptance import acceptance_rate
from trnspec.plan.batch_verdicts import BatchVerdict, verdicts_of
from trnspec.plan.request_fit import request_fit_problems

__all__ = [
    "DEFAULT_BATCHES",
    "PredictQuery",
    "PredictReport",
    "Row",
    "Sourced",
    "build",
    "int_list",
]

DEFAULT_BATCHES = (1, 2, 4, 8, 16, 32)
#: Efficiency constants each serving stack has its own of (trnspec.perf.fit); the rest are
#: shared by every stack.
PER_STACK = frozenset({"step_overhead_s", "draft_pass_overhead_s", "overlaps_host"})
#: Of those, the ones a k=0 row uses (no draft pass), listed again for the plain server's stack
#: where it differs from the profile's.
PLAIN_ROW = ("step_overhead_s", "overlaps_host")


@dataclass(frozen=True)
class PredictQuery:
    """What `predict` is asked, as the user gave it (trnspec.cli.predict reads it from the flags;
    the comma lists stay text so a problem names the flag and the text given)."""

    acceptance_rate: float | None = None
    acceptance_length: float | None = None
    #: The k the acceptance length was measured at (None: the profile's k).
    acceptance_k: int | None = None
    #: Batch sizes, e.g. "1,4,16" (None: DEFAULT_BATCHES).
    batch: str | None = None
    #: Windows, e.g. "0,3,7" (None: 0 up to the image's maximum).
    k: str | None = None
    #: USD per instance hour (None: the price table).
    price_per_hour: float | None = None
    input_len: int = 512
    output_len: int = 256


def int_list(flag: str, text: str, minimum: int) -> list[int]:
    """`1,4,16` as sorted distinct integers >= minimum (and bounded, as every count is:
    trnspec.boundary.numbers.parse_int_list); ConfigError naming the flag."""
    try:
        values = parse_int_list(flag, text, lo=minimum)
    except BoundaryError as exc:
        raise ConfigError([Problem(flag, text, exc.fix)]) from None
    return sorted(set(values))


@dataclass(frozen=True)
class Sourced:
    """One input of the prediction and where it came from."""

    value: Any
    source: str


@dataclass(frozen=True)
class Inputs:
    """Inputs of the prediction by name, in the order they were read (a name given again keeps
    its place and takes the later value)."""

    entries: tuple[tuple[str, Sourced], ...] = ()

    def add(self, name: str, value: object, source: str) -> Inputs:
        """These inputs and one more."""
        return Inputs((*self.entries, (name, Sourced(value, source))))

    def __add__(self, other: Inputs) -> Inputs:
        return Inputs((*self.entries, *other.entries))

    def by_name(self) -> dict[str, Sourced]:
        return dict(self.entries)


@dataclass(frozen=True)
class Row:
    """One (batch, k) of the grid as `predict` reports it (rounded as printed)."""

    batch: int
    k: int
    tpot_ms: float
    output_tokens_per_s: float
    speedup: float
    #: Of the whole instance with every replica busy; None when the price or packing is unknown.
    cost_per_1m_output_tokens_usd: float | None
    tokens_per_step: float
    step_ms: float
    draft_ms: float
    target_bound: str
    within_max_num_seqs: bool
    #: The band's half-width from sources the fit never saw (None: unknown, measure it).
    error_band: float | None
    error_band_note: str
    #: How often bands of this kind held figures of unseen sources: (inside, with a band); None
    #: where not measured (a refit with measured rows skips the nested folds).
    error_band_held: tuple[int, int] | None


@dataclass(frozen=True)
class PredictReport:
    """What `predict` prints: the rows, the verdicts and every input with its source."""

    profile: str
    rows: list[Row]
    best_k_per_batch: dict[int, int]
    speculation_stops_paying_at_batch: int | None
    #: per batch with a k > 0: speculation, plain or undecided at the edges of both bands
    batch_verdicts: list[BatchVerdict]
    #: Why no cost is shown (None when it is).
    cost_note: str | None
    inputs: dict[str, Sourced]
    outside_data: list[str]
    caveats: list[str]

    def to_json(self) -> str:
        """`predict --format json`: strict JSON, a figure that is not finite written as null."""
        return json_io.dumps(asdict(self))


def _acceptance(query: PredictQuery, cfg: ServingConfig) -> tuple[float, Inputs, list[Problem]]:
    """The acceptance rate asked for and its source as an input, or the problems."""
    k_ref = query.acceptance_k or cfg.speculation.num_speculative_tokens
    inputs = Inputs()
    try:
        alpha = acceptance_rate(query.acceptance_rate, query.acceptance_length, k_ref)
    except ConfigError as err:
        return 0.0, inputs, list(err.problems)
    if query.acceptance_rate is not None:
        inputs = inputs.add(
            "acceptance_rate", query.acceptance_rate, "--acceptance-rate (user supplied)"
        )
    elif alpha is not None:
        inputs = inputs.add(
            "acceptance_rate",
            round(alpha, 6),
            f"from --acceptance-length {query.acceptance_length} at k={k_ref}"
            " by (1 - a^(k+1)) / (1 - a) = tau (Leviathan et al., 2023)",
        )
    if alpha is not None or cfg.speculation.method == "none":
        return alpha or 0.0, inputs, []
    return (
        0.0,
        inputs,
        [
            Problem(
                "--acceptance-rate",
                ABSENT,
                "give --acceptance-rate A (per token) or --acceptance-length TAU (tokens per"
                " verification step, as published); acceptance depends on the workload",
            )
        ],
    )


@dataclass(frozen=True)
class Axes:
    """The windows and batches of the grid, and what is wrong with them."""

    ks: list[int]
    batches: list[int]
    problems: list[Problem]


@dataclass(frozen=True)
class Pricing:
    """Replicas per instance and the instance price, or why the cost cannot be given."""

    placement: ReplicaPlacement | None
    price: float | None
    #: Where the price came from, or why there is none.
    source: str
    #: Why no cost is shown (None when it is).
    problem: str | None

    @property
    def replicas(self) -> int | None:
        return self.placement.packing.replicas if self.placement is not None else None


def _axes(query: PredictQuery, cfg: ServingConfig, method: str) -> Axes:
    """The grid's windows (default 0 up to the image's maximum) and batches; ConfigError on a
    malformed list, a k > 0 asked of a profile without speculation listed as a problem."""
    ks = int_list("--k", query.k, 0) if query.k else None
    batches = int_list("--batch", query.batch, 1) if query.batch else list(DEFAULT_BATCHES)
    if ks is None:
        image_max = image_spec(cfg.image).max_speculative_tokens
        top = max(image_max, cfg.speculation.num_speculative_tokens)
        ks = list(range(0, top + 1)) if method != "none" else [0]
    problems = []
    if method == "none" and any(k > 0 for k in ks):
        problems.append(
            Problem(
                "--k",
                query.k,
                f"profile {cfg.name} has no speculation; give --k 0, or a speculative profile",
            )
        )
    return Axes(ks, batches, problems)


def _pricing(cfg: ServingConfig, price_per_hour: float | None) -> Pricing:
    """The deploy's replicas per instance (trnspec.hardware.packing) and the instance price."""
    placement = placement_for(cfg)
    try:
        price, price_source = resolve_price(cfg.hardware.instance_type, price_per_hour)
        problem = None
    except PriceError as err:
        price, price_source, problem = None, None, str(err)
    if placement is None:
        problem = (
            f"replicas per instance unknown: the staged storage of {cfg.target.name} cannot be "
            "sized offline (the deploy needs serving.weights_volume_gib)"
        )
        price = None
    elif placement.packing.replicas < 1:
        problem = f"a replica does not fit one {cfg.hardware.instance_type}: " + (
            placement.packing.reason
        )
        price = None
    return Pricing(placement, price, price_source or problem or "", problem)


def _model_inputs(model: ProfileModel, cal: Calibration) -> Inputs:
    """The shapes, the hardware's peaks and cores, the host vCPUs and every constant of the fitted
    efficiency the rows used (each field of Efficiency, so one added later is listed), with
    sources."""
    inputs = Inputs()
    cfg, target, draft, hw, eff = (
        model.cfg,
        model.target,
        model.draft,
        model.deployment.hardware,
        model.efficiency,
    )
    inputs = inputs.add("target", target.name, target.origin)
    if model.method != "none":
        inputs = inputs.add("method", model.method, f"speculation.method of {cfg.name}")
        if draft is not None:
            inputs = inputs.add("draft", draft.name, draft.origin)
    inputs = inputs.add("hardware", hw.name, hw.source)
    inputs = inputs.add("hbm_bytes_per_s_per_chip", hw.memory_bytes_per_s, hw.source)
    inputs = inputs.add("peak_flops_per_chip", hw.peak_flops, hw.source)
    inputs = inputs.add("link_bytes_per_s_per_chip", hw.link_bytes_per_s, hw.source)
    inputs = inputs.add("cores_per_chip", hw.cores_per_chip, hw.source)
    inputs = inputs.add(
        "vcpus_per_replica",
        model.deployment.vcpus_per_replica,
        f"the vCPUs of a {cfg.hardware.instance_type} over the replicas its cores hold"
        " (trnspec.perf.profile_model); the host share is paid per vCPU",
    )
    stack = f"{cal.source}; stack group {model.group!r} for image {cfg.image.value}"
    for f in fields(eff):
        source = stack if f.name in PER_STACK else cal.source
        inputs = inputs.add(f"efficiency.{f.name}", getattr(eff, f.name), source)
    if model.plain_group != model.group:
        for name in PLAIN_ROW:
            inputs = inputs.add(
                f"efficiency.plain_{name}",
                getattr(model.plain_efficiency, name),
                f"{cal.source}; stack group {model.plain_group!r}: k=0 rows are the same model"
                " without speculation, as a plain server would run",
            )
    return inputs


def _deployment_inputs(
    cfg: ServingConfig, query: PredictQuery, context: int, pricing: Pricing
) -> Inputs:
    """The profile's serving settings, the workload's context, replicas and price, with sources."""
    inputs = Inputs()
    placement = pricing.placement
    inputs = inputs.add("tensor_parallel_size", cfg.tensor_parallel_size, f"profile {cfg.name}")
    inputs = inputs.add("lnc", cfg.hardware.lnc, f"profile {cfg.name}")
    inputs = inputs.add("dtype", cfg.dtype, f"profile {cfg.name}")
    inputs = inputs.add(
        "context_tokens",
        context,
        f"--input-len {query.input_len} + half of --output-len {query.output_len}",
    )
    inputs = inputs.add(
        "replicas_per_instance",
        pricing.replicas,
        "trnspec.hardware.packing (what the deploy's pods request on the kubelet's "
        + (f"{placement.disk}); limited by {placement.packing.reason}" if placement else "disk)"),
    )
    inputs = inputs.add("price_per_hour_usd", pricing.price, pricing.source)
    inputs = inputs.add(
        "max_num_seqs", cfg.max_num_seqs, f"profile {cfg.name} (batches above it need a recompile)"
    )
    return inputs


def build(query: PredictQuery, cfg: ServingConfig) -> PredictReport:
    """What `predict` prints (pure apart from reading the packaged data)."""
    context = decode_context_tokens(query.input_len, query.output_len)
    model = profile_model(cfg, context)
    cal = trn2_calibration()
    axes = _axes(query, cfg, model.method)
    alpha, acc_inputs, acc_problems = _acceptance(query, cfg)
    fit_problems = request_fit_problems(query.input_len, query.output_len, cfg)
    if axes.problems or acc_problems or fit_problems:
        raise ConfigError([*axes.problems, *acc_problems, *fit_problems])
    try:
        points = model.grid(alpha, axes.ks, axes.batches)
    except ModelInputError as err:
        raise ConfigError([Problem("--k/--batch", f"{query.k}/{query.batch}", str(err))]) from None
    pricing = _pricing(cfg, query.price_per_hour)
    inputs = (
        acc_inputs + _model_inputs(model, cal) + _deployment_inputs(cfg, query, context, pricing)
    )

    @cache
    def band(k: int, batch: int) -> ErrorBand:
        return regime_band(cal, model, k, batch, context)

    rows = [_row(p, pricing, cfg.max_num_seqs, band(p.k, p.batch)) for p in points]
    outside = outside_data(
        cal, model.group, model.target, cfg.tensor_parallel_size, axes.batches, context
    )
    best = best_k_per_batch(points)
    return PredictReport(
        profile=cfg.name,
        rows=rows,
        best_k_per_batch={b: p.k for b, p in sorted(best.items())},
        speculation_stops_paying_at_batch=speculation_stops_paying(points),
        batch_verdicts=verdicts_of(points, lambda k, b: band(k, b).max_abs_error),
        cost_note=None if pricing.price is not None else pricing.problem,
        inputs=inputs.by_name(),
        outside_data=[o.describe() for o in outside],
        caveats=[
            "HBM fit at these batches is not checked here; run `trnspec plan`.",
            "error_band: the 80% quantile of held-out errors from sources the fit never saw, of"
            " figures that extrapolated at least as far as this one (its regime's, else its stack"
            " and method's, else its kind's on every stack); null where too few did: unknown,"
            " measure it. error_band_held: how often bands of that kind held on unseen sources;"
            f" see docs/performance.md and trnspec/{DATA_FILE}.",
        ],
    )


def regime_band(
    cal: Calibration, model: ProfileModel, k: int, batch: int, context_tokens: int
) -> ErrorBand:
    """The band of `model`'s figure at window k and batch (k = 0: its plain server) from sources
    the fit never saw."""
    return source_band_for(
        cal,
        model.group_for(k),
        model.method,
        k,
        batch,
        tp=model.cfg.tensor_parallel_size,
        context_tokens=context_tokens,
        target=model.target,
    )


def _row(p: Prediction, pricing: Pricing, max_num_seqs: int, band: ErrorBand) -> Row:
    tps = p.output_tokens_per_s
    replicas = pricing.replicas
    cost = (
        cost_per_1m_output_tokens(pricing.price, tps * replicas)
        if pricing.price is not None and replicas
        else None
    )
    return Row(
        batch=p.batch,
        k=p.k,
        tpot_ms=round(p.tpot_s * 1e3, 3),
        output_tokens_per_s=round(tps, 2),
        speedup=round(p.speedup, 3),
        cost_per_1m_output_tokens_usd=round(cost, 4) if cost is not None else None,
        tokens_per_step=round(p.tokens_per_step, 3),
        step_ms=round(p.step.total_s * 1e3, 3),
        draft_ms=round(p.step.draft_s * 1e3, 3),
        target_bound=p.step.target.bound,
        within_max_num_seqs=p.batch <= max_num_seqs,
        error_band=round(band.max_abs_error, 3) if band.max_abs_error is not None else None,
        error_band_note=band.describe(),
        error_band_held=band.held,
    )
