"""Fit trnspec.perf.step_time on published Trn2 figures and validate it on held-out sources.

The published figures live in `trnspec/data/trn2_published.yaml` (typed by trnspec.perf.published),
each with its source, quote, date and conditions. The constants are fitted by trnspec.perf.fit
to the baselines and the speculative rows with a published acceptance length; the fit is checked
by leaving one source out at a time (trnspec.perf.validation) for the current model and the first
pass's, and both tables are stored with the constants in `trnspec/data/trn2_fit.json` (with the
sha256 of the data file: the stored fit is used only for the data it was made from).

The command is `python -m trnspec fit` (trnspec.cli.fit):

    python -m trnspec fit                  # the report (constants, residuals, held out)
    python -m trnspec fit --write          # refit after editing the data file
    python -m trnspec fit --add runs.yaml  # refit with your own rows (`tune --rows-out`)

(Not to be confused with the A/B calibration deployment, trnspec_tools.calibration, which
measures the speculative arm against plain on the user's own hardware; its rows come back here
through `--add` and `plan-deploy --measured`.)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Generic, TypeVar, cast

from trnspec.boundary.write import write_file
from trnspec.hardware.model_shapes import ModelShape
from trnspec.perf.fit import SECOND_PASS, THIRD_PASS, Fit, StepTable, fit_constants, fit_rows
from trnspec.perf.published import (
    DATA_FILE,
    Measurement,
    data_text,
    deployment_for,
    load_published,
    predicted_step_ms,
)
from trnspec.perf.step_time import TRN2, Efficiency, Hardware
from trnspec.perf.validation import (
    COVERAGE,
    GOAL_MEAN,
    GOAL_SHARE,
    REGIME_RULE,
    WITHIN,
    FoldBand,
    FoldSummary,
    HeldOutRow,
    RegimeSummary,
    fold_summaries,
    leave_one_source_out,
    published_speedup,
    regime_summaries,
    source_folds,
)

__all__ = [
    "DATA_FILE",
    "FIT_FILE",
    "Calibration",
    "Measurement",
    "load_published",
    "predicted_step_ms",
]

T = TypeVar("T")

FIT_FILE = "data/trn2_fit.json"
#: The model fitted and shipped, and the one its held-out errors are compared with.
CURRENT = THIRD_PASS
BEFORE = SECOND_PASS


@dataclass(frozen=True)
class StoredFit:
    """The fit and both validations, as stored in FIT_FILE."""

    fit: Fit
    #: Leave-one-source-out rows of the current model and of the model before it (BEFORE;
    #: `validation_before`).
    validation: tuple[HeldOutRow, ...]
    #: Computes the model before's rows when first read, then keeps them (a fit per source:
    #: plan-deploy --measured never reads them, `fit --add` prints them).
    before: Callable[[], tuple[HeldOutRow, ...]] = field(repr=False, compare=False)
    #: Every row as a calibration without its source sees it (validation.source_folds); empty
    #: when the refit skipped them (`fit --add`).
    folds: tuple[FoldBand, ...] = ()

    @property
    def validation_before(self) -> tuple[HeldOutRow, ...]:
        return self.before()


@dataclass(frozen=True)
class Calibration:
    """The published data, the fitted constants, how well they fit and how well they predict."""

    hardware: Hardware
    #: Fitted constants per serving stack (they share all but the floor and the draft-pass cost).
    efficiency: Mapping[str, Efficiency]
    measurements: tuple[Measurement, ...]
    shapes: Mapping[str, ModelShape]
    #: Fitted rows: (id, published step ms, predicted step ms).
    residuals: tuple[tuple[str, float, float], ...]
    rms_rel_error: float
    validation: tuple[HeldOutRow, ...]
    #: StoredFit.before: the model before's held-out rows, computed when first read.
    before: Callable[[], tuple[HeldOutRow, ...]] = field(repr=False, compare=False)
    source: str = field(default="")
    #: The nested source folds the bands' coverage is measured on (StoredFit.folds).
    folds: tuple[FoldBand, ...] = ()

    @property
    def validation_before(self) -> tuple[HeldOutRow, ...]:
        return self.before()


class _Deferred(Generic[T]):
    """A value computed when first called for, then kept (and the function dropped)."""

    def __init__(self, compute: Callable[[], T]) -> None:
        self._compute: Callable[[], T] | None = compute
        self._value: T | None = None

    def __call__(self) -> T:
        if self._compute is not None:
            self._value = self._compute()
            self._compute = None
        return cast(T, self._value)


def data_digest(text: str) -> str:
    """sha256 of the data file: the stored fit is only used for the data it was fitted to."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def fit_published(text: str, extra: Sequence[str] = (), folds: bool = True) -> StoredFit:
    """Fit and validate on a data file's text (plus extra rows in the same format); `folds`:
    also the nested source folds (a fit per pair of sources, the slow part). The model
    before's validation is computed when first read (StoredFit.before)."""
    measurements, shapes = load_published(text, extra)
    rows = fit_rows(measurements, CURRENT)
    # One table of predictions serves every fit below (the current model's has every column
    # the model before it fits, and the same rows when both fit speculative rows).
    table = StepTable(rows, shapes, CURRENT)
    before_table = table if table.covers(BEFORE, fit_rows(measurements, BEFORE)) else None
    fit = fit_constants(rows, shapes, CURRENT, table=table)
    validation = leave_one_source_out(measurements, shapes, CURRENT, table)
    return StoredFit(
        fit,
        validation,
        _Deferred(lambda: leave_one_source_out(measurements, shapes, BEFORE, before_table)),
        source_folds(measurements, shapes, CURRENT, validation, table) if folds else (),
    )


