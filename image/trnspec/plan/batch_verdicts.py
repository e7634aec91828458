"""How sure `predict` is, batch by batch: speculation against plain at the edges of both bands.

At each batch the best k > 0 is compared with k = 0 by the rule of trnspec.plan.decision
(`speedup_edges`):
- speculation is sure when the best k's speedup stays above 1 with both held-out bands against
  it (a tie is no gain: best_k_per_batch gives ties to the smaller k);
- plain is sure when every k's speedup stays below 1 with both bands in its favour;
- otherwise the model cannot tell them apart there: measure. A figure without a band (no
  held-out data in its regime) decides nothing.
The windows of one batch share one regime's band (predict's case), so the fastest k is also the
one whose speedup stays highest with the bands against it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from trnspec.plan.decision import speedup_edges
from trnspec.plan.verdict import Verdict


class Point(Protocol):
    """A predicted (batch, k) and its speedup over k = 0 (trnspec.perf.step_time.Prediction)."""

    @property
    def batch(self) -> int: ...
    @property
    def k(self) -> int: ...
    @property
    def speedup(self) -> float: ...


@dataclass(frozen=True)
class Window:
    """One k > 0 at one batch: its predicted speedup over k = 0 and its regime's band."""

    batch: int
    k: int
    speedup: float
    #: held-out error as a fraction (None: no held-out data in its regime)
    error: float | None


@dataclass(frozen=True)
class BatchVerdict:
    """Speculation against plain at one batch, and how sure the model is of it."""

    batch: int
    #: "speculation", "plain" or "undecided" (trnspec.plan.decision.Verdict values)
    verdict: str
    #: the k > 0 of the largest predicted speedup at this batch
    k: int
    speedup: float
    #: its speedup with both bands against it and both for it (None without both bands)
    speedup_low: float | None
    speedup_high: float | None

    @property
    def sure(self) -> bool:
        return self.verdict != Verdict.UNDECIDED.value

    def text(self) -> str:
        edges = (
            f"{self.speedup_low:.2f}x-{self.speedup_high:.2f}x"
            if self.speedup_low is not None and self.speedup_high is not None
            else "a band unknown"
        )
        return f"{self.batch}: {self.verdict} (k={self.k} {edges})"


def batch_verdicts(
    windows: Sequence[Window], plain_errors: dict[int, float | None]
) -> list[BatchVerdict]:
    """One verdict per batch with a k > 0, in batch order; `plain_errors` the band of k = 0 at
    each batch."""
    out = []
    for batch in sorted({w.batch for w in windows}):
        at = [w for w in windows if w.batch == batch]
        plain_error = plain_errors[batch]
        edges = [
            speedup_edges(w.speedup, w.error, plain_error)
            if w.error is not None and plain_error is not None
            else None
            for w in at
        ]
        best = max(range(len(at)), key=lambda i: (at[i].speedup, -at[i].k))
        low, high = edges[best] if edges[best] is not None else (None, None)
        if low is not None and low > 1.0:
            verdict = Verdict.SPECULATION
        elif all(e is not None and e[1] < 1.0 for e in edges):
            verdict = Verdict.PLAIN
        else:
            verdict = Verdict.UNDECIDED
        out.append(BatchVerdict(batch, verdict.value, at[best].k, at[best].speedup, low, high))
    return out


def verdicts_of(
    points: Sequence[Point], error: Callable[[int, int], float | None]
) -> list[BatchVerdict]:
    """The verdicts of a grid of predictions; `error(k, batch)` is the band of the figure at
    window k and batch (k = 0: plain's), None where there is none."""
    windows = [Window(p.batch, p.k, p.speedup, error(p.k, p.batch)) for p in points if p.k]
    return batch_verdicts(windows, {b: error(0, b) for b in {w.batch for w in windows}})


def verdicts_text(verdicts: Sequence[BatchVerdict]) -> str:
    """Every batch's verdict on one line: `1: speculation (k=3 1.23x-1.83x), 8: plain (...)`."""
    return ", ".join(v.text() for v in verdicts)


def undecided_batches(verdicts: Sequence[BatchVerdict]) -> str | None:
    """The batches the model cannot tell, as `2, 4` (None when it is sure at every batch)."""
    return ", ".join(str(v.batch) for v in verdicts if not v.sure) or None
