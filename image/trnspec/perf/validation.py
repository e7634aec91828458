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

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

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
    #: Axes (REGIME_RULE) on which no row of the row's stack in the fit's sources lies in the
    #: row's range: 0 when the fold interpolates, more the further it extrapolates.
    depth: int = 0

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


def predictable(m: Measurement) -> bool:
    """A row the validation predicts: a baseline, or a speculative row with a published
    acceptance length."""
    return not (m.role == "speculative" and m.acceptance_length is None)


def leave_one_source_out(
    measurements: Sequence[Measurement],
    shapes: Mapping[str, ModelShape],
    terms: ModelTerms,
    table: StepTable | None = None,
) -> tuple[HeldOutRow, ...]:
    """Every predictable row, each predicted by the fit without its source (see the module);
    `table`, when given, holds the predictions of a superset of the fittable rows."""
    by_id = {m.id: m for m in measurements}
    fittable = fit_rows(measurements, terms)
    if table is None:
        table = StepTable(fittable, shapes, terms)
    sources = list(dict.fromkeys(m.held_out_unit for m in measurements))
    out: list[HeldOutRow] = []
    for source in sources:
        train = [m for m in fittable if m.held_out_unit != source]
        effs = fit_constants(train, shapes, terms, table=table).efficiency if train else {}
        seen = [m for m in measurements if m.held_out_unit != source and predictable(m)]
        out.extend(
            replace(
                _held_out_row(m, source, by_id, effs, shapes),
                depth=_fold_depth(m, seen, shapes),
            )
            for m in measurements
            if m.held_out_unit == source and predictable(m)
        )
    return tuple(out)


def _fold_depth(
    m: Measurement, seen: Sequence[Measurement], shapes: Mapping[str, ModelShape]
) -> int:
    """The axes on which no predictable row of `m`'s stack among `seen` lies in `m`'s range."""
    tp, context, size = _coordinates(m, shapes)
    mine = {"tp": tp, "batch": m.batch, "context": context, "size": size}
    stack = [(*_coordinates(s, shapes), s.batch) for s in seen if s.stack_group == m.stack_group]
    values = {
        "tp": [c[0] for c in stack],
        "batch": [c[3] for c in stack],
        "context": [c[1] for c in stack],
        "size": [c[2] for c in stack],
    }
    return sum(
        all(range_of(axis, v) != range_of(axis, mine[axis]) for v in values[axis]) for axis in AXES
    )


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
    " billions of parameters a step reads 0-10 / 10-40 / 40+. On an axis where no row of its"
    " stack lies in its range, a query is outside the data."
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
    """The held-out error band of a query's regime.

    Two rules fill it. `source_band` (`pool` set; what predict and plan-deploy print): the
    COVERAGE quantile of the held-out errors from unseen sources (split-conformal), see its
    docstring. `band_of` (the earlier rule, kept as the "before" of the source folds): the
    largest |error| of the held-out rows of the query's stack and kind that share its range on
    every axis the data covers."""

    stack_group: str
    method: str
    #: The ranges the band's rows share with the query (axis, range).
    ranges: tuple[tuple[str, tuple[float, float]], ...]
    #: The band's half-width as a relative error: the largest held-out |error| (band_of) or the
    #: quantile of the held-out |errors| (source_band); None: no band, the figure is unknown.
    max_abs_error: float | None
    rows: int
    #: Rows of the regime the validation could not predict (their ids).
    unpredicted: tuple[str, ...]
    #: Axes on which no published row of the stack (and kind, for band_of) lies in the query's
    #: range.
    outside: tuple[str, ...] = ()
    #: source_band only: which held-out errors the band is made of (POOLS), "" for band_of.
    pool: str = ""
    #: source_band only: how many of those the band covers: the k-th smallest |error| of n.
    rank: int = 0
    #: How often bands of this kind held figures of sources the fit never saw
    #: (inside, with a band), from the nested source folds; None where not measured.
    held: tuple[int, int] | None = None

    @property
    def half_width(self) -> float | None:
        """The band is +/- this relative error around the figure (None: unknown)."""
        return self.max_abs_error

    @property
    def batches(self) -> tuple[float, float] | None:
        return dict(self.ranges).get("batch")

    @property
    def extrapolated(self) -> bool:
        """The query lies outside the data on some axis: the band does not cover that axis, so
        a caller deciding on it should treat the figure as unvalidated there."""
        return bool(self.outside)

    def describe(self) -> str:
        if self.pool:
            return self._describe_source_band()
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

    def _describe_source_band(self) -> str:
        where = f"{self.stack_group}, {self.method}"
        out = (
            "; outside the data in " + ", ".join(AXIS_NAMES[a] for a in self.outside)
            if self.outside
            else ""
        )
        if self.max_abs_error is None:
            return (
                f"unknown for {where}{out}: too few held-out figures from unseen sources"
                f" extrapolate this far ({self.rows} in the widest pool, {_min_rows()} needed);"
                " measure it"
            )
        held = (
            f"; bands of this kind held {self.held[0]} of {self.held[1]} figures of unseen sources"
            if self.held
            else ""
        )
        return (
            f"+/-{self.max_abs_error:.0%} ({ordinal(self.rank)} smallest of {self.rows} held-out"
            f" errors from unseen sources, {self.pool}: {where}){out}{held}"
        )


