"""What `predict` and `plan-deploy` say about their own error: the band of each figure from
sources the fit never saw, and the ways a query lies outside the published data.

The bands come from the leave-one-source-out validation stored with the constants
(trnspec.perf.validation, `data/trn2_fit.json`), by validation.SOURCE_BAND_RULE: the 80 %
quantile of the held-out errors of figures whose fold extrapolated at least as far as the query
does (its regime's, else its stack and method's, else every stack's of its kind), so a query
outside the data gets a wider band; where too few folds extrapolated that far the figure has no
band (unknown: measure it). `held` says how often bands of that kind held figures of sources the
fit never saw (the nested source folds, `cal.folds`). A figure's regime is its stack group, plain
or its speculative method (k = 0 is plain decoding), and its range on four axes fixed before the
fit (validation.REGIME_RULE: TP, batch, context, model size).

One line for a caller (predict, plan-deploy, tune's Trn2 advice):

    band = source_band_for(cal, group, method, k, batch, tp=tp, context_tokens=ctx, target=shape)

`band.max_abs_error` is the band's half-width (None: unknown).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from trnspec.hardware.model_shapes import ModelShape
from trnspec.perf.step_time import weight_elements_read
from trnspec.perf.trn2_fit import Calibration
from trnspec.perf.validation import (
    AXIS_NAMES,
    Coordinates,
    ErrorBand,
    describe_range,
    held_rate,
    kind_of,
    range_of,
    source_error_band,
)


def params_b(shape: ModelShape) -> float:
    """Billions of parameters one decode step reads (the size axis of the regimes)."""
    return round(weight_elements_read(shape) / 1e9, 2)


def source_band_for(
    cal: Calibration,
    stack_group: str,
    method: str,
    k: int,
    batch: int,
    *,
    tp: int | None = None,
    context_tokens: int | None = None,
    target: ModelShape | None = None,
) -> ErrorBand:
    """The band of one predicted figure (k = 0: plain decoding) by validation.SOURCE_BAND_RULE,
    and how often bands of its kind held on unseen sources (cal.folds; None for an unknown
    figure, which has no band, and without folds). Give `tp`,
    `context_tokens` and `target` for the band of the query's full regime; an axis left out
    matches any range."""
    kind = "none" if k == 0 else method
    band = source_error_band(
        cal.validation,
        stack_group,
        kind,
        batch,
        tp,
        context_tokens,
        params_b(target) if target is not None else None,
    )
    if band.max_abs_error is None:
        return band  # unknown: no band, so no rate of bands held
    return replace(band, held=held_rate(cal.folds, kind, len(band.outside)))


@dataclass(frozen=True)
class OutsideData:
    """One way a query lies outside the published data: the axis, the asked value and the ranges
    the stack's published rows cover on it."""

    quantity: str
    asked: float
    published: tuple[str, ...]

    def describe(self) -> str:
        if not self.published:
            return f"no published row of this stack: every {self.quantity} is an extrapolation"
        shown = "; ".join(self.published)
        return (
            f"{self.quantity} {self.asked:g} lies in no range this stack's published rows cover"
            f" ({shown}): the figure is an extrapolation"
        )


def outside_data(
    cal: Calibration,
    stack_group: str,
    target: ModelShape,
    tp: int,
    batches: Sequence[int],
    context_tokens: int | None = None,
) -> list[OutsideData]:
    """The model size, TP, batches (and context, when given) of a query that lie in no regime
    range any published row of its stack covers (validation.REGIME_RULE)."""
    rows = [m for m in cal.measurements if m.stack_group == stack_group]
    if not rows:
        return [OutsideData("figure", 0, ())]
    points = {
        "size": [params_b(cal.shapes[m.target.lower()]) for m in rows],
        "tp": [m.tp for m in rows],
        "batch": [m.batch for m in rows],
        "context": [m.context_tokens for m in rows],
    }
    asked: list[tuple[str, float]] = [("size", params_b(target)), ("tp", tp)]
    asked += [("batch", b) for b in batches]
    if context_tokens is not None:
        asked.append(("context", context_tokens))
    out = []
    for axis, value in asked:
        covered = sorted({range_of(axis, v) for v in points[axis]})
        if range_of(axis, value) not in covered:
            out.append(
                OutsideData(
                    AXIS_NAMES[axis], value, tuple(describe_range(axis, r) for r in covered)
                )
            )
    return out


__all__ = [
    "Coordinates",
    "ErrorBand",
    "OutsideData",
    "kind_of",
    "outside_data",
    "params_b",
    "source_band_for",
]
