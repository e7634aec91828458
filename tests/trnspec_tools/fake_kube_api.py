"""A fake Kubernetes API server on loopback, good enough for the official client's port-forward.

It serves HTTPS with its own CA (as an EKS endpoint does), rejects requests whose bearer token is
not an EKS token (`k8s-aws-v1.` + a presigned STS GetCallerIdentity URL that signs the
`x-k8s-aws-id` header), answers `GET` for a Service and a label-selected Pod list from the objects
it is given, and upgrades `GET .../pods/{name}/portforward?ports=N` to a websocket speaking the
kubelet's port-forward protocol: subprotocol `v4.channel.k8s.io`, two channels per port (data 0,
error 1), each opened by a frame carrying the port as a little-endian uint16, then data frames
prefixed by their channel byte (kubernetes/kubernetes pkg/kubelet/cri/streaming/portforward/
websocket.go). The bytes go to a TCP backend given per (pod, port); a refused backend becomes an
error-channel message, as the kubelet writes one.

Not simulated: the API server's authorization (RBAC, EKS access entries), the STS call through
which EKS checks the token's signature, SPDY, and the v5 close frames.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import ipaddress
import ssl
import tempfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from aiohttp import WSMsgType, web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

PORT_FORWARD_PROTOCOL = "v4.channel.k8s.io"


def token_problem(token: str, region: str) -> str | None:
    """Why `token` is not an EKS token for `region`'s STS endpoint (None if it is one)."""
    prefix = "k8s-aws-v1."
    if not token.startswith(prefix):
        return f"no {prefix} prefix"
    body = token[len(prefix) :]
    if "=" in body:
        return "base64 padding must be stripped"
    try:
        url = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()
    except (ValueError, UnicodeDecodeError):
        return "not URL-safe base64"
    parts = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    expected_host = f"sts.{region}.amazonaws.com"
    if parts.scheme != "https" or parts.netloc != expected_host:
        return f"presigned for {parts.scheme}://{parts.netloc}, not https://{expected_host}"
    if query.get("Action") != "GetCallerIdentity" or query.get("Version") != "2011-06-15":
        return f"not a GetCallerIdentity call: {query.get('Action')} {query.get('Version')}"
    if "x-k8s-aws-id" not in query.get("X-Amz-SignedHeaders", "").split(";"):
        return "x-k8s-aws-id is not a signed header"
    if query.get("X-Amz-Expires") != "60":
        return f"X-Amz-Expires={query.get('X-Amz-Expires')}, aws eks get-token uses 60"
    if not query.get("X-Amz-Signature") or not query.get("X-Amz-Credential"):
        return "not signed"
    return None


@dataclass
class Tls:
    """A CA and a server certificate for 127.0.0.1 signed by it."""

    ca_pem: bytes
    context: ssl.SSLContext


def make_tls(workdir: Path) -> Tls:
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fake-kubernetes-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    cert_file, key_file = workdir / "server.pem", workdir / "server.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    return Tls(ca.public_bytes(serialization.Encoding.PEM), context)


@dataclass
class KubeState:
    """What the fake serves, and what it saw."""

    region: str
    services: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    pods: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: (pod, container port) -> (host, port) of the TCP backend the pod's port stands for
    backends: dict[tuple[str, int], tuple[str, int]] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    rejected_tokens: list[str] = field(default_factory=list)
    forwards: list[tuple[str, str, int, str]] = field(default_factory=list)
    """(namespace, pod, port, negotiated subprotocol) per port-forward websocket."""
    open_forwards: int = 0
    """Port-forward websockets not yet closed."""


def _status(code: int, reason: str, message: str) -> web.Response:
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message}
    return web.json_response({**body, "reason": reason, "code": code}, status=code)


def _matches(labels: Mapping[str, str], selector: str) -> bool:
    wanted = dict(term.split("=", 1) for term in selector.split(",") if term)
    return all(labels.get(k) == v for k, v in wanted.items())