def split_axes(
    rows: Sequence[HeldOutRow], query: Coordinates, axes: Sequence[str]
) -> tuple[list[tuple[str, tuple[float, float]]], list[str]]:
    """`axes` split by `rows`: those on which some row lies in the query's range (with that
    range), and those on which none does (the query is outside the data there)."""
    covered: list[tuple[str, tuple[float, float]]] = []
    outside: list[str] = []
    for axis in axes:
        r = range_of(axis, query.value(axis))
        if any(range_of(axis, coordinates(h).value(axis)) == r for h in rows):
            covered.append((axis, r))
        else:
            outside.append(axis)
    return covered, outside


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, 21st, 22nd, ..."""
    suffix = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def band_of(
    rows: Sequence[HeldOutRow], query: Coordinates, axes: Sequence[str] = tuple(AXES)
) -> ErrorBand:
    """The band of `query`'s regime from held-out `rows` (the rule above), on `axes` (an axis left
    out matches any range)."""
    same = [
        h for h in rows if h.stack_group == query.stack_group and kind_of(h.method) == query.method
    ]
    covered, outside = split_axes(same, query, axes)
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


# ------------------------------------------------------------------------- bands from sources
#
# SOURCE_BAND_RULE, fixed before looking at its coverage: a figure's band is the
# COVERAGE quantile of held-out errors, each predicted by a fit that never saw the row's source,
# taken split-conformally (the ceil(COVERAGE x (n + 1))-th smallest of n |errors|, so that a new
# figure exchangeable with them falls inside at least COVERAGE of the time). The errors are those
# of rows that extrapolated at least as far as the query does: a query outside the data on d
# axes uses rows whose fold extrapolated on d axes or more (a query inside the data, every row).
# The pool is the narrowest of POOLS with enough rows for the quantile; where none has, the
# figure is unknown (no band: measure it).

#: The share of figures from unseen sources a band is made to hold.
COVERAGE = 0.80
#: The pools tried in order, narrowest first.
POOLS = (
    "its regime (stack, method and ranges)",
    "its stack and method",
    "every stack",
)
PLAIN, SPECULATIVE = "plain", "speculative"


def _min_rows() -> int:
    """The fewest errors a COVERAGE quantile can be taken from (ceil(COVERAGE (n + 1)) <= n)."""
    n = 1
    while math.ceil(COVERAGE * (n + 1)) > n:
        n += 1
    return n


def conformal_rank(n: int) -> int | None:
    """The rank (1-based) of the |error| that is the COVERAGE band of n held-out errors, or None
    when n is too few."""
    k = math.ceil(COVERAGE * (n + 1) - 1e-9)
    return k if k <= n else None


def kind_class(method: str) -> str:
    """Plain decoding (a step time is predicted) or speculative (a speedup is)."""
    return PLAIN if kind_of(method) == "none" else SPECULATIVE


def _as_far(h: HeldOutRow, depth: int) -> bool:
    """`h`'s fold extrapolated at least as far as a query at `depth` does."""
    return h.depth >= depth


def source_band(
    rows: Sequence[HeldOutRow], query: Coordinates, axes: Sequence[str] = tuple(AXES)
) -> ErrorBand:
    """The band of `query` by SOURCE_BAND_RULE from held-out `rows` (an axis not in `axes`
    matches any range). The query's depth is the number of axes on which no row of its stack
    lies in its range; a stack without rows is unknown."""
    stack = [h for h in rows if h.stack_group == query.stack_group]
    covered, outside = split_axes(stack, query, axes)
    depth = len(outside) if stack else len(AXES)
    kind = [h for h in stack if kind_of(h.method) == query.method]
    regime = [h for h in kind if all(range_of(a, coordinates(h).value(a)) == r for a, r in covered)]
    every = [h for h in rows if kind_class(h.method) == kind_class(query.method)]
    pools = (regime, kind, every) if stack else ([], [], [])
    widest = 0
    for name, pool in zip(POOLS, pools, strict=True):
        errors = sorted(abs(h.error) for h in pool if h.error is not None and _as_far(h, depth))
        widest = max(widest, len(errors))
        rank = conformal_rank(len(errors))
        if rank is not None:
            return ErrorBand(
                query.stack_group,
                query.method,
                tuple(covered),
                errors[rank - 1],
                len(errors),
                tuple(h.id for h in regime if h.error is None),
                tuple(outside),
                pool=name,
                rank=rank,
            )
    return ErrorBand(
        query.stack_group,
        query.method,
        tuple(covered),
        None,
        widest,
        tuple(h.id for h in regime if h.error is None),
        tuple(outside) if stack else tuple(axes),
        pool=POOLS[-1],
    )


def source_error_band(
    rows: Sequence[HeldOutRow],
    stack_group: str,
    method: str,
    batch: int,
    tp: int | None = None,
    context_tokens: int | None = None,
    model_params_b: float | None = None,
) -> ErrorBand:
    """The band of a figure of `stack_group` and `method` ('none': plain decoding) at `batch`,
    TP, context and model size by SOURCE_BAND_RULE; an axis not given is left out of the
    regime (it matches any range)."""
    given = {"tp": tp, "batch": batch, "context": context_tokens, "size": model_params_b}
    query = Coordinates(
        stack_group, kind_of(method), tp or 1, batch, context_tokens or 0, model_params_b or 0.0
    )
    return source_band(rows, query, [a for a, v in given.items() if v is not None])


@dataclass(frozen=True)
class FoldBand:
    """One published row checked as a figure no fit had seen: its error predicted without its
    source, and the band a calibration without its source prints for it, by the earlier rule
    (band_of) and by SOURCE_BAND_RULE (source_band)."""

    id: str
    source: str
    stack_group: str
    #: PLAIN or SPECULATIVE
    kind: str
    #: The row's depth in its fold (HeldOutRow.depth).
    depth: int
    error: float | None
    band_before: float | None
    band: float | None

    @staticmethod
    def _inside(error: float | None, band: float | None) -> bool:
        return error is not None and band is not None and abs(error) <= band

    @property
    def inside(self) -> bool:
        return self._inside(self.error, self.band)

    @property
    def inside_before(self) -> bool:
        return self._inside(self.error, self.band_before)


def source_fold(
    measurements: Sequence[Measurement],
    shapes: Mapping[str, ModelShape],
    terms: ModelTerms,
    source: str,
    held_out: Sequence[HeldOutRow],
    table: StepTable | None = None,
) -> tuple[FoldBand, ...]:
    """The rows of `source` as a calibration without it sees them: each row's held-out error
    (from `held_out`, the leave-one-source-out rows of all `measurements`) and the band that
    calibration (its own leave-one-source-out over the other sources) prints for it."""
    rest_ids = {m.id for m in measurements if m.held_out_unit != source}
    rest = [
        m
        for m in measurements
        if m.id in rest_ids and (m.baseline is None or m.baseline in rest_ids)
    ]
    inner = leave_one_source_out(rest, shapes, terms, table)
    out = []
    for h in held_out:
        if h.source != source:
            continue
        query = coordinates(h)
        out.append(
            FoldBand(
                h.id,
                h.source,
                h.stack_group,
                kind_class(h.method),
                h.depth,
                h.error,
                band_of(inner, query).max_abs_error,
                source_band(inner, query).max_abs_error,
            )
        )
    return tuple(out)


