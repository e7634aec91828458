"""trnspec_tools.client.stack_endpoint: a deployed serving stack reached from an operator's machine.

CloudFormation and EKS are moto; the Kubernetes API is `fake_kube_api` (HTTPS with its own CA,
EKS-token check, Service and Pod reads, the kubelet's websocket port-forward protocol) driven by
the real `kubernetes` client; behind the forwarded pod port is a fake OpenAI server, so smoke and
bench run end to end with `--stack`. moto's cluster is pointed at the fake API server's endpoint
and CA (moto invents both otherwise).
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import httpx
import pytest
from fake_kube_api import FakeKubeApi, KubeState, pod_object, service_object, token_problem
from fake_kube_api import running as kube_api
from fake_openai_server import running as bench_server
from fault_server import FaultServer, fault_server, silent_endpoint
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.eks.models import eks_backends

from infra.outputs import PlatformOutputs, ServingOutputs, update_kubeconfig_command
from trnspec_tools import smoke
from trnspec_tools.bench import bench
from trnspec_tools.client.stack_endpoint import (
    TOKEN_LIFETIME_S,
    ClusterAccess,
    StackError,
    StackOutputs,
    describe_cluster,
    eks_token,
    kube_configuration,
    pick_ready_pod,
    platform_cluster_name,
    read_stack_outputs,
    resolve_endpoint,
    stack_endpoint,
    target_port,
)

REGION = "us-east-2"
PLATFORM = "TrnspecPlatform"
STACK = f"{PLATFORM}-serving"
CLUSTER = "trnspec"
NAMESPACE = "trnspec"
SERVICE = "qwen3-32b-draft"
SELECTOR = {"app.kubernetes.io/name": SERVICE, "app.kubernetes.io/component": "serve"}
CONTAINER_PORT = 8000


def outputs(**extra: str) -> dict[str, str]:
    """The serving stack's outputs as CloudFormation returns them after a deploy."""
    o = ServingOutputs
    return {
        o.PLATFORM_STACK: PLATFORM,
        o.REGION: REGION,
        o.NAMESPACE: NAMESPACE,
        o.SERVICE_NAME: SERVICE,
        o.SERVICE_PORT: "80",
        o.IN_CLUSTER_ENDPOINT: f"http://{SERVICE}.{NAMESPACE}.svc.cluster.local:80",
        o.MODEL_BUCKET_NAME: "bucket",
        **extra,
    }


# --- outputs -------------------------------------------------------------------------------------


def platform_outputs() -> dict[str, str]:
    return {
        PlatformOutputs.CLUSTER_NAME: CLUSTER,
        PlatformOutputs.UPDATE_KUBECONFIG_COMMAND: update_kubeconfig_command(CLUSTER, REGION),
        PlatformOutputs.NODEGROUP_NAMES: f"{CLUSTER}-system,{CLUSTER}-trn2",
    }


def test_outputs_parse_into_what_the_tools_need() -> None:
    parsed = StackOutputs.parse(STACK, outputs())
    assert (parsed.platform_stack, parsed.region, parsed.namespace) == (PLATFORM, REGION, NAMESPACE)
    assert (parsed.service_name, parsed.service_port, parsed.nlb_url) == (SERVICE, 80, None)


@pytest.mark.parametrize(
    "output", ["http://internal-x.elb.amazonaws.com:80", "internal-x.elb.amazonaws.com:80"]
)
def test_the_nlb_output_is_used_as_a_url_with_http_when_it_names_no_scheme(output: str) -> None:
    nlb = {ServingOutputs.INTERNAL_NLB_ENDPOINT: output}
    parsed = StackOutputs.parse(STACK, outputs(**nlb))
    assert parsed.nlb_url == "http://internal-x.elb.amazonaws.com:80"


def test_missing_outputs_are_all_named_with_what_the_stack_has() -> None:
    with pytest.raises(StackError) as err:
        StackOutputs.parse(PLATFORM, platform_outputs())
    message = str(err.value)
    for name in ("PlatformStack", "Region", "ServiceNamespace", "ServiceName", "ServicePort"):
        assert name in message
    assert "it has: ClusterName, NodegroupNames, UpdateKubeconfigCommand" in message
    assert "<platform stack>-serving" in message


