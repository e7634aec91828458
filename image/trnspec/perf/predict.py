"""What `trnspec predict` prints: decode speed and cost per 1M output tokens of a profile on Trn2.

For every (batch, k): TPOT, output tokens/s of one replica, the speedup over k=0 at the same
batch and the cost per million output tokens of the whole instance (all replicas busy), then the
best k per batch and the batch from which speculation no longer pays. The numbers come from
`trnspec.perf.model` with constants fitted to published Trn2 figures (`trnspec.perf.calibrate`);
the document lists every constant used with its source. The flags are read by
trnspec.cli.predict into a PredictQuery; bad input is a ConfigError naming the flag.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from trnspec.config.images import image_spec
from trnspec.config.serving import ConfigError, Problem, ServingConfig, apply_overrides
from trnspec.hardware.drafters import drafter_for
from trnspec.hardware.model_shapes import ModelShape, ShapeError, known_model_names, resolve_shape
from trnspec.hardware.packing import ReplicaPlacement, placement_for
from trnspec.hardware.pricing import PriceError, cost_per_1m_output_tokens, resolve_price
from trnspec.hardware.sizing import BYTES_PER_DTYPE
from trnspec.hardware.topology import INSTANCE_TYPES
from trnspec.perf.acceptance import acceptance_rate
from trnspec.perf.bands import band_for, outside_data
from trnspec.perf.calibrate import DATA_FILE, Calibration, trn2_calibration
from trnspec.perf.model import (
    DRAFT_METHODS,
    Deployment,
    Efficiency,
    ModelInputError,
    Prediction,
    TokensPerStep,
    best_k_per_batch,
    decode_context_tokens,
    predict_grid,
    speculation_stops_paying,
)
from trnspec.perf.stack_group import stack_group
from trnspec.perf.validation import ErrorBand

DEFAULT_BATCHES = (1, 2, 4, 8, 16, 32)


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
    """`1,4,16` as sorted distinct integers >= minimum; ConfigError naming the flag."""
    try:
        values = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise ConfigError(
            [Problem(flag, text, "give comma-separated integers, e.g. 1,4,16")]
        ) from None
    if not values or values[0] < minimum:
        raise ConfigError([Problem(flag, text, f"give integers >= {minimum}, e.g. 1,4,16")])
    return values


@dataclass(frozen=True)
class Sourced:
    """One input of the prediction and where it came from."""

    value: Any
    source: str


@dataclass(frozen=True)
class Inputs:
    """Everything the prediction used, by name, in the order it was read."""

    values: dict[str, Sourced]

    def add(self, name: str, value: object, source: str) -> None:
        self.values[name] = Sourced(value, source)


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
    #: The held-out error of the regime (None where no published row there was predictable).
    error_band: float | None
    error_band_note: str


@dataclass(frozen=True)
class PredictReport:
    """What `predict` prints: the rows, the verdicts and every input with its source."""

    profile: str
    rows: list[Row]
    best_k_per_batch: dict[int, int]
    speculation_stops_paying_at_batch: int | None
    #: Why no cost is shown (None when it is).
    cost_note: str | None
    inputs: dict[str, Sourced]
    outside_data: list[str]
    caveats: list[str]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)


def _shape(ref_field: str, ref: Any) -> ModelShape | None:
    try:
        return resolve_shape(ref)
    except ShapeError as err:
        raise ConfigError([Problem(ref_field, ref.source, str(err))]) from None


def _acceptance(
    query: PredictQuery, cfg: ServingConfig, inputs: Inputs
) -> tuple[float, list[Problem]]:
    """The acceptance rate asked for (recorded in `inputs` with its source), or the problems."""
    k_ref = query.acceptance_k or cfg.speculation.num_speculative_tokens
    try:
        alpha = acceptance_rate(query.acceptance_rate, query.acceptance_length, k_ref)
    except ConfigError as err:
        return 0.0, list(err.problems)
    if query.acceptance_rate is not None:
        inputs.add("acceptance_rate", query.acceptance_rate, "--acceptance-rate (user supplied)")
    elif alpha is not None:
        inputs.add(
            "acceptance_rate",
            round(alpha, 6),
            f"from --acceptance-length {query.acceptance_length} at k={k_ref}"
            " by (1 - a^(k+1)) / (1 - a) = tau (Leviathan et al., 2023)",
        )
    if alpha is not None or cfg.speculation.method == "none":
        return alpha or 0.0, []
    return 0.0, [
        Problem(
            "--acceptance-rate",
            None,
            "give --acceptance-rate A (per token) or --acceptance-length TAU (tokens per"
            " verification step, as published); acceptance depends on the workload",
        )
    ]


@dataclass(frozen=True)
class ProfileModel:
    """A Trn2 profile turned into the performance model's inputs."""

    cfg: ServingConfig
    group: str
    target: ModelShape
    #: The drafter costed: the profile's draft, or the default EAGLE3/DFlash shape.
    draft: ModelShape | None
    method: str
    deployment: Deployment
    efficiency: Efficiency
    #: The stack group and constants of the same model without speculation (k=0 rows): the
    #: plain server a user would deploy, which may schedule differently (stack_group).
    plain_group: str
    plain_efficiency: Efficiency

    def group_for(self, k: int) -> str:
        """The stack group a row at window k ran as (k=0: the plain server's)."""
        return self.plain_group if k == 0 else self.group

    def grid(
        self, alpha: float | TokensPerStep, ks: Sequence[int], batches: Sequence[int]
    ) -> list[Prediction]:
        return predict_grid(
            self.target,
            self.method,
            self.draft,
            alpha,
            ks,
            batches,
            self.deployment,
            self.efficiency,
            self.plain_efficiency,
        )