def fit_to_json(stored: StoredFit, digest: str) -> str:
    """The stored form (written by `python -m trnspec fit --write`)."""
    return (
        json.dumps(
            {
                "data_sha256": digest,
                "rms_rel_error": stored.fit.rms_rel_error,
                "efficiency": {g: asdict(e) for g, e in sorted(stored.fit.efficiency.items())},
                "compute_profile": [list(p) for p in stored.fit.compute_profile],
                "validation": [asdict(h) for h in stored.validation],
                "validation_before": [asdict(h) for h in stored.validation_before],
                "source_folds": [asdict(f) for f in stored.folds],
            },
            indent=2,
        )
        + "\n"
    )


def _stored_fit(digest: str) -> StoredFit | None:
    try:
        raw = resources.files("trnspec").joinpath(FIT_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    data = json.loads(raw)
    if data.get("data_sha256") != digest or "source_folds" not in data:
        return None
    before = tuple(HeldOutRow(**h) for h in data["validation_before"])
    return StoredFit(
        Fit(
            {g: Efficiency(**e) for g, e in data["efficiency"].items()},
            float(data["rms_rel_error"]),
            tuple((float(c), float(r)) for c, r in data["compute_profile"]),
        ),
        tuple(HeldOutRow(**h) for h in data["validation"]),
        lambda: before,
        tuple(FoldBand(**f) for f in data["source_folds"]),
    )


def calibration_for(
    measurements: Sequence[Measurement], shapes: Mapping[str, ModelShape], stored: StoredFit
) -> Calibration:
    eff = stored.fit.efficiency
    rows = fit_rows(measurements, CURRENT)
    residuals = tuple(
        (m.id, m.fitted_step_ms or 0.0, predicted_step_ms(m, shapes, eff[m.stack_group]))
        for m in rows
    )
    return Calibration(
        TRN2,
        eff,
        tuple(measurements),
        shapes,
        residuals,
        stored.fit.rms_rel_error,
        stored.validation,
        stored.before,
        source=f"fitted to {len(rows)} rows of trnspec/{DATA_FILE}"
        f" (RMS relative error {stored.fit.rms_rel_error:.3f})",
        folds=stored.folds,
    )


@cache
def trn2_calibration() -> Calibration:
    """The Trn2 constants for the shipped data file: the stored fit when it was made from this
    exact file (checked by sha256), else a fresh fit."""
    text = data_text()
    measurements, shapes = load_published(text)
    stored = _stored_fit(data_digest(text)) or fit_published(text)
    return calibration_for(measurements, shapes, stored)


# ------------------------------------------------------------------------------------ held out


@dataclass(frozen=True)
class Implied:
    """A speculative row without a published acceptance: the acceptance length the fitted model
    needs to reproduce its published speedup."""

    id: str
    method: str
    k: int
    batch: int
    published_speedup: float
    implied_acceptance_length: float


def implied_acceptance(cal: Calibration) -> list[Implied]:
    """Every speculative row: the acceptance length the model needs for its published speedup."""
    by_id = {m.id: m for m in cal.measurements}
    out = []
    for m in cal.measurements:
        if m.role != "speculative":
            continue
        base = by_id[m.baseline or ""]
        t_spec = predicted_step_ms(m, cal.shapes, cal.efficiency[m.stack_group], cal.hardware)
        t_base = predicted_step_ms(base, cal.shapes, cal.efficiency[base.stack_group], cal.hardware)
        pub = published_speedup(m, base)
        out.append(Implied(m.id, m.method, m.k, m.batch, pub, pub * t_spec / t_base))
    return out


def held_out_table(rows: Sequence[HeldOutRow]) -> list[str]:
    """A held-out validation as Markdown table lines."""
    lines = [
        "| id | stack | method | batch | quantity | published | predicted | error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for h in rows:
        pred = f"{h.predicted:.2f}" if h.predicted is not None else "-"
        err = f"{h.error:+.1%}" if h.error is not None else f"not predictable: {h.reason}"
        lines.append(
            f"| {h.id} | {h.stack_group} | {h.method} | {h.batch} | {h.quantity} |"
            f" {h.published:.2f} | {pred} | {err} |"
        )
    errors = [abs(h.error) for h in rows if h.error is not None]
    within = sum(e <= WITHIN for e in errors)
    lines += [
        "",
        f"{len(errors)} of {len(rows)} rows predictable; {within} of {len(errors)} within"
        f" {WITHIN:.0%}" + (f"; mean |error| {sum(errors) / len(errors):.1%}" if errors else ""),
    ]
    return lines


def _cell(r: RegimeSummary | None) -> str:
    if r is None or r.mean_abs_error is None:
        return "-"
    return f"{r.within}/{r.predicted} ({r.share_within:.0%}), {r.mean_abs_error:.0%}"


def regime_table(before: Sequence[HeldOutRow], after: Sequence[HeldOutRow]) -> list[str]:
    """Held-out accuracy per regime, before and after, as Markdown table lines."""
    b = {(r.axis, r.label): r for r in regime_summaries(before)}
    a = {(r.axis, r.label): r for r in regime_summaries(after)}
    lines = [
        f"| regime | rows | before: within {WITHIN:.0%}, mean abs error"
        f" | after: within {WITHIN:.0%}, mean abs error | goal met after |",
        "|---|---|---|---|---|",
    ]
    for key in dict.fromkeys([*b, *a]):
        r = a.get(key) or b[key]
        met = "yes" if a.get(key) and a[key].meets_goal else "no"
        lines.append(
            f"| {key[0]}: {key[1]} | {r.rows} | {_cell(b.get(key))} | {_cell(a.get(key))} | {met} |"
        )
    lines += [
        "",
        f"Goal per stack: at least {GOAL_SHARE:.0%} of held-out rows within {WITHIN:.0%} and a"
        f" mean |error| of at most {GOAL_MEAN:.0%}.",
    ]
    return lines


def _band_cell(with_band: int, inside: int, median: float | None, predicted: int) -> str:
    if not predicted:
        return "-"
    if not with_band:
        return f"no band for any of {predicted}"
    share = f"{inside}/{with_band} ({inside / with_band:.0%})"
    return f"{share} inside, +/-{median:.0%} median; {predicted - with_band} unknown"


def fold_table(folds: Sequence[FoldBand], rows: Sequence[HeldOutRow] = ()) -> list[str]:
    """How the bands held figures of sources the fit never saw, before (largest held-out error of
    the regime: validation.band_of, the rule predict printed before) and after (SOURCE_BAND_RULE,
    what predict prints), as Markdown lines; per axis range where `rows` place the folds."""
    lines = [
        f"| figures | rows | within {WITHIN:.0%} of the figure | before: inside the printed band"
        " | after: inside the printed band |",
        "|---|---|---|---|---|",
    ]
    for r in fold_summaries(folds, rows):
        lines.append(_fold_line(r))
    s = fold_summaries(folds)[0] if folds else None
    if s is not None:
        lines += [
            "",
            f"All rows after: {s.inside} of {s.with_band} figures with a band inside it"
            f" ({s.inside} of {s.predicted} of all held-out figures; the other"
            f" {s.predicted - s.with_band} printed as unknown); before: {s.inside_before} of"
            f" {s.with_band_before} ({s.inside_before} of {s.predicted}). The bands are made to"
            f" hold {COVERAGE:.0%} of figures from unseen sources.",
        ]
    return lines


def _fold_line(r: FoldSummary) -> str:
    within = f"{r.within}/{r.predicted}" if r.predicted else "-"
    return (
        f"| {r.label} | {r.rows} | {within}"
        f" | {_band_cell(r.with_band_before, r.inside_before, r.median_band_before, r.predicted)}"
        f" | {_band_cell(r.with_band, r.inside, r.median_band, r.predicted)} |"
    )


def coverage_table(cal: Calibration) -> list[str]:
    """What each stack's published rows cover: outside it every figure is an assumption."""
    lines = [
        "| stack | studies | rows | TP | batch | mean KV tokens | host vCPUs per replica |",
        "|---|---|---|---|---|---|---|",
    ]
    for g in sorted({m.stack_group for m in cal.measurements}):
        rows = [m for m in cal.measurements if m.stack_group == g]
        vcpus = sorted({deployment_for(m, cal.hardware).vcpus_per_replica for m in rows})
        lines.append(
            f"| {g} | {len({m.held_out_unit for m in rows})} | {len(rows)}"
            f" | {', '.join(str(t) for t in sorted({m.tp for m in rows}))}"
            f" | {', '.join(str(b) for b in sorted({m.batch for m in rows}))}"
            f" | {min(m.context_tokens for m in rows)}-{max(m.context_tokens for m in rows)}"
            f" | {', '.join(f'{v:g}' for v in vcpus)} |"
        )
    return lines


def report_markdown(cal: Calibration) -> str:
    """The constants, the fit residuals and both held-out tables as Markdown."""
    eff = next(iter(cal.efficiency.values()))
    lines = [
        "Fitted constants (" + cal.source + "):",
        "",
        "| constant | value |",
        "|---|---|",
        f"| HBM bandwidth efficiency | {eff.memory:.3f} |",
        f"| compute efficiency (of 667 BF16 TFLOPS per chip) | {eff.compute:.4f} |",
        f"| collective latency per hop | {eff.collective_latency_s * 1e6:.2f} us |",
        f"| host cost per sequence per step | {eff.sequence_overhead_s * 1e3:.3f} ms |",
        f"| cost per position with logits | {eff.token_overhead_s * 1e3:.3f} ms |",
        f"| attention per cached token and layer | {eff.context_token_s * 1e9:.2f} ns |",
        f"| per (positions^2 x vocab entry) | {eff.logit_pair_s * 1e12:.2f} ps |",
        f"| host share (a replica with 12 vCPUs; x 12 / vCPUs) | {eff.host_share_s * 1e3:.2f} ms |",
    ]
    lines += [
        f"| stack `{g}`: floor per step / cost per draft pass |"
        f" {e.step_overhead_s * 1e3:.2f} / {e.draft_pass_overhead_s * 1e3:.2f} ms |"
        for g, e in sorted(cal.efficiency.items())
    ]
    lines += ["", "What the published rows cover, per stack (outside it, an assumption):", ""]
    lines += coverage_table(cal)
    lines += [
        "",
        "Fit residuals (step time, ms):",
        "",
        "| id | published | model | error |",
        "|---|---|---|---|",
    ]
    for rid, pub, pred in cal.residuals:
        lines.append(f"| {rid} | {pub:.2f} | {pred:.2f} | {pred / pub - 1:+.1%} |")
    lines += ["", f"Held out, leave one source out, {BEFORE.name} (before):", ""]
    lines += held_out_table(cal.validation_before)
    lines += ["", "Held out, leave one source out, this model (after):", ""]
    lines += held_out_table(cal.validation)
    lines += ["", "Held out per regime, before and after (" + REGIME_RULE + "):", ""]
    lines += regime_table(cal.validation_before, cal.validation)
    if cal.folds:
        lines += [
            "",
            "Bands on figures of unseen sources (for each source: fit and validate without it,"
            " print the band of each of its rows, check the row against it):",
            "",
        ]
        lines += fold_table(cal.folds, cal.validation)
    lines += [
        "",
        "Speculative rows without a published acceptance (the acceptance length the fitted model"
        " needs for the published speedup):",
        "",
        "| id | method | k | batch | published speedup | acceptance the model needs |",
        "|---|---|---|---|---|---|",
    ]
    for i in implied_acceptance(cal):
        lines.append(
            f"| {i.id} | {i.method} | {i.k} | {i.batch} | {i.published_speedup:.2f}x |"
            f" {i.implied_acceptance_length:.2f} |"
        )
    return "\n".join(lines) + "\n"


def refit_with(extra: Sequence[str], folds: bool = False) -> tuple[StoredFit, Calibration, str]:
    """The shipped data plus `extra` rows (texts in the data file's format): the fit, its
    calibration and the digest of the data it was made from (`folds`: with the nested source
    folds, a fit per pair of sources, about half a minute; without them the bands are the same
    and only their measured coverage is missing). ValueError/TypeError on a bad row."""
    text = data_text()
    measurements, shapes = load_published(text, extra)
    stored = fit_published(text, extra, folds)
    return stored, calibration_for(measurements, shapes, stored), data_digest(text + "".join(extra))


def write_shipped_fit() -> Path:
    """Refit the shipped data and store it as FIT_FILE in the package (after editing the data)."""
    text = data_text()
    path = Path(str(resources.files("trnspec").joinpath(FIT_FILE)))
    write_file(path, fit_to_json(fit_published(text), data_digest(text)))
    trn2_calibration.cache_clear()
    return path
