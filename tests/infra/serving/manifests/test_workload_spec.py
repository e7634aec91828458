"""Derived values: Neuron device counts come from TP, LNC and the instance table, never by hand."""

from __future__ import annotations

import pytest
from trnspec.config.serving import apply_overrides, load_profile
from trnspec.hardware.topology import PHYSICAL_CORES_PER_CHIP, instance
from workload_cases import BUCKET, IMAGE, TRN2_PROFILES, build, by_kind

from infra.contracts import MODELS_PREFIX, NEURON_DEVICE_RESOURCE
from infra.serving.manifests.spec import (
    ClusterWorkloadError,
    derive_workload,
    model_source_overrides,
)
from infra.settings.serving import ServingSettings


@pytest.mark.parametrize(
    ("instance_type", "tp", "lnc", "devices"),
    [
        # LNC=2: a chip shows 4 logical cores, so TP=32 needs 8 chips and TP=64 all 16.
        ("trn2.48xlarge", 32, 2, 8),
        ("trn2.48xlarge", 64, 2, 16),
        # LNC=1: 8 logical cores per chip.
        ("trn2.48xlarge", 32, 1, 4),
        ("trn2.48xlarge", 64, 1, 8),
        ("trn2.48xlarge", 128, 1, 16),
        ("trn2u.48xlarge", 64, 2, 16),
        # trn2.3xlarge has one chip: anything that fits uses exactly it.
        ("trn2.3xlarge", 4, 2, 1),
        ("trn2.3xlarge", 8, 1, 1),
        ("trn2.3xlarge", 1, 2, 1),
    ],
)
def test_neuron_devices_follow_tp_and_lnc(
    instance_type: str, tp: int, lnc: int, devices: int
) -> None:
    assert instance(instance_type).chips_for(tp, lnc) == devices
    # Cross-check from first principles: logical cores per chip = physical / LNC.
    assert devices == max(1, tp // (PHYSICAL_CORES_PER_CHIP // lnc))


@pytest.mark.parametrize(
    ("tp", "lnc", "devices"), [(32, 2, 8), (64, 2, 16), (32, 1, 4), (64, 1, 8)]
)
def test_deployment_requests_the_devices_its_tp_needs(tp: int, lnc: int, devices: int) -> None:
    _, spec, manifests, _ = build(
        overrides=[f"tensor_parallel_size={tp}", f"hardware.lnc={lnc}", "hardware.check_hbm=false"]
    )
    container = by_kind(manifests, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["requests"][NEURON_DEVICE_RESOURCE] == str(devices)
    assert container["resources"]["limits"][NEURON_DEVICE_RESOURCE] == str(devices)
    assert spec.neuron_devices == devices


@pytest.mark.parametrize("profile", TRN2_PROFILES)
def test_every_profile_requests_devices_derived_from_its_config(profile: str) -> None:
    cfg, _, manifests, _ = build(profile)
    expected = instance(cfg.hardware.instance_type).chips_for(
        cfg.tensor_parallel_size, cfg.hardware.lnc
    )
    # The precompile Job too, where there is one (not on a one-chip node: precompile.py).
    chips = instance(cfg.hardware.instance_type).chips
    for kind in ("Deployment", "Job") if chips > 1 else ("Deployment",):
        pod = by_kind(manifests, kind)["spec"]["template"]["spec"]
        assert pod["containers"][0]["resources"]["requests"][NEURON_DEVICE_RESOURCE] == str(
            expected
        )


def test_qwen3_profile_takes_a_whole_trn2_48xlarge() -> None:
    _, spec, _, _ = build("qwen3-32b-draft")
    node = instance("trn2.48xlarge")
    assert (spec.tensor_parallel_size, spec.lnc, spec.neuron_devices) == (64, 2, node.chips)
    # CPU and memory requests leave room for kubelet and the node's DaemonSets.
    assert spec.cpu < node.vcpus and spec.memory_gib < node.memory_gib


def test_cpu_profile_is_refused_naming_the_field() -> None:
    settings = ServingSettings(profile="local-tiny")
    with pytest.raises(ClusterWorkloadError, match=r"hardware.instance_type=cpu:.*Trn2 only"):
        derive_workload(load_profile("local-tiny"), settings, image_uri=IMAGE, bucket_name=BUCKET)


def test_tp_that_spans_nodes_is_refused_naming_the_limit() -> None:
    cfg = apply_overrides(load_profile("qwen3-32b-draft"), ["tensor_parallel_size=128"])
    with pytest.raises(ClusterWorkloadError, match=r"tensor_parallel_size=128.*at most 64"):
        derive_workload(cfg, ServingSettings(), image_uri=IMAGE, bucket_name=BUCKET)


def test_shm_larger_than_the_pods_memory_is_refused() -> None:
    cfg = load_profile("llama31-8b-eagle3")
    settings = ServingSettings(profile="llama31-8b-eagle3", shm_gib=500, weights_volume_gib=1000)
    with pytest.raises(ClusterWorkloadError, match=r"serving\.shm_gib=500"):
        derive_workload(cfg, settings, image_uri=IMAGE, bucket_name=BUCKET)


def test_sources_point_at_the_models_prefix_by_served_name() -> None:
    cfg, _, _, _ = build("qwen3-32b-draft")
    assert cfg.target.source == f"s3://{BUCKET}/{MODELS_PREFIX}{cfg.target.name}/"
    assert cfg.speculation.draft is not None
    assert (
        cfg.speculation.draft.source
        == f"s3://{BUCKET}/{MODELS_PREFIX}{cfg.speculation.draft.name}/"
    )


def test_baseline_profile_gets_no_draft_source() -> None:
    cfg = load_profile("qwen3-32b-baseline")
    assert [o.split("=")[0] for o in model_source_overrides(cfg, BUCKET)] == ["target.source"]


def test_user_overrides_win_over_bucket_sources() -> None:
    cfg, _, _, _ = build(overrides=["target.source=s3://elsewhere/qwen/"])
    assert cfg.target.source == "s3://elsewhere/qwen/"


def test_models_from_bucket_off_keeps_the_profile_sources() -> None:
    cfg, _, _, _ = build(models_from_bucket=False)
    assert cfg.target.source == load_profile("qwen3-32b-draft").target.source


def test_bad_engine_override_fails_with_the_engines_problem_list() -> None:
    from trnspec.config.serving import ConfigError

    from infra.serving.manifests.spec import resolve_serving_config

    settings = ServingSettings(overrides=("speculation.num_speculative_tokens=99",))
    with pytest.raises(ConfigError) as info:
        resolve_serving_config(settings, BUCKET)
    assert any(p.field == "speculation.num_speculative_tokens" for p in info.value.problems)


def test_one_pass_lists_settings_engine_and_workload_problems_together() -> None:
    from infra.serving.manifests.spec import check_serving
    from infra.settings.serving import ServingSettingsError

    raw = {
        "min_replicas": 0,  # a settings field
        "namespace": "Bad_NS",  # a settings cross-check
        "overrides": ["tensor_parallel_size=48"],  # an engine check
    }
    with pytest.raises(ServingSettingsError) as info:
        check_serving(raw, bucket_name=BUCKET, image_uri=IMAGE)
    fields = [p.field for p in info.value.problems]
    assert fields == ["serving.min_replicas", "serving.namespace", "tensor_parallel_size"]
    raw = {"profile": "llama31-8b-eagle3", "shm_gib": 500, "weights_volume_gib": 1000, "x": 1}
    with pytest.raises(ServingSettingsError) as info:
        check_serving(raw, bucket_name=BUCKET, image_uri=IMAGE)
    assert [p.field for p in info.value.problems] == ["serving.x", "serving.shm_gib"]


def test_one_pass_skips_the_engine_when_the_section_cannot_name_it() -> None:
    from infra.serving.manifests.spec import check_serving
    from infra.settings.serving import ServingSettingsError

    with pytest.raises(ServingSettingsError) as info:
        check_serving({"profile": 5, "overrides": "x"}, bucket_name=BUCKET, image_uri=IMAGE)
    assert {p.field for p in info.value.problems} <= {"serving.profile", "serving.overrides"}
    checked = check_serving(None, bucket_name=BUCKET, image_uri=IMAGE)
    assert checked.settings.profile == "qwen3-4b-dflash"


def test_the_keda_target_defaults_to_the_batch_the_engine_runs() -> None:
    cfg = load_profile("qwen3-4b-dflash")
    spec = derive_workload(cfg, ServingSettings(), image_uri=IMAGE, bucket_name=BUCKET)
    assert spec.streams_per_replica == cfg.max_num_seqs == 4


def test_a_keda_target_above_max_num_seqs_is_refused() -> None:
    settings = ServingSettings(streams_per_replica=5)
    with pytest.raises(
        ClusterWorkloadError, match=r"serving.streams_per_replica=5: a replica runs at"
    ):
        derive_workload(
            load_profile("qwen3-4b-dflash"), settings, image_uri=IMAGE, bucket_name=BUCKET
        )


def test_the_deployed_name_says_what_is_served() -> None:
    """A speculative profile run plain (speculation.method=none) is not named for its drafter."""
    _, spec, manifests, _ = build("qwen3-4b-dflash-3xl", overrides=["speculation.method=none"])
    assert spec.name == "qwen3-4b-baseline-3xl"
    assert by_kind(manifests, "Deployment")["metadata"]["name"] == spec.name
    assert build("qwen3-4b-dflash-3xl")[1].name == "qwen3-4b-dflash-3xl"
    assert build("qwen3-32b-draft", overrides=["speculation.method=none"])[1].name == (
        "qwen3-32b-baseline"
    )
    named = build("qwen3-4b-dflash", name="chat", overrides=["speculation.method=none"])[1]
    assert named.name == "chat"  # serving.name is the user's own choice
