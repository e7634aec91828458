"""Reach the service of a deployed serving stack from an operator's machine (no kubectl).

    with resolve_endpoint(args) as url:   # args from a parser given add_stack_arguments
        ...                               # url: http://127.0.0.1:PORT or the internal NLB

1. The serving stack's CloudFormation outputs (`DescribeStacks`; names from `infra.outputs`) give
   the platform stack, region, namespace, Service name and port, and the internal NLB URL when
   enabled; the platform stack's outputs give the cluster name.
2. With `--via nlb`, or `--via auto` when the stack has the NLB output, the URL is the NLB's
   (internal: reachable only from inside the VPC, over a VPN or a peered network).
3. Otherwise a port-forward over the Kubernetes API: `DescribeCluster` gives the API endpoint and
   CA; the bearer token is an EKS token (a presigned STS GetCallerIdentity URL carrying the
   `x-k8s-aws-id` header, the scheme of aws-iam-authenticator and `aws eks get-token`, see
   aws/aws-cli awscli/customizations/eks/get_token.py); the official `kubernetes` client reads
   the Service, picks a Ready pod of its selector and opens one port-forward websocket per local
   connection to the pod's target port. A free local port on 127.0.0.1 listens until exit.

The caller's IAM principal needs an EKS access entry on the cluster (or it is the cluster
creator) with rights to get Services, list Pods and create `pods/portforward` in the namespace.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import functools
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from trnspec.boundary.aws_names import arg, region_problem
from trnspec.boundary.http_read import CallTimedOut, within
from trnspec.boundary.text import printable

from infra.outputs import PlatformOutputs, ServingOutputs

#: `aws eks get-token` (awscli/customizations/eks/get_token.py): token prefix, header, URL expiry.
TOKEN_PREFIX = "k8s-aws-v1."
K8S_AWS_ID_HEADER = "x-k8s-aws-id"
PRESIGN_EXPIRES_S = 60
#: EKS accepts a token for 15 minutes; `aws eks get-token` tells clients to renew after 14.
TOKEN_LIFETIME_S = 14 * 60

VIA_CHOICES = ("auto", "port-forward", "nlb")


class StackError(RuntimeError):
    """The stack, cluster or service cannot be reached: one line naming what and the fix."""


@dataclass(frozen=True)
class StackOutputs:
    """The serving stack's outputs that the tools read."""

    stack: str
    platform_stack: str
    region: str
    namespace: str
    service_name: str
    service_port: int
    nlb_url: str | None

    @classmethod
    def parse(cls, stack: str, outputs: Mapping[str, str]) -> StackOutputs:
        """From `{OutputKey: OutputValue}`; every missing or bad output named at once."""
        o = ServingOutputs
        required = (o.PLATFORM_STACK, o.REGION, o.NAMESPACE, o.SERVICE_NAME, o.SERVICE_PORT)
        missing = [k for k in required if not outputs.get(k)]
        if missing:
            have = ", ".join(sorted(outputs)) or "no outputs"
            raise StackError(
                f"--stack={stack}: missing outputs {', '.join(missing)} (it has: {have}); "
                "name the serving stack (<platform stack>-serving), deployed from this version"
            )
        port_text = outputs[o.SERVICE_PORT]
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise StackError(
                f"--stack={stack}: output {o.SERVICE_PORT}={port_text!r} is not a TCP port"
            )
        nlb = outputs.get(o.INTERNAL_NLB_ENDPOINT) or None
        return cls(
            stack=stack,
            platform_stack=outputs[o.PLATFORM_STACK],
            region=outputs[o.REGION],
            namespace=outputs[o.NAMESPACE],
            service_name=outputs[o.SERVICE_NAME],
            service_port=int(port_text),
            nlb_url=nlb if nlb is None or "://" in nlb else f"http://{nlb}",
        )


def platform_cluster_name(platform_stack: str, outputs: Mapping[str, str]) -> str:
    """The EKS cluster name from the platform stack's outputs."""
    name = outputs.get(PlatformOutputs.CLUSTER_NAME)
    if not name:
        have = ", ".join(sorted(outputs)) or "no outputs"
        raise StackError(
            f"platform stack {platform_stack}: no {PlatformOutputs.CLUSTER_NAME} output "
            f"(it has: {have})"
        )
    return name