@pytest.mark.parametrize("port", ["http", "0", "70000", "-1"])
def test_a_service_port_that_is_not_a_port_is_refused(port: str) -> None:
    with pytest.raises(StackError, match=f"ServicePort='{port}'"):
        StackOutputs.parse(STACK, outputs(ServicePort=port))


# --- pods and ports (the client's own models, as it deserializes them) ---------------------------


def k8s(kind: str, obj: dict[str, Any]) -> Any:
    """Deserialize a JSON object into the kubernetes client's model, as the API client does."""
    from kubernetes import client

    api = client.ApiClient()
    return api.deserialize(SimpleNamespace(data=json.dumps(obj)), kind)


def pod(name: str, **kw: Any) -> Any:
    return k8s("V1Pod", pod_object(NAMESPACE, name, SELECTOR, CONTAINER_PORT, **kw))


def test_pick_ready_pod_skips_unready_pending_and_terminating_pods_and_takes_the_oldest() -> None:
    pods = [
        pod("a-unready", ready=False),
        pod("b-pending", phase="Pending"),
        pod("c-terminating", deleting=True),
        pod("e-newer", created="2026-11-30T12:00:00Z"),
        pod("d-older", created="2026-11-30T09:00:00Z"),
    ]
    assert pick_ready_pod(pods).metadata.name == "d-older"
    assert pick_ready_pod(pods[:3]) is None


@pytest.mark.parametrize(("target", "expected"), [("http", CONTAINER_PORT), (8080, 8080)])
def test_target_port_resolves_named_and_numbered_target_ports(
    target: int | str, expected: int
) -> None:
    svc = k8s("V1Service", service_object(NAMESPACE, SERVICE, SELECTOR, 80, target))
    assert target_port(svc, 80, pod("p")) == expected


def test_target_port_names_a_missing_service_port_or_container_port() -> None:
    svc = k8s("V1Service", service_object(NAMESPACE, SERVICE, SELECTOR, 80, "grpc"))
    with pytest.raises(StackError, match="has no port 81"):
        target_port(svc, 81, pod("p"))
    with pytest.raises(StackError, match="targets 'grpc', which pod p does not declare"):
        target_port(svc, 80, pod("p"))


# --- the EKS token and the client configuration --------------------------------------------------


def test_eks_token_is_a_presigned_get_caller_identity_url_signing_the_cluster_header(
    fake_aws_env: None,
) -> None:
    sts = boto3.client("sts", region_name=REGION)
    token = eks_token(sts, CLUSTER)
    assert token_problem(token, REGION) is None
    body = token.removeprefix("k8s-aws-v1.")
    url = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()
    query = parse_qs(urlsplit(url).query)
    assert query["X-Amz-SignedHeaders"] == ["host;x-k8s-aws-id"]
    # the header handler is removed again: the client's other presigned URLs do not carry it
    plain = sts.generate_presigned_url("get_caller_identity", Params={}, ExpiresIn=60)
    assert parse_qs(urlsplit(plain).query)["X-Amz-SignedHeaders"] == ["host"]


def test_the_token_format_check_rejects_what_eks_rejects(fake_aws_env: None) -> None:
    sts = boto3.client("sts", region_name=REGION)
    unsigned_header = sts.generate_presigned_url("get_caller_identity", Params={}, ExpiresIn=60)
    encoded = base64.urlsafe_b64encode(unsigned_header.encode()).decode()
    assert "x-k8s-aws-id" in str(token_problem("k8s-aws-v1." + encoded.rstrip("="), REGION))
    assert "padding" in str(token_problem(eks_token(sts, CLUSTER) + "=", REGION))
    assert "prefix" in str(token_problem(encoded, REGION))
    assert "sts.us-west-2" in str(token_problem(eks_token(sts, CLUSTER), "us-west-2"))


