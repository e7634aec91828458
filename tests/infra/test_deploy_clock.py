"""The deploy's clock: every wait, hold, deadline, probe budget, cooldown, cache lifetime and
Helm/Lambda timeout on the paths a deployment takes (first deploy, the calibration, a wake from
zero, day 31), read from the synthesized templates and manifests (not from the settings), and the
invariants between them: a wait is at least what it waits for; nothing the deployment reads is
deleted while it lives; a wake completes within the client's retry budget, or the docs say what
the client sees.

Each external rule the invariants rely on is written once, in RULES, with its primary source.
Estimates nobody measured (the cold start's minutes) are read from the docs that give them.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from autoscaler_sim import manifests
from platform_synth import Synth, synth_profile

from infra.contracts import COMPILE_CACHE_PREFIX, MODELS_PREFIX

REPO = Path(__file__).resolve().parents[2]
PLATFORM_DOC = REPO / "docs" / "platform.md"


@dataclass(frozen=True)
class Rule:
    """An external rule the clock relies on, with where it is written."""

    rule: str
    source: str


RULES = {
    "startup-probe": Rule(
        "a container whose startup probe has not passed after initialDelaySeconds + "
        "failureThreshold x periodSeconds is killed",
        "Kubernetes docs, 'Configure Liveness, Readiness and Startup Probes' (startup probes)",
    ),
    "job-deadline": Rule(
        "activeDeadlineSeconds bounds the whole Job from its start, whatever its pods do; past it "
        "every pod is terminated and the Job fails (DeadlineExceeded); backoffLimit 0: no retry",
        "Kubernetes docs, 'Jobs' (Job termination and cleanup; pod backoff failure policy)",
    ),
    "cfn-no-op": Rule(
        "`cdk deploy` of an unchanged template makes no CloudFormation update, so no custom "
        "resource (no kubectl apply) runs again: a finished Job is not started again",
        "AWS CloudFormation User Guide, 'Update stacks' (no changes: no update performed); "
        "AWS CDK CLI reference, `cdk deploy` (skips unchanged stacks)",
    ),
    "s3-lifecycle": Rule(
        "a lifecycle Expiration counts days from the object's creation, not its last read",
        "Amazon S3 User Guide, 'Lifecycle configuration elements' (Expiration, Days)",
    ),
    "helm-in-lambda": Rule(
        "the kubectl provider runs `helm --wait --timeout T` inside one Lambda invocation, which "
        "AWS stops at the function's Timeout (at most 900 s); a Helm timeout not below it never "
        "reports, and CloudFormation waits for the custom resource's own timeout",
        "aws-cdk-lib aws_eks_v2 kubectl-handler (helm/__init__.py); AWS Lambda quotas",
    ),
    "keda-cooldown": Rule(
        "cooldownPeriod: seconds after the last active trigger before KEDA scales to 0; "
        "pollingInterval: seconds between trigger checks",
        "KEDA docs, 'Scaling Deployments' ScaledObject spec (cooldownPeriod, pollingInterval)",
    ),
    "keda-http-hold": Rule(
        "an InterceptorRoute holds a request while no replica is ready for timeouts.readiness, "
        "then sends it to coldStart.fallback; timeouts.responseHeader bounds the wait for the "
        "upstream's response headers (504 past it)",
        "kedacore/http-add-on InterceptorRoute v1beta1 CRD and interceptor docs (read at 0.15.0; "
        "0.16.0, the pinned chart, keeps these fields)",
    ),
    "openai-client": Rule(
        "openai-python retries 408/409/429/5xx DEFAULT_MAX_RETRIES = 2 times, honours Retry-After "
        "only when 0 < value <= 60 s (else 0.5 s doubling, at most 8 s), and times each attempt "
        "out after DEFAULT_TIMEOUT = 600 s",
        "openai/openai-python src/openai/_constants.py and _base_client.py "
        "(_calculate_retry_timeout, _should_retry)",
    ),
}

#: The OpenAI Python client's defaults (RULES["openai-client"]).
OPENAI_MAX_RETRIES = 2
OPENAI_RETRY_AFTER_CAP_S = 60
OPENAI_MAX_BACKOFF_S = 8.0
OPENAI_ATTEMPT_TIMEOUT_S = 600


def _seconds(text: str) -> int:
    """`300s` (a Go duration in whole seconds, as the route and Helm take them) as 300."""
    match = re.fullmatch(r"(\d+)s", text)
    assert match, text
    return int(match.group(1))


def _objects(raw: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [m for m in manifests(raw) if m["kind"] == kind]


def _named(raw: dict[str, Any], kind: str, part: str) -> dict[str, Any]:
    (found,) = [m for m in _objects(raw, kind) if part in m["metadata"]["name"]]
    return found


def _startup_budget(deployment: dict[str, Any]) -> int:
    (probe,) = [
        c["startupProbe"]
        for c in deployment["spec"]["template"]["spec"]["containers"]
        if "startupProbe" in c
    ]
    return probe.get("initialDelaySeconds", 0) + probe.get("failureThreshold", 3) * probe.get(
        "periodSeconds", 10
    )


def _flag(job: dict[str, Any], name: str) -> str:
    args = job["spec"]["template"]["spec"]["containers"][0]["args"]
    return str(args[args.index(name) + 1])


@pytest.fixture(scope="module")
def default(platform_synth: Any) -> Synth:
    """The default deploy (a calibration plan, min_replicas 1), synthesized once per session."""
    synth: Synth = platform_synth("default")
    return synth


@pytest.fixture(scope="module")
def waking(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The default deploy with scale to zero: the wake path."""
    return synth_profile(
        "default", tmp_path_factory.mktemp("cdk-clock-zero"), {"serving.scale_to_zero": "true"}
    )


