"""Leave-one-source-out validation of the Trn2 fit, and the error bands predict prints.

The rule, fixed before any fit: for each source (a published page or file, pinned to a commit),
fit the constants on every fittable row of the *other* sources (trnspec.perf.fit.fit_rows) and
predict that source's rows: a baseline's step time, and a speculative row's speedup from its own
published acceptance length (speedup = acceptance length x predicted step of its published
baseline, on the baseline's own stack / predicted speculative step). A row whose stack has no row left in the fit cannot be predicted (its floor
is unknown): it is listed with that reason, never filled in. Speculative rows without a
published acceptance are not predictions; calibrate reports the acceptance they imply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from trnspec.hardware.model_shapes import ModelShape
from trnspec.perf.fit import ModelTerms, fit_constants, fit_rows
from trnspec.perf.published import Measurement, predicted_step_ms


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
    sources = list(dict.fromkeys(m.held_out_unit for m in measurements))
    out: list[HeldOutRow] = []
    for source in sources:
        train = [m for m in fittable if m.held_out_unit != source]
        effs = fit_constants(train, shapes, terms).efficiency if train else {}
        for m in measurements:
            if m.held_out_unit != source:
                continue
            if m.role == "speculative" and m.acceptance_length is None:
                continue
            eff = effs.get(m.stack_group)
            reason = "" if eff else f"no row of stack {m.stack_group!r} left in the fit"
            if m.role == "baseline":
                pred = predicted_step_ms(m, shapes, eff) if eff else None
                out.append(
                    HeldOutRow(
                        m.id,
                        source,
                        m.stack_group,
                        m.method,
                        m.batch,
                        "step_ms",
                        m.published_step_ms,
                        pred,
                        reason,
                    )
                )
                continue
            base = by_id[m.baseline or ""]
            base_eff = effs.get(base.stack_group)
            if eff and not base_eff:
                reason = f"no row of stack {base.stack_group!r} left in the fit"
            pred = None
            if eff and base_eff and m.acceptance_length is not None:
                t_base = predicted_step_ms(base, shapes, base_eff)
                pred = m.acceptance_length * t_base / predicted_step_ms(m, shapes, eff)
            pub = published_speedup(m, base)
            out.append(
                HeldOutRow(
                    m.id, source, m.stack_group, m.method, m.batch, "speedup", pub, pred, reason
                )
            )
    return tuple(out)


#: Batch ranges a band is kept for: (lowest, highest) inclusive.
BATCH_RANGES = ((1, 1), (2, 4), (5, 1 << 30))


def batch_range(batch: int) -> tuple[int, int]:
    return next(r for r in BATCH_RANGES if r[0] <= batch <= r[1])


@dataclass(frozen=True)
class ErrorBand:
    """The held-out error of one regime (stack, method, batch range)."""

    stack_group: str
    method: str
    batches: tuple[int, int]
    #: Largest |relative error| of the held-out rows of the regime (None: none predictable).
    max_abs_error: float | None
    rows: int
    #: Rows of the regime the validation could not predict (their ids).
    unpredicted: tuple[str, ...]

    def describe(self) -> str:
        lo, hi = self.batches
        span = (
            f"batch {lo}" if lo == hi else f"batch {lo}-{hi}" if hi < 1 << 30 else f"batch >= {lo}"
        )
        where = f"{self.stack_group}, {self.method}, {span}"
        if self.max_abs_error is None:
            return f"no held-out error for {where}: no published row could be predicted there"
        return f"+/-{self.max_abs_error:.0%} (max held-out error of {self.rows} rows: {where})"


def error_band(rows: Sequence[HeldOutRow], stack_group: str, method: str, batch: int) -> ErrorBand:
    """The band of the regime `(stack_group, method, batch)`; method 'none' is plain decoding."""
    r = batch_range(batch)
    same = [
        h
        for h in rows
        if h.stack_group == stack_group and h.method == method and batch_range(h.batch) == r
    ]
    errors = [abs(h.error) for h in same if h.error is not None]
    return ErrorBand(
        stack_group,
        method,
        r,
        max(errors) if errors else None,
        len(errors),
        tuple(h.id for h in same if h.error is None),
    )
