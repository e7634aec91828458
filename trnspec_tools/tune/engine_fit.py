"""The Trn2 performance model (trnspec.perf.step_time) fitted to a measured k x concurrency sweep.

`make tune` measures the local vLLM CPU engine at several windows k and concurrencies. The step
time of every run is recovered from what was measured (a closed loop of `c` sequences emitting
`tau` tokens per step at `tps` tokens/s steps every `c * tau / tps` seconds); the engine's
constants are fitted to the baselines (k = 0) at every concurrency plus the speculative runs at
ONE concurrency, and the speculative runs at the other concurrencies are then predicted from their
own measured acceptance, as the Trn2 calibration predicts published speculative results.

The fitted constants are the engine's effective bandwidth and compute rate (the "hardware" of a
CPU running vLLM), its fixed cost per step, per step with speculation on, per sequence per
step, per sequential draft pass and per position with logits. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from trnspec.hardware.model_shapes import ModelShape
from trnspec.perf.nelder_mead import nelder_mead
from trnspec.perf.step_time import (
    Deployment,
    Efficiency,
    Hardware,
    Prediction,
    best_k_per_batch,
    speculation_stops_paying,
    step_cost,
)

from trnspec_tools.ab.comparison import exceeds_tokens_per_step
from trnspec_tools.tune.window_fit import (
    expected_tokens_per_step,
    precompile_set,
    tokens_per_step_from_conditional,
)


@dataclass(frozen=True)
class SweepPoint:
    """One measured run of the sweep."""

    concurrency: int
    k: int
    output_tokens_per_s: float
    #: measured mean tokens per verification step (None for k = 0: it is 1 by definition)
    mean_accepted_length: float | None = None

    @property
    def tokens_per_step(self) -> float:
        return 1.0 if self.k == 0 else float(self.mean_accepted_length or 1.0)

    def batch(self, max_batch: int) -> int:
        """Sequences decoded together: the concurrency, capped by the server's max_num_seqs
        (the rest wait in its queue)."""
        return min(self.concurrency, max_batch)

    def step_s(self, max_batch: int) -> float:
        """Seconds per decode step: `batch` sequences each emit tau tokens per step."""
        return self.batch(max_batch) * self.tokens_per_step / self.output_tokens_per_s


@dataclass(frozen=True)
class EngineSetup:
    """What is known about the engine without measuring it: the models and the workload."""

    target: ModelShape
    draft: ModelShape | None
    method: str
    weight_bytes: float
    context_tokens: int
    #: the server's max_num_seqs: concurrency above it queues instead of batching
    max_batch: int = 1_000_000


#: Fitted constants as (name, lower, upper) of the value: effective DRAM bandwidth and compute
#: rate of the engine, per-step, per-draft-pass and per-position costs.
PARAMETERS = (
    ("memory_bytes_per_s", 1e7, 1e13),
    ("peak_flops", 1e7, 1e14),
    ("step_overhead_s", 1e-6, 1.0),
    ("draft_pass_overhead_s", 1e-7, 1.0),
    ("spec_overhead_s", 1e-7, 1.0),
    ("sequence_overhead_s", 1e-8, 0.1),
    ("token_overhead_s", 1e-8, 0.1),
)


@dataclass(frozen=True)
class EngineFit:
    hardware: Hardware
    efficiency: Efficiency
    fit_concurrency: int
    rms_log_error: float

    def constants(self) -> dict[str, float]:
        return {
            "memory_bytes_per_s": self.hardware.memory_bytes_per_s,
            "peak_flops": self.hardware.peak_flops,
            "step_overhead_s": self.efficiency.step_overhead_s,
            "draft_pass_overhead_s": self.efficiency.draft_pass_overhead_s,
            "spec_overhead_s": self.efficiency.spec_overhead_s,
            "sequence_overhead_s": self.efficiency.sequence_overhead_s,
            "token_overhead_s": self.efficiency.token_overhead_s,
        }


def _constants(theta: Sequence[float]) -> tuple[Hardware, Efficiency]:
    v = {
        name: min(hi, max(lo, math.exp(t)))
        for (name, lo, hi), t in zip(PARAMETERS, theta, strict=True)
    }
    hw = Hardware(
        name="local engine",
        memory_bytes_per_s=v["memory_bytes_per_s"],
        peak_flops=v["peak_flops"],
        link_bytes_per_s=1e12,
        cores_per_chip=1,
        source="fitted to the local k x concurrency sweep (trnspec_tools/tune/engine_fit.py)",
    )
    eff = Efficiency(
        memory=1.0,
        compute=1.0,
        step_overhead_s=v["step_overhead_s"],
        collective_latency_s=0.0,
        draft_pass_overhead_s=v["draft_pass_overhead_s"],
        spec_overhead_s=v["spec_overhead_s"],
        sequence_overhead_s=v["sequence_overhead_s"],
        token_overhead_s=v["token_overhead_s"],
    )
    return hw, eff


def deployment(setup: EngineSetup, hw: Hardware) -> Deployment:
    return Deployment(
        hardware=hw,
        tensor_parallel_size=1,
        lnc=1,
        weight_bytes=setup.weight_bytes,
        draft_weight_bytes=setup.weight_bytes,
        kv_bytes=setup.weight_bytes,
        context_tokens=setup.context_tokens,
    )


def model_step_s(setup: EngineSetup, hw: Hardware, eff: Efficiency, c: int, k: int) -> float:
    return step_cost(
        setup.target, setup.method, setup.draft, k, c, deployment(setup, hw), eff
    ).total_s


def used_for_fit(p: SweepPoint, fit_concurrency: int) -> bool:
    """Baselines at every concurrency, and every run at the fit concurrency."""
    return p.k == 0 or p.concurrency == fit_concurrency


def fit_engine(points: Sequence[SweepPoint], setup: EngineSetup, fit_concurrency: int) -> EngineFit:
    """Least squares on log step time over the rows `used_for_fit` marks."""
    rows = [p for p in points if used_for_fit(p, fit_concurrency) and p.output_tokens_per_s > 0]
    if not any(p.k > 0 for p in rows):
        raise ValueError(f"no speculative run at the fit concurrency {fit_concurrency}")

    def loss(theta: Sequence[float]) -> float:
        hw, eff = _constants(theta)
        return sum(
            (
                math.log(model_step_s(setup, hw, eff, p.batch(setup.max_batch), p.k))
                - math.log(p.step_s(setup.max_batch))
            )
            ** 2
            for p in rows
        )

    best: tuple[list[float], float] | None = None
    for flops in (1e9, 1e11):
        for overhead in (1e-3, 2e-2):
            start = [math.log(1e10), math.log(flops), math.log(overhead), math.log(1e-3)]
            start += [math.log(1e-3), math.log(1e-4), math.log(1e-5)]
            theta, value = nelder_mead(loss, start, iterations=800)
            theta, value = nelder_mead(loss, theta, step=0.2, iterations=400)
            if best is None or value < best[1]:
                best = (theta, value)
    assert best is not None
    hw, eff = _constants(best[0])
    return EngineFit(hw, eff, fit_concurrency, math.sqrt(best[1] / len(rows)))


@dataclass(frozen=True)
class ValidationRow:
    """One speculative run: measured speedup against the step-time model's prediction."""

    concurrency: int
    k: int
    mean_accepted_length: float
    measured_speedup: float
    predicted_speedup: float
    #: predicted / measured - 1
    error: float
    used_for_fit: bool
    #: Measured above its tokens per step: the baseline at this concurrency ran slow.
    implausible: bool


