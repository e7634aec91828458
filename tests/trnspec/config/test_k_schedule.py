"""speculation.k_schedule: the bands vLLM takes, validated here, rendered only where vLLM has them.

The parsers of each image's own vLLM release check the rendered key in
tests/trnspec/test_vllm_parsers.py; this file pins the rules and the per-image decision.
"""

from __future__ import annotations

import json

import pytest
from trnspec.checks.all_checks import check
from trnspec.config.images import ImageGeneration
from trnspec.config.k_schedule import (
    FIELD,
    SCHEDULE_SUPPORT,
    VLLM_FIELD,
    Support,
    check_k_schedule,
    schedule_text,
)
from trnspec.config.serving import ConfigError, apply_overrides, load_profile
from trnspec.engine.render import render

LOCAL_32 = ("max_num_seqs=32",)


def _local(*overrides: str):
    return apply_overrides(load_profile("local-tiny"), [*LOCAL_32, *overrides])


def _schedule_problems(cfg) -> list[str]:
    return [str(p) for p in check_k_schedule(cfg)]


def _spec_config(cfg) -> dict:
    argv = render(cfg).argv
    return json.loads(argv[argv.index("--speculative-config") + 1])


def test_set_reads_the_bands_as_yaml_and_the_cpu_image_renders_them():
    cfg = _local("speculation.k_schedule=[[1,4,4],[5,32,2]]")
    assert cfg.speculation.k_schedule == [(1, 4, 4), (5, 32, 2)]
    assert check(cfg) == []
    assert _spec_config(cfg)[VLLM_FIELD] == [[1, 4, 4], [5, 32, 2]]


def test_without_a_schedule_the_speculative_config_has_no_bands():
    assert VLLM_FIELD not in _spec_config(_local())


@pytest.mark.parametrize(
    ("bands", "says", "fix"),
    [
        ("[[2,32,4]]", "leaves 1..1 uncovered", "[[1,32,4]]"),
        ("[[1,4,4],[6,32,2]]", "leaves 5..5 uncovered", "[[1,4,4],[5,32,2]]"),
        ("[[1,8,4],[5,32,2]]", "overlaps the band before", "[[1,8,4],[9,32,2]]"),
        ("[[1,4,4],[5,16,2]]", "ends at 16, not at max_num_seqs=32", "[[1,4,4],[5,32,2]]"),
        ("[[1,4,4],[5,64,2]]", "ends at 64, not at max_num_seqs=32", "[[1,4,4],[5,32,2]]"),
        ("[[1,4,5],[5,32,2]]", "k=5 outside 0..4", "[[1,4,4],[5,32,2]]"),
        ("[[1,4,-1],[5,32,2]]", "k=-1 outside 0..4", "[[1,4,0],[5,32,2]]"),
        ("[[1,4,0],[5,32,0]]", "no band speculates", "speculation.method=none instead"),
        ("[[5,1,4]]", "starts after it ends", "[[1,32,4]]"),
    ],
)
def test_bands_must_cover_1_to_max_num_seqs_with_k_up_to_the_window(bands, says, fix):
    problems = _schedule_problems(_local(f"speculation.k_schedule={bands}"))
    assert len(problems) == 1
    line = problems[0]
    assert line.startswith(f"{FIELD}={bands}: ") and says in line and line.endswith(fix)
    assert "\n" not in line


def test_a_band_that_is_not_three_integers_is_a_schema_error_naming_the_element():
    with pytest.raises(ConfigError) as err:
        _local("speculation.k_schedule=[[1,32]]")
    assert err.value.problems[0].field.startswith("speculation.k_schedule.0")


def test_the_window_bounds_the_bands_so_raising_k_is_part_of_the_fix():
    cfg = _local(
        "speculation.num_speculative_tokens=6", "speculation.k_schedule=[[1,4,6],[5,32,2]]"
    )
    assert check(cfg) == []


def test_a_schedule_on_the_baseline_is_refused():
    problems = _schedule_problems(
        _local("speculation.method=none", "speculation.k_schedule=[[1,32,2]]")
    )
    assert problems == [f"{FIELD}=[[1,32,2]]: method=none does not speculate; remove k_schedule"]


