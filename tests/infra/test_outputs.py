"""The stacks' outputs, checked against the tools that read them.

Every shipped profile's synthesized templates declare exactly the outputs `infra.outputs` names
(CDK's own cross-stack `ExportsOutput*` aside). The serving stack's outputs, resolved the way
CloudFormation would resolve them after a deploy, parse with `stack_endpoint` into the
platform stack (whose outputs name the cluster), region, namespace and a Service that the same
template creates, whose port and selector lead to the serving pods' named container port: what
the port-forward needs. cfn-lint and cdk-nag run over the same templates in test_templates.py.
"""

from __future__ import annotations

import itertools
import json
import re
import shlex
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from platform_synth import ADMIN_ARN, PROFILES, REPO, Synth, synth_profile

from infra.outputs import (
    PlatformOutputs,
    ServingOutputs,
)
from trnspec_tools.client.stack_endpoint import StackOutputs, platform_cluster_name

REGION = "us-east-2"
NLB_HOST = "internal-k8s-trnspec-0123456789.elb.us-east-2.amazonaws.com"


def platform_output_names() -> frozenset[str]:
    """Every output the platform stack declares."""
    return frozenset(
        (
            PlatformOutputs.CLUSTER_NAME,
            PlatformOutputs.UPDATE_KUBECONFIG_COMMAND,
            PlatformOutputs.NODEGROUP_NAMES,
        )
    )


def serving_output_names(
    internal_nlb: bool, api_key: bool, weights_job: bool = True, plan_command: bool = True
) -> frozenset[str]:
    """Every output the serving stack declares (the NLB endpoint, the key's secret, the weights
    Job and the plan's command only when they are enabled)."""
    names = {
        ServingOutputs.DEPLOY_CONTEXT,
        ServingOutputs.PLATFORM_STACK,
        ServingOutputs.REGION,
        ServingOutputs.NAMESPACE,
        ServingOutputs.SERVICE_NAME,
        ServingOutputs.SERVICE_PORT,
        ServingOutputs.IN_CLUSTER_ENDPOINT,
        ServingOutputs.MODEL_BUCKET_NAME,
        ServingOutputs.MODELS_URI,
        ServingOutputs.IMAGE_URI,
        ServingOutputs.PRECOMPILE_JOB,
        ServingOutputs.HF_TOKEN_SECRET_ARN,
    }
    if weights_job:
        names.add(ServingOutputs.WEIGHTS_JOB)
    if plan_command:
        names.add(ServingOutputs.PLAN_COMMAND)
    if internal_nlb:
        names.add(ServingOutputs.INTERNAL_NLB_ENDPOINT)
    if api_key:
        names.add(ServingOutputs.API_KEY_SECRET_ARN)
    return frozenset(names)


def declared(template: dict[str, Any]) -> set[str]:
    """The outputs a stack declares (not the exports CDK adds for cross-stack references)."""
    return {
        name
        for name, output in template.get("Outputs", {}).items()
        if not (name.startswith("ExportsOutput") and "Export" in output)
    }


class Deployed:
    """Resolves a template's intrinsics as CloudFormation would in `REGION` (resource names
    from their properties, other physical ids as stand-ins)."""

    def __init__(self, synth: Synth) -> None:
        self.platform, self.serving = synth.raw, synth.serving_raw
        exports = {
            o["Export"]["Name"]: o["Value"]
            for o in self.platform["Outputs"].values()
            if "Export" in o
        }
        self.imports = {name: self.resolve(value, self.platform) for name, value in exports.items()}

    def resolve(self, value: Any, template: dict[str, Any]) -> Any:
        if isinstance(value, str | int | float | bool):
            return value
        if isinstance(value, list):
            return [self.resolve(v, template) for v in value]
        (fn, arg), *rest = value.items()
        if rest or not (fn.startswith("Fn::") or fn == "Ref"):
            return {k: self.resolve(v, template) for k, v in value.items()}
        if fn == "Ref":
            return self._ref(arg, template)
        if fn == "Fn::Join":
            sep, parts = arg
            return sep.join(str(self.resolve(p, template)) for p in parts)
        if fn == "Fn::ImportValue":
            return self.imports[arg]
        if fn == "Fn::GetAtt":
            return NLB_HOST if arg[0].startswith("NlbHostname") else f"<{'.'.join(arg)}>"
        if fn == "Fn::Sub":
            return re.sub(r"\$\{([^}]+)\}", lambda m: str(self._ref(m[1], template)), arg)
        raise AssertionError(f"unsupported intrinsic {fn}")

    def _ref(self, name: str, template: dict[str, Any]) -> str:
        pseudo = {"AWS::Region": REGION, "AWS::AccountId": "123456789012"}
        pseudo |= {"AWS::URLSuffix": "amazonaws.com", "AWS::Partition": "aws"}
        if name in pseudo:
            return pseudo[name]
        resource = template["Resources"][name]
        return resource.get("Properties", {}).get("Name") or f"<{name}>"

    def outputs(self, template: dict[str, Any]) -> dict[str, str]:
        """`{OutputKey: OutputValue}` as DescribeStacks returns them."""
        return {
            name: str(self.resolve(o["Value"], template))
            for name, o in template["Outputs"].items()
            if name in declared(template)
        }

    def serving_manifests(self) -> list[dict[str, Any]]:
        return [
            doc
            for r in self.serving["Resources"].values()
            if r["Type"] == "Custom::AWSCDK-EKS-KubernetesResource"
            for doc in json.loads(self.resolve(r["Properties"]["Manifest"], self.serving))
        ]


