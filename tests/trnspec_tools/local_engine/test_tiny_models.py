"""tiny_models / tiny_corpus: a cached, deterministic tiny pair whose draft
really agrees with its target."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trnspec_tools.local_engine import tiny_corpus
from trnspec_tools.local_engine import tiny_models as builder
from trnspec_tools.local_engine.tiny_models import (
    BuildSpec,
    TinyModels,
    cache_key,
    ensure_tiny_models,
)


@pytest.fixture(scope="module")
def loaded(tiny_models: TinyModels):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_models.target)
    target = AutoModelForCausalLM.from_pretrained(tiny_models.target).eval()
    draft = AutoModelForCausalLM.from_pretrained(tiny_models.draft).eval()
    return tokenizer, target, draft


# --- cache ------------------------------------------------------------------------------------


_AVX2 = "fpu sse sse2 ssse3 sse4_1 sse4_2 avx f16c fma avx2"
_AVX512 = f"{_AVX2} avx512f avx512dq avx512cd avx512bw avx512vl avx512_vnni"


@pytest.mark.parametrize(
    ("flags", "fast"),
    [
        pytest.param(_AVX2, False, id="avx2-only"),
        pytest.param(_AVX512, False, id="avx512-without-bf16"),
        pytest.param(f"{_AVX512} avx512_bf16", True, id="avx512-bf16"),
        pytest.param(f"{_AVX512} avx512_bf16 amx_bf16 amx_tile amx_int8", True, id="amx"),
        pytest.param(f"{_AVX2} amx_bf16", True, id="amx-alone"),
    ],
)
def test_bf16_autocast_only_where_the_cpu_has_bf16_instructions(flags: str, fast: bool) -> None:
    cpuinfo = f"processor\t: 0\nmodel name\t: some cpu\nflags\t\t: {flags}\n\nprocessor\t: 1\n"
    assert builder.cpu_has_fast_bf16(builder.cpu_flags(cpuinfo)) is fast


def test_no_cpuinfo_means_no_bf16_autocast(tmp_path: Path) -> None:
    flags = builder.read_cpu_flags(tmp_path / "no-such-cpuinfo")
    assert flags == frozenset()
    assert builder.cpu_has_fast_bf16(flags) is False


def test_cpu_flags_are_read_from_the_cpuinfo_file(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nflags\t\t: {_AVX512} avx512_bf16\n")
    assert {"avx512f", "avx512_bf16"} <= builder.read_cpu_flags(cpuinfo)


def test_a_flag_named_like_bf16_in_another_line_does_not_count() -> None:
    cpuinfo = "model name\t: avx512_bf16 edition\nflags\t\t: avx2\n"
    assert builder.cpu_has_fast_bf16(builder.cpu_flags(cpuinfo)) is False


def test_the_autocast_choice_is_part_of_the_cache_key() -> None:
    assert cache_key(BuildSpec(bf16_autocast=True)) != cache_key(BuildSpec(bf16_autocast=False))


def test_cache_key_is_stable_for_the_same_inputs() -> None:
    assert cache_key(BuildSpec()) == cache_key(BuildSpec())


@pytest.mark.parametrize(
    "change",
    [{"seed": 7}, {"vocab_size": 2048}, {"target_steps": 1}, {"draft_lr": 1e-3}],
    ids=lambda c: next(iter(c)),
)
def test_cache_key_changes_with_any_build_parameter(change: dict[str, object]) -> None:
    assert cache_key(dataclasses.replace(BuildSpec(), **change)) != cache_key(BuildSpec())


def test_cache_key_changes_with_the_generators_source(monkeypatch: pytest.MonkeyPatch) -> None:
    before = cache_key(BuildSpec())
    real = builder.inspect.getsource
    monkeypatch.setattr(builder.inspect, "getsource", lambda m: real(m) + "\n# edited\n")
    assert cache_key(BuildSpec()) != before


def test_a_second_call_reuses_the_cache_without_building(
    tiny_models: TinyModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    def must_not_build(*_args: object) -> None:
        raise AssertionError("rebuilt although the cache had the models")

    monkeypatch.setattr(builder, "build", must_not_build)
    assert ensure_tiny_models() == tiny_models


def test_a_failed_build_leaves_nothing_half_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(out_dir: Path, *_args: object) -> None:
        (out_dir / "target").mkdir()
        (out_dir / "target" / "config.json").write_text("{}")
        raise KeyboardInterrupt

    monkeypatch.setattr(builder, "build", crash)
    with pytest.raises(KeyboardInterrupt):
        ensure_tiny_models(tmp_path)
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == []


# --- the pair ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["tokenizer.json", "tokenizer_config.json", "chat_template.jinja"])
def test_both_models_ship_the_same_tokenizer(tiny_models: TinyModels, name: str) -> None:
    assert (tiny_models.target / name).read_bytes() == (tiny_models.draft / name).read_bytes()


def test_configs_agree_with_the_tokenizer(tiny_models: TinyModels, loaded) -> None:
    tokenizer, _, _ = loaded
    im_end = tokenizer.convert_tokens_to_ids(tiny_corpus.IM_END)
    eot = tokenizer.convert_tokens_to_ids(tiny_corpus.END_OF_TEXT)
    for path in (tiny_models.target, tiny_models.draft):
        config = json.loads((path / "config.json").read_text())
        generation = json.loads((path / "generation_config.json").read_text())
        assert config["model_type"] == "qwen3"
        assert config["vocab_size"] == len(tokenizer) == BuildSpec().vocab_size
        assert config["eos_token_id"] == tokenizer.eos_token_id == im_end
        assert set(generation["eos_token_id"]) == {im_end, eot}
        assert (path / "model.safetensors").is_file()


def test_the_draft_is_a_fraction_of_the_target(tiny_models: TinyModels) -> None:
    params = tiny_models.info["params"]
    assert 3_000_000 <= params["target"] <= 6_000_000
    assert params["draft"] * 3 <= params["target"]


def test_the_draft_agrees_with_the_target_at_k4_under_greedy(loaded) -> None:
    tokenizer, target, draft = loaded
    spec = dataclasses.replace(BuildSpec(), eval_prompts=6, eval_new_tokens=96, seed=99)
    evaluation = builder.evaluate_pair(target, draft, tokenizer, spec)
    assert evaluation["acceptance_rate"] >= 0.7, evaluation


def test_assisted_generation_with_the_draft_equals_plain_greedy(loaded) -> None:
    """transformers' assisted generation is an exact-greedy reference for what vLLM must do."""
    import torch

    tokenizer, target, draft = loaded
    prompt = tiny_corpus.completion_prompts(1, seed=5)[0]
    ids = torch.tensor([tokenizer(prompt)["input_ids"]])
    plain = target.generate(ids, max_new_tokens=48, do_sample=False)
    assisted = target.generate(ids, max_new_tokens=48, do_sample=False, assistant_model=draft)
    assert assisted.tolist() == plain.tolist()


def test_the_chat_template_renders_chatml(loaded) -> None:
    tokenizer, _, _ = loaded
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True
    )
    assert text == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


@settings(max_examples=25, deadline=None)
@given(text=st.text(max_size=200))
def test_the_byte_level_tokenizer_round_trips_any_text(loaded, text: str) -> None:
    tokenizer, _, _ = loaded
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids) == text


# --- corpus -----------------------------------------------------------------------------------


def test_the_corpus_is_reproducible_from_its_seed() -> None:
    assert tiny_corpus.corpus(3, 50) == tiny_corpus.corpus(3, 50)
    assert tiny_corpus.corpus(3, 50) != tiny_corpus.corpus(4, 50)


def test_chat_documents_use_the_served_chat_template(loaded) -> None:
    tokenizer, _, _ = loaded
    template, noun = "sort", tiny_corpus.NOUNS[0]
    rendered = tokenizer.apply_chat_template(
        [
            {"role": "user", "content": tiny_corpus.chat_request(template, noun)},
            {"role": "assistant", "content": tiny_corpus.code_unit(template, noun)},
        ],
        tokenize=False,
    )
    assert rendered == tiny_corpus.chat_document(template, noun)