# --- first deploy -------------------------------------------------------------------------------


def _helm_and_lambda_timeouts(raw: dict[str, Any]) -> list[tuple[str, int, int]]:
    """(release, Helm timeout s, the kubectl provider Lambdas' shortest Timeout s) per chart."""
    resources = raw["Resources"]
    out = []
    for rid, r in resources.items():
        if r["Type"] != "Custom::AWSCDK-EKS-HelmChart":
            continue
        framework = resources[r["Properties"]["ServiceToken"]["Fn::GetAtt"][0]]["Properties"]
        handler_ref = framework["Environment"]["Variables"]["USER_ON_EVENT_FUNCTION_ARN"]
        handler = resources[handler_ref["Fn::GetAtt"][0]]["Properties"]
        lambda_s = min(framework["Timeout"], handler["Timeout"])
        out.append(
            (r["Properties"].get("Release", rid), _seconds(r["Properties"]["Timeout"]), lambda_s)
        )
    return out


def test_first_deploy_every_helm_release_reports_before_its_lambda_is_stopped(
    default: Synth, waking: Synth
) -> None:
    """RULES["helm-in-lambda"]: a slow chart must fail in Helm, inside the Lambda, so
    CloudFormation rolls back at once instead of waiting for the custom resource's timeout
    (the default's releases, and the HTTP add-on's with scale to zero)."""
    found = [*_helm_and_lambda_timeouts(default.raw), *_helm_and_lambda_timeouts(waking.raw)]
    assert found, "no Helm release in the platform template"
    late = [(release, helm, fn) for release, helm, fn in found if helm >= fn]
    assert late == [], f"Helm timeout >= the kubectl Lambda's Timeout: {late}"