def test_kube_configuration_trusts_the_cluster_ca_and_renews_the_token(tmp_path: Path) -> None:
    now = [0.0]
    issued = iter(f"token-{i}" for i in range(10))
    cfg = kube_configuration(
        ClusterAccess("https://abc.gr7.us-east-2.eks.amazonaws.com", b"PEM"),
        lambda: next(issued),
        tmp_path,
        clock=lambda: now[0],
    )
    assert cfg.host == "https://abc.gr7.us-east-2.eks.amazonaws.com"
    assert Path(cfg.ssl_ca_cert).read_bytes() == b"PEM" and cfg.verify_ssl
    header = cfg.auth_settings()["BearerToken"]
    assert (header["key"], header["value"]) == ("authorization", "Bearer token-0")
    now[0] = TOKEN_LIFETIME_S - 120
    assert cfg.auth_settings()["BearerToken"]["value"] == "Bearer token-0"
    now[0] = TOKEN_LIFETIME_S - 30
    assert cfg.auth_settings()["BearerToken"]["value"] == "Bearer token-1"
    # the renewed token lives its own lifetime: not one new token per request from now on
    now[0] = TOKEN_LIFETIME_S
    assert cfg.auth_settings()["BearerToken"]["value"] == "Bearer token-1"
    now[0] = 2 * TOKEN_LIFETIME_S - 30
    assert cfg.auth_settings()["BearerToken"]["value"] == "Bearer token-2"


# --- CloudFormation and EKS (moto) ---------------------------------------------------------------


@pytest.fixture
def aws(fake_aws_env: None) -> Iterator[None]:
    with mock_aws():
        yield


def deploy_stack(name: str, stack_outputs: dict[str, str], region: str = REGION) -> None:
    template = {
        "Resources": {"Bucket": {"Type": "AWS::S3::Bucket"}},
        "Outputs": {key: {"Value": value} for key, value in stack_outputs.items()},
    }
    boto3.client("cloudformation", region_name=region).create_stack(
        StackName=name, TemplateBody=json.dumps(template)
    )


def create_cluster(endpoint: str | None = None, ca_pem: bytes | None = None) -> None:
    boto3.client("eks", region_name=REGION).create_cluster(
        name=CLUSTER,
        roleArn=f"arn:aws:iam::{DEFAULT_ACCOUNT_ID}:role/eks",
        resourcesVpcConfig={"subnetIds": ["subnet-1", "subnet-2"]},
    )
    cluster = eks_backends[DEFAULT_ACCOUNT_ID][REGION].clusters[CLUSTER]
    if endpoint is not None:
        cluster.endpoint = endpoint
    if ca_pem is not None:
        cluster.certificate_authority = {"data": base64.b64encode(ca_pem).decode()}


def test_read_stack_outputs_returns_the_deployed_outputs(aws: None) -> None:
    deploy_stack(STACK, outputs())
    cfn = boto3.client("cloudformation", region_name=REGION)
    assert read_stack_outputs(cfn, STACK) == outputs()


def test_the_cluster_name_comes_from_the_platform_stack() -> None:
    with pytest.raises(StackError, match=rf"platform stack {PLATFORM}: no ClusterName output"):
        platform_cluster_name(PLATFORM, {"NodegroupNames": "x"})
    assert platform_cluster_name(PLATFORM, platform_outputs()) == CLUSTER


def test_a_missing_stack_names_the_stack_and_the_region(aws: None) -> None:
    cfn = boto3.client("cloudformation", region_name=REGION)
    with pytest.raises(StackError, match=rf"--stack=nope: .*\(region {REGION}\)"):
        read_stack_outputs(cfn, "nope")


def test_describe_cluster_gives_the_endpoint_and_the_decoded_ca(aws: None) -> None:
    create_cluster("https://ABC.gr7.us-east-2.eks.amazonaws.com", b"-----BEGIN CERTIFICATE-----")
    access = describe_cluster(boto3.client("eks", region_name=REGION), CLUSTER)
    assert access == ClusterAccess(
        "https://ABC.gr7.us-east-2.eks.amazonaws.com", b"-----BEGIN CERTIFICATE-----"
    )
    with pytest.raises(StackError, match="cluster other: DescribeCluster failed"):
        describe_cluster(boto3.client("eks", region_name=REGION), "other")