def test_bands_set_through_options_are_refused_in_favour_of_the_field():
    cfg = _local(f"speculation.options.{VLLM_FIELD}=[[1,32,2]]")
    assert [p.field for p in check_k_schedule(cfg)] == [f"speculation.options.{VLLM_FIELD}"]


def test_every_image_generation_has_a_stated_decision():
    assert set(SCHEDULE_SUPPORT) == set(ImageGeneration)
    assert SCHEDULE_SUPPORT[ImageGeneration.CPU].support is Support.RENDERED
    assert SCHEDULE_SUPPORT[ImageGeneration.NEURON_PLUGIN].support is Support.OPT_IN
    assert SCHEDULE_SUPPORT[ImageGeneration.NEURON_FORK].support is Support.REFUSED


def test_the_fork_image_refuses_a_schedule_in_one_line_saying_why():
    cfg = apply_overrides(
        load_profile("qwen3-32b-draft"), ["speculation.k_schedule=[[1,2,4],[3,4,2]]"]
    )
    problems = [p for p in check(cfg) if p.field == FIELD]
    assert len(problems) == 1
    assert "vLLM 0.9.1" in problems[0].fix and "no num_speculative_tokens_per_batch_size" in (
        problems[0].fix
    )
    with pytest.raises(ValueError, match="does not take it"):
        render(cfg)


def test_the_plugin_renders_a_schedule_only_behind_the_opt_in():
    base = apply_overrides(
        load_profile("llama31-8b-eagle3"),
        ["speculation.num_speculative_tokens=4", "speculation.k_schedule=[[1,2,4],[3,4,2]]"],
    )
    refused = [p for p in check(base) if p.field == FIELD]
    assert len(refused) == 1
    assert "not documented to honour a k that changes per step" in refused[0].fix
    assert "k_schedule_on_neuron=true" in refused[0].fix
    opted = apply_overrides(base, ["speculation.k_schedule_on_neuron=true"])
    assert check(opted) == []
    assert _spec_config(opted)[VLLM_FIELD] == [[1, 2, 4], [3, 4, 2]]


def test_a_dflash_drafter_keeps_its_trained_block():
    cfg = apply_overrides(
        load_profile("qwen3-4b-dflash"),
        ["speculation.k_schedule=[[1,1,2],[2,4,1]]", "speculation.k_schedule_on_neuron=true"],
    )
    assert any("DFlash" in p.fix for p in check(cfg) if p.field == FIELD)


def test_schedule_text_is_what_set_reads_back():
    bands = [(1, 4, 4), (5, 32, 0)]
    cfg = _local(f"speculation.k_schedule={schedule_text(bands)}")
    assert cfg.speculation.k_schedule == bands


def test_a_k_0_band_is_allowed_and_rendered_as_written():
    """k = 0 in a band is documented as allowed (vLLM takes it; `tune --schedule` proposes it
    where it measured plain at least as fast): never a problem while another band speculates."""
    cfg = _local("speculation.k_schedule=[[1,8,4],[9,32,0]]")
    assert check_k_schedule(cfg) == []
    assert _spec_config(cfg)[VLLM_FIELD] == [[1, 8, 4], [9, 32, 0]]


def test_a_schedule_of_thousands_of_gapped_bands_is_one_bounded_problem():
    bands = [(2 * i + 1, 2 * i + 1, 1) for i in range(60_000)]  # 2, 4, 6, ... uncovered
    cfg = _local()  # built directly: parsing 60,000 bands from --set text is the slow part
    cfg = cfg.model_copy(
        update={"speculation": cfg.speculation.model_copy(update={"k_schedule": bands})}
    )
    problems = check_k_schedule(cfg)
    text = "\n".join(str(p) for p in problems)
    assert len(problems) == 1 and len(text) < 2000
    assert "leaves 2..2 uncovered" in text and "and 59994 more" in text
    assert text.endswith("[30,31,1],[32,32,1]]")  # the repaired schedule, bounded by max_num_seqs
