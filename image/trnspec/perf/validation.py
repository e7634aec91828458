"""Leave-one-source-out validation of the Trn2 fit, and the error bands predict prints.

The rule, fixed before any fit: for each study (a published page or file pinned to a commit, or
a measurement campaign that spans several files: Measurement.held_out_unit), fit the constants
on every fittable row of the *other* studies (trnspec.perf.fit.fit_rows) and predict that
study's rows: a baseline's step time, and a speculative row's speedup from its own published
acceptance length (speedup = acceptance length x predicted step of its published baseline, on
the baseline's own stack / predicted speculative step). A row whose stack has no row left in the
fit cannot be predicted (its floor is unknown): it is listed with that reason, never filled in.
Speculative rows without a published acceptance are not predictions; calibrate reports the
acceptance they imply. The regimes the errors are reported and banded by are fixed below
(REGIME_RULE), before any fit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from trnspec.hardware.model_shapes import ModelShape
from trnspec.perf.fit import ModelTerms, StepTable, fit_constants, fit_rows
from trnspec.perf.published import Measurement, predicted_step_ms
from trnspec.perf.step_time import Efficiency, weight_elements_read


@dataclass(frozen=True)
class HeldOutRow:
    """One row predicted by a fit that did not see its source."""

    id: str
    source: str
    stack_group: str
    method: str
    batch: int
    #: "step_ms" (a baseline) or "speedup" (a speculative row).
    quantity: str
    published: float
    predicted: float | None
    reason: str = ""
    #: The row's regime coordinates (see REGIME_RULE): TP, mean KV tokens, billions of
    #: parameters a step reads.
    tp: int = 0
    context_tokens: int = 0
    model_params_b: float = 0.0

    @property
    def error(self) -> float | None:
        return None if self.predicted is None else self.predicted / self.published - 1.0


def published_speedup(m: Measurement, base: Measurement) -> float:
    """Throughput ratio when both throughputs are published, else the TPOT ratio."""
    if m.output_tokens_per_s and base.output_tokens_per_s:
        return m.output_tokens_per_s / base.output_tokens_per_s
    if m.tpot_ms and base.tpot_ms:
        return base.tpot_ms / m.tpot_ms
    raise ValueError(f"{m.id}: no comparable throughput or TPOT with {base.id}")


def leave_one_source_out(
    measurements: Sequence[Measurement], shapes: Mapping[str, ModelShape], terms: ModelTerms
) -> tuple[HeldOutRow, ...]:
    """Every predictable row, each predicted by the fit without its source (see the module)."""
    by_id = {m.id: m for m in measurements}
    fittable = fit_rows(measurements, terms)
    table = StepTable(fittable, shapes, terms)
    sources = list(dict.fromkeys(m.held_out_unit for m in measurements))
    out: list[HeldOutRow] = []
    for source in sources:
        train = [m for m in fittable if m.held_out_unit != source]
        effs = fit_constants(train, shapes, terms, table=table).efficiency if train else {}
        out.extend(
            _held_out_row(m, source, by_id, effs, shapes)
            for m in measurements
            if m.held_out_unit == source
            and not (m.role == "speculative" and m.acceptance_length is None)
        )
    return tuple(out)


def _held_out_row(
    m: Measurement,
    source: str,
    by_id: Mapping[str, Measurement],
    effs: Mapping[str, Efficiency],
    shapes: Mapping[str, ModelShape],
) -> HeldOutRow:
    """`m` predicted with the constants `effs` fitted without `source`: a baseline's step time,
    or a speculative row's speedup over its published baseline; `reason` says why not."""
    eff = effs.get(m.stack_group)
    reason = "" if eff else f"no row of stack {m.stack_group!r} left in the fit"
    where = _coordinates(m, shapes)
    pred: float | None = None
    if m.role == "baseline":
        if eff:
            pred = predicted_step_ms(m, shapes, eff)
        quantity, published = "step_ms", m.published_step_ms
    else:
        base = by_id[m.baseline or ""]
        base_eff = effs.get(base.stack_group)
        if eff and not base_eff:
            reason = f"no row of stack {base.stack_group!r} left in the fit"
        if eff and base_eff and m.acceptance_length is not None:
            t_base = predicted_step_ms(base, shapes, base_eff)
            pred = m.acceptance_length * t_base / predicted_step_ms(m, shapes, eff)
        quantity, published = "speedup", published_speedup(m, base)
    return HeldOutRow(
        m.id, source, m.stack_group, m.method, m.batch, quantity, published, pred, reason, *where
    )


