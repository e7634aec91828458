"""tune's step-time analyses, typed: the engine model checked across concurrency, k per batch on
this engine and on a Trn2 profile, and acceptance per dataset category (pure but for reading a
profile).

The step-time model (engine_fit.py) is fitted to the plain and speculative runs at the fit
concurrency and checked on the other levels (ConcurrencyAnalysis); with the measured acceptance
it recommends k per batch size and the batch from which to switch speculation off (BatchAdvice),
here with the fitted constants, on Trn2 with the calibrated ones (Trn2Advice). Per category, only
acceptance is measured (no per-category plain run), so CategoryAcceptance fits acceptance alone
(the single rate and per position) and advises k per batch from it. Each `to_json()` writes the
keys tune's JSON has always held.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass

from trnspec.perf.step_time import Prediction, decode_context_tokens, predict_grid
from trnspec.perf.trn2_fit import trn2_calibration
from trnspec.plan.batch_verdicts import BatchVerdict, verdicts_of
from trnspec.plan.predict import regime_band

from trnspec_tools.bench.run_result import RunResult
from trnspec_tools.local_engine.local_server import model_overrides
from trnspec_tools.tune.engine_fit import (
    BatchAdvice,
    EngineFit,
    EngineSetup,
    HeldOut,
    SweepPoint,
    ValidationRow,
    advice_of,
    conditional_tokens_per_step,
    deployment,
    held_out_summary,
    validation_rows,
)
from trnspec_tools.tune.tune_options import TuneOptions
from trnspec_tools.tune.window_fit import fit_alpha, pool_conditional

#: (conditional acceptance, single rate) -> k per batch with some step-time constants.
AdviceFor = Callable[[Sequence[float], float], "BatchAdvice"]


@dataclass(frozen=True)
class ConcurrencyAnalysis:
    """The step-time model fitted at one concurrency, checked on the others, and its advice."""

    fit_concurrency: int
    constants: Mapping[str, float]
    fit_rms_log_error: float
    rows: tuple[ValidationRow, ...]
    held_out: HeldOut
    recommendation_by_batch: BatchAdvice
    #: how sure the advice is at each batch: the best k's speedup within the largest held-out
    #: error, and undecided outside the measured concurrencies (engine_verdicts)
    verdicts: tuple[BatchVerdict, ...] = ()

    def rows_json(self) -> list[dict[str, object]]:
        return [asdict(r) for r in self.rows]

    def to_json(self) -> dict[str, object]:
        return {
            "fit_concurrency": self.fit_concurrency,
            "constants": dict(self.constants),
            "fit_rms_log_error": self.fit_rms_log_error,
            "rows": self.rows_json(),
            "held_out": asdict(self.held_out),
            "recommendation_by_batch": self.recommendation_by_batch.to_json(),
            "batch_verdicts": [asdict(v) for v in self.verdicts],
        }


@dataclass(frozen=True)
class Trn2Advice:
    """k per batch for a Trn2 profile, from the acceptance measured here."""

    profile: str
    k_max: int
    advice: BatchAdvice
    #: how sure the model is at each batch (trnspec.plan.batch_verdicts), as predict says it
    verdicts: tuple[BatchVerdict, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "profile": self.profile,
            "k_max": self.k_max,
            **self.advice.to_json(),
            "batch_verdicts": [asdict(v) for v in self.verdicts],
        }


@dataclass(frozen=True)
class CategoryAcceptance:
    """One dataset category: acceptance per k, fitted acceptance, and k per batch from it."""

    by_k: Mapping[int, RunResult]
    alpha: float
    conditional: tuple[float, ...]
    recommendation_by_batch: BatchAdvice | None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "acceptance": {
                str(k): {
                    "mean_accepted_length": r.acceptance.mean_accepted_length,
                    "acceptance_rate": r.acceptance.acceptance_rate,
                    "acceptance_per_position": _listed(r.acceptance.acceptance_per_position),
                }
                for k, r in sorted(self.by_k.items())
            },
            "alpha": self.alpha,
            "conditional": list(self.conditional),
            "runs": {str(k): r.to_json() for k, r in sorted(self.by_k.items())},
        }
        if self.recommendation_by_batch is not None:
            out["recommendation_by_batch"] = self.recommendation_by_batch.to_json()
        return out


#: A category without acceptance figures: why it has no entry.
NO_ACCEPTANCE = {"error": "no acceptance measured"}


def _listed(values: Sequence[float] | None) -> list[float] | None:
    return None if values is None else list(values)


def category_acceptance(
    cats: Mapping[str, Mapping[int, RunResult]], advice_for: AdviceFor | None
) -> dict[str, CategoryAcceptance | None]:
    """Acceptance per category fitted from its runs (None: no acceptance measured)."""
    from trnspec_tools.tune.k_sweep import k_measurement

    out: dict[str, CategoryAcceptance | None] = {}
    for cat, by_k in sorted(cats.items()):
        # acceptance only (no per-category plain run): the speedup is not fitted, so none is given
        ms = [
            k_measurement(k, r, 0.0)
            for k, r in sorted(by_k.items())
            if r.acceptance.mean_accepted_length
        ]
        if not ms:
            out[cat] = None
            continue
        alpha = fit_alpha([(m.k, m.mean_accepted_length) for m in ms])
        conditional = pool_conditional(ms)
        advice = advice_for(conditional, alpha) if advice_for is not None else None
        out[cat] = CategoryAcceptance(by_k, alpha, conditional, advice)
    return out


def engine_setup(opts: TuneOptions, local: bool) -> EngineSetup | str:
    """The served models' shapes and the workload's context, or why they are unknown."""
    from trnspec.config.serving import apply_overrides, load_profile
    from trnspec.hardware.model_shapes import ShapeError, resolve_shape
    from trnspec.hardware.sizing import BYTES_PER_DTYPE

    profile, overrides = opts.profile, list(opts.overrides)
    try:
        extra = model_overrides(profile, overrides) if local else []
        cfg = apply_overrides(load_profile(profile), [*extra, *overrides])
        target = resolve_shape(cfg.target)
        draft = resolve_shape(cfg.speculation.draft) if cfg.speculation.draft else None
    except (ShapeError, ValueError, KeyError) as exc:
        return f"--profile={profile}: {exc}"
    if target is None:
        return f"--profile={profile}: the target's shape is unknown ({cfg.target.source})"
    method = cfg.speculation.method
    if method == "draft_model" and draft is None:
        return f"--profile={profile}: the draft's shape is unknown"
    return EngineSetup(
        target=target,
        draft=draft,
        method=method,
        weight_bytes=BYTES_PER_DTYPE[cfg.dtype],
        context_tokens=decode_context_tokens(opts.workload.input_len, opts.workload.output_len),
        max_batch=cfg.max_num_seqs,
    )


def sweep_points(
    baseline: Mapping[int, RunResult], runs: Mapping[int, Mapping[int, RunResult]]
) -> list[SweepPoint]:
    """The measured points the step-time model is fitted to (runs without throughput, and
    speculative runs without acceptance, left out)."""
    out = [
        SweepPoint(c, 0, r.output_tokens_per_s)
        for c, r in baseline.items()
        if r.output_tokens_per_s
    ]
    for k, by_c in runs.items():
        for c, r in by_c.items():
            mal = r.acceptance.mean_accepted_length
            if r.output_tokens_per_s and mal:
                out.append(SweepPoint(c, k, r.output_tokens_per_s, mal))
    return out


def engine_grid(
    setup: EngineSetup,
    fit: EngineFit,
    tokens_per_step: Callable[[int], float],
    batches: Sequence[int],
    k_max: int,
) -> list[Prediction]:
    """The fitted engine's predictions at k = 0..k_max and every batch (pure)."""
    return predict_grid(
        setup.target,
        setup.method,
        setup.draft,
        tokens_per_step,
        list(range(k_max + 1)),
        batches,
        deployment(setup, fit.hardware),
        fit.efficiency,
    )


