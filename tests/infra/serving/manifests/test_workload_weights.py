"""The weights Job: on a first deploy it copies exactly the models the pods read, from the Hub
into the bucket prefixes their config names, without a Neuron device, on the pods' pool."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from platform_synth import Synth, cfn_text
from test_manifest_scan import embedded_manifests
from trnspec.config.serving import apply_overrides, load_profile
from workload_cases import BUCKET, build, by_kind

from infra.contracts import NEURON_DEVICE_RESOURCE
from infra.serving.manifests.manifests import build_manifests
from infra.serving.manifests.weights import weights_job, weights_job_name


def _copies(job: dict) -> list[tuple[str, str]]:
    """(repo[@revision], target) of each copy container."""
    return [(c["args"][2], c["args"][3]) for c in job["spec"]["template"]["spec"]["containers"]]


def test_the_job_copies_target_and_draft_to_where_the_pods_read_them() -> None:
    cfg, _, manifests, _ = build("qwen3-4b-dflash")
    job = by_kind(manifests, "Job", "-weights-")
    assert cfg.speculation.draft is not None
    assert _copies(job) == [
        ("Qwen/Qwen3-4B", cfg.target.source),
        ("z-lab/Qwen3-4B-DFlash-b16", cfg.speculation.draft.source),
    ]
    assert all(target.startswith(f"s3://{BUCKET}/models/") for _, target in _copies(job))


def test_a_pinned_revision_is_copied_at_that_revision() -> None:
    _, _, manifests, _ = build("qwen3-4b-dflash", overrides=["target.revision=0123abc"])
    (target, _draft) = _copies(by_kind(manifests, "Job", "-weights-"))
    assert target[0] == "Qwen/Qwen3-4B@0123abc"


def test_a_model_the_user_points_elsewhere_is_not_copied() -> None:
    overrides = ["target.source=s3://my-bucket/qwen3-4b/"]
    _, _, manifests, _ = build("qwen3-4b-dflash", overrides=overrides)
    assert [repo for repo, _ in _copies(by_kind(manifests, "Job", "-weights-"))] == [
        "z-lab/Qwen3-4B-DFlash-b16"
    ]


def test_without_models_from_the_bucket_there_is_no_job_and_no_policy() -> None:
    _, spec, manifests, _ = build("qwen3-4b-dflash", models_from_bucket=False)
    assert spec.hub_copies == ()
    names = [m["metadata"]["name"] for m in manifests.all()]
    assert not any("-weights" in n for n in names)


def test_the_job_needs_no_neuron_device_and_lands_on_the_pods_pool() -> None:
    _, _, manifests, _ = build("qwen3-4b-dflash")
    pod = by_kind(manifests, "Job", "-weights-")["spec"]["template"]["spec"]
    server = by_kind(manifests, "Deployment")["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == server["nodeSelector"]
    assert pod["tolerations"] == server["tolerations"]
    for c in pod["containers"]:
        assert NEURON_DEVICE_RESOURCE not in c["resources"]["requests"]
        assert "ephemeral-storage" not in c["resources"]["requests"]  # its own EBS volume
    (work,) = [v for v in pod["volumes"] if v["name"] == "work"]
    assert work["ephemeral"]["volumeClaimTemplate"]["spec"]["storageClassName"] == "gp3"
    assert pod["serviceAccountName"].endswith("-weights")


def _work_volume_storage(manifests: object) -> str:
    pod = by_kind(manifests, "Job", "-weights-")["spec"]["template"]["spec"]  # type: ignore[arg-type]
    (work,) = [v for v in pod["volumes"] if v["name"] == "work"]
    return work["ephemeral"]["volumeClaimTemplate"]["spec"]["resources"]["requests"]["storage"]


def test_the_job_volume_has_the_size_the_pods_data_volume_has() -> None:
    """Unset `weights_volume_gib` (every shipped profile and plan) sizes it from the model, as
    the pods' data volume is; a set value sizes both."""
    for settings in ({}, {"weights_storage": "ebs"}, {"weights_volume_gib": 200}):
        _, spec, manifests, _ = build("qwen3-4b-dflash", **settings)
        assert _work_volume_storage(manifests) == f"{spec.storage_gib}Gi"
    assert build("qwen3-4b-dflash", weights_volume_gib=200)[1].storage_gib == 200


def test_the_token_reaches_the_job_as_a_secret_arn_read_at_run_time() -> None:
    _, spec, _, settings = build("llama31-8b-eagle3")
    arn = "arn:aws:secretsmanager:us-east-2:123456789012:secret:hf-AbCdEf"
    job = weights_job(dataclasses.replace(spec, hf_token_secret_arn=arn), settings)
    for c in job["spec"]["template"]["spec"]["containers"]:
        env = {e["name"]: e["value"] for e in c["env"]}
        assert env["TRNSPEC_HF_TOKEN_SECRET_ARN"] == arn
        assert "HF_TOKEN" not in env  # the token itself is read from the secret by the pod
    assert len(build_manifests(spec, settings).core) > 0


def test_the_default_synth_applies_the_weights_job_beside_the_waiting_pods(
    platform_synth: Callable[[str], Synth],
) -> None:
    """`cdk synth` of the default: the weights Job is in the serving stack's manifests, next to
    the precompile Job and the Deployment whose `serve` waits for what it copies, and its
    outputs name the Job and the token secret. In a calibration deployment (the shipped
    default) the speculative arm has a weights Job of its own for the models only it reads
    (its drafter): every model either arm reads is copied, once."""
    synth = platform_synth("default")
    spec, settings = synth.serving.spec, synth.serving.settings
    docs = list(embedded_manifests(synth.serving_raw))
    jobs = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Job"}
    weights = jobs.pop(weights_job_name(spec, None))
    repos = [repo for repo, _ in _copies(weights)]
    cfg = synth.serving.serving_config
    drafts = [cfg.speculation.draft.name] if cfg.speculation.draft else []
    assert repos == [cfg.target.name, *drafts]  # the deployed plan's models, draft included
    arm_weights = {n: j for n, j in jobs.items() if n.startswith(f"{spec.name}-spec-weights-")}
    if settings.calibration is None:
        assert arm_weights == {}
    else:
        arm = settings.calibration.speculative
        arm_cfg = apply_overrides(load_profile(arm.profile), list(arm.overrides))
        arm_models = [arm_cfg.target.name]
        arm_models += [arm_cfg.speculation.draft.name] if arm_cfg.speculation.draft else []
        (arm_job,) = arm_weights.values()
        assert [repo for repo, _ in _copies(arm_job)] == [m for m in arm_models if m not in repos]
        calibration = [n for n in jobs if n.startswith(f"{spec.name}-calibration-")]
        assert len(calibration) == 1
        for name in (*arm_weights, *calibration):  # not serving pods: the rest are
            del jobs[name]
    serving = [d for d in docs if d["kind"] == "Deployment"] + list(jobs.values())
    assert {d["kind"] for d in serving} == {"Deployment", "Job"}  # the precompile Job
    assert {d["spec"]["template"]["spec"]["containers"][0]["args"][0] for d in serving} == {"serve"}
    outputs = synth.serving_raw["Outputs"]
    assert weights["metadata"]["name"] in cfn_text(outputs["WeightsJob"]["Value"])
    assert "HfTokenSecretArn" in outputs