def make_app(state: KubeState) -> web.Application:
    @web.middleware
    async def auth(request: web.Request, handler: Any) -> web.StreamResponse:
        state.requests.append(f"{request.method} {request.path_qs}")
        header = request.headers.get("Authorization", "")
        token = header.removeprefix("Bearer ") if header.startswith("Bearer ") else ""
        problem = token_problem(token, state.region) if token else "no bearer token"
        if problem:
            state.rejected_tokens.append(problem)
            return _status(401, "Unauthorized", problem)
        return await handler(request)

    async def service(request: web.Request) -> web.Response:
        ns, name = request.match_info["ns"], request.match_info["name"]
        if (ns, name) not in state.services:
            return _status(404, "NotFound", f'services "{name}" not found')
        return web.json_response(state.services[(ns, name)])

    async def pods(request: web.Request) -> web.Response:
        ns = request.match_info["ns"]
        selector = request.query.get("labelSelector", "")
        items = [
            p for p in state.pods.get(ns, []) if _matches(p["metadata"].get("labels", {}), selector)
        ]
        return web.json_response({"kind": "PodList", "apiVersion": "v1", "items": items})

    async def portforward(request: web.Request) -> web.StreamResponse:
        ns, pod = request.match_info["ns"], request.match_info["name"]
        if not any(p["metadata"]["name"] == pod for p in state.pods.get(ns, [])):
            return _status(404, "NotFound", f'pods "{pod}" not found')
        port = int(request.query["ports"])
        ws = web.WebSocketResponse(protocols=(PORT_FORWARD_PROTOCOL,))
        await ws.prepare(request)
        state.forwards.append((ns, pod, port, ws.ws_protocol or ""))
        state.open_forwards += 1
        try:
            return await _forward(ws, pod, port)
        finally:
            state.open_forwards -= 1

    async def _forward(ws: web.WebSocketResponse, pod: str, port: int) -> web.WebSocketResponse:
        head = port.to_bytes(2, "little")
        await ws.send_bytes(b"\x00" + head)
        await ws.send_bytes(b"\x01" + head)
        target = state.backends.get((pod, port))
        try:
            if target is None:
                raise ConnectionRefusedError("connection refused")
            reader, writer = await asyncio.open_connection(*target)
        except OSError as exc:
            message = f"error forwarding port {port} to pod {pod}: {exc}"
            await ws.send_bytes(b"\x01" + message.encode())
            await ws.close()
            return ws

        async def to_backend() -> None:
            async for msg in ws:
                if msg.type == WSMsgType.BINARY and msg.data[:1] == b"\x00":
                    writer.write(msg.data[1:])
                    await writer.drain()
            writer.close()

        async def to_client() -> None:
            while data := await reader.read(65536):
                await ws.send_bytes(b"\x00" + data)
            await ws.close()

        tasks = [asyncio.ensure_future(to_backend()), asyncio.ensure_future(to_client())]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        writer.close()
        await ws.close()
        return ws

    app = web.Application(middlewares=[auth])
    app.router.add_get("/api/v1/namespaces/{ns}/services/{name}", service)
    app.router.add_get("/api/v1/namespaces/{ns}/pods", pods)
    app.router.add_get("/api/v1/namespaces/{ns}/pods/{name}/portforward", portforward)
    return app


@dataclass
class FakeKubeApi:
    state: KubeState
    endpoint: str
    ca_pem: bytes


@contextmanager
def running(state: KubeState) -> Iterator[FakeKubeApi]:
    """The fake on a free loopback port (its own event loop thread), stopped on exit."""
    loop = asyncio.new_event_loop()
    started = threading.Event()
    box: dict[str, Any] = {}

    async def start() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            tls = make_tls(Path(tmp))
        runner = web.AppRunner(make_app(state), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls.context)
        await site.start()
        box.update(runner=runner, tls=tls, port=runner.addresses[0][1])
        started.set()

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(start(), loop).result(timeout=30)
    try:
        yield FakeKubeApi(state, f"https://127.0.0.1:{box['port']}", box["tls"].ca_pem)
    finally:
        asyncio.run_coroutine_threadsafe(box["runner"].cleanup(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


def service_object(
    namespace: str, name: str, selector: dict[str, str], port: int, target: int | str
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "type": "ClusterIP",
            "selector": selector,
            "ports": [{"name": "http", "port": port, "targetPort": target, "protocol": "TCP"}],
        },
    }


def pod_object(
    namespace: str,
    name: str,
    labels: dict[str, str],
    container_port: int,
    *,
    ready: bool = True,
    phase: str = "Running",
    created: str = "2026-11-30T10:00:00Z",
    deleting: bool = False,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "labels": labels,
        "creationTimestamp": created,
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-11-30T11:00:00Z"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "containers": [
                {
                    "name": "vllm",
                    "image": "x",
                    "ports": [{"name": "http", "containerPort": container_port}],
                }
            ]
        },
        "status": {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }
