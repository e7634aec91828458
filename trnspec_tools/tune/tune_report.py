"""tune's result, typed, and how it is written: the JSON, the Markdown summary and the plots.

`TuneReport` holds every analysis of one window sweep (k_sweep.KAnalysis, the step-time
analyses of engine_analysis.py, the Trn2 rows written) and the runs behind them; `to_json()`
writes the keys tune's `--out` JSON has always held (plus the alternated rounds and each window's
ratio to plain), `markdown()` the human summary. Plots are drawn on bare matplotlib Figures and
written through bench.report.save_figure (the one atomic writer).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from trnspec.plan.batch_verdicts import undecided_batches, verdicts_text

from trnspec_tools.bench.report import LEGEND_OUTSIDE, save_figure
from trnspec_tools.bench.run_result import RunResult
from trnspec_tools.tune.alternated import SweepRuns
from trnspec_tools.tune.engine_analysis import (
    NO_ACCEPTANCE,
    BatchAdvice,
    CategoryAcceptance,
    ConcurrencyAnalysis,
    Trn2Advice,
    ValidationRow,
)
from trnspec_tools.tune.k_sweep import KAnalysis, KRow


@dataclass(frozen=True)
class RowsWritten:
    """--rows-out: where the data-file rows went, how many, and the runs left out."""

    path: str
    rows: int
    skipped: Sequence[str]

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "rows": self.rows, "skipped": list(self.skipped)}


@dataclass(frozen=True)
class Override:
    """The override line the recommendation turns into, where it is written, and the config
    layer's verdict on it for the profile ("ok" or the problems)."""

    line: str
    path: str
    check: str


@dataclass(frozen=True)
class TuneReport:
    """One window sweep: the analyses, the runs behind them and the host's load."""

    analysis: KAnalysis
    override: Override
    measured: SweepRuns
    levels: Sequence[int]
    fit_concurrency: int
    concurrency: ConcurrencyAnalysis | str
    trn2: Trn2Advice | str | None
    categories: Mapping[str, CategoryAcceptance | None] | None
    acceptance_source: str
    load_average: str
    load_average_after: str
    trn2_rows: RowsWritten | None

    @property
    def baseline(self) -> RunResult:
        return self.measured.baseline[self.fit_concurrency].result

    def to_json(self) -> dict[str, object]:
        m, c = self.measured, self.fit_concurrency
        rec = {
            **self.analysis.recommendation.to_json(),
            "override": self.override.line,
            "override_file": self.override.path,
            "override_check": self.override.check,
        }
        cv = self.concurrency
        result: dict[str, object] = {
            **self.analysis.to_json(),
            "recommendation": rec,
            "baseline": m.baseline[c].to_json(),
            "runs": {str(k): by_c[c].to_json() for k, by_c in m.runs.items()},
            "fit_concurrency": c,
            "by_concurrency": {
                str(level): {
                    "baseline": m.baseline[level].to_json(),
                    "runs": {str(k): by_c[level].to_json() for k, by_c in m.runs.items()},
                }
                for level in self.levels
            },
            "concurrency_validation": cv if isinstance(cv, str) else cv.to_json(),
            "trn2": self.trn2
            if self.trn2 is None or isinstance(self.trn2, str)
            else self.trn2.to_json(),
            "categories": None
            if self.categories is None
            else {
                cat: NO_ACCEPTANCE if entry is None else entry.to_json()
                for cat, entry in self.categories.items()
            },
            "acceptance_source": self.acceptance_source,
            "load_average": self.load_average,
            "load_average_after": self.load_average_after,
            "rounds": m.rounds_json(),
        }
        if isinstance(cv, ConcurrencyAnalysis):
            result["rows_by_concurrency"] = cv.rows_json()
        if self.trn2_rows is not None:
            result["trn2_rows"] = self.trn2_rows.to_json()
        return result

    def markdown(self) -> str:
        return k_sweep_markdown(self) + concurrency_markdown(self)


def _f(value: object, fmt: str = "{:.1f}") -> str:
    return fmt.format(value) if isinstance(value, int | float) else "-"