def source_folds(
    measurements: Sequence[Measurement],
    shapes: Mapping[str, ModelShape],
    terms: ModelTerms,
    held_out: Sequence[HeldOutRow],
    table: StepTable | None = None,
) -> tuple[FoldBand, ...]:
    """source_fold for every source (a fit per source pair: the slow part of `--write`);
    `table`, when given, holds the predictions of a superset of the fittable rows."""
    if table is None:
        table = StepTable(fit_rows(measurements, terms), shapes, terms)
    sources = list(dict.fromkeys(m.held_out_unit for m in measurements))
    return tuple(
        f for s in sources for f in source_fold(measurements, shapes, terms, s, held_out, table)
    )


@dataclass(frozen=True)
class FoldSummary:
    """How the bands of one group of FoldBands held: before (band_of) and after (source_band)."""

    label: str
    rows: int
    predicted: int
    within: int
    with_band_before: int
    inside_before: int
    median_band_before: float | None
    with_band: int
    inside: int
    median_band: float | None


def _median(values: Sequence[float]) -> float | None:
    v = sorted(values)
    if not v:
        return None
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2


def fold_summary(label: str, folds: Sequence[FoldBand]) -> FoldSummary:
    predicted = [f for f in folds if f.error is not None]
    before = [f.band_before for f in predicted if f.band_before is not None]
    after = [f.band for f in predicted if f.band is not None]
    return FoldSummary(
        label,
        len(folds),
        len(predicted),
        sum(abs(f.error or 0.0) <= WITHIN for f in predicted),
        len(before),
        sum(f.inside_before for f in predicted),
        _median(before),
        len(after),
        sum(f.inside for f in predicted),
        _median(after),
    )


def fold_summaries(folds: Sequence[FoldBand], rows: Sequence[HeldOutRow] = ()) -> list[FoldSummary]:
    """All rows, per stack, per kind (plain / speculative), per stack and kind, per depth, then
    per range of each axis (REGIME_RULE) where `rows` (the held-out rows of the same ids) give
    the folds' coordinates."""
    out = [fold_summary("all rows", folds)]
    for g in sorted({f.stack_group for f in folds}):
        out.append(fold_summary(f"stack {g}", [f for f in folds if f.stack_group == g]))
    for k in (PLAIN, SPECULATIVE):
        out.append(fold_summary(k, [f for f in folds if f.kind == k]))
    for g in sorted({f.stack_group for f in folds}):
        for k in (PLAIN, SPECULATIVE):
            same = [f for f in folds if f.stack_group == g and f.kind == k]
            if same:
                out.append(fold_summary(f"stack {g}, {k}", same))
    out.append(fold_summary("inside the data (depth 0)", [f for f in folds if f.depth == 0]))
    out.append(fold_summary("extrapolated (depth >= 1)", [f for f in folds if f.depth >= 1]))
    where = {h.id: coordinates(h) for h in rows}
    placed = [f for f in folds if f.id in where]
    for axis, ranges in AXES.items():
        for r in ranges:
            same = [f for f in placed if range_of(axis, where[f.id].value(axis)) == r]
            if same:
                out.append(fold_summary(describe_range(axis, r), same))
    return out


def held_rate(folds: Sequence[FoldBand], method: str, depth: int) -> tuple[int, int] | None:
    """How often SOURCE_BAND_RULE bands of this kind (plain / speculative, inside the data or
    extrapolated) held figures of unseen sources: (inside, with a band), None without folds."""
    same = [
        f
        for f in folds
        if f.kind == kind_class(method)
        and (f.depth == 0) == (depth == 0)
        and f.error is not None
        and f.band is not None
    ]
    return (sum(f.inside for f in same), len(same)) if same else None


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