# --- end to end: moto + fake Kubernetes API + the real client ------------------------------------


@dataclass
class Deployed:
    kube: FakeKubeApi
    backend: str


@contextlib.contextmanager
def deployed(backend_url: str, pods: list[dict[str, Any]] | None = None) -> Iterator[Deployed]:
    """A stack whose Service has a not-Ready pod and a Ready one backed by `backend_url`."""
    backend = urlsplit(backend_url)
    state = KubeState(region=REGION)
    state.services[(NAMESPACE, SERVICE)] = service_object(NAMESPACE, SERVICE, SELECTOR, 80, "http")
    state.pods[NAMESPACE] = pods or [
        pod_object(NAMESPACE, "serve-starting", SELECTOR, CONTAINER_PORT, ready=False),
        pod_object(NAMESPACE, "serve-ready", SELECTOR, CONTAINER_PORT),
        pod_object(NAMESPACE, "other-app", {"app": "x"}, CONTAINER_PORT),
    ]
    state.backends[("serve-ready", CONTAINER_PORT)] = (backend.hostname, backend.port)
    with kube_api(state) as kube:
        deploy_stack(PLATFORM, platform_outputs())
        deploy_stack(STACK, outputs())
        create_cluster(kube.endpoint, kube.ca_pem)
        yield Deployed(kube, backend_url)


@pytest.fixture
def fake_server() -> Iterator[FaultServer]:
    with fault_server() as server:
        yield server


def test_stack_endpoint_port_forwards_to_the_ready_pod_and_closes_on_exit(
    aws: None, fake_server: FaultServer
) -> None:
    logged: list[str] = []
    with deployed(fake_server.url) as d, stack_endpoint(STACK, REGION, log=logged.append) as url:
        assert url.startswith("http://127.0.0.1:")
        models = httpx.get(f"{url}/v1/models", timeout=10).json()
        assert models["data"][0]["id"] == "fake-model"
        with ThreadPoolExecutor(8) as pool:  # one websocket per connection, opened concurrently
            codes = list(pool.map(lambda _: _status(f"{url}/v1/models"), range(16)))
        assert codes == [200] * 16
    state = d.kube.state
    assert not state.rejected_tokens
    assert {f[1:] for f in state.forwards} == {("serve-ready", CONTAINER_PORT, "v4.channel.k8s.io")}
    assert any("labelSelector=app.kubernetes.io" in r for r in state.requests)
    assert f"pod {NAMESPACE}/serve-ready:{CONTAINER_PORT}" in logged[0]
    port = urlsplit(url).port
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


def _status(url: str) -> int:
    with httpx.Client(timeout=10) as client:  # a fresh connection each time
        return client.get(url).status_code


def test_a_refused_pod_port_fails_the_request_and_logs_the_kubelet_error(
    aws: None, fake_server: FaultServer
) -> None:
    logged: list[str] = []
    with deployed(fake_server.url) as d:
        d.kube.state.backends.clear()
        with (
            stack_endpoint(STACK, REGION, log=logged.append) as url,
            pytest.raises(httpx.TransportError),
        ):
            httpx.get(f"{url}/v1/models", timeout=10)
    assert any("error forwarding port 8000 to pod serve-ready" in line for line in logged)


def test_no_ready_pod_is_a_clear_error(aws: None, fake_server: FaultServer) -> None:
    starting = [pod_object(NAMESPACE, "serve-starting", SELECTOR, CONTAINER_PORT, ready=False)]
    with (
        deployed(fake_server.url, starting),
        pytest.raises(StackError, match=r"none of its 1 pod\(s\) is Ready"),
        stack_endpoint(STACK, REGION),
    ):
        pass


