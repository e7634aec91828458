"""The standard speculative-decoding window model, and fitting it to measurements.

With per-token acceptance rate a and window k, one verification step of the target yields on
average (1 - a^(k+1)) / (1 - a) tokens (Leviathan et al., 2023), while costing one target step plus
k draft steps, i.e. 1 + k*c target-step equivalents where c is the draft/target cost ratio. The
speedup over plain decoding is the ratio. Too small a k leaves accepted tokens on the table; too
large a k pays for drafts that are thrown away: the optimum depends on a and c, which is why k is
tuned from measurements rather than guessed.

vLLM reports acceptance per position i as the number of drafts whose first i+1 tokens were all
accepted; dividing by the number of drafts gives the unconditional rate r_i, and the expected
tokens per step is 1 + sum(r_i). That form needs no geometric assumption, so it is used where the
server exposes it; the single-a form extrapolates beyond the measured positions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# The one geometric sum (1 - a^(k+1)) / (1 - a), under this module's name.
from trnspec.perf.step_time import tokens_per_step as expected_tokens_per_step


def tokens_per_step_from_conditional(conditional: Sequence[float], k: int) -> float:
    """Mean tokens per step from conditional per-position acceptance a_1..a_k.

    Position i is reached only if every earlier position was accepted, so its unconditional rate is
    the running product. Positions beyond the list reuse its last value (geometric tail).
    """
    if not conditional:
        raise ValueError("conditional acceptance list is empty")
    total, reach = 1.0, 1.0
    for i in range(k):
        a = conditional[i] if i < len(conditional) else conditional[-1]
        reach *= a
        total += reach
    return total


def speedup(tokens_per_step: float, k: int, cost_ratio: float) -> float:
    """Throughput relative to plain decoding: tokens per step over the step's relative cost."""
    return tokens_per_step / (1.0 + k * cost_ratio)


def conditional_from_unconditional(per_position: Sequence[float]) -> list[float]:
    """a_i = r_i / r_(i-1) with r_0 = 1; a zero earlier rate gives 0 (nothing reaches it)."""
    out: list[float] = []
    prev = 1.0
    for r in per_position:
        out.append(0.0 if prev <= 0 else min(1.0, r / prev))
        prev = r
    return out


@dataclass(frozen=True)
class KMeasurement:
    """What one run at window k measured, against the same workload's baseline."""

    k: int
    mean_accepted_length: float
    measured_speedup: float
    #: unconditional acceptance per position (len k), or None where the server does not expose it
    per_position: tuple[float, ...] | None = None
    #: drafts in the run, used to weight per-position pooling
    num_drafts: int = 0


@dataclass(frozen=True)
class FittedModel:
    """Fitted acceptance (single and per position) and draft/target cost ratio."""

    alpha: float
    conditional: tuple[float, ...]
    cost_ratio: float
    c_per_k: dict[int, float]

    def tokens_per_step(self, k: int) -> float:
        if self.conditional:
            return tokens_per_step_from_conditional(self.conditional, k)
        return expected_tokens_per_step(self.alpha, k)

    def predicted_speedup(self, k: int) -> float:
        return speedup(self.tokens_per_step(k), k, self.cost_ratio)


def fit_alpha(points: Sequence[tuple[int, float]]) -> float:
    """Least-squares a such that (1-a^(k+1))/(1-a) matches measured mean accepted lengths.

    Mean accepted length is monotone in a for fixed k, so a bounded golden-section search on the
    summed squared error is exact enough (1e-9) and needs no optimisation library.
    """
    if not points:
        raise ValueError("no (k, mean accepted length) points to fit")

    def err(a: float) -> float:
        return sum((expected_tokens_per_step(a, k) - m) ** 2 for k, m in points)

    lo, hi = 0.0, 1.0
    g = (math.sqrt(5.0) - 1.0) / 2.0
    x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
    f1, f2 = err(x1), err(x2)
    while hi - lo > 1e-10:
        if f1 < f2:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - g * (hi - lo)
            f1 = err(x1)
        else:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + g * (hi - lo)
            f2 = err(x2)
    return (lo + hi) / 2.0


def pool_conditional(measurements: Sequence[KMeasurement]) -> tuple[float, ...]:
    """Conditional acceptance per position, pooled over runs weighted by their draft counts.

    Acceptance at position i does not depend on k (the draft proposes the same tokens), so runs at
    different k are independent samples of the same positions; deeper runs add the deeper positions.
    """
    reached: dict[int, float] = {}
    accepted: dict[int, float] = {}
    for m in measurements:
        if m.per_position is None or m.num_drafts <= 0:
            continue
        prev = float(m.num_drafts)
        for i, r in enumerate(m.per_position):
            count = r * m.num_drafts
            reached[i] = reached.get(i, 0.0) + prev
            accepted[i] = accepted.get(i, 0.0) + count
            prev = count
    out: list[float] = []
    for i in sorted(reached):
        if i != len(out):
            break
        out.append(accepted[i] / reached[i] if reached[i] > 0 else 0.0)
    return tuple(out)


def fit(measurements: Sequence[KMeasurement]) -> FittedModel:
    """Fit a, per-position acceptance and c from runs at several k.

    c comes from inverting the model per run, 1 + k*c = L_k / S_k, then a least-squares slope
    through the origin over k (clamped at 0: a negative cost would mean the baseline was slower
    for reasons the model does not describe, e.g. noise).
    """
    if not measurements:
        raise ValueError("no measurements to fit")
    alpha = fit_alpha([(m.k, m.mean_accepted_length) for m in measurements if m.k > 0])
    conditional = pool_conditional(measurements)
    c_per_k: dict[int, float] = {}
    num, den = 0.0, 0.0
    for m in measurements:
        if m.k <= 0 or m.measured_speedup <= 0:
            continue
        y = m.mean_accepted_length / m.measured_speedup - 1.0
        c_per_k[m.k] = y / m.k
        num += m.k * y
        den += m.k * m.k
    cost_ratio = max(0.0, num / den) if den > 0 else 0.0
    return FittedModel(alpha, conditional, cost_ratio, c_per_k)


def best_k(model: FittedModel, candidates: Sequence[int]) -> int:
    """The candidate with the highest predicted speedup (ties go to the smaller k: cheaper)."""
    if not candidates:
        raise ValueError("no candidate k values")
    return max(sorted(candidates), key=lambda k: (round(model.predicted_speedup(k), 12), -k))


def precompile_set(best: int, k_max: int) -> list[int]:
    """k values to compile ahead on Trn2: the best and its neighbours, so a shift in the workload's
    acceptance can be followed without a tens-of-minutes Neuron recompile."""
    return [k for k in (best - 1, best, best + 1) if 1 <= k <= k_max]
