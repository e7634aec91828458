"""Fit trnspec.perf.step_time's free constants to published Trn2 rows (deterministic, no numpy).

Once the two efficiencies (HBM, compute) are fixed, a row's predicted step time is linear in
every other constant: the per-step floor of its stack, the host cost per sequence, the cost per
position, the collective latency per hop, the attention cost per cached token and layer, the
positions^2 x vocabulary term and the host share (which enters an asynchronous stack's rows as
zero: there it runs beside a longer device step, which the published rows' 192 host vCPUs make
sure of). So the fit walks a grid of the two efficiencies and, at each point, solves for the
rest by non-negative least squares on the *relative* step-time error
(Lawson-Hanson, below); the grid point with the smallest RMS relative error wins (ties: the
lower compute efficiency, then the higher HBM efficiency). The same rows and code give the same
constants bit for bit, which `tests/trnspec/perf/test_trn2_fit.py` checks against the stored fit.

`ModelTerms` names which constants a model variant may use and whether speculative rows (with a
published acceptance length) enter the fit: `FIRST_PASS` is the model as first calibrated
(floors, hop latency, cost per position; baselines only), `SECOND_PASS` the one before this
pass, `THIRD_PASS` the current one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import repeat
from operator import add, itemgetter, mul, sub
from typing import TypeVar

from trnspec.hardware.model_shapes import ModelShape
from trnspec.perf.published import Measurement, predicted_step_ms
from trnspec.perf.stack_group import ASYNC_GROUPS
from trnspec.perf.step_time import TRN2, Efficiency, Hardware

#: Shared constants the linear solve may set (each >= 0); the per-stack floor is added per group.
LINEAR_TERMS = (
    "sequence_overhead_s",
    "token_overhead_s",
    "collective_latency_s",
    "context_token_s",
    "logit_pair_s",
    "host_share_s",
)


@dataclass(frozen=True)
class ModelTerms:
    """A model variant: the shared constants it fits and whether speculative rows enter the fit."""

    name: str
    shared: tuple[str, ...]
    speculative_rows: bool
    #: Fit a fixed cost per draft pass for each stack (like the floor), else leave it 0.
    draft_pass_per_stack: bool = False


FIRST_PASS = ModelTerms(
    "first pass (floor per stack, hop latency, cost per position; baselines only)",
    ("collective_latency_s", "token_overhead_s"),
    speculative_rows=False,
)
SECOND_PASS = ModelTerms(
    "second pass (+ cost per sequence, attention per cached token, positions^2 x vocab;"
    " baselines and speculative rows with a published acceptance)",
    LINEAR_TERMS[:5],
    speculative_rows=True,
    draft_pass_per_stack=True,
)
THIRD_PASS = ModelTerms(
    "third pass (+ host share per replica's vCPUs; padded slots priced by their positions only)",
    LINEAR_TERMS,
    speculative_rows=True,
    draft_pass_per_stack=True,
)

#: HBM efficiencies tried: 50 % to 100 % in steps of 5 % (the 405B row alone needs >= 50 %).
MEMORY_GRID = tuple(round(0.5 + 0.05 * i, 2) for i in range(11))
#: Compute efficiencies tried, 0.1 % to 100 % of peak in steps of 10^0.25.
COMPUTE_GRID = tuple(10 ** (-3 + 0.25 * i) for i in range(13))


@dataclass(frozen=True)
class Fit:
    """Fitted constants per stack group and how well they fit the rows they were fitted to."""

    efficiency: dict[str, Efficiency]
    #: RMS of (predicted / published - 1) over the fitted rows.
    rms_rel_error: float
    #: (compute efficiency, best RMS relative error over the HBM grid with it fixed).
    compute_profile: tuple[tuple[float, float], ...]


def fit_rows(measurements: Sequence[Measurement], terms: ModelTerms) -> list[Measurement]:
    """The rows a variant fits: baselines, plus speculative rows with a published acceptance."""
    return [
        m
        for m in measurements
        if m.fitted_step_ms is not None and (m.role == "baseline" or terms.speculative_rows)
    ]


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Solve a small dense system by Gaussian elimination with partial pivoting."""
    n = len(b)
    m = [[*row, b[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        top = m[c]
        pivot = top[c]
        for r in range(c + 1, n):
            row = m[r]
            f = row[c] / pivot
            # row[j] -= f * top[j] for j >= c: the same subtraction of the same product
            row[c:] = [v - f * t for v, t in zip(row[c:], top[c:], strict=True)]
    x = [0.0] * n
    for r in reversed(range(n)):
        # the products m[r][j] * x[j], j = r+1..n-1, added left to right as a generator would
        x[r] = (m[r][n] - sum(map(mul, m[r][r + 1 : n], x[r + 1 : n]))) / m[r][r]
    return x


def _least_squares(gram: list[list[float]], rhs: list[float], active: list[int]) -> list[float]:
    """Unconstrained least squares on the `active` unit-norm columns (normal equations, tiny
    ridge), read from every column's Gram matrix and right-hand side."""
    sub = [[gram[i][j] + (1e-12 if i == j else 0.0) for j in active] for i in active]
    return _solve(sub, [rhs[i] for i in active])


@dataclass(frozen=True)
class _Unit:
    """Columns scaled to unit norm (an all-zero column stays zeros, with norm 0), the Gram matrix
    among them, and where each column may be nonzero (`support`).

    A column with a support (the rows of one stack, in order) is 0.0 on every other row, and
    two supports are equal or disjoint. A sum of products then skips the rows where one factor
    is 0.0 and still gives the float the full sum gave: each skipped product is +-0.0 (the
    other factor is finite: `finite`), Python's sum adds floats left to right from +0.0, a
    partial sum from +0.0 is never -0.0 (x + y is -0.0 only when both are), and adding +-0.0 to
    a float that is not -0.0 leaves it unchanged. (So too with the compensated sum of Python
    3.12: a +-0.0 term changes neither the sum nor the compensation.)"""

    norms: list[float]
    cols: list[list[float]]
    gram: list[list[float]]
    support: list[tuple[int, ...] | None]
    #: Each column on its support (the whole column without one).
    subs: list[list[float]]
    #: Every scaled figure is finite (else no row is skipped).
    finite: bool

    @staticmethod
    def of(
        columns: Sequence[Sequence[float]],
        n_rows: int,
        head: _Unit | None = None,
        support: Sequence[tuple[int, ...] | None] = (),
    ) -> _Unit:
        """`columns` scaled, with their Gram matrix; `head`, when given, is this of the first
        columns (the same columns: its norms, scaled columns and Gram block are reused);
        `support`, per column, the rows where it may be nonzero (None or absent: any row).

        `sum(map(mul, u, v))` adds the same products left to right as `sum(u_i * v_i for ...)`,
        so every figure is the float the generator gave, faster; the Gram matrix is symmetric
        (u*v == v*u)."""
        k = len(head.cols) if head else 0
        sup = list(support) + [None] * (len(columns) - len(support))
        norms = head.norms[:] if head else []
        cols = head.cols[:] if head else []
        for col, where in zip(columns[k:], sup[k:], strict=True):
            on = col if where is None else [col[p] for p in where]
            nrm = math.sqrt(sum(map(mul, on, on)))
            norms.append(nrm)
            cols.append([v / nrm for v in col] if nrm > 0 else [0.0] * n_rows)
        finite = all(map(math.isfinite, norms)) and (head is None or head.finite)
        if not finite:
            sup = [None] * len(cols)
        subs = [c if w is None else [c[p] for p in w] for c, w in zip(cols, sup, strict=True)]
        on_rows: dict[tuple[int, tuple[int, ...]], list[float]] = {}

        def restricted(j: int, where: tuple[int, ...]) -> list[float]:
            if sup[j] == where:
                return subs[j]
            if (j, where) not in on_rows:
                on_rows[(j, where)] = [cols[j][p] for p in where]
            return on_rows[(j, where)]

        n = len(cols)
        gram = [[0.0] * n for _ in range(n)]
        for i in range(n):
            start = i
            if head and i < k:
                gram[i][i:k] = head.gram[i][i:k]
                start = k
            for j in range(start, n):
                si, sj = sup[i], sup[j]
                if si is None and sj is None:
                    gram[i][j] = sum(map(mul, cols[i], cols[j]))
                elif si is not None and sj is not None and si != sj:
                    gram[i][j] = 0.0  # disjoint supports: every product is +-0.0
                else:
                    where = si if si is not None else sj
                    assert where is not None
                    gram[i][j] = sum(map(mul, restricted(i, where), restricted(j, where)))
        for i in range(n):
            for j in range(i):
                gram[i][j] = gram[j][i]
        return _Unit(norms, cols, gram, sup, subs, finite)


def nnls(columns: Sequence[Sequence[float]], b: Sequence[float]) -> list[float]:
    """argmin ||sum_j x_j columns[j] - b|| subject to x >= 0 (Lawson and Hanson, 1974).

    Columns are scaled to unit norm first (the terms differ by many orders of magnitude); an
    all-zero column (a stack with no row) stays 0."""
    return _nnls(_Unit.of(columns, len(b)), b)


def _nnls(unit: _Unit, b: Sequence[float]) -> list[float]:
    """nnls on columns already scaled (`_Unit.of`). The residual and the gradient are each
    row's and column's sum of products, with the products of a 0.0 skipped (`_Unit`)."""
    norms, cols, gram, sup = unit.norms, unit.cols, unit.gram, unit.support
    n, tol = len(cols), 1e-12
    x = [0.0] * n
    active: list[int] = []
    rhs = [sum(map(mul, col, b)) for col in cols]
    rows = [] if unit.finite else list(zip(*cols, strict=True)) if cols else [()] * len(b)
    # Only a column outside the active set with a nonzero norm can enter: the gradient is
    # computed for those alone (each entry the float the full gradient had).
    usable = [j for j in range(n) if norms[j] > 0]

    for _ in range(3 * n + 3):
        if unit.finite:
            # sum_j cols[j][i] * x[j] over the nonzero x[j] in order, for every row at once
            fitted = [0.0] * len(b)
            for j in range(n):
                if x[j] != 0.0:
                    fitted = list(map(add, fitted, map(mul, cols[j], repeat(x[j]))))
            r = list(map(sub, b, fitted))
        else:
            r = [bi - sum(map(mul, row, x)) for row, bi in zip(rows, b, strict=True)]
        on_rows: dict[tuple[int, ...], list[float]] = {}
        sparse = unit.finite and math.isfinite(sum(r))
        w: dict[int, float] = {}
        for j in usable:
            if j in active:
                continue
            where = sup[j] if sparse else None
            if where is None:
                w[j] = sum(map(mul, cols[j], r))
            else:
                if where not in on_rows:
                    on_rows[where] = [r[p] for p in where]
                w[j] = sum(map(mul, unit.subs[j], on_rows[where]))
        free = [j for j, wj in w.items() if wj > tol]
        if not free:
            break
        active.append(max(free, key=w.__getitem__))
        while True:
            s_active = _least_squares(gram, rhs, active)
            s = [0.0] * n
            for j, v in zip(active, s_active, strict=True):
                s[j] = v
            if all(s[j] > tol for j in active):
                x = s
                break
            alpha = min(x[j] / (x[j] - s[j]) for j in active if s[j] <= tol)
            x = [xi + alpha * (si - xi) for xi, si in zip(x, s, strict=True)]
            active = [j for j in active if x[j] > tol]
            for j in range(n):
                if j not in active:
                    x[j] = 0.0
            if not active:
                break
    return [xi / nrm if nrm > 0 else 0.0 for xi, nrm in zip(x, norms, strict=True)]


@dataclass(frozen=True)
class _Point:
    """Every table row's figures at one grid point, each divided by the row's step: the target
    (published - predicted with every linear constant at zero), the column of one draft pass
    costing 1 s, and the column of each shared constant at 1 (0 for the host share of an
    asynchronous stack's row)."""

    target: list[float]
    passes: list[float]
    shared: dict[str, list[float]]


T = TypeVar("T")


def _taker(idx: Sequence[int]) -> Callable[[Sequence[T]], list[T]]:
    """Reads the entries `idx` of a list, in that order."""
    if len(idx) == 1:
        (i,) = idx
        return lambda v: [v[i]]
    get = itemgetter(*idx)
    return lambda v: list(get(v))


class StepTable:
    """Every row's predictions at every grid point, computed once for a set of rows and read by
    every fit of a subset of them: leave one source out fits nearly the same rows once per
    source, and the predictions, not the solve, were most of its time. The table holds the
    columns of the fit's least squares row by row (each the float `_fit_at` computed from the
    predictions before), so a fit read from it is bit for bit the fit computed row by row.

    A table made for `terms` serves any terms whose shared constants are among its own (and
    which fit a draft pass per stack only when it does): `covers`. It also keeps each fit it
    served (the same rows in the same order and terms give the same fit: the nested source folds
    fit each pair of sources twice)."""

    def __init__(
        self,
        rows: Sequence[Measurement],
        shapes: Mapping[str, ModelShape],
        terms: ModelTerms,
        hw: Hardware = TRN2,
    ) -> None:
        self.terms = terms
        self._rows = list(rows)  # keeps the ids below valid
        self._index = {id(m): i for i, m in enumerate(self._rows)}
        ys = [m.fitted_step_ms or 0.0 for m in self._rows]
        #: The per-stack floor's column (grid-independent): 1000 / step.
        self.floor = [1000.0 / y for y in ys]
        self.groups = [m.stack_group for m in self._rows]
        self._points: dict[tuple[float, float], _Point] = {}
        self._fits: dict[tuple[ModelTerms, tuple[int, ...]], Fit] = {}
        for compute in COMPUTE_GRID:
            for memory in MEMORY_GRID:
                zero = Efficiency(
                    memory=memory, compute=compute, step_overhead_s=0.0, collective_latency_s=0.0
                )
                base = [predicted_step_ms(m, shapes, zero, hw) for m in self._rows]
                passes: list[float] = []
                if terms.draft_pass_per_stack:
                    one = replace(zero, draft_pass_overhead_s=1.0)
                    passes = [
                        (predicted_step_ms(m, shapes, one, hw) - b0) / y
                        for m, b0, y in zip(self._rows, base, ys, strict=True)
                    ]
                shared: dict[str, list[float]] = {}
                for name in terms.shared:
                    unit = replace(zero, **{name: 1.0})
                    shared[name] = [
                        0.0
                        if name == "host_share_s" and m.stack_group in ASYNC_GROUPS
                        else (predicted_step_ms(m, shapes, unit, hw) - b0) / y
                        for m, b0, y in zip(self._rows, base, ys, strict=True)
                    ]
                target = [(y - b0) / y for y, b0 in zip(ys, base, strict=True)]
                self._points[(memory, compute)] = _Point(target, passes, shared)

    def covers(self, terms: ModelTerms, rows: Sequence[Measurement] = ()) -> bool:
        """The table holds every column `terms` fit, and `rows`."""
        return (
            all(name in self.terms.shared for name in terms.shared)
            and (self.terms.draft_pass_per_stack or not terms.draft_pass_per_stack)
            and all(id(m) in self._index for m in rows)
        )

    def indices(self, rows: Sequence[Measurement]) -> tuple[int, ...]:
        """The positions of `rows` (each one of the table's rows) in the table."""
        try:
            return tuple(self._index[id(m)] for m in rows)
        except KeyError:
            missing = next(m.id for m in rows if id(m) not in self._index)
            raise ValueError(
                f"row {missing!r} is not in the table: build the StepTable from rows that"
                " include it"
            ) from None

    def at(self, memory: float, compute: float) -> _Point:
        """Every table row at grid point (memory, compute)."""
        return self._points[(memory, compute)]


def _fit_at(
    point: _Point,
    take: Callable[[Sequence[float]], list[float]],
    terms: ModelTerms,
    group_of: Sequence[str],
    groups: Sequence[str],
    floor_cols: Sequence[list[float]],
    floors: _Unit,
) -> tuple[float, list[float]]:
    """The RMS relative error and the linear constants (floors, draft passes, shared) fitted at
    one grid point. `take` reads the fit's rows (of stacks `group_of`) from a table column;
    `floor_cols` are the per-stack floor columns (the same at every grid point) and `floors`
    them scaled."""
    columns = list(floor_cols)
    if terms.draft_pass_per_stack:
        passes = take(point.passes)
        columns += [
            [v if gm == g else 0.0 for v, gm in zip(passes, group_of, strict=True)] for g in groups
        ]
    columns += [take(point.shared[name]) for name in terms.shared]
    target = take(point.target)
    support = floors.support * (2 if terms.draft_pass_per_stack else 1)
    x = _nnls(_Unit.of(columns, len(target), floors, support), target)
    # each row's fit, sum_j columns[j][i] * x[j], added left to right as a generator would
    fitted = [sum(map(mul, row, x)) for row in zip(*columns, strict=True)]
    rms = math.sqrt(sum((f - t) ** 2 for f, t in zip(fitted, target, strict=True)) / len(target))
    return rms, x


def _efficiencies(
    x: Sequence[float], terms: ModelTerms, groups: Sequence[str], memory: float, compute: float
) -> dict[str, Efficiency]:
    """Each stack's constants from the linear solution `x` at grid point (memory, compute)."""
    zero = Efficiency(memory=memory, compute=compute, step_overhead_s=0.0, collective_latency_s=0.0)
    n = len(groups)
    per_pass = x[n : 2 * n] if terms.draft_pass_per_stack else [0.0] * n
    shared = dict(zip(terms.shared, x[len(x) - len(terms.shared) :], strict=True))
    return {
        g: replace(
            zero,
            step_overhead_s=x[i],
            draft_pass_overhead_s=per_pass[i],
            overlaps_host=g in ASYNC_GROUPS,
            **shared,
        )
        for i, g in enumerate(groups)
    }


def fit_constants(
    rows: Sequence[Measurement],
    shapes: Mapping[str, ModelShape],
    terms: ModelTerms = THIRD_PASS,
    hw: Hardware = TRN2,
    table: StepTable | None = None,
) -> Fit:
    """The constants of `terms` that fit `rows` best (see the module docstring); `table`, when
    given, holds the rows' predictions for these shapes and hardware (a StepTable of a superset
    of `rows` that covers `terms`). A table returns the same Fit again for the same rows (in the
    same order) and terms."""
    if not rows:
        raise ValueError("no rows to fit")
    if table is None:
        table = StepTable(rows, shapes, terms, hw)
    elif not table.covers(terms):
        raise ValueError(
            f"the table was computed for {table.terms.name!r}, which lacks columns of"
            f" {terms.name!r}: build it for terms with every constant the fit sets"
        )
    idx = table.indices(rows)
    fit = table._fits.get((terms, idx))
    if fit is None:
        fit = table._fits[(terms, idx)] = _fit(table, idx, terms)
    return fit


def _fit(table: StepTable, idx: Sequence[int], terms: ModelTerms) -> Fit:
    """The grid search of fit_constants on the table rows `idx`."""
    take = _taker(idx)
    group_of = [table.groups[i] for i in idx]
    groups = sorted(set(group_of))
    floor = take(table.floor)
    floor_cols = [
        [f if gm == g else 0.0 for f, gm in zip(floor, group_of, strict=True)] for g in groups
    ]
    # the floor and draft-pass columns of a stack are nonzero on its rows alone
    rows_of = [tuple(p for p, gm in enumerate(group_of) if gm == g) for g in groups]
    floors = _Unit.of(floor_cols, len(idx), support=rows_of)
    best: tuple[float, float, float, list[float]] | None = None
    profile: dict[float, float] = {}
    for compute in COMPUTE_GRID:
        for memory in reversed(MEMORY_GRID):
            point = table.at(memory, compute)
            rms, x = _fit_at(point, take, terms, group_of, groups, floor_cols, floors)
            profile[compute] = min(profile.get(compute, math.inf), rms)
            if best is None or rms < best[0] - 1e-12:
                best = (rms, compute, memory, x)
    assert best is not None
    rms, compute, memory, x = best
    return Fit(
        _efficiencies(x, terms, groups, memory, compute), rms, tuple(sorted(profile.items()))
    )