@pytest.fixture(scope="module")
def nlb_synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synth_profile(
        "default", tmp_path_factory.mktemp("cdk-nlb"), {"serving.internal_nlb": True}
    )


@pytest.fixture(params=[*PROFILES, "default+nlb"])
def synth(request: pytest.FixtureRequest, platform_synth: Callable[[str], Synth]) -> Synth:
    if request.param == "default+nlb":
        return request.getfixturevalue("nlb_synth")
    return platform_synth(request.param)


def test_templates_declare_exactly_the_outputs_infra_outputs_names(synth: Synth) -> None:
    assert declared(synth.raw) == platform_output_names()
    settings = synth.serving.settings
    deploy = synth.serving.deploy
    assert deploy is not None
    expected = serving_output_names(
        settings.internal_nlb, settings.api_key_enabled, plan_command=bool(deploy.plan_command)
    )
    assert declared(synth.serving_raw) == expected


def test_the_serving_stack_records_the_deploys_context_and_its_plans_command(
    synth: Synth,
) -> None:
    """What `calibrate fetch` reads to print the next deploy: the -c items as given (but the
    plan's), and the deployed plan file's own `plan.command`."""
    outputs = Deployed(synth).outputs(synth.serving_raw)
    words = shlex.split(outputs[ServingOutputs.DEPLOY_CONTEXT])
    items = [w for flag, w in itertools.pairwise(words) if flag == "-c"]
    assert items[0].startswith("profile=") and f"admin_principal_arns=[{ADMIN_ARN}]" in items
    assert not any(i.startswith("serving.plan=") for i in items)
    plan = yaml.safe_load((REPO / "config" / "plans" / "default.yaml").read_text())
    # every shipped profile synthesized here names the default plan
    assert outputs[ServingOutputs.PLAN_COMMAND] == plan["plan"]["command"]


def test_serving_outputs_after_deploy_parse_into_what_the_port_forward_needs(
    synth: Synth,
) -> None:
    deployed = Deployed(synth)
    outputs = deployed.outputs(synth.serving_raw)
    stack = StackOutputs.parse(synth.serving.stack_name, outputs)
    settings, spec = synth.stack.settings, synth.serving.spec

    assert stack.region == REGION
    assert stack.platform_stack == synth.stack.stack_name
    platform = deployed.outputs(synth.raw)
    assert platform_cluster_name(stack.platform_stack, platform) == settings.cluster_name
    assert platform[PlatformOutputs.UPDATE_KUBECONFIG_COMMAND] == (
        f"aws eks update-kubeconfig --name {settings.cluster_name} --region {REGION}"
    )

    # the Service the outputs name exists in this template, with the port they give ...
    docs = deployed.serving_manifests()
    (service,) = [
        d
        for d in docs
        if d["kind"] == "Service"
        and d["metadata"]["name"] == stack.service_name
        and d["metadata"]["namespace"] == stack.namespace
    ]
    assert stack.namespace == spec.namespace
    (port,) = [p for p in service["spec"]["ports"] if p["port"] == stack.service_port]
    # ... and its selector picks the main Deployment's pods alone (never a calibration
    # deployment's speculative arm, which has its own Service), whose container declares its
    # targetPort
    selected = [
        d
        for d in docs
        if d["kind"] == "Deployment"
        and service["spec"]["selector"].items()
        <= d["spec"]["template"]["metadata"]["labels"].items()
    ]
    assert [d["metadata"]["name"] for d in selected] == [spec.name]
    pod = selected[0]["spec"]["template"]
    names = {p.get("name") for c in pod["spec"]["containers"] for p in c.get("ports", [])}
    assert port["targetPort"] in names

    if synth.serving.settings.internal_nlb:
        assert stack.nlb_url == f"http://{NLB_HOST}:{stack.service_port}"
        assert outputs[ServingOutputs.INTERNAL_NLB_ENDPOINT] == stack.nlb_url
    else:
        assert stack.nlb_url is None
