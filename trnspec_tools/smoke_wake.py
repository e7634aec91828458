"""`smoke.py --stack` on a deploy that scales to zero: wake it first, through the wake route.

KEDA takes such a Deployment to zero replicas after its cooldown, so the Service the tools
port-forward to has no pod; a request wakes it only through the KEDA HTTP add-on's interceptor
(docs/platform.md, "Wake on traffic"). When the stack has a `WakeEndpoint` output and no serving
pod is Ready, this sends one request to the interceptor the way a client in the cluster would:
a port-forward over the Kubernetes API to a Ready pod of the interceptor's proxy Service
(`keda-add-ons-http-interceptor-proxy` in `keda`), carrying the wake Service's host in `Host`,
which the workload's InterceptorRoute matches. The request is held open (the interceptor counts
it in flight, which is what activates the workload) while the serving pods are polled until one
is Ready, within a bounded budget, WAKE_BUDGET_MINUTES by default: the cold start from zero
nodes is 7-17 minutes by the docs' estimate. Past it, one line says what to look at.
"""

from __future__ import annotations

import contextlib
import functools
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from trnspec.boundary import http_read
from trnspec.boundary.shell import shell_command

from infra.contracts import KEDA_HTTP_INTERCEPTOR_SERVICE, KEDA_NAMESPACE
from infra.outputs import ServingOutputs
from trnspec_tools.client.stack_endpoint import (
    DEFAULT_AWS_TIMEOUT_S,
    AwsClients,
    PortForward,
    StackError,
    StackOutputs,
    describe_cluster,
    eks_token,
    kube_configuration,
    pick_ready_pod,
    platform_cluster_name,
    read_stack_outputs,
    target_port,
)

#: How long `--stack` waits for a woken replica by default (the docs' 7-17 min cold start from
#: zero nodes, plus a margin); `--wake-minutes` changes it.
WAKE_BUDGET_MINUTES = 20.0
#: Seconds between looks at the serving pods while waking.
POLL_SECONDS = 15.0


@dataclass(frozen=True)
class Wake:
    """What waking did: whether it had to, and how long the pods took to be Ready."""

    needed: bool
    waited_s: float = 0.0
    looks: int = 0


def wake_host(outputs: dict[str, str]) -> str | None:
    """The Host the workload's InterceptorRoute matches (None: the stack does not scale to
    zero, or predates the output)."""
    url = outputs.get(ServingOutputs.WAKE_ENDPOINT)
    return urlsplit(url).hostname if url else None


def _selector(selector: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))


def _ready_pods(core: Any, namespace: str, service: str, timeout_s: float) -> tuple[Any, list[Any]]:
    """The Service and its pods, each Kubernetes call within `timeout_s` in all (urllib3's
    timeout is per read)."""
    try:
        svc = http_read.within(
            timeout_s,
            lambda: core.read_namespaced_service(service, namespace, _request_timeout=timeout_s),
        )
        selector = _selector(svc.spec.selector)
        pods = http_read.within(
            timeout_s,
            lambda: core.list_namespaced_pod(
                namespace, label_selector=selector, _request_timeout=timeout_s
            ),
        ).items
    except http_read.CallTimedOut:
        raise StackError(
            f"Kubernetes API: no whole answer about {namespace}/{service} within {timeout_s:g} s"
            " (--timeout; it answers too slowly, or never); check the network"
        ) from None
    return svc, pods


