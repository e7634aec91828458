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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from operator import mul

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
        pivot = m[c][c]
        for r in range(c + 1, n):
            f = m[r][c] / pivot
            for j in range(c, n + 1):
                m[r][j] -= f * m[c][j]
    x = [0.0] * n
    for r in reversed(range(n)):
        x[r] = (m[r][n] - sum(m[r][j] * x[j] for j in range(r + 1, n))) / m[r][r]
    return x


def _least_squares(gram: list[list[float]], rhs: list[float], active: list[int]) -> list[float]:
    """Unconstrained least squares on the `active` unit-norm columns (normal equations, tiny
    ridge), read from every column's Gram matrix and right-hand side."""
    sub = [[gram[i][j] + (1e-12 if i == j else 0.0) for j in active] for i in active]
    return _solve(sub, [rhs[i] for i in active])


def nnls(columns: Sequence[Sequence[float]], b: Sequence[float]) -> list[float]:
    """argmin ||sum_j x_j columns[j] - b|| subject to x >= 0 (Lawson and Hanson, 1974).

    Columns are scaled to unit norm first (the terms differ by many orders of magnitude); an
    all-zero column (a stack with no row) stays 0."""
    norms = [math.sqrt(sum(v * v for v in col)) for col in columns]
    cols = [
        [v / nrm for v in col] if nrm > 0 else [0.0] * len(b)
        for col, nrm in zip(columns, norms, strict=True)
    ]
    n, tol = len(cols), 1e-12
    x = [0.0] * n
    active: list[int] = []
    # Every column's normal equations once (the same sums, in the same order, as per active
    # set). `sum(map(mul, u, v))` adds the same products left to right as a generator would, so
    # the results are the same floats, faster; the Gram matrix is symmetric (u*v == v*u).
    gram = [[0.0] * n for _ in range(n)]
    for i, ci in enumerate(cols):
        for j in range(i, n):
            gram[i][j] = gram[j][i] = sum(map(mul, ci, cols[j]))
    rhs = [sum(map(mul, col, b)) for col in cols]
    rows = list(zip(*cols, strict=True)) if cols else [()] * len(b)

    def gradient(x: list[float]) -> list[float]:
        r = [bi - sum(map(mul, row, x)) for row, bi in zip(rows, b, strict=True)]
        return [sum(map(mul, col, r)) for col in cols]

    for _ in range(3 * n + 3):
        w = gradient(x)
        free = [j for j in range(n) if j not in active and norms[j] > 0 and w[j] > tol]
        if not free:
            break
        active.append(max(free, key=lambda j: w[j]))
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
class _RowAt:
    """One row's predicted step (ms) at one grid point: with every linear constant at zero
    (`base`), with one draft pass costing 1 s (`passes`), and with each shared constant at 1."""

    base: float
    passes: float
    units: tuple[float, ...]


class StepTable:
    """Every row's `_RowAt` at every grid point, computed once for a set of rows and read by
    every fit of a subset of them: leave one source out fits nearly the same rows once per
    source, and the predictions, not the solve, were most of its time. A fit read from the table
    is bit for bit the fit computed row by row (the same expressions on the same floats)."""

    def __init__(
        self,
        rows: Sequence[Measurement],
        shapes: Mapping[str, ModelShape],
        terms: ModelTerms,
        hw: Hardware = TRN2,
    ) -> None:
        self.terms = terms
        self._rows = list(rows)  # keeps the ids below valid
        self._at: dict[tuple[float, float, int], _RowAt] = {}
        for compute in COMPUTE_GRID:
            for memory in MEMORY_GRID:
                zero = Efficiency(
                    memory=memory, compute=compute, step_overhead_s=0.0, collective_latency_s=0.0
                )
                passes = replace(zero, draft_pass_overhead_s=1.0)
                units = [replace(zero, **{name: 1.0}) for name in terms.shared]
                for m in self._rows:
                    self._at[(memory, compute, id(m))] = _RowAt(
                        predicted_step_ms(m, shapes, zero, hw),
                        predicted_step_ms(m, shapes, passes, hw)
                        if terms.draft_pass_per_stack
                        else 0.0,
                        tuple(predicted_step_ms(m, shapes, u, hw) for u in units),
                    )

    def at(self, memory: float, compute: float, m: Measurement) -> _RowAt:
        """Row `m` (one of the table's rows) at grid point (memory, compute)."""
        return self._at[(memory, compute, id(m))]