def profile_model(cfg: ServingConfig, context_tokens: int) -> ProfileModel:
    """The model of `cfg` on Trn2 with the calibrated constants; ConfigError lists every reason
    it cannot be built (not a Trn2 profile, unknown shapes, a method the model cannot cost)."""
    problems: list[Problem] = []
    spec = image_spec(cfg.image)
    group = stack_group(cfg)
    if not spec.runs_on_trn2 or group is None or cfg.hardware.instance_type not in INSTANCE_TYPES:
        raise ConfigError(
            [
                Problem(
                    "--profile",
                    cfg.name,
                    "predict models Trn2 images on Trn2 instances; for the local CPU engine"
                    " run `make tune` (it fits the same model to the local sweep)",
                )
            ]
        )
    method = cfg.speculation.method
    if method not in ("none", *DRAFT_METHODS):
        problems.append(
            Problem("speculation.method", method, "predict costs " + ", ".join(DRAFT_METHODS))
        )
    target = _shape("target.source", cfg.target)
    if target is None:
        problems.append(
            Problem(
                "target.source",
                cfg.target.source,
                f"no shape known; use a local dir with config.json or one of"
                f" {', '.join(known_model_names())}",
            )
        )
    draft = (
        _shape("speculation.draft.source", cfg.speculation.draft) if cfg.speculation.draft else None
    )
    if method == "draft_model" and draft is None:
        problems.append(
            Problem(
                "speculation.draft.source",
                cfg.speculation.draft.source if cfg.speculation.draft else None,
                "the draft's shape is needed to cost it; give a local dir with config.json",
            )
        )
    if problems:
        raise ConfigError(problems)
    assert target is not None and group is not None
    cal = trn2_calibration()
    dep = Deployment(
        hardware=cal.hardware,
        tensor_parallel_size=cfg.tensor_parallel_size,
        lnc=cfg.hardware.lnc,
        weight_bytes=BYTES_PER_DTYPE[cfg.dtype],
        draft_weight_bytes=BYTES_PER_DTYPE[cfg.dtype],
        kv_bytes=BYTES_PER_DTYPE[cfg.dtype],
        context_tokens=context_tokens,
    )
    draft = drafter_for(method, draft, target)
    plain_group = group
    if method != "none":
        plain_group = stack_group(apply_overrides(cfg, ["speculation.method=none"])) or group
    return ProfileModel(
        cfg,
        group,
        target,
        draft,
        method,
        dep,
        cal.efficiency[group],
        plain_group,
        cal.efficiency[plain_group],
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


def _add_model_inputs(inputs: Inputs, model: ProfileModel, cal: Calibration) -> None:
    """The shapes, the hardware peaks and every fitted constant the rows used, with sources."""
    cfg, target, draft, hw, eff = (
        model.cfg,
        model.target,
        model.draft,
        model.deployment.hardware,
        model.efficiency,
    )
    inputs.add("target", target.name, target.origin)
    if model.method != "none":
        inputs.add("method", model.method, f"speculation.method of {cfg.name}")
        if draft is not None:
            inputs.add("draft", draft.name, draft.origin)
    inputs.add("hardware", hw.name, hw.source)
    inputs.add("hbm_bytes_per_s_per_chip", hw.memory_bytes_per_s, hw.source)
    inputs.add("peak_flops_per_chip", hw.peak_flops, hw.source)
    inputs.add("link_bytes_per_s_per_chip", hw.link_bytes_per_s, hw.source)
    for name in (
        "memory",
        "compute",
        "collective_latency_s",
        "token_overhead_s",
        "sequence_overhead_s",
        "context_token_s",
        "logit_pair_s",
    ):
        inputs.add(f"efficiency.{name}", getattr(eff, name), cal.source)
    for name in ("step_overhead_s", "draft_pass_overhead_s"):
        inputs.add(
            f"efficiency.{name}",
            getattr(eff, name),
            f"{cal.source}; stack group {model.group!r} for image {cfg.image.value}",
        )
    if model.plain_group != model.group:
        inputs.add(
            "efficiency.plain_step_overhead_s",
            model.plain_efficiency.step_overhead_s,
            f"{cal.source}; stack group {model.plain_group!r}: k=0 rows are the same model without"
            " speculation, as a plain server would run",
        )


def _add_deployment_inputs(
    inputs: Inputs, cfg: ServingConfig, query: PredictQuery, context: int, pricing: Pricing
) -> None:
    """The profile's serving settings, the workload's context, replicas and price, with sources."""
    placement = pricing.placement
    inputs.add("tensor_parallel_size", cfg.tensor_parallel_size, f"profile {cfg.name}")
    inputs.add("lnc", cfg.hardware.lnc, f"profile {cfg.name}")
    inputs.add("dtype", cfg.dtype, f"profile {cfg.name}")
    inputs.add(
        "context_tokens",
        context,
        f"--input-len {query.input_len} + half of --output-len {query.output_len}",
    )
    inputs.add(
        "replicas_per_instance",
        pricing.replicas,
        "trnspec.hardware.packing (what the deploy's pods request on the kubelet's "
        + (f"{placement.disk}); limited by {placement.packing.reason}" if placement else "disk)"),
    )
    inputs.add("price_per_hour_usd", pricing.price, pricing.source)
    inputs.add(
        "max_num_seqs", cfg.max_num_seqs, f"profile {cfg.name} (batches above it need a recompile)"
    )


def build(query: PredictQuery, cfg: ServingConfig) -> PredictReport:
    """What `predict` prints (pure apart from reading the packaged data)."""
    context = decode_context_tokens(query.input_len, query.output_len)
    model = profile_model(cfg, context)
    cal = trn2_calibration()
    inputs = Inputs({})
    axes = _axes(query, cfg, model.method)
    alpha, acc_problems = _acceptance(query, cfg, inputs)
    if axes.problems or acc_problems:
        raise ConfigError([*axes.problems, *acc_problems])
    try:
        points = model.grid(alpha, axes.ks, axes.batches)
    except ModelInputError as err:
        raise ConfigError([Problem("--k/--batch", f"{query.k}/{query.batch}", str(err))]) from None
    pricing = _pricing(cfg, query.price_per_hour)
    _add_model_inputs(inputs, model, cal)
    _add_deployment_inputs(inputs, cfg, query, context, pricing)
    rows = [
        _row(
            p,
            pricing,
            cfg.max_num_seqs,
            band_for(cal, model.group_for(p.k), model.method, p.k, p.batch),
        )
        for p in points
    ]
    outside = outside_data(cal, model.group, model.target, cfg.tensor_parallel_size, axes.batches)
    best = best_k_per_batch(points)
    return PredictReport(
        profile=cfg.name,
        rows=rows,
        best_k_per_batch={b: p.k for b, p in sorted(best.items())},
        speculation_stops_paying_at_batch=speculation_stops_paying(points),
        cost_note=None if pricing.price is not None else pricing.problem,
        inputs=inputs.values,
        outside_data=[o.describe() for o in outside],
        caveats=[
            "HBM fit at these batches is not checked here; run `trnspec plan`.",
            "error_band: the largest held-out error (leave one source out) of published rows in"
            f" the same stack, method and batch range; see docs/performance.md and"
            f" trnspec/{DATA_FILE}.",
        ],
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
    )


def format_table(report: PredictReport) -> str:
    """Rows grouped by batch, the best k of each marked, then the verdict on large batches."""
    best = report.best_k_per_batch
    per = report.inputs["replicas_per_instance"]
    lines = [
        f"profile {report.profile}: one replica, {per.value} per instance"
        f" ({per.source.split('; limited by ')[-1]});"
        " cost = instance price / (replicas x tokens/s)",
        f"{'batch':>5} {'k':>3} {'tok/step':>8} {'TPOT ms':>8} {'tok/s':>9} {'speedup':>8}"
        f" {'$/1M out':>9} {'error':>6}  bound",
    ]
    for r in report.rows:
        cost = r.cost_per_1m_output_tokens_usd
        mark = " <- best" if best.get(r.batch) == r.k else ""
        over = "" if r.within_max_num_seqs else " (above max_num_seqs)"
        lines.append(
            f"{r.batch:>5} {r.k:>3} {r.tokens_per_step:>8.2f} {r.tpot_ms:>8.2f}"
            f" {r.output_tokens_per_s:>9.1f} {r.speedup:>7.2f}x"
            f" {(f'{cost:.3f}' if cost is not None else '-'):>9} {_band_cell(r):>6}"
            f"  {r.target_bound}{mark}{over}"
        )
    lines.append("best k per batch: " + ", ".join(f"{b}: k={k}" for b, k in sorted(best.items())))
    stop = report.speculation_stops_paying_at_batch
    if all(r.k == 0 for r in report.rows):
        lines.append("no k > 0 asked for: nothing to compare")
    elif stop is None:
        lines.append("speculation pays at every batch given")
    else:
        lines.append(f"speculation no longer pays from batch {stop}: serve larger batches with k=0")
    if report.cost_note:
        lines.append(f"cost: not shown: {report.cost_note}")
    lines += _band_notes(report)
    return "\n".join(lines)


def _band_cell(row: Row) -> str:
    return f"+/-{row.error_band:.0%}" if row.error_band is not None else "n/a"


def _band_notes(report: PredictReport) -> list[str]:
    """The error column's meaning per regime, then every way the query is outside the data."""
    notes = sorted({r.error_band_note for r in report.rows})
    lines = ["error (held out, leave one source out):", *(f"  {n}" for n in notes)]
    lines += [f"outside the published data: {o}" for o in report.outside_data]
    return lines
