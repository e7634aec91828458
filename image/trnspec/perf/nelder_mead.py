"""A derivative-free minimiser (a plain, deterministic Nelder-Mead), for fits whose loss has no
convenient gradient: tune fits the performance model to a measured sweep with it
(trnspec_tools.tune.engine_fit, through trnspec.perf.trn2_fit)."""

from __future__ import annotations

from collections.abc import Callable, Sequence


def nelder_mead(
    f: Callable[[Sequence[float]], float],
    start: Sequence[float],
    step: float = 0.7,
    iterations: int = 600,
) -> tuple[list[float], float]:
    """Minimise `f` from `start` (a plain, deterministic Nelder-Mead; no derivatives)."""
    n = len(start)
    simplex = [list(start)]
    for i in range(n):
        p = list(start)
        p[i] += step
        simplex.append(p)
    values = [f(p) for p in simplex]
    for _ in range(iterations):
        order = sorted(range(n + 1), key=values.__getitem__)
        simplex = [simplex[i] for i in order]
        values = [values[i] for i in order]
        centroid = [sum(p[j] for p in simplex[:-1]) / n for j in range(n)]
        worst = simplex[-1]

        def towards(
            scale: float, centroid: list[float] = centroid, worst: list[float] = worst
        ) -> list[float]:
            return [c + scale * (w - c) for c, w in zip(centroid, worst, strict=True)]

        reflected = towards(-1.0)
        fr = f(reflected)
        if fr < values[0]:
            expanded = towards(-2.0)
            fe = f(expanded)
            simplex[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflected, fr
        else:
            contracted = towards(0.5)
            fc = f(contracted)
            if fc < values[-1]:
                simplex[-1], values[-1] = contracted, fc
            else:
                best = simplex[0]
                simplex = [best] + [
                    [b + 0.5 * (x - b) for b, x in zip(best, p, strict=True)] for p in simplex[1:]
                ]
                values = [values[0]] + [f(p) for p in simplex[1:]]
    i = min(range(n + 1), key=values.__getitem__)
    return simplex[i], values[i]
