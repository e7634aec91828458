"""Serving config: profiles load, --set overrides, and every bad input is a field-named error."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from trnspec.checks.all_checks import validate
from trnspec.config.images import ImageGeneration
from trnspec.config.serving import (
    ConfigError,
    Problem,
    ServingConfig,
    apply_overrides,
    list_profiles,
    load_config,
    load_profile,
    parse_config,
)

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
    "image": st.text().filter(lambda s: s not in {g.value for g in ImageGeneration}),
    "dtype": st.text().filter(lambda s: s not in {"bfloat16", "float16", "float32"}),
    "speculation.method": st.text().filter(lambda s: s not in {"draft_model", "eagle3", "none"}),
    "target.name": st.just(""),
    "sequence_buckets": st.integers(),
}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
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


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text(max_size=30), min_size=1, max_size=3))
def test_arbitrary_set_text_never_raises_anything_but_config_error(items):
    try:
        validate(apply_overrides(load_profile("qwen3-32b-draft"), items))
    except ConfigError as err:
        assert all(p.fix for p in err.problems)


def test_numeric_set_values_are_kept_as_text_for_string_fields():
    cfg = apply_overrides(load_profile("qwen3-32b-draft"), ["target.revision=123456"])
    assert cfg.target.revision == "123456"


# --- input hardening: one reading rule, bounded input and output ------------------------------


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("target.revision=0123456", "0123456"),  # YAML 1.1 made this the octal 42798
        ("target.revision=1.30", "1.30"),
        ("target.revision=0x1F", "0x1F"),
        ("target.revision=yes", "yes"),
        ("target.revision=2024-01-01", "2024-01-01"),
    ],
)
def test_text_fields_keep_the_value_as_written(override, expected):
    cfg = apply_overrides(load_profile("qwen3-32b-draft"), [override])
    assert cfg.target.revision == expected


def test_a_config_file_keeps_text_fields_as_written(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        "name: 0123\nimage: cpu\nhardware: {instance_type: cpu}\n"
        "target: {name: 1.30, source: /m, revision: 0123456}\n"
    )
    cfg = load_config(path)
    assert (cfg.name, cfg.target.name, cfg.target.revision) == ("0123", "1.30", "0123456")


@pytest.mark.parametrize(
    "override",
    [
        "tensor_parallel_size=true",
        "max_num_seqs=false",
        "hardware.lnc=true",
        "server.port=true",
        "sequence_buckets=[true, 8192]",
    ],
)
def test_booleans_are_refused_for_integer_fields(override):
    with pytest.raises(ConfigError) as err:
        apply_overrides(load_profile("qwen3-32b-draft"), [override])
    assert override.split("=")[0] in err.value.problems[0].field
    assert "not true" in str(err.value) or "not false" in str(err.value)


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("s3://", "no bucket"),
        ("s3:///models/x", "no bucket"),
        ("s3://bkt", "no key prefix"),
        ("s3://bkt/", "no key prefix"),
        ("s3://bkt/../../../etc", "'..' segment"),
        ("s3://bkt/models/./x", "'.' or '..' segment"),
        ("s3://Not_A_Bucket/m", "not an S3 bucket name"),
        ("s3://xn--bucket/m", "S3 reserves 'xn--'"),
    ],
)
def test_s3_sources_need_a_bucket_and_a_folder_that_stays_inside(source, says):
    with pytest.raises(ConfigError) as err:
        apply_overrides(load_profile("qwen3-32b-draft"), [f"target.source={source}"])
    assert err.value.problems[0].field == "target.source"
    assert says in str(err.value)


@pytest.mark.parametrize("field", ["target.name", "name", "speculation.draft.name", "server.host"])
def test_names_with_control_characters_are_refused(field):
    with pytest.raises(ConfigError, match="control character") as err:
        apply_overrides(load_profile("qwen3-32b-draft"), [f"{field}=a\x1b[31mb"])
    assert "\\x1b" in str(err.value)  # shown escaped, never sent to the terminal raw


def test_nested_alias_yaml_is_one_short_problem(tmp_path):
    levels = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        prev, name = chr(96 + i), chr(97 + i)
        levels.append(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]")
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(levels))
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert len(err.value.problems) == 1 and len(str(err.value)) < 300


def test_many_unknown_keys_give_a_capped_message(tmp_path):
    from trnspec.boundary.problems import MAX_LISTED

    path = tmp_path / "keys.yaml"
    path.write_text("name: x\n" + "".join(f"k{i}: {'v' * 200}\n" for i in range(5000)))
    with pytest.raises(ConfigError) as err:
        load_config(path)
    lines = str(err.value).splitlines()
    assert len(err.value.problems) > 5000 - 1
    assert len(lines) == MAX_LISTED + 1 and "more problems" in lines[-1]
    assert max(len(line) for line in lines) < 300


def test_an_oversized_or_non_utf8_config_is_one_problem(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("#" * (2 * 1024 * 1024))
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes("name: caf\xe9\n".encode("latin-1"))
    for path, says in ((big, "larger than"), (latin1, "not UTF-8")):
        with pytest.raises(ConfigError) as err:
            load_config(path)
        assert [p.field for p in err.value.problems] == ["--config"]
        assert says in str(err.value)


_YAML_VALUE = st.one_of(
    st.sampled_from(["true", "no", "0123", "1.30", "0x1F", "~", "[1, 2]", "{a: 1}", "''", "'x'"]),
    st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=12),
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(st.tuples(st.sampled_from(LEAF_PATHS), _YAML_VALUE), min_size=1, max_size=4))
def test_any_override_text_gives_a_config_or_a_field_named_error(items):
    overrides = [f"{path}={value}" for path, value in items]
    try:
        cfg = validate(apply_overrides(load_profile("qwen3-32b-draft"), overrides))
    except ConfigError as err:
        assert err.problems
        for problem in err.problems:
            assert _is_named(problem) or problem.field == "--set", problem
            assert problem.fix and "\n" not in str(problem)
    else:
        for path, _ in items:  # a text field holds text, never a parsed number or boolean
            value: object = cfg
            for part in path.split("."):
                value = getattr(value, part, None)
            field_is_text = path in {"name", "description", "target.name", "target.revision"}
            assert not field_is_text or value is None or isinstance(value, str)


def test_free_form_options_hold_plain_numbers_for_vllm_json():
    import json

    import yaml

    cfg = apply_overrides(
        load_profile("qwen3-32b-draft"), ["speculation.options={a: 0x10, b: 1.50, c: [007]}"]
    )
    options = cfg.speculation.options
    assert options == {"a": 16, "b": 1.5, "c": [7]}
    assert [type(v) for v in options.values()] == [int, float, list]
    assert json.loads(json.dumps(options)) == options
    yaml.safe_dump(cfg.model_dump()["speculation"])  # no YAML-tagged number leaks out