#: Deadline of one AWS or Kubernetes API call when the tool has no --timeout, s.
DEFAULT_AWS_TIMEOUT_S = 60.0
#: Attempts of one AWS call, the first included (botocore's "standard" retry mode).
AWS_MAX_ATTEMPTS = 3


def aws_config(timeout_s: float) -> Any:
    """botocore's Config for one tool run: every AWS call connects within min(timeout, 10 s),
    reads within the timeout, and is tried at most AWS_MAX_ATTEMPTS times, so `--stack` honours
    `--timeout` (botocore's defaults: 60 s each, and up to 5 legacy retries)."""
    from botocore.config import Config

    return Config(
        connect_timeout=min(timeout_s, 10.0),
        read_timeout=timeout_s,
        retries={"total_max_attempts": AWS_MAX_ATTEMPTS, "mode": "standard"},
    )


def _late(what: str, timeout_s: float, fix: str) -> StackError:
    """The error of an API call cut off at its total bound (botocore's and urllib3's timeouts
    are per read: an endpoint sending one byte a second never trips them)."""
    return StackError(
        f"{what}: no whole answer within {timeout_s:g} s (--timeout; it answers too slowly, or"
        f" never); {fix}"
    )


def read_stack_outputs(
    cloudformation: Any,
    stack: str,
    label: str | None = None,
    timeout_s: float = DEFAULT_AWS_TIMEOUT_S,
) -> dict[str, str]:
    """`{OutputKey: OutputValue}` of a deployed stack (a boto3 CloudFormation client), within
    `timeout_s` in all; errors start with `label` (default `--stack=<stack>`)."""
    from botocore.exceptions import BotoCoreError, ClientError
    from botocore.parsers import ResponseParserError

    what = label or f"--stack={stack}"
    try:
        answer = within(timeout_s, lambda: cloudformation.describe_stacks(StackName=stack))
        stacks = answer["Stacks"]
        outputs = stacks[0].get("Outputs", [])
        return {
            str(o["OutputKey"]): str(o["OutputValue"])
            for o in outputs
            if isinstance(o, dict) and "OutputKey" in o and "OutputValue" in o
        }
    except CallTimedOut:
        fix = "check the network and --region"
        raise _late(f"{what}: CloudFormation", timeout_s, fix) from None
    except ClientError as exc:
        region = cloudformation.meta.region_name
        raise StackError(
            f"{what}: {exc.response['Error'].get('Message', exc)} (region {region}); "
            "check the stack name and --region"
        ) from exc
    except (BotoCoreError, ResponseParserError) as exc:
        # a timeout (aws_config's deadlines), a network failure, or an answer that is not AWS's
        # XML (a proxy's HTML page)
        raise StackError(f"{what}: cannot query CloudFormation: {printable(exc, 200)}") from exc
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise StackError(
            f"{what}: DescribeStacks answered an unexpected shape ({exc!r:.80})"
        ) from exc


@dataclass(frozen=True)
class ClusterAccess:
    """How to reach a cluster's API server: its endpoint URL and CA bundle (PEM)."""

    endpoint: str
    ca_pem: bytes


def describe_cluster(
    eks: Any, cluster_name: str, timeout_s: float = DEFAULT_AWS_TIMEOUT_S
) -> ClusterAccess:
    """Endpoint and CA from `DescribeCluster` (a boto3 EKS client), within `timeout_s` in all."""
    from botocore.exceptions import BotoCoreError, ClientError
    from botocore.parsers import ResponseParserError

    try:
        cluster = within(timeout_s, lambda: eks.describe_cluster(name=cluster_name))["cluster"]
        if not isinstance(cluster, dict):
            raise TypeError(f"cluster is {type(cluster).__name__}")
    except CallTimedOut:
        fix = "check the network and --region"
        raise _late(f"cluster {cluster_name}: DescribeCluster", timeout_s, fix) from None
    except (ClientError, BotoCoreError, ResponseParserError, KeyError, TypeError) as exc:
        raise StackError(
            f"cluster {cluster_name}: DescribeCluster failed: {printable(exc, 200)}"
        ) from exc
    endpoint = cluster.get("endpoint")
    ca = (cluster.get("certificateAuthority") or {}).get("data")
    if not endpoint or not ca:
        status = cluster.get("status", "unknown")
        raise StackError(
            f"cluster {cluster_name}: no API endpoint or CA yet (status {status}); "
            "wait until the cluster is ACTIVE"
        )
    return ClusterAccess(endpoint=endpoint, ca_pem=base64.b64decode(ca))


