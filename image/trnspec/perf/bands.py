"""What `predict` says about its own error: the held-out band of each figure's regime, and the
queries no published row is near.

The bands come from the leave-one-source-out validation stored with the constants
(trnspec.perf.validation, `data/trn2_fit.json`): a figure's regime is its stack group, its method
(k = 0 is plain decoding) and its batch range. A regime without a predictable held-out row has
no band, and says so. "Near" a published row means within a factor NEAR of its model size, TP or
batch, among the rows of the same stack group.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trnspec.hardware.model_shapes import ModelShape
from trnspec.perf.calibrate import Calibration
from trnspec.perf.validation import ErrorBand, error_band

#: How far (as a ratio) a query may sit from the nearest published row and still be "near" it.
NEAR = 2.0


def band_for(cal: Calibration, stack_group: str, method: str, k: int, batch: int) -> ErrorBand:
    """The held-out error band of one predicted figure."""
    return error_band(cal.validation, stack_group, "none" if k == 0 else method, batch)


@dataclass(frozen=True)
class OutsideData:
    """One way a query lies outside the published data: the quantity, the asked value and the
    nearest published values."""

    quantity: str
    asked: float
    published: tuple[float, ...]

    def describe(self) -> str:
        if not self.published:
            return f"no published row of this stack: every {self.quantity} is an extrapolation"
        shown = ", ".join(f"{v:g}" for v in self.published)
        return (
            f"{self.quantity} {self.asked:g} is more than {NEAR:g}x from every published row of"
            f" this stack ({shown}): the figure is an extrapolation"
        )


def _far(asked: float, published: Sequence[float]) -> bool:
    return all(max(asked / p, p / asked) > NEAR for p in published)


def outside_data(
    cal: Calibration, stack_group: str, target: ModelShape, tp: int, batches: Sequence[int]
) -> list[OutsideData]:
    """The model size, TP and batches of a query that no published row of its stack is near."""
    rows = [m for m in cal.measurements if m.stack_group == stack_group]
    if not rows:
        return [OutsideData("figure", 0, ())]
    out = []
    sizes = sorted({round(cal.shapes[m.target.lower()].params / 1e9, 1) for m in rows})
    size = round(target.params / 1e9, 1)
    if _far(size, sizes):
        out.append(OutsideData("model size (billion parameters)", size, tuple(sizes)))
    tps = sorted({float(m.tp) for m in rows})
    if _far(tp, tps):
        out.append(OutsideData("tensor parallel size", tp, tuple(tps)))
    published_batches = sorted({float(m.batch) for m in rows})
    far = [b for b in batches if _far(b, published_batches)]
    for b in far:
        out.append(OutsideData("batch", b, tuple(published_batches)))
    return out
