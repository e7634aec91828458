"""The per-token acceptance rate a prediction or a deployment plan is made for, from what the user
gives: the rate itself, or the mean tokens per verification step as published (at a window k).
Read by `predict` and `plan-deploy` alike; a bad value is a ConfigError naming the flag."""

from __future__ import annotations

from trnspec.config.serving import ConfigError, Problem
from trnspec.perf.step_time import ModelInputError, alpha_from_tokens_per_step


def acceptance_rate(rate: float | None, length: float | None, k: int) -> float | None:
    """`--acceptance-rate` (a fraction in [0, 1]) or `--acceptance-length` tokens per step at
    window `k` turned into a rate by (1 - a^(k+1)) / (1 - a) = tau; None when neither is given."""
    if rate is not None:
        if not 0.0 <= rate <= 1.0:
            raise ConfigError([Problem("--acceptance-rate", rate, "give a fraction in [0, 1]")])
        return rate
    if length is None:
        return None
    try:
        return alpha_from_tokens_per_step(length, k)
    except ModelInputError as err:
        raise ConfigError([Problem("--acceptance-length", length, str(err))]) from None
