"""The `serving:` section: defaults, and every bad value reported at once with its fix."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infra.settings.serving import ServingSettings, ServingSettingsError, load_serving_settings


def test_missing_section_gives_the_defaults() -> None:
    assert load_serving_settings(None) == ServingSettings()
    assert load_serving_settings({}).profile == "qwen3-4b-dflash"


def test_settings_are_frozen() -> None:
    with pytest.raises(ValueError):
        ServingSettings().min_replicas = 3  # type: ignore[misc]


def test_every_problem_is_reported_in_one_error() -> None:
    with pytest.raises(ServingSettingsError) as info:
        load_serving_settings(
            {
                "min_replicas": 0,
                "prometheus": "amp",
                "namespace": "Bad_NS",
                "colour": "blue",
            }
        )
    text = str(info.value)
    assert "serving.min_replicas=0" in text
    assert "serving.prometheus=amp" in text and "'in-cluster' or 'existing'" in text
    assert "serving.colour=blue" in text and "allowed:" in text
    assert len(info.value.problems) == 3  # field errors first; cross-field checks need valid fields


def test_cross_field_problems_are_all_reported() -> None:
    with pytest.raises(ServingSettingsError) as info:
        load_serving_settings(
            {
                "namespace": "Bad_NS",
                "min_replicas": 3,
                "max_replicas": 2,
                "prometheus": "existing",
                "overrides": ["no-equals-sign"],
            }
        )
    text = str(info.value)
    for needle in (
        "serving.namespace=Bad_NS",
        "serving.max_replicas=2: must be >= min_replicas (3)",
        "serving.prometheus_url: required with prometheus: existing",
        "serving.overrides.0=no-equals-sign",
    ):
        assert needle in text
    assert len(info.value.problems) == 4


def test_prometheus_url_is_refused_for_in_cluster() -> None:
    with pytest.raises(ServingSettingsError, match="only allowed with prometheus: existing"):
        load_serving_settings({"prometheus_url": "http://x:9090"})


def test_section_must_be_a_mapping() -> None:
    with pytest.raises(ServingSettingsError, match="must be a mapping"):
        load_serving_settings(["qwen"])  # type: ignore[arg-type]


def test_app_name_defaults_to_the_profile() -> None:
    assert ServingSettings(profile="llama31-70b-draft").app_name == "llama31-70b-draft"
    assert ServingSettings(name="chat").app_name == "chat"


#: No deadline and no too-slow/data-size checks: a loaded 2-core machine must not fail these.
RELAXED = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
ANY_VALUE = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)


@RELAXED
@given(
    st.dictionaries(
        st.sampled_from([*sorted(ServingSettings.model_fields), "unknown"]),
        ANY_VALUE | st.lists(ANY_VALUE, max_size=3),
        max_size=6,
    )
)
def test_any_input_gives_settings_or_a_field_named_error(raw: dict) -> None:
    try:
        load_serving_settings(raw)
    except ServingSettingsError as err:
        assert err.problems
        for problem in err.problems:
            assert problem.field.split(".")[1] in {*ServingSettings.model_fields, "unknown"}
            assert problem.fix and str(problem).startswith(
                (f"{problem.field}=", f"{problem.field}:")
            )


@pytest.mark.parametrize("field", ["min_replicas", "shm_gib", "weights_volume_gib"])
def test_booleans_are_refused_for_integer_settings(field: str) -> None:
    with pytest.raises(ServingSettingsError) as info:
        load_serving_settings({field: True})
    assert [p.field for p in info.value.problems] == [f"serving.{field}"]
    assert "not true" in str(info.value)


def test_names_keep_their_text_and_refuse_control_characters() -> None:
    from trnspec.boundary.user_input import load_yaml

    raw = load_yaml("profile: 0123\nname: '0123'\n")
    assert load_serving_settings(raw).profile == "0123"
    with pytest.raises(ServingSettingsError, match="control character"):
        load_serving_settings({"name": "chat\x1b[31m"})


@pytest.mark.parametrize(
    "name",
    ["gp3 && id", "gp3;id", "$(id)", "GP3", "-gp3", "gp3.", "gp3..io", "gp_3", "a" * 254, ""],
)
def test_the_storage_class_must_be_a_kubernetes_name(name: str) -> None:
    """A StorageClass is named by a DNS-1123 subdomain: anything else (shell syntax, capitals,
    a leading '-', 254 characters) is refused where the setting enters, naming the field, the
    value and the rule, before it reaches a manifest or a printed command."""
    with pytest.raises(ServingSettingsError) as info:
        load_serving_settings({"weights_storage": "ebs", "ebs_storage_class": name})
    assert [p.field for p in info.value.problems] == ["serving.ebs_storage_class"]
    assert "DNS-1123 subdomain" in info.value.problems[0].fix


@pytest.mark.parametrize("name", ["gp3", "io2", "ebs-sc.example.com", "a" * 253, "0"])
def test_a_kubernetes_storage_class_name_is_kept(name: str) -> None:
    assert load_serving_settings({"ebs_storage_class": name}).ebs_storage_class == name
