"""Properties of the compile-cache key on any identity: an S3-safe readable prefix naming the
models, method, k, TP, LNC and SDK, then 16 hex digits; equal exactly when the identities are."""

from __future__ import annotations

import dataclasses
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trnspec.config.images import image_spec
from trnspec.config.serving import list_profiles, load_profile
from trnspec.staging.cache_key import (
    CompileIdentity,
    _slug,
    cache_key,
    compile_cache_key,
    identity_from_config,
)

SETTINGS = settings(max_examples=150, deadline=None)
SAFE = re.compile(r"[a-z0-9.-]+")

sources = st.one_of(
    st.text(max_size=60),
    st.builds(
        lambda org, name, slash: f"s3://bkt/{org}/{name}" + ("/" if slash else ""),
        st.text("abcXYZ09_-.", min_size=1, max_size=10),
        st.text("abcXYZ09_-. /", min_size=0, max_size=50),
        st.booleans(),
    ),
)
methods = st.sampled_from(["draft_model", "eagle", "eagle3", "dflash", "none"])

identities = st.builds(
    CompileIdentity,
    target=sources,
    target_revision=st.none() | st.text(max_size=8),
    draft=st.none() | sources,
    draft_revision=st.none() | st.text(max_size=8),
    method=methods,
    num_speculative_tokens=st.integers(0, 16),
    speculation_options=st.just("{}"),
    tensor_parallel_size=st.sampled_from([1, 2, 4, 8, 16, 32, 64]),
    lnc=st.sampled_from([1, 2]),
    sequence_buckets=st.lists(st.integers(1, 1 << 14), max_size=4).map(
        lambda b: tuple(sorted(set(b)))
    ),
    max_num_seqs=st.integers(1, 256),
    max_model_len=st.integers(1, 1 << 17),
    dtype=st.sampled_from(["bfloat16", "float16"]),
    image_generation=st.sampled_from(["neuron-fork", "neuron-plugin", "cpu"]),
    image=st.text(max_size=30),
    neuron_sdk=st.none() | st.sampled_from(["2.26.1", "2.33.0"]),
)


@SETTINGS
@given(identities)
def test_the_key_is_an_s3_safe_readable_prefix_and_sixteen_hex_digits(identity):
    key = cache_key(identity)
    prefix, _, digest = key.rpartition("-")
    assert re.fullmatch(r"[0-9a-f]{16}", digest)
    assert SAFE.fullmatch(prefix.replace("_", "-")), key
    assert f"-tp{identity.tensor_parallel_size}-lnc{identity.lnc}-" in key
    if identity.neuron_sdk:
        assert f"-sdk{identity.neuron_sdk}-" in key
    else:
        assert f"-{identity.image_generation}-" in key
    if identity.method == "none":
        assert "-none-tp" in key
    else:
        method = identity.method.replace("_", "-")
        assert f"-{method}-k{identity.num_speculative_tokens}-tp" in key


names = st.text("abcdefXYZ0189_-. ", min_size=1, max_size=60)


@SETTINGS
@given(st.text(max_size=80))
def test_a_model_slug_is_short_s3_safe_and_never_empty(source):
    slug = _slug(source)
    assert SAFE.fullmatch(slug) and len(slug) <= 32
    assert not slug.startswith(("-", ".")) and not slug.endswith(("-", "."))


def test_a_long_name_is_cut_to_thirty_two_characters_of_its_start():
    name = "meta-llama-3.1-405b-instruct-fp8-dynamic"  # 40 characters, all kept by the slug
    assert _slug(f"s3://bkt/models/{name}") == name[:32]


@SETTINGS
@given(st.text("abc/", max_size=10), names)
def test_a_slug_names_the_last_part_of_the_source_whatever_its_case_and_trailing_slash(org, name):
    assert _slug(f"s3://bkt/{org}/{name}") == _slug(name) == _slug(name.upper())
    assert _slug(f"{org}/{name}/") == _slug(name)


def test_a_slug_of_a_hub_id():
    assert _slug("Qwen/Qwen3-32B") == "qwen3-32b"
    assert _slug("z-lab/LLaMA3.1-8B_Instruct") == "llama3.1-8b-instruct"


@SETTINGS
@given(identities, identities)
def test_two_keys_are_equal_exactly_when_the_identities_are(a, b):
    assert (cache_key(a) == cache_key(b)) == (a == b)
    assert cache_key(a) == cache_key(dataclasses.replace(a))


@SETTINGS
@given(identities)
def test_a_source_with_and_without_its_trailing_slash_reads_the_same_in_the_prefix(identity):
    slashed = dataclasses.replace(identity, target=identity.target.rstrip("/") + "/")
    bare = dataclasses.replace(identity, target=identity.target.rstrip("/"))
    assert cache_key(slashed).rsplit("-", 1)[0] == cache_key(bare).rsplit("-", 1)[0]


@pytest.mark.parametrize("profile", list_profiles())
def test_a_profiles_identity_names_its_image_generation_and_the_prefix_shows_sdk_or_generation(
    profile,
):
    cfg = load_profile(profile)
    spec = image_spec(cfg.image)
    identity = identity_from_config(cfg, spec.uri, spec.neuron_sdk)
    assert identity.image_generation == cfg.image.value
    key = compile_cache_key(cfg)
    marker = f"-sdk{spec.neuron_sdk}-" if spec.neuron_sdk else f"-{cfg.image.value}-"
    assert marker in key