@dataclass(frozen=True)
class HeldOut:
    """The error over the held-out rows (implausible ones counted apart)."""

    rows: int
    max_abs_error: float | None
    mean_abs_error: float | None
    within_15pct: int | None
    implausible_rows: int


@dataclass(frozen=True)
class BatchAdvice:
    """k per batch size (with its predicted speedup, to 3 decimals), the batch from which
    speculation stops paying (None: it pays at every batch given) and the k values to
    precompile."""

    best_k_per_batch: Mapping[int, tuple[int, float]]
    disable_speculation_at_batch: int | None
    precompile: tuple[int, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "best_k_per_batch": {
                str(b): {"k": k, "predicted_speedup": s}
                for b, (k, s) in self.best_k_per_batch.items()
            },
            "disable_speculation_at_batch": self.disable_speculation_at_batch,
            "precompile": list(self.precompile),
        }


def validation_rows(
    points: Sequence[SweepPoint], setup: EngineSetup, fit: EngineFit
) -> list[ValidationRow]:
    """Every speculative run: measured vs predicted speedup, the latter from its own measured
    acceptance and the fitted step times (the baseline at that concurrency is modelled too)."""
    base = {p.concurrency: p for p in points if p.k == 0}
    out: list[ValidationRow] = []
    for p in sorted(points, key=lambda p: (p.concurrency, p.k)):
        b = base.get(p.concurrency)
        if p.k == 0 or b is None or b.output_tokens_per_s <= 0:
            continue
        batch = p.batch(setup.max_batch)
        t_spec = model_step_s(setup, fit.hardware, fit.efficiency, batch, p.k)
        t_base = model_step_s(setup, fit.hardware, fit.efficiency, batch, 0)
        measured = p.output_tokens_per_s / b.output_tokens_per_s
        predicted = p.tokens_per_step * t_base / t_spec
        out.append(
            ValidationRow(
                concurrency=p.concurrency,
                k=p.k,
                mean_accepted_length=p.mean_accepted_length,
                measured_speedup=measured,
                predicted_speedup=predicted,
                error=predicted / measured - 1.0,
                used_for_fit=used_for_fit(p, fit.fit_concurrency),
                implausible=exceeds_tokens_per_step(measured, p.mean_accepted_length),
            )
        )
    return out