def wake_stack(
    stack: str,
    region: str | None,
    budget_minutes: float = WAKE_BUDGET_MINUTES,
    *,
    clients: Callable[[str | None], AwsClients] | None = None,
    log: Callable[[str], None] = print,
    sleep: Callable[[float], None] | None = None,
    clock: Callable[[], float] | None = None,
    timeout_s: float = DEFAULT_AWS_TIMEOUT_S,
) -> Wake:
    """Wake a scale-to-zero stack whose Service has no Ready pod; return once one is Ready
    (StackError past `budget_minutes`). `sleep` and `clock` are injectable (tests)."""
    import time

    sleep = sleep or time.sleep
    clock = clock or time.monotonic
    if clients is None:
        clients = functools.partial(AwsClients.for_region, timeout_s=timeout_s)
    aws = clients(region)
    raw = read_stack_outputs(aws.cloudformation, stack, timeout_s=timeout_s)
    host = wake_host(raw)
    if host is None:
        return Wake(needed=False)
    outputs = StackOutputs.parse(stack, raw)
    if outputs.region != aws.cloudformation.meta.region_name:
        aws = clients(outputs.region)
    platform = read_stack_outputs(
        aws.cloudformation,
        outputs.platform_stack,
        f"platform stack {outputs.platform_stack}",
        timeout_s,
    )
    cluster = platform_cluster_name(outputs.platform_stack, platform)
    access = describe_cluster(aws.eks, cluster, timeout_s)
    from kubernetes import client

    ns, name = outputs.namespace, outputs.service_name
    with tempfile.TemporaryDirectory(prefix="trnspec-kube-") as ca_dir:
        cfg = kube_configuration(access, lambda: eks_token(aws.sts, cluster), Path(ca_dir))
        # two clients: kubernetes.stream swaps ApiClient.request while it opens a port-forward
        # websocket, so the pods polled meanwhile must not share the forward's client
        with client.ApiClient(cfg) as api, client.ApiClient(cfg) as forward_api:
            core = client.CoreV1Api(api)
            _, pods = _ready_pods(core, ns, name, timeout_s)
            if pick_ready_pod(pods) is not None:
                return Wake(needed=False)
            proxy, interceptor = _interceptor(core, stack, timeout_s)
            port = target_port(proxy, proxy.spec.ports[0].port, interceptor)
            forward = PortForward(
                client.CoreV1Api(forward_api), KEDA_NAMESPACE, interceptor.metadata.name, port
            )
            with forward:
                log(
                    f"{stack}: no Ready pod behind {ns}/{name} (scaled to zero): waking it "
                    f"through the interceptor (Host {host}), waiting at most {budget_minutes:g} min"
                )
                held = threading.Thread(
                    target=_send, args=(forward.url, host, budget_minutes * 60), daemon=True
                )
                held.start()
                poll = _Poll(core, stack, ns, name, budget_minutes, timeout_s)
                return poll.until_ready(sleep, clock, log)


def _interceptor(core: Any, stack: str, timeout_s: float) -> tuple[Any, Any]:
    """The interceptor's proxy Service and a Ready pod behind it (StackError: none Ready)."""
    proxy, proxies = _ready_pods(core, KEDA_NAMESPACE, KEDA_HTTP_INTERCEPTOR_SERVICE, timeout_s)
    interceptor = pick_ready_pod(proxies)
    if interceptor is None:
        raise StackError(
            f"{stack}: scales to zero, but no interceptor pod of "
            f"{KEDA_NAMESPACE}/{KEDA_HTTP_INTERCEPTOR_SERVICE} is Ready to wake it: "
            f"kubectl -n {KEDA_NAMESPACE} get pods"
        )
    return proxy, interceptor


@dataclass(frozen=True)
class _Poll:
    """The serving pods looked at every POLL_SECONDS while the wake request is held."""

    core: Any
    stack: str
    namespace: str
    service: str
    budget_minutes: float
    timeout_s: float

    def until_ready(
        self, sleep: Callable[[float], None], clock: Callable[[], float], log: Callable[[str], None]
    ) -> Wake:
        """Once a serving pod is Ready, how long it took; StackError past the budget."""
        ns, name = self.namespace, self.service
        start = clock()
        looks = 0
        while True:
            looks += 1
            _, pods = _ready_pods(self.core, ns, name, self.timeout_s)
            if pick_ready_pod(pods) is not None:
                waited = clock() - start
                log(f"{self.stack}: a replica is Ready after {waited:.0f} s")
                return Wake(needed=True, waited_s=waited, looks=looks)
            if clock() - start >= self.budget_minutes * 60:
                raise StackError(
                    f"{self.stack}: woken, but no replica of {ns}/{name} Ready within "
                    f"{self.budget_minutes:g} min (--wake-minutes); see "
                    f"{shell_command('kubectl', '-n', ns, 'get', 'pods,events')} (a new "
                    "Trn2 node, image pull and compile on a cache miss take longer)"
                )
            sleep(POLL_SECONDS)


def _send(base_url: str, host: str, timeout_s: float) -> None:
    """One request through the interceptor, held until answered or `timeout_s` in all (its
    answer is not needed: being in flight is what the interceptor counts)."""
    with contextlib.suppress(http_read.ReadFailed):
        http_read.get(f"{base_url}/v1/models", http_read.Bounds(timeout_s), headers={"Host": host})