def test_an_api_error_names_the_access_the_caller_needs(
    aws: None, fake_server: FaultServer
) -> None:
    with deployed(fake_server.url) as d:
        d.kube.state.services.clear()
        with (
            pytest.raises(StackError, match=r"404 Not Found.*create pods/portforward"),
            stack_endpoint(STACK, REGION),
        ):
            pass


def test_auto_uses_the_nlb_when_the_stack_has_one_and_port_forward_can_be_forced(
    aws: None, fake_server: FaultServer
) -> None:
    nlb = "http://internal-trnspec-123.elb.us-east-2.amazonaws.com:80"
    with deployed(fake_server.url) as d:
        boto3.client("cloudformation", region_name=REGION).delete_stack(StackName=STACK)
        deploy_stack(STACK, outputs(InternalNlbEndpoint=nlb))
        with stack_endpoint(STACK, REGION, log=lambda _: None) as url:
            assert url == nlb
        assert not d.kube.state.requests  # the NLB path never touches the Kubernetes API
        with stack_endpoint(STACK, REGION, via="port-forward", log=lambda _: None) as url:
            assert httpx.get(f"{url}/v1/models", timeout=10).status_code == 200


def test_via_nlb_without_the_output_says_how_to_enable_it(aws: None) -> None:
    deploy_stack(STACK, outputs())
    with (
        pytest.raises(StackError, match=r"serving\.internal_nlb: true"),
        stack_endpoint(STACK, REGION, via="nlb"),
    ):
        pass


def test_resolve_endpoint_passes_a_plain_endpoint_through_and_refuses_both() -> None:
    plain = SimpleNamespace(endpoint="http://h:1", stack=None)
    with resolve_endpoint(plain) as url:
        assert url == "http://h:1"
    both = SimpleNamespace(endpoint=None, local=True, stack="s", region=None, via="auto")
    with pytest.raises(StackError, match="give --stack or --local"), resolve_endpoint(both):
        pass


# --- the CLIs ------------------------------------------------------------------------------------


def test_smoke_cli_runs_every_check_through_the_port_forward(
    aws: None, fake_server: FaultServer, capsys: pytest.CaptureFixture[str]
) -> None:
    with deployed(fake_server.url) as d:
        code = smoke.main(["--stack", STACK, "--region", REGION, "--max-tokens", "8"])
    out = capsys.readouterr()
    assert code == 0, out.out
    assert "all checks passed" in out.out
    assert "port-forward http://127.0.0.1:" in out.err
    assert d.kube.state.forwards


def test_a_missing_platform_stack_is_named(aws: None) -> None:
    deploy_stack(STACK, outputs())
    with pytest.raises(StackError, match=rf"platform stack {PLATFORM}: .*does not exist"):
        stack_endpoint(STACK, REGION).__enter__()