def _coordinates(m: Measurement, shapes: Mapping[str, ModelShape]) -> tuple[int, int, float]:
    return m.tp, m.context_tokens, round(weight_elements_read(shapes[m.target.lower()]) / 1e9, 2)


# ------------------------------------------------------------------------------------ regimes
#
# REGIME_RULE: fixed before any fit and used both for the reported tables and for the band a query
# gets: a regime is a stack group, plain or speculative (by method), and one range on each of four
# axes. The ranges are wide on purpose: the published data is thin, and a band made of one row
# says little.

#: (lowest, highest) ranges per axis, in order; the last range of each is open. A value belongs
#: to the last range whose lowest value it reaches (range_of).
OPEN = float("inf")
TP_RANGES: tuple[tuple[float, float], ...] = ((1, 4), (5, 16), (17, OPEN))
BATCH_RANGES: tuple[tuple[float, float], ...] = ((1, 1), (2, 4), (5, OPEN))
CONTEXT_RANGES: tuple[tuple[float, float], ...] = ((0, 1023), (1024, 8191), (8192, OPEN))
#: Billions of parameters a decode step reads (a mixture of experts counts its active ones).
SIZE_RANGES: tuple[tuple[float, float], ...] = ((0, 9.99), (10, 39.99), (40, OPEN))

AXES: dict[str, tuple[tuple[float, float], ...]] = {
    "tp": TP_RANGES,
    "batch": BATCH_RANGES,
    "context": CONTEXT_RANGES,
    "size": SIZE_RANGES,
}
AXIS_NAMES = {
    "tp": "tensor parallel size",
    "batch": "batch",
    "context": "context (mean KV tokens)",
    "size": "model size (billion parameters read per step)",
}
#: The rule in words, as the report and the docs print it.
REGIME_RULE = (
    "a regime is a stack group, plain decoding or one speculative method, and one range on each"
    " axis: TP 1-4 / 5-16 / 17+; batch 1 / 2-4 / 5+; mean KV tokens 0-1023 / 1024-8191 / 8192+;"
    " billions of parameters a step reads 0-10 / 10-40 / 40+. A query's band is the largest"
    " held-out |error| of the rows of its stack and kind in its ranges, over the axes some such"
    " row covers; on the others the query is outside the data."
)
#: What a reader can expect: per stack, this share of held-out rows within WITHIN...
GOAL_SHARE = 0.60
WITHIN = 0.25
#: ... and a mean |error| at most this.
GOAL_MEAN = 0.25


def range_of(axis: str, value: float) -> tuple[float, float]:
    """The range of `axis` holding `value` (REGIME_RULE): the last whose lowest value is at most
    `value`, so the ranges cover the axis without gaps (a range's top is for display)."""
    ranges = AXES[axis]
    return next((r for r in reversed(ranges) if r[0] <= value), ranges[0])


def describe_range(axis: str, r: tuple[float, float]) -> str:
    lo, hi = r
    if hi == OPEN:
        return f"{AXIS_NAMES[axis]} >= {lo:g}"
    if lo == hi:
        return f"{AXIS_NAMES[axis]} {lo:g}"
    return f"{AXIS_NAMES[axis]} {lo:g}-{hi:g}"


def kind_of(method: str) -> str:
    """Plain decoding or the speculative method (the regimes do not mix them)."""
    return "none" if method in ("none", "") else method


@dataclass(frozen=True)
class Coordinates:
    """Where a figure sits: its stack, its kind and its value on each axis."""

    stack_group: str
    method: str
    tp: int
    batch: int
    context_tokens: int
    model_params_b: float

    def value(self, axis: str) -> float:
        return {
            "tp": self.tp,
            "batch": self.batch,
            "context": self.context_tokens,
            "size": self.model_params_b,
        }[axis]


def coordinates(h: HeldOutRow) -> Coordinates:
    return Coordinates(
        h.stack_group, kind_of(h.method), h.tp, h.batch, h.context_tokens, h.model_params_b
    )


