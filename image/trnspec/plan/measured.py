"""Measured Trn2 rows (what the calibration Job and `tune --rows-out` write, the format
`python -m trnspec fit --add` reads) as a plan's evidence.

Two uses: the rows refit the model through the `--add` path (trnspec.perf.trn2_fit.refit_with),
so the plan is priced and banded with them; and a measured speculative row slower than the
measured plain row at the same target and batch vetoes speculation there. The plain rows a
speculative row is compared with are the one it names as its `baseline` and every measured
baseline of the same target and batch in its own stack group or its baseline's (the plain twin
of a calibration runs asynchronously, its speculative arm synchronously: different groups, one
comparison). Speed is output tokens/s when both rows give it, else TPOT
(trnspec.perf.validation.published_speedup).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trnspec.boundary.errors import BoundaryError
from trnspec.perf.published import Measurement, load_published
from trnspec.perf.trn2_fit import Calibration, refit_with
from trnspec.perf.validation import published_speedup


@dataclass(frozen=True)
class SlowerThanPlain:
    """A measured speculative row slower than a measured plain row of the same target and
    batch: speculation is never planned at that (target, stack group, batch)."""

    target: str
    stack_group: str
    batch: int
    speculative_id: str
    plain_id: str
    speedup: float

    def describe(self) -> str:
        return (
            f"measured slower than plain at batch {self.batch} ({self.speculative_id} is"
            f" {self.speedup:.2f}x of {self.plain_id})"
        )


@dataclass(frozen=True)
class MeasuredEvidence:
    """The rows read, the calibration refitted on them, and the vetoes they give."""

    source: str
    rows: tuple[Measurement, ...]
    calibration: Calibration
    slower: tuple[SlowerThanPlain, ...]

    def veto(self, target: str, stack_group: str, batch: int) -> str | None:
        """Why speculation is refused at (target, stack group, batch), or None."""
        for s in self.slower:
            if (s.target.lower(), s.stack_group, s.batch) == (target.lower(), stack_group, batch):
                return s.describe()
        return None


def _plain_rows_for(m: Measurement, rows: Sequence[Measurement]) -> list[Measurement]:
    by_id = {r.id: r for r in rows}
    named = by_id.get(m.baseline or "")
    groups = {m.stack_group} | ({named.stack_group} if named is not None else set())
    same = [
        r
        for r in rows
        if r.role == "baseline"
        and r.target.lower() == m.target.lower()
        and r.batch == m.batch
        and r.stack_group in groups
    ]
    if named is not None and named not in same:
        same.append(named)
    return same


def slower_than_plain(rows: Sequence[Measurement]) -> list[SlowerThanPlain]:
    """Every measured speculative row slower than a measured plain row it is compared with."""
    out = []
    for m in rows:
        if m.role != "speculative":
            continue
        for base in _plain_rows_for(m, rows):
            try:
                speedup = published_speedup(m, base)
            except ValueError:
                continue
            if speedup < 1.0:
                out.append(
                    SlowerThanPlain(m.target, m.stack_group, m.batch, m.id, base.id, speedup)
                )
    return out


def measured_evidence(flag: str, source: str, text: str) -> MeasuredEvidence:
    """Read rows (the data file's format) and refit with them; BoundaryError naming the flag
    when the text holds no row or a row the data format refuses."""
    try:
        rows, _ = load_published("", [text])
        if not rows:
            raise ValueError("no rows under `measurements:`")
        _, cal, _ = refit_with([text])
    except (ValueError, TypeError, KeyError) as err:
        raise BoundaryError(
            flag, source, f"not a rows file `python -m trnspec fit --add` reads: {err}"
        ) from None
    return MeasuredEvidence(source, tuple(rows), cal, tuple(slower_than_plain(rows)))