def engine_recommendation(
    setup: EngineSetup,
    fit: EngineFit,
    tokens_per_step: Callable[[int], float],
    batches: Sequence[int],
    k_max: int,
) -> BatchAdvice:
    """k per batch on the local engine with its fitted constants (pure)."""
    return advice_of(engine_grid(setup, fit, tokens_per_step, batches, k_max), k_max)


def engine_verdicts(
    points: Sequence[Prediction], measured: Sequence[int], held_out_error: float | None
) -> list[BatchVerdict]:
    """How sure the engine's advice is at each batch of its grid (pure). The held-out error is
    of the speedup itself (measured against predicted, at the concurrencies not fitted), so it
    is the speculative band and plain's is 0; a batch outside the measured concurrencies has no
    band (an extrapolation the held-out rows do not cover), so it is undecided."""
    low, high = (min(measured), max(measured)) if measured else (0, -1)

    def error(k: int, batch: int) -> float | None:
        if k == 0:
            return 0.0
        return held_out_error if low <= batch <= high else None

    return verdicts_of(points, error)


def concurrency_analysis(
    points: Sequence[SweepPoint],
    setup: EngineSetup,
    fit: EngineFit,
    conditional: Sequence[float],
    alpha: float,
    batches: Sequence[int],
    k_max: int,
) -> ConcurrencyAnalysis:
    """Check the step-time model fitted at one concurrency on the others, recommend k (pure)."""
    rows = validation_rows(points, setup, fit)
    grid = engine_grid(setup, fit, conditional_tokens_per_step(conditional, alpha), batches, k_max)
    held_out = held_out_summary(rows)
    measured = sorted({p.concurrency for p in points})
    return ConcurrencyAnalysis(
        fit_concurrency=fit.fit_concurrency,
        constants=fit.constants(),
        fit_rms_log_error=fit.rms_log_error,
        rows=tuple(rows),
        held_out=held_out,
        recommendation_by_batch=advice_of(grid, k_max),
        verdicts=tuple(engine_verdicts(grid, measured, held_out.max_abs_error)),
    )


def trn2_recommendation(
    profile: str,
    conditional: Sequence[float],
    alpha: float,
    batches: Sequence[int],
    context_tokens: int,
) -> Trn2Advice:
    """k per batch, precompile set and switch-off batch for a Trn2 profile, from the measured
    acceptance and the calibrated Trn2 constants."""
    from trnspec.config.images import image_spec
    from trnspec.config.serving import load_profile
    from trnspec.perf.profile_model import profile_model

    cfg = load_profile(profile)
    model = profile_model(cfg, context_tokens)
    k_max = image_spec(cfg.image).max_speculative_tokens
    # ProfileModel.grid prices k=0 as the plain server a user would deploy instead (asynchronous
    # where the speculative command schedules synchronously), as predict does
    points = model.grid(conditional_tokens_per_step(conditional, alpha), range(k_max + 1), batches)
    cal = trn2_calibration()
    verdicts = verdicts_of(
        points, lambda k, b: regime_band(cal, model, k, b, context_tokens).max_abs_error
    )
    return Trn2Advice(profile, k_max, advice_of(points, k_max), tuple(verdicts))