def held_out_summary(rows: Sequence[ValidationRow]) -> HeldOut:
    """Errors over the held-out rows whose measurement is possible (implausible ones counted
    apart: an error against a disturbed baseline says nothing about the model)."""
    held = [r for r in rows if not r.used_for_fit]
    errors = [abs(r.error) for r in held if not r.implausible]
    implausible = len(held) - len(errors)
    if not errors:
        return HeldOut(0, None, None, None, implausible)
    return HeldOut(
        rows=len(errors),
        max_abs_error=max(errors),
        mean_abs_error=sum(errors) / len(errors),
        within_15pct=sum(e <= 0.15 for e in errors),
        implausible_rows=implausible,
    )


def advice_of(points: Sequence[Prediction], k_max: int) -> BatchAdvice:
    """Best k per batch, the batch from which to run without speculation, and the k values to
    precompile (every best k where speculation pays, and the batch-1 optimum's neighbours), of a
    grid of predictions."""
    best = best_k_per_batch(points)
    stop = speculation_stops_paying(points)
    paying = sorted({p.k for p in best.values() if p.k > 0})
    precompile = set(paying)
    if paying:
        precompile |= set(precompile_set(best[min(best)].k, k_max))
    return BatchAdvice(
        {b: (p.k, round(p.speedup, 3)) for b, p in sorted(best.items())},
        stop,
        tuple(sorted(precompile)),
    )


def conditional_tokens_per_step(
    conditional: Sequence[float], alpha: float
) -> Callable[[int], float]:
    """k -> tokens per step from per-position (conditional) acceptance where measured, the
    single rate beyond."""
    if conditional:
        return lambda k: tokens_per_step_from_conditional(conditional, k)
    return lambda k: expected_tokens_per_step(alpha, k)