@dataclass(frozen=True)
class ErrorBand:
    """The held-out error of a query's regime: the largest |error| of the held-out rows of its
    stack and kind that share its range on every axis the data covers."""

    stack_group: str
    method: str
    #: The ranges the band's rows share with the query (axis, range).
    ranges: tuple[tuple[str, tuple[float, float]], ...]
    #: Largest |relative error| of those rows (None: no predictable held-out row).
    max_abs_error: float | None
    rows: int
    #: Rows of the regime the validation could not predict (their ids).
    unpredicted: tuple[str, ...]
    #: Axes on which no published row of the stack and kind lies in the query's range.
    outside: tuple[str, ...] = ()

    @property
    def batches(self) -> tuple[float, float] | None:
        return dict(self.ranges).get("batch")

    @property
    def extrapolated(self) -> bool:
        """The query lies outside the data on some axis: the band does not cover that axis, so
        a caller deciding on it should treat the figure as unvalidated there."""
        return bool(self.outside)

    def describe(self) -> str:
        spans = ", ".join(describe_range(a, r) for a, r in self.ranges)
        where = f"{self.stack_group}, {self.method}" + (f", {spans}" if spans else "")
        if self.max_abs_error is None:
            return f"no held-out error for {where}: no published row could be predicted there"
        rows = f"{self.rows} row" + ("s" if self.rows != 1 else "")
        out = (
            "; outside the data in "
            + ", ".join(AXIS_NAMES[a] for a in self.outside)
            + " (an extrapolation the band does not cover)"
            if self.outside
            else ""
        )
        return f"+/-{self.max_abs_error:.0%} (max held-out error of {rows}: {where}){out}"


def band_of(
    rows: Sequence[HeldOutRow], query: Coordinates, axes: Sequence[str] = tuple(AXES)
) -> ErrorBand:
    """The band of `query`'s regime from held-out `rows` (the rule above), on `axes` (an axis left
    out matches any range)."""
    same = [
        h for h in rows if h.stack_group == query.stack_group and kind_of(h.method) == query.method
    ]
    covered: list[tuple[str, tuple[float, float]]] = []
    outside: list[str] = []
    for axis in axes:
        r = range_of(axis, query.value(axis))
        if any(range_of(axis, coordinates(h).value(axis)) == r for h in same):
            covered.append((axis, r))
        else:
            outside.append(axis)
    match = [h for h in same if all(range_of(a, coordinates(h).value(a)) == r for a, r in covered)]
    errors = [abs(h.error) for h in match if h.error is not None]
    return ErrorBand(
        query.stack_group,
        query.method,
        tuple(covered),
        max(errors) if errors else None,
        len(errors),
        tuple(h.id for h in match if h.error is None),
        tuple(outside),
    )


def error_band(
    rows: Sequence[HeldOutRow],
    stack_group: str,
    method: str,
    batch: int,
    tp: int | None = None,
    context_tokens: int | None = None,
    model_params_b: float | None = None,
) -> ErrorBand:
    """The band of a figure of `stack_group` and `method` ('none': plain decoding) at `batch`,
    TP, context and model size; an axis not given is left out of the regime."""
    given = {"tp": tp, "batch": batch, "context": context_tokens, "size": model_params_b}
    query = Coordinates(
        stack_group, kind_of(method), tp or 1, batch, context_tokens or 0, model_params_b or 0.0
    )
    return band_of(rows, query, [a for a, v in given.items() if v is not None])


# ------------------------------------------------------------------------------------ tables


@dataclass(frozen=True)
class RegimeSummary:
    """Held-out accuracy of the rows in one range of one axis (or one stack)."""

    axis: str
    label: str
    rows: int
    predicted: int
    within: int
    mean_abs_error: float | None

    @property
    def share_within(self) -> float | None:
        return self.within / self.predicted if self.predicted else None

    @property
    def meets_goal(self) -> bool:
        return (
            self.mean_abs_error is not None
            and (self.share_within or 0.0) >= GOAL_SHARE
            and self.mean_abs_error <= GOAL_MEAN
        )


def _summary(axis: str, label: str, rows: Sequence[HeldOutRow]) -> RegimeSummary:
    errors = [abs(h.error) for h in rows if h.error is not None]
    return RegimeSummary(
        axis,
        label,
        len(rows),
        len(errors),
        sum(e <= WITHIN for e in errors),
        sum(errors) / len(errors) if errors else None,
    )


def regime_summaries(rows: Sequence[HeldOutRow]) -> list[RegimeSummary]:
    """Per stack, per kind (plain / each method), then per range of each axis, over all rows."""
    out = [_summary("all", "all rows", rows)]
    for g in sorted({h.stack_group for h in rows}):
        out.append(_summary("stack", g, [h for h in rows if h.stack_group == g]))
    for k in sorted({kind_of(h.method) for h in rows}):
        out.append(_summary("method", k, [h for h in rows if kind_of(h.method) == k]))
    for axis, ranges in AXES.items():
        for r in ranges:
            same = [h for h in rows if range_of(axis, coordinates(h).value(axis)) == r]
            if same:
                out.append(_summary(axis, describe_range(axis, r), same))
    return out
