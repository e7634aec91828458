"""speculation.k_schedule as properties: whatever bands are given, every problem names the field
and the schedule as written, and the schedule a problem suggests is one the check accepts
(trnspec.config.k_schedule)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st
from trnspec.config.k_schedule import FIELD, check_k_schedule, schedule_text
from trnspec.config.serving import ServingConfig, apply_overrides, load_profile

BASE = load_profile("local-tiny")
SUGGESTION = re.compile(r"e\.g\. use (\[\[.*\]\])$")

bands_strategy = st.lists(
    st.tuples(st.integers(1, 14), st.integers(1, 14), st.integers(-1, 7)), min_size=1, max_size=5
)


def _config(max_num_seqs: int, k: int, bands: list[tuple[int, int, int]]) -> ServingConfig:
    return apply_overrides(
        BASE,
        [
            f"max_num_seqs={max_num_seqs}",
            f"speculation.num_speculative_tokens={k}",
            f"speculation.k_schedule={schedule_text(bands)}",
        ],
    )


@given(st.integers(1, 12), st.integers(1, 6), bands_strategy)
def test_the_schedule_a_problem_suggests_passes_the_check(
    max_num_seqs: int, k: int, bands: list[tuple[int, int, int]]
) -> None:
    (problem,) = check_k_schedule(_config(max_num_seqs, k, bands)) or [None]
    if problem is None:
        return
    assert (problem.field, problem.value) == (FIELD, schedule_text(bands))
    found = SUGGESTION.search(problem.fix)
    if found is None:
        # only when no band of the repair speculates: plain decoding is the fix
        assert problem.fix.endswith("use speculation.method=none instead")
        return
    repaired = _config(max_num_seqs, k, [tuple(b) for b in eval_bands(found.group(1))])
    assert check_k_schedule(repaired) == []
    # it covers every batch from 1 to max_num_seqs once, each k within the window
    covered = [b for a, end, _ in repaired.speculation.k_schedule for b in range(a, end + 1)]
    assert covered == list(range(1, max_num_seqs + 1))


def eval_bands(text: str) -> list[list[int]]:
    """`[[a,b,k],...]` as written by schedule_text (digits, commas, brackets, minus only)."""
    assert re.fullmatch(r"[\[\]0-9,\-]+", text), text
    return [[int(x) for x in band.split(",")] for band in text[2:-2].split("],[")]


def test_several_broken_rules_are_one_problem_listing_each_rule() -> None:
    cfg = _config(8, 4, [(2, 3, 5), (2, 8, 1)])
    (problem,) = check_k_schedule(cfg)
    rules = problem.fix.split("; ")
    assert rules[:3] == [
        "band [2,3,5] leaves 1..1 uncovered (bands must be contiguous from 1)",
        "band [2,3,5] has k=5 outside 0..4 (num_speculative_tokens)",
        "band [2,8,1] overlaps the band before (bands must be contiguous from 1)",
    ]
    assert rules[3] == "e.g. use [[1,3,4],[4,8,1]]"


def test_a_schedule_whose_every_band_is_plain_says_so_and_suggests_plain_decoding() -> None:
    (problem,) = check_k_schedule(_config(8, 4, [(1, 8, 0)]))
    assert problem.fix == "no band speculates (every k is 0); use speculation.method=none instead"


def test_each_refusal_names_the_schedule_as_written() -> None:
    dflash = apply_overrides(
        load_profile("qwen3-4b-dflash"),
        ["speculation.k_schedule=[[1,1,2],[2,4,1]]", "speculation.k_schedule_on_neuron=true"],
    )
    plugin = apply_overrides(
        load_profile("llama31-8b-eagle3"),
        ["speculation.num_speculative_tokens=4", "speculation.k_schedule=[[1,2,4],[3,4,2]]"],
    )
    fork = apply_overrides(
        load_profile("qwen3-32b-draft"), ["speculation.k_schedule=[[1,2,4],[3,4,2]]"]
    )
    for cfg, says in (
        (dflash, "a DFlash drafter proposes a block fixed by its training (block_size - 1); "),
        (plugin, "; set speculation.k_schedule_on_neuron=true to render it anyway"),
        (fork, "; remove k_schedule (one k for every batch), or use an image whose vLLM has it"),
    ):
        mine = [p for p in check_k_schedule(cfg) if says in p.fix]
        assert [(p.field, p.value) for p in mine] == [
            (FIELD, schedule_text(cfg.speculation.k_schedule))
        ]
    assert any(p.fix.endswith("or remove k_schedule") for p in check_k_schedule(plugin))
    assert any(
        p.fix.endswith("(cpu; neuron-plugin with k_schedule_on_neuron=true)")
        for p in check_k_schedule(fork)
    )


def test_bands_in_the_options_name_the_value_found_there() -> None:
    cfg = apply_overrides(
        BASE, ["speculation.options.num_speculative_tokens_per_batch_size=[[1,4,2]]"]
    )
    (problem,) = check_k_schedule(cfg)
    assert problem.value == [[1, 4, 2]]
    assert problem.fix == f"set by trnspec from {FIELD}; move the bands there"


def test_as_many_broken_rules_as_the_bound_are_all_listed_with_nothing_left_over() -> None:
    bands = [(1, 1, 9), (2, 2, 9), (3, 3, 9), (4, 4, 9), (5, 8, 9)]  # five windows over k=4
    (problem,) = check_k_schedule(_config(8, 4, bands))
    assert problem.fix.count("outside 0..4") == 5 and "more" not in problem.fix


def test_a_repair_too_long_to_show_is_suggested_as_one_band() -> None:
    bands = [(2 * i + 1, 2 * i + 1, 1) for i in range(32)]  # 2, 4, ..., 64 uncovered
    (problem,) = check_k_schedule(_config(64, 4, bands))
    assert problem.fix.endswith("; e.g. use [[1,64,4]]")


def test_a_dflash_schedule_is_refused_with_the_whole_reason() -> None:
    cfg = apply_overrides(
        load_profile("qwen3-4b-dflash"),
        ["speculation.k_schedule=[[1,1,2],[2,4,1]]", "speculation.k_schedule_on_neuron=true"],
    )
    fixes = [p.fix for p in check_k_schedule(cfg)]
    assert (
        "a DFlash drafter proposes a block fixed by its training (block_size - 1); "
        "remove k_schedule"
    ) in fixes
