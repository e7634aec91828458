"""How sure a plan is: speculation against plain, each with the held-out error of its regime.

The figure that decides is the cost per 1M output tokens at peak (what the nodes bill), with the
band of the regime it was predicted in (trnspec.perf.error_bands: the largest held-out error,
leave one source out), and for the speculative side its smallest speedup over plain across
batches 1..b (the speculative band is a held-out error of that speedup). The rule:

- confident in plain when plain's cost at the top of its band is below speculation's at the
  bottom of its band, or when speculation is slower than plain at some batch even with both
  bands in its favour (its speed at the top of its band, plain's at the bottom of its own);
- confident in speculation when its cost at the top of its band is below plain's at the bottom,
  and it is faster than plain at every batch even with both bands against it;
- otherwise undecided: the cheaper of the two flips within the bands, or one side has no
  held-out data at all. An undecided plan deploys a calibration: the plain twin (same target) as
  the main Deployment and the speculative variant beside it, measured against each other.

A margin is the ratio of the two costs at the near edges of their bands (above 1 when confident).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from trnspec.plan.deploy_plan import ProfilePlan, Variant, rank
from trnspec.plan.verdict import Verdict

#: What the plan says when the model cannot tell.
UNDECIDED_TEXT = "undecided at this confidence: measure"


@dataclass(frozen=True)
class Decision:
    """What the plan deploys and how sure it is."""

    verdict: Verdict
    #: The main Deployment: the chosen variant, or the plain twin of a calibration.
    serving: Variant
    #: The speculative variant compared (the calibration's speculative arm when undecided).
    speculative: Variant | None
    #: The plain variant compared.
    plain: Variant | None
    reason: str
    #: Plain cost / speculative cost at the nominal figures (None: one side is missing).
    ratio: float | None = None
    #: The winner's advantage at the near edges of both bands (> 1; None unless confident and
    #: both sides exist).
    margin: float | None = None

    @property
    def calibrate(self) -> bool:
        return self.verdict is Verdict.UNDECIDED


def speedup_edges(speedup: float, spec_error: float, plain_error: float) -> tuple[float, float]:
    """A speedup over plain at the edges of both bands: (both against speculation, both for it).
    Speculation's own error and plain's both count (the plain server may run on another stack,
    whose floor has its own error); a plain error of 100 % or more leaves no upper edge."""
    slowest = speedup * (1 - spec_error) / (1 + plain_error)
    fastest = speedup * (1 + spec_error) / (1 - plain_error) if plain_error < 1 else math.inf
    return slowest, fastest


def _best(variants: Sequence[Variant]) -> Variant | None:
    return min(variants, key=rank) if variants else None


def plain_twin(plans: Sequence[ProfilePlan], spec: Variant) -> Variant | None:
    """The cheapest plain variant serving the same target as `spec`: what the deployment would
    run without speculation. The calibration measures both arms at the concurrency levels both
    take (up to the smaller max_num_seqs), so the main Deployment stays the plain plan."""
    return _best([p.plain for p in plans if p.plain is not None and p.plain.target == spec.target])


def _undecided(
    spec: Variant, plain: Variant, plans: Sequence[ProfilePlan], why: str, ratio: float
) -> Decision:
    twin = plain_twin(plans, spec) or plain
    return Decision(Verdict.UNDECIDED, twin, spec, twin, f"{UNDECIDED_TEXT} ({why})", ratio)


def decide(plans: Sequence[ProfilePlan]) -> Decision | None:
    """The plan's verdict over every profile (None: no variant of any profile is deployable)."""
    spec = _best([p.speculative for p in plans if p.speculative is not None])
    plain = _best([p.plain for p in plans if p.plain is not None])
    if spec is None and plain is None:
        return None
    if spec is None:
        assert plain is not None
        return Decision(
            Verdict.PLAIN,
            plain,
            None,
            plain,
            "no speculative variant kept to compare (see the variants left out)",
        )
    if plain is None:
        if not spec.pays:
            return None
        return Decision(Verdict.SPECULATION, spec, spec, None, "no plain variant meets the target")
    ratio = plain.cost_per_1m_output_tokens_usd / spec.cost_per_1m_output_tokens_usd
    missing = [v for v in (spec, plain) if v.error is None]
    if missing:
        regimes = "; ".join(v.band_note for v in missing)
        return _undecided(spec, plain, plans, regimes, ratio)
    e_s, e_p = spec.error or 0.0, plain.error or 0.0
    c_s, c_p = spec.cost_per_1m_output_tokens_usd, plain.cost_per_1m_output_tokens_usd
    if c_p * (1 + e_p) < c_s * (1 - e_s):
        return Decision(
            Verdict.PLAIN,
            plain,
            spec,
            plain,
            "plain is cheaper at every edge of the bands",
            ratio,
            c_s * (1 - e_s) / (c_p * (1 + e_p)),
        )
    slowest, fastest = speedup_edges(spec.min_speedup, e_s, e_p)
    if fastest < 1.0:
        return Decision(
            Verdict.PLAIN,
            plain,
            spec,
            plain,
            f"speculation is slower than plain at some batch even at the edges of both bands"
            f" ({spec.min_speedup:.2f}x, speculation {spec.band_text}, plain {plain.band_text})",
            ratio,
            1.0 / fastest,
        )
    if c_s * (1 + e_s) < c_p * (1 - e_p) and slowest >= 1.0:
        return Decision(
            Verdict.SPECULATION,
            spec,
            spec,
            plain,
            "speculation is cheaper at every edge of the bands",
            ratio,
            c_p * (1 - e_p) / (c_s * (1 + e_s)),
        )
    return _undecided(spec, plain, plans, "the cheaper of the two flips within the bands", ratio)
