"""`tune --stack S --trn2-profile P --baseline URL`: measure a deployed serving stack as the
speculative arm.

A deployed stack serves one configuration, so it is one arm: the window k is P's
`speculation.num_speculative_tokens` (P is the profile the stack was deployed from), the URL is
the stack's service (its internal NLB or a port-forward, trnspec_tools.client.stack_endpoint),
and the baseline (speculation off) is another server given by `--baseline URL`. The context
yields the options with `endpoints = {K: URL}`, which is what tune's remote mode measures;
`--rows-out` then writes the run as rows for `python -m trnspec fit --add`.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

from trnspec.boundary.problems import ABSENT
from trnspec.config.serving import load_profile

from trnspec_tools.bench.options import UsageError
from trnspec_tools.client.stack_endpoint import stack_endpoint
from trnspec_tools.tune.tune_options import TuneOptions

#: (stack, region, via) -> a context that yields the stack's base URL.
StackEndpoint = Callable[[str, str | None, str], AbstractContextManager[str]]


def stack_window(opts: TuneOptions) -> int:
    """The k the deployed stack serves, from its profile; UsageError naming the flag if the
    combination cannot describe one speculative arm."""
    if opts.k or opts.endpoints:
        raise UsageError.of("--stack", ABSENT, "give --stack or --k / --endpoint-for-k, not both")
    if not opts.trn2_profile:
        raise UsageError.of(
            "--stack",
            ABSENT,
            "give --trn2-profile P, the profile the stack was deployed from (its k)",
        )
    if not opts.baseline:
        raise UsageError.of(
            "--stack", ABSENT, "give --baseline URL, a server of the same model without speculation"
        )
    spec = load_profile(opts.trn2_profile).speculation
    if spec.method == "none" or spec.num_speculative_tokens < 1:
        raise UsageError.of(
            "--trn2-profile",
            opts.trn2_profile,
            "has no speculation; the stack is the speculative arm, give its speculative profile",
        )
    return spec.num_speculative_tokens


@contextlib.contextmanager
def stack_arm(opts: TuneOptions, endpoint: StackEndpoint = stack_endpoint) -> Iterator[TuneOptions]:
    """The options to measure with: with `--stack`, `endpoints = {K: URL}` (the URL answers
    while the context is open: a port-forward closes with it); without, `opts` unchanged."""
    if not opts.stack:
        yield opts
        return
    k = stack_window(opts)
    with endpoint(opts.stack, opts.region, opts.via) as url:
        yield dataclasses.replace(opts, endpoints={k: url})