def k_sweep_markdown(report: TuneReport) -> str:
    """The window sweep: the fit, the table of every k and the recommendation."""
    fit = report.analysis.model
    base = report.baseline
    lines = [
        "# Window (k) sweep",
        "",
        f"- baseline: {_f(base.output_tokens_per_s)} output tokens/s"
        f" (TPOT p50 {_f(base.requests.tpot_ms.p50)} ms)",
        f"- fitted acceptance alpha = {fit.alpha:.3f}; per position (conditional) ="
        f" {', '.join(f'{a:.3f}' for a in fit.conditional) or '-'}",
        f"- fitted draft/target cost ratio c = {fit.cost_ratio:.3f}"
        f" (per k: {', '.join(f'k={k}: {c:.3f}' for k, c in fit.c_per_k.items())})",
        f"- acceptance source: {report.acceptance_source or None}",
        f"- host load at start: {report.load_average or '-'}",
        "",
        "| k | measured out tok/s | measured speedup | predicted speedup | mean acc. len"
        " | accept. rate | TPOT p50 ms |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in report.analysis.rows:
        lines.append(
            f"| {r.k} | {_f(r.output_tokens_per_s)} "
            f"| {_f(r.measured_speedup, '{:.2f}x')} "
            f"| {_f(r.predicted_speedup, '{:.2f}x')} "
            f"| {_f(r.mean_accepted_length, '{:.2f}')} "
            f"| {_f(r.acceptance_rate, '{:.3f}')} | {_f(r.tpot_p50_ms)} |"
        )
    rec, o = report.analysis.recommendation, report.override
    if not rec.speculation:
        lines += [
            "",
            f"**Recommended: no speculation** ({rec.reason}; model optimum k ="
            f" {rec.model_best_k}, best measured k = {rec.best_measured_k})."
            f" Override line written to `{o.path}`: `{o.line}`",
        ]
        return "\n".join(lines) + "\n"
    lines += [
        "",
        f"**Recommended k = {rec.k}** ({rec.expected_speedup:.2f}x,"
        f" {'measured' if rec.measured else 'predicted, not measured: confirm with a run'};"
        f" model optimum k = {rec.model_best_k}, best measured k = {rec.best_measured_k})."
        " Override line written to"
        f" `{o.path}`: `{o.line}`",
        "",
        f"Trn2: k is compiled into the Neuron graph; precompile k in {list(rec.precompile)}"
        " (the best and its neighbours) and cache the artifacts, so a drift in acceptance can be"
        " followed without a fresh compile.",
    ]
    return "\n".join(lines) + "\n"


def concurrency_markdown(report: TuneReport) -> str:
    """The step-time model across concurrency, and k per batch here, on Trn2 and per category."""
    cv = report.concurrency
    lines = ["", "## Speedup across concurrency (step-time model)", ""]
    if isinstance(cv, str):
        lines.append(f"Not run: {cv}")
        return "\n".join(lines) + "\n"
    ho = cv.held_out
    lines += [
        f"Fitted at concurrency {cv.fit_concurrency} (RMS log error of step time"
        f" {cv.fit_rms_log_error:.3f}); held out: {ho.rows} rows,"
        + (
            f" mean |error| {ho.mean_abs_error:.1%}, max {ho.max_abs_error:.1%},"
            f" {ho.within_15pct} of {ho.rows} within 15 %."
            if ho.rows
            else " none."
        )
        + (
            f" {ho.implausible_rows} held-out row(s) left out: measured speedup above the"
            " tokens per step, i.e. the baseline at that concurrency ran slow (re-measure)."
            if ho.implausible_rows
            else ""
        ),
        "",
        "| concurrency | k | mean acc. len | measured speedup | predicted speedup | error |"
        " used for fit |",
        "|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for r in cv.rows:
        lines.append(
            f"| {r.concurrency} | {r.k} | {r.mean_accepted_length:.2f}"
            f" | {r.measured_speedup:.2f}x | {r.predicted_speedup:.2f}x"
            f" | {r.error:+.1%}{' (implausible)' if r.implausible else ''}"
            f" | {'yes' if r.used_for_fit else 'no'} |"
        )
    lines += [
        "",
        "Recommended k per batch on this engine: " + _by_batch(cv.recommendation_by_batch),
        "How sure (the best k's speedup within the largest held-out error; a batch outside the"
        " measured concurrencies has no band): " + verdicts_text(cv.verdicts),
    ]
    if unsure := undecided_batches(cv.verdicts):
        lines.append(
            f"Undecided at batch {unsure}: measure these concurrencies (tune"
            " --schedule) before choosing k there"
        )
    if isinstance(report.trn2, Trn2Advice):
        lines += [
            "",
            f"On Trn2 ({report.trn2.profile}) with this acceptance: "
            + _by_batch(report.trn2.advice),
            "How sure (the best k's speedup with both error bands against it, then for it): "
            + verdicts_text(report.trn2.verdicts),
        ]
        if unsure := undecided_batches(report.trn2.verdicts):
            lines.append(
                f"Undecided at batch {unsure}: measure on Trn2 before choosing"
                " (plan-deploy's calibration, or tune --schedule against the endpoint)"
            )
    for cat, entry in (report.categories or {}).items():
        if entry is not None and entry.recommendation_by_batch is not None:
            lines.append(
                f"- category {cat} (alpha {entry.alpha:.3f}): "
                + _by_batch(entry.recommendation_by_batch)
            )
    return "\n".join(lines) + "\n"


def _by_batch(advice: BatchAdvice) -> str:
    best = ", ".join(f"{b}: k={k}" for b, (k, _) in advice.best_k_per_batch.items())
    stop = advice.disable_speculation_at_batch
    tail = (
        f"; switch speculation off from batch {stop}"
        if stop
        else "; speculation pays at every batch"
    )
    return f"{best}{tail}; precompile k in {list(advice.precompile)}"


def plot_k_sweep(rows: Sequence[KRow], path: Path) -> Path:
    """Predicted vs measured speedup per k."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    meas = [r for r in rows if r.measured_speedup is not None]
    ax.plot(
        [r.k for r in rows],
        [r.predicted_speedup for r in rows],
        marker=".",
        label="predicted (fitted model)",
    )
    ax.plot([r.k for r in meas], [r.measured_speedup for r in meas], "o", label="measured")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xlabel("k (num_speculative_tokens)")
    ax.set_ylabel("speedup vs baseline (output tokens/s)")
    ax.set_title("Window size sweep")
    ax.grid(True, alpha=0.3)
    ax.legend(**LEGEND_OUTSIDE)
    save_figure(fig, path)
    return path


def plot_concurrency(rows: Sequence[ValidationRow], path: Path) -> Path:
    """Predicted against measured speedup, fit rows and held-out rows apart."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 5))
    ax = fig.subplots()
    for used, marker, label in ((True, "o", "used for the fit"), (False, "s", "held out")):
        sel = [r for r in rows if r.used_for_fit is used]
        ax.scatter(
            [r.measured_speedup for r in sel],
            [r.predicted_speedup for r in sel],
            marker=marker,
            label=label,
        )
        for r in sel:
            ax.annotate(
                f"c={r.concurrency},k={r.k}",
                (r.measured_speedup, r.predicted_speedup),
                fontsize=6,
            )
    values = [r.measured_speedup for r in rows] + [r.predicted_speedup for r in rows]
    lo, hi = min(values) * 0.9, max(values) * 1.1
    ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8)
    ax.plot([lo, hi], [lo * 1.15, hi * 1.15], color="grey", lw=0.5, ls="--")
    ax.plot([lo, hi], [lo * 0.85, hi * 0.85], color="grey", lw=0.5, ls="--")
    ax.set_xlabel("measured speedup")
    ax.set_ylabel("predicted speedup (step-time model)")
    ax.set_title("Speedup across concurrency: predicted vs measured (+-15 %)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, **LEGEND_OUTSIDE)
    save_figure(fig, path)
    return path