def test_first_deploy_the_compile_waits_out_the_weights_copy(default: Synth) -> None:
    """On a first deploy the bucket is empty: the precompile Job waits for the weights Job, so
    its deadline holds the whole copy; a replica that gives up waiting (its startup budget) is
    restarted (restartPolicy Always) and waits again, as the docs say."""
    raw = default.serving_raw
    weights = _named(raw, "Job", "-baseline-weights-")["spec"]["activeDeadlineSeconds"]
    precompile = _named(raw, "Job", "-precompile-")["spec"]["activeDeadlineSeconds"]
    assert precompile > weights
    server = next(
        d for d in _objects(raw, "Deployment") if not d["metadata"]["name"].endswith("-spec")
    )
    assert server["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    assert server["spec"]["progressDeadlineSeconds"] >= _startup_budget(server)
    if _startup_budget(server) < weights:
        assert "the Deployment restarts them and they\n  wait again" in PLATFORM_DOC.read_text()


# --- the calibration ----------------------------------------------------------------------------


def test_the_calibration_job_waits_for_both_arms_then_measures_within_its_deadline(
    default: Synth,
) -> None:
    """RULES["startup-probe"], RULES["job-deadline"]: on a first deploy both arms copy weights
    and compile; the runner waits at least as long as either arm's startup probe allows, plus
    KEDA's poll that starts the arm; the Job's deadline holds that wait and the measurement."""
    raw = default.serving_raw
    job = _named(raw, "Job", "-calibration-")
    arms = _objects(raw, "Deployment")
    assert len(arms) == 2
    probe = max(_startup_budget(d) for d in arms)
    (arm_scaled,) = [
        s for s in _objects(raw, "ScaledObject") if s["metadata"]["name"].endswith("-spec")
    ]
    poll = arm_scaled["spec"]["pollingInterval"]
    wait_s = int(_flag(job, "--wait-ready-minutes")) * 60
    assert wait_s >= poll + probe
    runner_s = int(_flag(job, "--deadline-minutes")) * 60
    measuring_s = runner_s - wait_s  # the runner counts its wait against its deadline
    assert measuring_s > 0
    assert job["spec"]["activeDeadlineSeconds"] >= wait_s + measuring_s
    assert job["spec"]["backoffLimit"] == 0


def test_an_unchanged_calibration_has_a_documented_way_to_run_again(default: Synth) -> None:
    """RULES["cfn-no-op"]: redeploying the same template does nothing, and the Job is named by
    what it measures; the docs give the token that makes a new Job, and the Job's name changes
    with it."""
    doc = PLATFORM_DOC.read_text()
    assert "-c serving.calibration.rerun=" in doc and "-c serving.weights_rerun=" in doc
    assert "deleting the failed Job and running `cdk deploy` again recreates it" not in doc


# --- day 31 -------------------------------------------------------------------------------------


def _model_bucket_id(synth: Synth) -> str:
    """The bucket the serving pods read their compile cache from (the env they are given)."""
    server = next(d for d in _objects(synth.serving_raw, "Deployment"))
    env = {
        e["name"]: e.get("value", "")
        for e in server["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    uri = next(
        v for v in env.values() if v.endswith(COMPILE_CACHE_PREFIX) and v.startswith("s3://")
    )
    match = re.match(r"s3://\$\{([A-Za-z0-9]+)\}/", uri)
    assert match, uri
    return match.group(1)


def _covers(rule: dict[str, Any], prefix: str) -> bool:
    """Whether a lifecycle rule applies to objects under `prefix` (no filter: every object)."""
    given = rule.get("Prefix")
    if given is None:
        given = (rule.get("Filter") or {}).get("Prefix", "")
        and_prefix = ((rule.get("Filter") or {}).get("And") or {}).get("Prefix")
        given = and_prefix if and_prefix is not None else given
    return prefix.startswith(given) or given.startswith(prefix)


def test_day_31_nothing_the_deployment_reads_expires_while_it_lives(default: Synth) -> None:
    """RULES["s3-lifecycle"]: an Expiration counts from creation, so a cache or a model that is
    only read would expire in use and every cold start would compile again (or find no
    weights). Only noncurrent versions may expire under compile-cache/ and models/."""
    bucket = default.serving_raw["Resources"][_model_bucket_id(default)]
    rules = bucket["Properties"].get("LifecycleConfiguration", {}).get("Rules", [])
    for prefix in (COMPILE_CACHE_PREFIX, MODELS_PREFIX):
        expiring = [
            r["Id"]
            for r in rules
            if r.get("Status") == "Enabled"
            and _covers(r, prefix)
            and ("ExpirationInDays" in r or "ExpirationDate" in r)
        ]
        assert expiring == [], f"{prefix} expires by creation date: {expiring}"


# --- a wake from zero ---------------------------------------------------------------------------


@dataclass(frozen=True)
class WakeClock:
    """The wake path's timers as synthesized."""

    hold_s: int
    response_header_s: int
    retry_after_s: int
    cooldown_s: int
    longest_request_s: int


def _wake_clock(synth: Synth) -> WakeClock:
    raw = synth.serving_raw
    (route,) = _objects(raw, "InterceptorRoute")
    timeouts = route["spec"]["timeouts"]
    busy = [
        m for m in manifests(raw) if m["kind"] == "ConfigMap" and "busy" in m["metadata"]["name"]
    ]
    text = json.dumps(busy)
    retry = re.search(r"Retry-After[^0-9]{1,12}(\d+)", text)
    assert retry, "no Retry-After in the responder's configuration"
    main = next(
        s for s in _objects(raw, "ScaledObject") if not s["metadata"]["name"].endswith("-spec")
    )
    server = next(
        d for d in _objects(raw, "Deployment") if not d["metadata"]["name"].endswith("-spec")
    )
    env = {
        e["name"]: e.get("value")
        for e in server["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    return WakeClock(
        hold_s=_seconds(timeouts["readiness"]),
        response_header_s=_seconds(timeouts["responseHeader"]),
        retry_after_s=int(retry.group(1)),
        cooldown_s=main["spec"]["cooldownPeriod"],
        longest_request_s=int(env["TRNSPEC_DRAIN_SECONDS"]),
    )


def _documented_cold_start_s() -> tuple[int, int]:
    """The cold start from zero nodes the docs give (an estimate, not a measurement)."""
    match = re.search(
        r"From zero nodes that is about (\d+)-(\d+) minutes", PLATFORM_DOC.read_text()
    )
    assert match, "docs/platform.md no longer gives the cold start from zero nodes"
    return int(match.group(1)) * 60, int(match.group(2)) * 60


def openai_client_budget_s(hold_s: int, retry_after_s: int) -> float:
    """The longest an OpenAI Python client at its defaults keeps one call alive against the
    wake path (RULES["openai-client"]): every attempt is held `hold_s` (or times out), and
    between attempts it sleeps Retry-After when honoured, else at most its backoff cap."""
    attempts = OPENAI_MAX_RETRIES + 1
    per_attempt = min(hold_s, OPENAI_ATTEMPT_TIMEOUT_S)
    pause = retry_after_s if 0 < retry_after_s <= OPENAI_RETRY_AFTER_CAP_S else OPENAI_MAX_BACKOFF_S
    return attempts * per_attempt + OPENAI_MAX_RETRIES * pause


def test_a_wake_from_zero_answers_within_the_clients_budget_or_the_docs_say_what_it_sees(
    waking: Synth,
) -> None:
    """RULES["keda-http-hold"], RULES["openai-client"]: the hold ends before the client's own
    per-attempt timeout (the client sees the 503, not a timeout); where the client's retries
    cannot cover the slow end of the documented cold start, the docs say what it sees."""
    clock = _wake_clock(waking)
    _, slowest = _documented_cold_start_s()
    assert clock.hold_s < OPENAI_ATTEMPT_TIMEOUT_S
    budget = openai_client_budget_s(clock.hold_s, clock.retry_after_s)
    doc = PLATFORM_DOC.read_text()
    assert f"`Retry-After: {clock.retry_after_s}`" in doc
    if budget < slowest:
        minutes = round(budget / 60)
        assert f"3 x {clock.hold_s} s, about\n{minutes} minutes in all" in doc
        assert "`openai.InternalServerError` (status 503)" in doc
    if clock.retry_after_s > OPENAI_RETRY_AFTER_CAP_S:
        assert "honours a Retry-After\nof at most 60 s" in doc


def test_a_wake_answers_the_longest_request_the_server_drains_for(waking: Synth) -> None:
    """Once a replica is ready, a non-streaming request of the longest length the server is
    sized for (its drain, serving.max_request_seconds) gets its headers before the
    interceptor's responseHeader timeout; longer ones get a 504, as the docs say."""
    clock = _wake_clock(waking)
    assert clock.longest_request_s <= clock.response_header_s
    assert "gets a 504 from the interceptor" in PLATFORM_DOC.read_text()


def test_the_wake_after_idle_comes_after_the_cooldown(waking: Synth) -> None:
    """RULES["keda-cooldown"]: every wake from zero follows at least cooldownPeriod of idle
    (the documented 30 minutes), the window kedacore/http-add-on#1692 is about."""
    clock = _wake_clock(waking)
    assert clock.cooldown_s == 30 * 60
    assert "ScaledObject's 30-minute cooldown" in PLATFORM_DOC.read_text()


def test_the_clients_budget_at_its_defaults() -> None:
    """Three attempts held 300 s each with the 8 s backoff cap between them (Retry-After 600 is
    ignored); a Retry-After of 30 s is honoured instead."""
    assert math.isclose(openai_client_budget_s(300, 600), 3 * 300 + 2 * 8.0)
    assert math.isclose(openai_client_budget_s(300, 30), 3 * 300 + 2 * 30)
    assert math.isclose(openai_client_budget_s(900, 600), 3 * 600 + 2 * 8.0)
