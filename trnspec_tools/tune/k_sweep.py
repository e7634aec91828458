"""The window sweep's analysis: fit the window model to the runs, tabulate every k, recommend
one, or no speculation (pure, no I/O).

Each measured k scores its measured speedup over plain (the median of its alternated rounds,
versus_plain.py), an unmeasured one the window model's prediction (window_fit.py); ties go to
the smaller k. Plain is the reference: a window is recommended only if it measured faster than
plain beyond its spread at the level the recommendation is for, and slower at no level measured
(VersusPlain.eligible); an unmeasured k only when some measured one is. When none is, the
recommendation is no speculation (k = 0, PLAIN_OVERRIDE). `to_json()` writes the keys tune's JSON
has always held, plus the ratio to plain and the verdict.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

from trnspec.boundary.problems import ABSENT

from trnspec_tools.ab.comparison import compare
from trnspec_tools.ab.spread import Spread
from trnspec_tools.bench.options import UsageError
from trnspec_tools.bench.run_result import RunResult
from trnspec_tools.tune.versus_plain import VersusPlain
from trnspec_tools.tune.window_fit import (
    FittedModel,
    KMeasurement,
    best_k,
    fit,
    precompile_set,
)


@dataclass(frozen=True)
class KRow:
    """One window k of the table: predicted, and (where run) measured."""

    k: int
    predicted_speedup: float
    predicted_tokens_per_step: float
    #: median ratio to plain at the level analysed (None: not run, or implausible)
    measured_speedup: float | None
    #: run, but its speedup exceeds its tokens per step (the baseline ran slow)
    implausible: bool
    output_tokens_per_s: float | None
    mean_accepted_length: float | None
    acceptance_rate: float | None
    tpot_p50_ms: float | None
    #: the spread of its ratio to plain at the level analysed
    ratio_to_plain: Spread | None
    #: the levels where it measured slower than plain beyond its spread
    slower_than_plain_at: tuple[int, ...]

    def to_json(self) -> dict[str, object]:
        out = asdict(self)
        out["ratio_to_plain"] = (
            None if self.ratio_to_plain is None else self.ratio_to_plain.to_json()
        )
        out["slower_than_plain_at"] = list(self.slower_than_plain_at)
        return out


@dataclass(frozen=True)
class KRecommendation:
    """The window to deploy, or none (k = 0), and why."""

    #: the window, 0 for no speculation
    k: int
    expected_speedup: float
    predicted_speedup: float
    model_best_k: int
    best_measured_k: int
    #: the recommendation rests on a measurement (always, for no speculation)
    measured: bool
    precompile: tuple[int, ...]
    #: the level (concurrency) the recommendation is made for
    concurrency: int
    reason: str

    @property
    def speculation(self) -> bool:
        return self.k > 0

    def to_json(self) -> dict[str, object]:
        out = asdict(self)
        out["precompile"] = list(self.precompile)
        out["speculation"] = self.speculation
        return out


@dataclass(frozen=True)
class KAnalysis:
    """The fitted window model, the table of every k and the recommendation."""

    model: FittedModel
    rows: tuple[KRow, ...]
    recommendation: KRecommendation

    def fit_json(self) -> dict[str, object]:
        m = self.model
        return {
            "alpha": m.alpha,
            "conditional": list(m.conditional),
            "cost_ratio": m.cost_ratio,
            "c_per_k": m.c_per_k,
        }

    def to_json(self) -> dict[str, object]:
        return {
            "fit": self.fit_json(),
            "rows": [r.to_json() for r in self.rows],
            "recommendation": self.recommendation.to_json(),
        }


def k_measurement(k: int, run: RunResult, measured_speedup: float) -> KMeasurement:
    """What the window model fits from one run at window k (its acceptance figures)."""
    acc = run.acceptance
    if acc.mean_accepted_length is None:
        raise ValueError("only runs with acceptance figures are fitted")
    deltas = acc.spec_decode_deltas
    return KMeasurement(
        k=k,
        mean_accepted_length=acc.mean_accepted_length,
        measured_speedup=measured_speedup,
        per_position=acc.acceptance_per_position or None,
        num_drafts=deltas.num_drafts if deltas else 0,
    )


def single_round(baseline: RunResult, runs: Mapping[int, RunResult], level: int) -> VersusPlain:
    """The comparison with plain of runs measured once each (one round: no spread, no verdict)."""
    return VersusPlain(
        {k: {level: compare([baseline.as_round(0)], [r.as_round(0)])} for k, r in runs.items()}
    )


def analyse(
    baseline: RunResult,
    runs: Mapping[int, RunResult],
    k_max: int,
    versus: VersusPlain | None = None,
    level: int | None = None,
) -> KAnalysis:
    """Fit the model to the runs at one level and recommend k or none (see the module doc).
    Without `versus`, each run's ratio to the baseline run stands for one round."""
    level = baseline.concurrency if level is None else level
    versus = versus or single_round(baseline, runs, level)

    def speedup(k: int) -> float | None:
        """k's measured speedup; absent when not measured against plain or when a round could
        not be paired (e.g. above its tokens per step: trnspec_tools.ab.comparison)."""
        s = versus.at(k, level)
        return None if s is None or k not in runs else s.median

    speedups = {k: speedup(k) for k in runs}
    measurements = [
        k_measurement(k, r, s)
        for k, r in sorted(runs.items())
        if r.acceptance.mean_accepted_length is not None and (s := speedups[k]) is not None
    ]
    if not measurements:
        raise UsageError.of(
            "--k",
            ABSENT,
            "no k run produced a usable measurement (no acceptance figures, or every speedup"
            " above its tokens per step: the baseline ran slow; re-measure)",
        )
    model = fit(measurements)
    rows = tuple(
        _row(k, runs.get(k), speedups.get(k), model, versus, level)
        for k in range(1, max(k_max, *runs) + 1)
    )
    return KAnalysis(model, rows, _recommend(model, rows, k_max, versus, level))


def _row(
    k: int,
    r: RunResult | None,
    measured: float | None,
    model: FittedModel,
    versus: VersusPlain,
    level: int,
) -> KRow:
    return KRow(
        k=k,
        predicted_speedup=model.predicted_speedup(k),
        predicted_tokens_per_step=model.tokens_per_step(k),
        measured_speedup=measured,
        implausible=r is not None and versus.implausible(k, level),
        output_tokens_per_s=r.output_tokens_per_s if r else None,
        mean_accepted_length=r.acceptance.mean_accepted_length if r else None,
        acceptance_rate=r.acceptance.acceptance_rate if r else None,
        tpot_p50_ms=r.requests.tpot_ms.p50 if r else None,
        ratio_to_plain=versus.at(k, level) if r else None,
        slower_than_plain_at=tuple(versus.slower_at(k)) if r else (),
    )


def _recommend(
    model: FittedModel,
    rows: tuple[KRow, ...],
    k_max: int,
    versus: VersusPlain,
    level: int,
) -> KRecommendation:
    measured = [row for row in rows if row.measured_speedup is not None]
    best_measured = max(measured, key=lambda row: row.measured_speedup or 0.0)
    model_best = best_k(model, range(1, k_max + 1))
    eligible = [row for row in measured if row.k <= k_max and versus.eligible(row.k, level)]
    if not eligible:
        return KRecommendation(
            k=0,
            expected_speedup=1.0,
            predicted_speedup=1.0,
            model_best_k=model_best,
            best_measured_k=best_measured.k,
            measured=True,
            precompile=(),
            concurrency=level,
            reason=_why_plain(best_measured, versus, level),
        )
    # Evidence first, model for the gaps: a measured k scores its measured speedup, an
    # unmeasured one its prediction. Ties go to the smaller k (fewer wasted drafts).
    candidates = [row for row in rows if row.k <= k_max and row.ratio_to_plain is None]
    candidates += eligible
    best = max(
        candidates,
        key=lambda row: (round(row.measured_speedup or row.predicted_speedup, 9), -row.k),
    )
    return KRecommendation(
        k=best.k,
        expected_speedup=best.measured_speedup or best.predicted_speedup,
        predicted_speedup=best.predicted_speedup,
        model_best_k=model_best,
        best_measured_k=best_measured.k,
        measured=best.measured_speedup is not None,
        precompile=tuple(precompile_set(best.k, k_max)),
        concurrency=level,
        reason=(
            f"k={best.k} measured faster than plain beyond its spread at concurrency {level}"
            if best.measured_speedup is not None
            else f"predicted from the windows that measured faster than plain at concurrency"
            f" {level}; confirm with a run"
        ),
    )


def _why_plain(best: KRow, versus: VersusPlain, level: int) -> str:
    s = best.ratio_to_plain
    shown = s.text() if s is not None else f"{best.measured_speedup:.2f}x"
    slower = best.slower_than_plain_at
    if versus.beats_plain(best.k, level) and slower:
        return (
            f"k={best.k} measured {shown} of plain at concurrency {level} but slower than plain"
            f" at concurrency {', '.join(map(str, slower))}; no window is faster everywhere"
            " measured (tune --schedule measures one k per band)"
        )
    return (
        f"no window measured faster than plain beyond its spread at concurrency {level}"
        f" (best: k={best.k} at {shown} of plain)"
    )