def eks_token(sts: Any, cluster_name: str) -> str:
    """A bearer token for the EKS API server: `k8s-aws-v1.` + unpadded URL-safe base64 of a
    presigned STS GetCallerIdentity URL that signs the `x-k8s-aws-id: <cluster>` header.

    `sts` is a boto3 STS client of the cluster's region (botocore signs the regional endpoint).
    The same scheme as `aws eks get-token` (aws/aws-cli awscli/customizations/eks/get_token.py)
    and aws-iam-authenticator's token format; the header is added in `before-sign`, so it is
    one of the signed headers and the server can check the token is for this cluster."""

    def add_header(request: Any, **_: Any) -> None:
        request.headers[K8S_AWS_ID_HEADER] = cluster_name

    event = "before-sign.sts.GetCallerIdentity"
    sts.meta.events.register(event, add_header, unique_id="trnspec-k8s-aws-id")
    try:
        url = sts.generate_presigned_url(
            "get_caller_identity", Params={}, ExpiresIn=PRESIGN_EXPIRES_S, HttpMethod="GET"
        )
    finally:
        sts.meta.events.unregister(event, unique_id="trnspec-k8s-aws-id")
    return TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def kube_configuration(
    access: ClusterAccess,
    token: Callable[[], str],
    ca_dir: Path,
    clock: Callable[[], float] = time.monotonic,
) -> Any:
    """A `kubernetes.client.Configuration` for the cluster: its endpoint, its CA (written to
    `ca_dir`, which the caller removes), and a bearer token renewed before it expires."""
    from kubernetes import client

    ca_file = ca_dir / "cluster-ca.pem"
    ca_file.write_bytes(access.ca_pem)
    cfg = client.Configuration()
    cfg.host = access.endpoint
    cfg.ssl_ca_cert = str(ca_file)
    cfg.verify_ssl = True
    cfg.api_key_prefix = {"BearerToken": "Bearer"}
    issued = [clock()]
    cfg.api_key = {"BearerToken": token()}

    def refresh(c: Any) -> None:
        if clock() - issued[0] >= TOKEN_LIFETIME_S - 60:
            c.api_key["BearerToken"] = token()
            issued[0] = clock()

    cfg.refresh_api_key_hook = refresh
    return cfg


def _is_ready(pod: Any) -> bool:
    if pod.metadata.deletion_timestamp is not None or pod.status is None:
        return False
    if pod.status.phase != "Running":
        return False
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def pick_ready_pod(pods: Sequence[Any]) -> Any | None:
    """A Running, Ready pod not being deleted (the oldest, then by name), or None."""
    ready = [p for p in pods if _is_ready(p)]
    earliest = datetime.min.replace(tzinfo=UTC)
    ready.sort(key=lambda p: (p.metadata.creation_timestamp or earliest, p.metadata.name))
    return ready[0] if ready else None


def target_port(service: Any, port: int, pod: Any) -> int:
    """The container port behind Service port `port` on `pod` (a named targetPort is looked up
    among the pod's container ports, as the Service's endpoints controller does)."""
    spec_ports = service.spec.ports or []
    match = next((p for p in spec_ports if p.port == port), None)
    name = f"{service.metadata.namespace}/{service.metadata.name}"
    if match is None:
        have = ", ".join(str(p.port) for p in spec_ports) or "none"
        raise StackError(f"Service {name} has no port {port} (ports: {have})")
    target = match.target_port if match.target_port is not None else match.port
    if isinstance(target, int) or str(target).isdigit():
        return int(target)
    for container in pod.spec.containers:
        for cp in container.ports or []:
            if cp.name == target:
                return int(cp.container_port)
    raise StackError(
        f"Service {name} port {port} targets {target!r}, which pod {pod.metadata.name} "
        "does not declare"
    )


def _label_selector(selector: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))


