"""`smoke.py --stack` on a deploy that scales to zero wakes it through the interceptor and waits
(bounded) for a replica, instead of failing "none of its 0 pod(s) is Ready" (issue 48, finding 4).

moto (CloudFormation, EKS) and the fake Kubernetes API of test_stack_endpoint; behind the
interceptor pod's forwarded port is a stand-in that, like the add-on's interceptor, routes by
`Host` and counts the request: a request for the wake host makes the serving pod Ready (what
KEDA's activation and the cold start do, here at once); any other host is a 404 and wakes
nothing. Time is an injected clock: the budget is counted in polls, never waited for.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest
from fake_kube_api import KubeState, pod_object, service_object
from fake_kube_api import running as kube_api
from fault_server import FaultServer, fault_server
from test_stack_endpoint import (
    CONTAINER_PORT,
    NAMESPACE,
    PLATFORM,
    REGION,
    SELECTOR,
    SERVICE,
    STACK,
    create_cluster,
    deploy_stack,
    outputs,
    platform_outputs,
)

from infra.contracts import (
    KEDA_HTTP_INTERCEPTOR_POD_LABELS,
    KEDA_HTTP_INTERCEPTOR_SERVICE,
    KEDA_HTTP_PROXY_PORT,
    KEDA_NAMESPACE,
)
from infra.outputs import ServingOutputs
from trnspec_tools import smoke
from trnspec_tools.client.stack_endpoint import StackError
from trnspec_tools.smoke_wake import POLL_SECONDS, _ready_pods, wake_stack

WAKE_HOST = f"{SERVICE}-wake.{NAMESPACE}.svc.cluster.local"
WAKE = {ServingOutputs.WAKE_ENDPOINT: f"http://{WAKE_HOST}:{KEDA_HTTP_PROXY_PORT}"}


@pytest.fixture
def aws(fake_aws_env: None) -> Iterator[None]:
    from moto import mock_aws

    with mock_aws():
        yield


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with fault_server() as s:
        yield s


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@contextlib.contextmanager
def interceptor(state: KubeState, wakes: bool) -> Iterator[list[str]]:
    """The interceptor stand-in: records each request's Host; the wake host makes the serving
    pod Ready when `wakes`."""
    hosts: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            host = self.headers.get("Host", "")
            hosts.append(host)
            if host == WAKE_HOST and wakes:
                for pod in state.pods[NAMESPACE]:
                    for condition in pod["status"]["conditions"]:
                        condition["status"] = "True"
            self.send_response(200 if host == WAKE_HOST else 404)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    state.backends[("interceptor-0", KEDA_HTTP_PROXY_PORT)] = httpd.server_address[:2]
    try:
        yield hosts
    finally:
        httpd.shutdown()


@contextlib.contextmanager
def at_zero(server_url: str, wakes: bool = True) -> Iterator[tuple[KubeState, list[str]]]:
    """A scale-to-zero stack: its serving pod not Ready (as at zero, it is not there to
    answer), the interceptor's proxy Service with a Ready pod."""
    state = KubeState(region=REGION)
    state.services[(NAMESPACE, SERVICE)] = service_object(NAMESPACE, SERVICE, SELECTOR, 80, "http")
    state.pods[NAMESPACE] = [
        pod_object(NAMESPACE, "serve-0", SELECTOR, CONTAINER_PORT, ready=False)
    ]
    backend = urlsplit(server_url)
    state.backends[("serve-0", CONTAINER_PORT)] = (backend.hostname, backend.port)
    labels = {**KEDA_HTTP_INTERCEPTOR_POD_LABELS, "app.kubernetes.io/component": "interceptor"}
    state.services[(KEDA_NAMESPACE, KEDA_HTTP_INTERCEPTOR_SERVICE)] = service_object(
        KEDA_NAMESPACE, KEDA_HTTP_INTERCEPTOR_SERVICE, labels, KEDA_HTTP_PROXY_PORT, "http"
    )
    state.pods[KEDA_NAMESPACE] = [
        pod_object(KEDA_NAMESPACE, "interceptor-0", labels, KEDA_HTTP_PROXY_PORT)
    ]
    with interceptor(state, wakes) as hosts, kube_api(state) as kube:
        deploy_stack(PLATFORM, platform_outputs())
        deploy_stack(STACK, outputs(**WAKE))
        create_cluster(kube.endpoint, kube.ca_pem)
        yield state, hosts


def test_smoke_on_a_stack_at_zero_wakes_it_and_passes(
    aws: None, server: FaultServer, capsys: pytest.CaptureFixture[str]
) -> None:
    with at_zero(server.url) as (state, hosts):
        code = smoke.main(["--stack", STACK, "--region", REGION, "--max-tokens", "8"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert hosts == [WAKE_HOST]
    assert "waking it through the interceptor" in out and "all checks passed" in out
    # the wake went through the interceptor first; every connection after it to the woken pod
    first, *rest = [f[:2] for f in state.forwards]
    assert first == (KEDA_NAMESPACE, "interceptor-0")
    assert rest and set(rest) == {(NAMESPACE, "serve-0")}


def test_a_stack_that_does_not_wake_is_given_up_at_the_budget(
    aws: None, server: FaultServer
) -> None:
    clock = FakeClock()
    with (
        at_zero(server.url, wakes=False) as _,
        pytest.raises(
            StackError, match=r"no replica of trnspec/qwen3-32b-draft Ready within 2 min"
        ),
    ):
        wake_stack(STACK, REGION, 2, log=lambda _: None, sleep=clock.sleep, clock=clock)
    assert clock.now == 2 * 60  # gave up at the budget, not before, not after
    assert clock.now / POLL_SECONDS == 8


def test_a_stack_without_the_wake_output_or_with_a_ready_pod_is_not_woken(
    aws: None, server: FaultServer
) -> None:
    with at_zero(server.url) as (state, hosts):
        for pod in state.pods[NAMESPACE]:
            for condition in pod["status"]["conditions"]:
                condition["status"] = "True"
        assert not wake_stack(STACK, REGION, log=lambda _: None).needed
        assert hosts == []


def test_a_kubernetes_api_that_never_finishes_answering_ends_at_the_timeout() -> None:
    """urllib3's _request_timeout is per read: each pods look has the tool's --timeout in all
    (a stub API that holds the call 3 s then fails gives another outcome without the bound)."""
    release = threading.Event()

    class Stuck:
        def read_namespaced_service(self, *_: object, **__: object) -> object:
            release.wait(3.0)
            raise RuntimeError("released")

    try:
        with pytest.raises(StackError, match=r"about keda/proxy within 0\.05 s \(--timeout"):
            _ready_pods(Stuck(), "keda", "proxy", 0.05)
    finally:
        release.set()