def _fit_at(
    rows: Sequence[Measurement],
    table: StepTable,
    groups: Sequence[str],
    memory: float,
    compute: float,
) -> tuple[float, dict[str, Efficiency]]:
    terms = table.terms
    zero = Efficiency(memory=memory, compute=compute, step_overhead_s=0.0, collective_latency_s=0.0)
    ys = [m.fitted_step_ms or 0.0 for m in rows]
    at = [table.at(memory, compute, m) for m in rows]
    base = [a.base for a in at]
    columns = [
        [1000.0 / y if m.stack_group == g else 0.0 for m, y in zip(rows, ys, strict=True)]
        for g in groups
    ]
    if terms.draft_pass_per_stack:
        columns += [
            [
                (a.passes - a.base) / y if m.stack_group == g else 0.0
                for m, a, y in zip(rows, at, ys, strict=True)
            ]
            for g in groups
        ]
    for j, name in enumerate(terms.shared):
        columns.append(
            [
                0.0
                if name == "host_share_s" and m.stack_group in ASYNC_GROUPS
                else (a.units[j] - a.base) / y
                for m, a, y in zip(rows, at, ys, strict=True)
            ]
        )
    target = [(y - b0) / y for y, b0 in zip(ys, base, strict=True)]
    x = nnls(columns, target)
    fitted = [sum(col[i] * x[j] for j, col in enumerate(columns)) for i in range(len(rows))]
    rms = math.sqrt(sum((f - t) ** 2 for f, t in zip(fitted, target, strict=True)) / len(rows))
    n = len(groups)
    per_pass = x[n : 2 * n] if terms.draft_pass_per_stack else [0.0] * n
    shared = dict(zip(terms.shared, x[len(x) - len(terms.shared) :], strict=True))
    effs = {
        g: replace(
            zero,
            step_overhead_s=x[i],
            draft_pass_overhead_s=per_pass[i],
            overlaps_host=g in ASYNC_GROUPS,
            **shared,
        )
        for i, g in enumerate(groups)
    }
    return rms, effs


def fit_constants(
    rows: Sequence[Measurement],
    shapes: Mapping[str, ModelShape],
    terms: ModelTerms = THIRD_PASS,
    hw: Hardware = TRN2,
    table: StepTable | None = None,
) -> Fit:
    """The constants of `terms` that fit `rows` best (see the module docstring); `table`, when
    given, holds the rows' predictions for these shapes, terms and hardware (a StepTable of a
    superset of `rows`)."""
    if not rows:
        raise ValueError("no rows to fit")
    if table is None:
        table = StepTable(rows, shapes, terms, hw)
    elif table.terms != terms:
        raise ValueError(f"the table was computed for {table.terms.name!r}, not {terms.name!r}")
    groups = sorted({m.stack_group for m in rows})
    best: tuple[float, float, float, dict[str, Efficiency]] | None = None
    profile: dict[float, float] = {}
    for compute in COMPUTE_GRID:
        for memory in reversed(MEMORY_GRID):
            rms, effs = _fit_at(rows, table, groups, memory, compute)
            profile[compute] = min(profile.get(compute, math.inf), rms)
            if best is None or rms < best[0] - 1e-12:
                best = (rms, compute, memory, effs)
    assert best is not None
    return Fit(best[3], best[0], tuple(sorted(profile.items())))
