"""Serving config: profiles load, --set overrides, and every bad input is a field-named error."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from trnspec.checks import validate
from trnspec.config import (
    ConfigError,
    Problem,
    ServingConfig,
    apply_overrides,
    list_profiles,
    load_config,
    load_profile,
    parse_config,
)
from trnspec.images import ImageGeneration

PROFILES = [
    "llama31-70b-draft",
    "llama31-8b-dflash",
    "llama31-8b-eagle3",
    "local-tiny",
    "qwen3-32b-baseline",
    "qwen3-32b-draft",
    "qwen3-4b-baseline",
    "qwen3-4b-dflash",
    "qwen3-4b-dflash-3xl",
]


def test_shipped_profiles_are_the_ones_named_in_the_contract():
    assert list_profiles() == PROFILES


@pytest.mark.parametrize("name", PROFILES)
def test_every_shipped_profile_loads_and_passes_every_check(name):
    cfg = load_profile(name)
    assert cfg.name == name
    assert cfg.description
    assert validate(cfg) is cfg


@pytest.mark.parametrize(
    ("name", "image", "method", "k"),
    [
        ("qwen3-32b-draft", "neuron-fork", "draft_model", 7),
        ("llama31-70b-draft", "neuron-fork", "draft_model", 7),
        ("llama31-8b-eagle3", "neuron-plugin", "eagle3", 3),
        ("llama31-8b-dflash", "neuron-plugin", "dflash", 9),
        ("qwen3-4b-dflash", "neuron-plugin", "dflash", 15),
        ("qwen3-4b-dflash-3xl", "neuron-plugin", "dflash", 15),
        ("qwen3-4b-baseline", "neuron-plugin", "none", None),
        ("qwen3-32b-baseline", "neuron-fork", "none", None),
        ("local-tiny", "cpu", "draft_model", 4),
    ],
)
def test_profile_pairs_image_and_method_as_specified(name, image, method, k):
    cfg = load_profile(name)
    assert cfg.image == ImageGeneration(image)
    assert cfg.speculation.method == method
    if k is not None:
        assert cfg.speculation.num_speculative_tokens == k


def test_baseline_profile_is_the_qwen3_profile_without_speculation():
    draft = load_profile("qwen3-32b-draft").model_dump(
        exclude={"name", "description", "speculation"}
    )
    base = load_profile("qwen3-32b-baseline").model_dump(
        exclude={"name", "description", "speculation"}
    )
    assert draft == base


def test_local_tiny_is_cpu_float32_on_loopback():
    cfg = load_profile("local-tiny")
    assert (cfg.hardware.instance_type, cfg.dtype, cfg.server.host) == (
        "cpu",
        "float32",
        "127.0.0.1",
    )


def test_models_are_frozen():
    cfg = load_profile("qwen3-32b-draft")
    with pytest.raises(ValueError):
        cfg.tensor_parallel_size = 8  # type: ignore[misc]


@pytest.mark.parametrize(
    ("override", "path", "expected"),
    [
        ("speculation.num_speculative_tokens=5", ("speculation", "num_speculative_tokens"), 5),
        ("tensor_parallel_size=32", ("tensor_parallel_size",), 32),
        ("sequence_buckets=[2048, 8192]", ("sequence_buckets",), [2048, 8192]),
        ("speculation.method=none", ("speculation", "method"), "none"),
        ("target.source=/abs/target", ("target", "source"), "/abs/target"),
        ("hardware.lnc=1", ("hardware", "lnc"), 1),
        ("target.revision=main", ("target", "revision"), "main"),
        ("speculation.options={a: 1}", ("speculation", "options"), {"a": 1}),
    ],
)
def test_set_override_parses_value_as_yaml_scalar(override, path, expected):
    cfg = apply_overrides(load_profile("qwen3-32b-draft"), [override])
    value: object = cfg
    for part in path:
        value = getattr(value, part)
    assert value == expected


def test_set_override_creates_an_unset_section():
    cfg = apply_overrides(
        load_profile("qwen3-32b-baseline"),
        [
            "speculation.method=draft_model",
            "speculation.draft.name=d",
            "speculation.draft.source=Qwen/Qwen3-0.6B",
        ],
    )
    assert cfg.speculation.draft is not None and cfg.speculation.draft.source == "Qwen/Qwen3-0.6B"


def test_set_override_returns_a_new_config_and_leaves_the_original():
    cfg = load_profile("local-tiny")
    apply_overrides(cfg, ["max_num_seqs=1"])
    assert cfg.max_num_seqs == 4


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ("nosuchfield=1", "nosuchfield"),
        ("speculation.nosuch=1", "speculation.nosuch"),
        ("tensor_parallel_size=abc", "tensor_parallel_size"),
        ("tensor_parallel_size=0", "tensor_parallel_size"),
        ("hardware.lnc=3", "hardware.lnc"),
        ("image=gpu", "image"),
        ("dtype=int4", "dtype"),
        ("speculation.method=medusa", "speculation.method"),
        ("server.port=70000", "server.port"),
        ("max_num_seqs=-1", "max_num_seqs"),
        ("noequals", "--set"),
        ("=5", "--set"),
        ("tensor_parallel_size.x=1", "tensor_parallel_size"),
    ],
)
def test_bad_override_names_the_field(override, field):
    with pytest.raises(ConfigError) as err:
        apply_overrides(load_profile("qwen3-32b-draft"), [override])
    assert field in [p.field for p in err.value.problems]


def test_config_error_lists_every_problem_one_per_line():
    with pytest.raises(ConfigError) as err:
        apply_overrides(
            load_profile("qwen3-32b-draft"), ["tensor_parallel_size=x", "dtype=int4", "x=1"]
        )
    lines = str(err.value).splitlines()
    assert len(lines) == len(err.value.problems) == 3
    assert {line.split("=", 1)[0] for line in lines} == {"tensor_parallel_size", "dtype", "x"}


def test_problem_str_is_field_value_fix():
    assert (
        str(Problem("tensor_parallel_size", 48, "use 32 or 64"))
        == "tensor_parallel_size=48: use 32 or 64"
    )


def test_load_config_reads_yaml_file(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        "name: x\nimage: cpu\ntarget: {name: t, source: /m}\nhardware: {instance_type: cpu}\n"
    )
    cfg = load_config(path)
    assert (cfg.name, cfg.image, cfg.target.source) == ("x", ImageGeneration.CPU, "/m")


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("name: [unclosed", "--config"),
        ("- just\n- a list\n", "<config>"),
        ("image: cpu\n", "name"),
    ],
)
def test_load_config_rejects_malformed_files_by_field(tmp_path, text, field):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert field in [p.field for p in err.value.problems]


def test_load_config_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path / "absent.yaml")
    assert err.value.problems[0].field == "--config"


def test_unknown_profile_lists_the_shipped_ones():
    with pytest.raises(ConfigError) as err:
        load_profile("nope")
    assert "qwen3-32b-draft" in err.value.problems[0].fix


def test_every_field_has_a_description_and_a_type():
    def walk(model: type[BaseModel]) -> None:
        for name, info in model.model_fields.items():
            assert info.description, f"{model.__name__}.{name} has no description"
            assert info.annotation is not None
            ann = info.annotation
            for sub in getattr(ann, "__args__", (ann,)):
                if isinstance(sub, type) and issubclass(sub, BaseModel):
                    walk(sub)

    walk(ServingConfig)


# --- hypothesis: any invalid input is a field-named ConfigError, never another exception ----


def _field_paths(model: type[BaseModel], prefix: str = "") -> set[str]:
    paths = set()
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        paths.add(path)
        for sub in getattr(info.annotation, "__args__", (info.annotation,)):
            if isinstance(sub, type) and issubclass(sub, BaseModel):
                paths |= _field_paths(sub, f"{path}.")
    return paths


FIELD_PATHS = _field_paths(ServingConfig)
LEAF_PATHS = sorted(p for p in FIELD_PATHS if not any(q.startswith(p + ".") for q in FIELD_PATHS))
ANY_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.lists(st.integers(min_value=-10, max_value=10**6), max_size=5),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)


def _is_named(problem: Problem) -> bool:
    """The problem names a real field (or an item inside a list/dict field)."""
    parts = problem.field.split(".")
    return any(".".join(parts[:n]) in FIELD_PATHS for n in range(len(parts), 0, -1))


def _set_path(data: dict, path: str, value: object) -> None:
    node = data
    parts = path.split(".")
    for part in parts[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[parts[-1]] = value


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    profile=st.sampled_from(PROFILES),
    mutations=st.lists(st.tuples(st.sampled_from(LEAF_PATHS), ANY_VALUE), min_size=1, max_size=3),
)
def test_any_mutated_config_is_valid_or_a_field_named_config_error(profile, mutations):
    data = load_profile(profile).model_dump(mode="json")
    for path, value in mutations:
        _set_path(data, path, value)
    try:
        validate(parse_config(data))
    except ConfigError as err:
        assert err.problems
        for problem in err.problems:
            assert _is_named(problem), problem
            assert problem.fix


INVALID_FOR_TYPE = {
    "tensor_parallel_size": st.one_of(
        st.integers(max_value=0),
        st.text(min_size=1).filter(lambda s: not s.strip().lstrip("+-").isdigit()),
    ),
    "max_num_seqs": st.integers(max_value=0),
    "max_model_len": st.integers(max_value=15),
    "server.port": st.one_of(st.integers(max_value=0), st.integers(min_value=65536)),
    "hardware.lnc": st.integers().filter(lambda n: n not in (1, 2)),
    "speculation.num_speculative_tokens": st.integers(max_value=0),
    "image": st.text().filter(lambda s: s not in {"neuron-fork", "neuron-plugin", "cpu"}),
    "dtype": st.text().filter(lambda s: s not in {"bfloat16", "float16", "float32"}),
    "speculation.method": st.text().filter(lambda s: s not in {"draft_model", "eagle3", "none"}),
    "target.name": st.just(""),
    "sequence_buckets": st.integers(),
}


@settings(max_examples=150, deadline=None)
@given(
    profile=st.sampled_from(PROFILES),
    field_and_value=st.sampled_from(sorted(INVALID_FOR_TYPE)).flatmap(
        lambda f: st.tuples(st.just(f), INVALID_FOR_TYPE[f])
    ),
)
def test_a_definitely_invalid_value_is_refused_naming_its_field(profile, field_and_value):
    field, value = field_and_value
    data = load_profile(profile).model_dump(mode="json")
    _set_path(data, field, value)
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    assert field in [p.field for p in err.value.problems]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(max_size=30), min_size=1, max_size=3))
def test_arbitrary_set_text_never_raises_anything_but_config_error(items):
    try:
        validate(apply_overrides(load_profile("qwen3-32b-draft"), items))
    except ConfigError as err:
        assert all(p.fix for p in err.problems)


def test_numeric_set_values_are_kept_as_text_for_string_fields():
    cfg = apply_overrides(load_profile("qwen3-32b-draft"), ["target.revision=123456"])
    assert cfg.target.revision == "123456"