def test_no_region_anywhere_asks_for_region(
    fake_aws_env: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    with pytest.raises(StackError, match="--region: not given"), stack_endpoint(STACK):
        pass


def test_smoke_cli_reports_a_missing_stack_with_exit_code_2(
    aws: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert smoke.main(["--stack", "nope", "--region", REGION]) == 2
    assert "--stack=nope" in capsys.readouterr().out


def test_bench_cli_measures_through_the_port_forward(
    aws: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with bench_server("--ttft-ms", "20", "--itl-ms", "5", "--k", "4") as url, deployed(url):
        code = bench.main(
            [
                "--stack",
                STACK,
                "--region",
                REGION,
                "--concurrency",
                "1,4",
                "--num-prompts",
                "8",
                "--output-len",
                "16",
                "--out",
                str(tmp_path / "bench.json"),
                "--no-plots",
                "--no-progress",
            ]
        )
    assert code == 0, capsys.readouterr().err
    result = json.loads((tmp_path / "bench.json").read_text())
    assert [r["completed"] for r in result["runs"]] == [8, 8]
    assert [r["errors"]["total"] for r in result["runs"]] == [0, 0]


def test_bench_cli_refuses_stack_with_endpoint(
    aws: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--stack", STACK, "--endpoint", "http://h:1", "--out", str(tmp_path / "b.json")]
    assert bench.main(argv) == 2
    assert "give --stack or --endpoint" in capsys.readouterr().err


def test_exit_closes_the_listener_and_connections_still_open(aws: None) -> None:
    # the bench fake (aiohttp) keeps connections alive; the smoke fake speaks HTTP/1.0
    with bench_server() as backend, deployed(backend) as d, httpx.Client(timeout=10) as keep_alive:
        with stack_endpoint(STACK, REGION, log=lambda _: None) as url:
            assert keep_alive.get(f"{url}/v1/models").status_code == 200
            assert d.kube.state.open_forwards == 1
            assert any(t.name.startswith("port-forward ") for t in threading.enumerate())
        assert not any(t.name.startswith("port-forward ") for t in threading.enumerate())
        # the idle kept-alive connection's websocket is closed too, not left to the process exit
        assert wait_until(lambda: d.kube.state.open_forwards == 0), d.kube.state.open_forwards
        with pytest.raises(httpx.TransportError):
            keep_alive.get(f"{url}/v1/models")


def wait_until(condition: Callable[[], bool], timeout_s: float = 120.0) -> bool:
    """Whether `condition` became true, polled until it did: the bound is a hang guard, not a
    speed bound (generous for a 2-core host at load 8)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_the_stack_in_one_region_reaches_the_cluster_in_the_region_its_outputs_name(
    aws: None, fake_server: FaultServer
) -> None:
    """Queried in another region (--region), the serving stack's Region output says where the
    platform stack and the cluster are."""
    with deployed(fake_server.url):
        other = "us-west-2"
        deploy_stack(STACK, outputs(), region=other)
        with stack_endpoint(STACK, other, via="port-forward", log=lambda _: None) as url:
            assert httpx.get(f"{url}/v1/models", timeout=10).status_code == 200


def test_a_silent_kubernetes_api_ends_at_the_tools_timeout(aws: None) -> None:
    """--timeout reaches every Kubernetes call: the error names the tool's 0.5 s, not the
    default 60 s."""
    with silent_endpoint() as kube:
        deploy_stack(PLATFORM, platform_outputs())
        deploy_stack(STACK, outputs())
        create_cluster(kube, b"PEM")
        args = SimpleNamespace(stack=STACK, region=REGION, via="auto", timeout=0.5)
        with (
            pytest.raises(StackError, match=r"no whole answer within 0\.5 s"),
            resolve_endpoint(args, log=lambda _: None),
        ):
            pass


@pytest.mark.timeout(60)  # each AWS call would otherwise wait botocore's 60 s, three times
def test_a_silent_aws_endpoint_ends_at_the_tools_timeout(
    fake_aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with silent_endpoint() as aws_url:
        monkeypatch.setenv("AWS_ENDPOINT_URL", aws_url)
        with (
            pytest.raises(StackError, match=r"CloudFormation: no whole answer within 0\.3 s"),
            stack_endpoint(STACK, REGION, timeout_s=0.3, log=lambda _: None),
        ):
            pass


@contextlib.contextmanager
def trickling_endpoint() -> Iterator[str]:
    """A URL whose server answers one byte every 10 ms (an XML body that never ends), for at
    most 3 s, then closes: a per-read timeout never fires on it."""
    stop = threading.Event()
    listener = socket.create_server(("127.0.0.1", 0))

    def serve(conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\n\r\n<a>")
            for _ in range(300):
                if stop.wait(0.01):
                    return
                conn.sendall(b" ")

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        listener.close()


def test_an_aws_endpoint_that_trickles_ends_at_the_tools_timeout_in_all(
    fake_aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """botocore's read timeout is per read: one byte every 10 ms never trips it. --timeout is
    the bound in all (without it the trickle ends at its close, with another error)."""
    with trickling_endpoint() as aws_url:
        monkeypatch.setenv("AWS_ENDPOINT_URL", aws_url)
        with (
            pytest.raises(StackError, match=r"CloudFormation: no whole answer within 0\.3 s"),
            stack_endpoint(STACK, REGION, timeout_s=0.3, log=lambda _: None),
        ):
            pass