def find_pod_port(
    core: Any, outputs: StackOutputs, cluster: str, timeout_s: float = DEFAULT_AWS_TIMEOUT_S
) -> tuple[str, int]:
    """(pod name, container port) of a Ready pod behind the stack's Service; each Kubernetes
    API call has `timeout_s` in all (and per read)."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    ns, name = outputs.namespace, outputs.service_name
    try:
        service = within(
            timeout_s, lambda: core.read_namespaced_service(name, ns, _request_timeout=timeout_s)
        )
        if not service.spec.selector:
            raise StackError(f"Service {ns}/{name} has no selector; cannot pick a pod")
        selector = _label_selector(service.spec.selector)
        pods = within(
            timeout_s,
            lambda: core.list_namespaced_pod(
                ns, label_selector=selector, _request_timeout=timeout_s
            ),
        ).items
    except CallTimedOut:
        fix = "check the network, or that the cluster's endpoint is reachable from here"
        raise _late(f"Kubernetes API ({cluster})", timeout_s, fix) from None
    except HTTPError as exc:  # urllib3's timeouts and connection failures
        raise StackError(
            f"Kubernetes API ({cluster}): no answer within {timeout_s:g} s ({printable(exc, 120)})"
        ) from exc
    except ApiException as exc:
        raise StackError(
            f"Kubernetes API ({cluster}): {exc.status} {exc.reason}; the caller "
            f"needs an EKS access entry allowing get services, list pods and create "
            f"pods/portforward in namespace {ns}"
        ) from exc
    pod = pick_ready_pod(pods)
    if pod is None:
        raise StackError(
            f"Service {ns}/{name}: none of its {len(pods)} pod(s) is Ready; "
            "wait for the rollout (a first start stages weights and may compile)"
        )
    return pod.metadata.name, target_port(service, outputs.service_port, pod)


class PortForward:
    """Listens on 127.0.0.1 (a free port unless given) and pipes every accepted connection to
    `port` of `pod` through its own Kubernetes port-forward websocket. A context manager: the
    listener and every open connection are closed on exit."""

    def __init__(self, core: Any, namespace: str, pod: str, port: int, local_port: int = 0) -> None:
        self._core, self.namespace, self.pod, self.port = core, namespace, pod, port
        self._listener = socket.create_server(("127.0.0.1", local_port))
        self.local_port: int = self._listener.getsockname()[1]
        self._open_lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        self._closed = threading.Event()
        self.errors: list[str] = []
        self._workers: list[threading.Thread] = []
        self._acceptor = threading.Thread(
            target=self._accept_loop, name=f"port-forward {pod}:{port}", daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.local_port}"

    def __enter__(self) -> PortForward:
        self._acceptor.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._conns_lock:
            conns = list(self._conns)
        for conn in conns:  # shutdown wakes a thread blocked in recv; close alone does not
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            _close(conn)
        for thread in [self._acceptor, *self._workers]:
            if thread.is_alive():
                thread.join(timeout=5)

    def _open(self) -> Any:
        from kubernetes.stream import portforward

        # kubernetes.stream swaps ApiClient.request while it opens the websocket: not thread
        # safe, so one opening at a time (the data then flows without the lock).
        with self._open_lock:
            return portforward(
                self._core.connect_get_namespaced_pod_portforward,
                self.pod,
                self.namespace,
                ports=str(self.port),
            )

    def _accept_loop(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            worker = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._workers = [w for w in self._workers if w.is_alive()] + [worker]
            worker.start()

    def _serve(self, conn: socket.socket) -> None:
        with self._conns_lock:
            self._conns.add(conn)
        remote: Any = None
        try:
            try:
                forward = self._open()
            except Exception as exc:  # the client's ApiException wraps any websocket failure
                self.errors.append(f"port-forward to {self.pod}:{self.port}: {exc}")
                return
            remote = forward.socket(self.port)
            done = threading.Event()
            up = threading.Thread(target=_pump, args=(conn, remote, done), daemon=True)
            up.start()
            _pump(remote, conn, done)
            up.join(timeout=5)
            if error := forward.error(self.port):
                self.errors.append(f"port-forward to {self.pod}:{self.port}: {error.strip()}")
        finally:
            with self._conns_lock:
                self._conns.discard(conn)
            _close(conn)
            if remote is not None:
                _close(remote)


def _pump(src: Any, dst: Any, done: threading.Event) -> None:
    """Copy bytes until either side ends, then end both (the client's port-forward socket
    cannot half-close: its proxy closes the websocket when the local side shuts down)."""
    try:
        while not done.is_set():
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        done.set()
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


def _close(s: Any) -> None:
    with contextlib.suppress(OSError):
        s.close()


@dataclass(frozen=True)
class AwsClients:
    """The boto3 clients `stack_endpoint` uses, made for one region (injectable for tests)."""

    cloudformation: Any
    eks: Any
    sts: Any

    @classmethod
    def for_region(cls, region: str | None, timeout_s: float = DEFAULT_AWS_TIMEOUT_S) -> AwsClients:
        import boto3
        from botocore.exceptions import NoRegionError

        session = boto3.session.Session(region_name=region)
        config = aws_config(timeout_s)
        try:
            return cls(
                session.client("cloudformation", config=config),
                session.client("eks", config=config),
                session.client("sts", config=config),
            )
        except NoRegionError:
            raise StackError(
                "--region: not given and no region in the AWS config; pass the stack's region, "
                "e.g. --region us-east-2"
            ) from None


@contextlib.contextmanager
def stack_endpoint(
    stack: str,
    region: str | None = None,
    via: str = "auto",
    clients: Callable[[str | None], AwsClients] | None = None,
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
    timeout_s: float = DEFAULT_AWS_TIMEOUT_S,
) -> Iterator[str]:
    """The base URL of the stack's service while the context is open (see the module doc).
    Every AWS and Kubernetes API call has `timeout_s` (the tool's --timeout)."""
    if via not in VIA_CHOICES:
        raise StackError(f"--via={via}: one of {', '.join(VIA_CHOICES)}")
    if clients is None:
        clients = functools.partial(AwsClients.for_region, timeout_s=timeout_s)
    aws = clients(region)
    outputs = StackOutputs.parse(
        stack, read_stack_outputs(aws.cloudformation, stack, timeout_s=timeout_s)
    )
    if via == "nlb" or (via == "auto" and outputs.nlb_url):
        if not outputs.nlb_url:
            raise StackError(
                f"--via=nlb: stack {stack} has no {ServingOutputs.INTERNAL_NLB_ENDPOINT} output; "
                "set serving.internal_nlb: true and deploy, or use --via port-forward"
            )
        log(f"{stack}: internal NLB {outputs.nlb_url} (reachable from inside the VPC only)")
        yield outputs.nlb_url
        return
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

    with tempfile.TemporaryDirectory(prefix="trnspec-kube-") as ca_dir:
        cfg = kube_configuration(access, lambda: eks_token(aws.sts, cluster), Path(ca_dir))
        with client.ApiClient(cfg) as api:
            core = client.CoreV1Api(api)
            pod, port = find_pod_port(core, outputs, cluster, timeout_s)
            forward = PortForward(core, outputs.namespace, pod, port)
            try:
                with forward:
                    log(
                        f"{stack}: port-forward {forward.url} -> pod "
                        f"{outputs.namespace}/{pod}:{port} (cluster {cluster}, {outputs.region})"
                    )
                    yield forward.url
            finally:
                for error in dict.fromkeys(forward.errors):
                    log(error)


def add_stack_arguments(
    parser: argparse.ArgumentParser, target: argparse._ActionsContainer | None = None
) -> None:
    """`--stack` (into `target`, e.g. a mutually exclusive group with `--endpoint`), and
    `--region` and `--via` (into `parser`)."""
    (target or parser).add_argument(
        "--stack",
        help="deployed serving stack (e.g. TrnspecPlatform-serving): reach its service through "
        "a port-forward over the Kubernetes API, or its internal NLB",
    )
    group = parser.add_argument_group("deployed stack (--stack)")
    group.add_argument(
        "--region",
        type=arg(region_problem),
        default=None,
        help="region of the stack (default: AWS config)",
    )
    group.add_argument(
        "--via",
        choices=VIA_CHOICES,
        default="auto",
        help="auto: the internal NLB when the stack has one, else a port-forward",
    )


@contextlib.contextmanager
def resolve_endpoint(args: argparse.Namespace, **kwargs: Any) -> Iterator[str | None]:
    """`args.endpoint` as given, or the URL of `args.stack` while the context is open."""
    stack = getattr(args, "stack", None)
    if not stack:
        yield getattr(args, "endpoint", None)
        return
    for other in ("endpoint", "local"):
        if getattr(args, other, None):
            raise StackError(f"--stack={stack}: give --stack or --{other}, not both")
    kwargs.setdefault("timeout_s", getattr(args, "timeout", None) or DEFAULT_AWS_TIMEOUT_S)
    with stack_endpoint(stack, args.region, args.via, **kwargs) as url:
        yield url
