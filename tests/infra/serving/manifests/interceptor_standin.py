"""A stand-in for the KEDA HTTP add-on's interceptor, a scaler and the cluster behind them, on
127.0.0.1, for the wake path's local end-to-end test. It is NOT the real interceptor (a Go binary
that needs a cluster); it reproduces the protocol of release 0.15.0 as its code reads
(kedacore/http-add-on v0.15.0, interceptor/proxy.go builds the chain). The pinned release is
0.16.0 (infra/platform/addons/pins.py: InterceptorRoute stays v1beta1, only fields the workload
does not set are added); 0.16.0's request path was not re-read for this stand-in:

- routing (pkg/routing/table.go): the request's Host, port stripped, picks the route; no route
  is 404;
- counting (interceptor/middleware/counting.go) wraps everything below: a request is in flight
  from routing until its response ends, held time included; the scaler reads these counts;
- placeholder (middleware/placeholder.go): with `coldStart.placeholder`, while the target has no
  ready endpoint, the configured status, headers and body at once;
- endpoint resolver (middleware/endpoint_resolver.go): wait for a ready endpoint of the target
  Service, at most `timeouts.readiness`; past it, the `coldStart.fallback` Service, or 504 when
  there is none; a resolved request carries `X-KEDA-HTTP-Cold-Start` (true when it waited);
- upstream (handler/upstream.go): Go's ReverseProxy with the Host preserved and every end-to-end
  header forwarded (Authorization included); a streamed response (text/event-stream) is flushed
  write by write.

The route is read from the rendered InterceptorRoute manifest, the 503 responder from the
rendered nginx configuration, so the test exercises what the deploy applies.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import ClientSession, ClientTimeout, web

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
        "host",
    }
)
COLD_START_HEADER = "X-KEDA-HTTP-Cold-Start"


def _seconds(duration: str) -> float:
    """A Kubernetes duration of whole seconds ("300s"); "0s" means no bound."""
    m = re.fullmatch(r"(\d+)s", duration)
    if not m:
        raise ValueError(f"duration {duration!r}: the stand-in reads whole seconds only")
    return float(m.group(1))


@dataclass
class Backend:
    """The serving Service's endpoints: ready once the scaler has started a server."""

    url: str | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    def serve_at(self, url: str) -> None:
        self.url = url
        self.ready.set()


@dataclass
class RouteView:
    """What the stand-in reads from an InterceptorRoute manifest."""

    hosts: tuple[str, ...]
    target: str
    readiness_s: float | None
    fallback: str | None
    placeholder: dict[str, Any] | None

    @staticmethod
    def of(route: dict[str, Any]) -> RouteView:
        spec = route["spec"]
        timeouts = spec.get("timeouts", {})
        readiness = _seconds(timeouts["readiness"]) if "readiness" in timeouts else 0.0
        cold = spec.get("coldStart", {})
        fallback = cold.get("fallback", {}).get("service", {}).get("name")
        if fallback and readiness == 0:
            readiness = 30.0  # the resolver's default bound when a fallback is set
        return RouteView(
            hosts=tuple(h for rule in spec["rules"] for h in rule.get("hosts", [])),
            target=spec["target"]["service"],
            readiness_s=readiness or None,
            fallback=fallback,
            placeholder=cold.get("placeholder", {}).get("response"),
        )


@dataclass
class Interceptor:
    """The proxy: one route, the target's endpoints, the fallback Service's URL."""

    route: RouteView
    backend: Backend
    fallback_url: str | None = None
    in_flight: int = 0
    arrivals: int = 0
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def _count(self, delta: int) -> None:
        async with self.changed:
            self.in_flight += delta
            self.arrivals += max(delta, 0)
            self.changed.notify_all()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        host = request.host.rsplit(":", 1)[0]
        if host not in self.route.hosts:
            return web.Response(status=404, text="Not Found\n")
        await self._count(+1)
        try:
            return await self._resolve(request)
        finally:
            await self._count(-1)

    async def _resolve(self, request: web.Request) -> web.StreamResponse:
        waited = not self.backend.ready.is_set()
        placeholder = self.route.placeholder
        if placeholder is not None and waited:
            return web.Response(
                status=int(placeholder.get("statusCode", 503)),
                headers=dict(placeholder.get("headers", {})),
                text=placeholder.get("body", ""),
            )
        try:
            await asyncio.wait_for(self.backend.ready.wait(), self.route.readiness_s)
        except TimeoutError:
            if self.fallback_url is None:
                return web.Response(status=504, text="Gateway Timeout\n")
            return await _forward(request, self.fallback_url, {})
        assert self.backend.url is not None
        return await _forward(request, self.backend.url, {COLD_START_HEADER: str(waited).lower()})


async def _forward(request: web.Request, base: str, extra: dict[str, str]) -> web.StreamResponse:
    """Reverse-proxy `request` to `base`, streaming the response write by write."""
    headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
    headers["Host"] = request.host
    body = await request.read()
    async with (
        ClientSession(timeout=ClientTimeout(total=None)) as session,
        session.request(
            request.method, base + request.path_qs, headers=headers, data=body
        ) as upstream,
    ):
        response = web.StreamResponse(status=upstream.status)
        for key, value in upstream.headers.items():
            if key.lower() not in HOP_BY_HOP:
                response.headers[key] = value
        response.headers.update(extra)
        await response.prepare(request)
        async for chunk in upstream.content.iter_any():
            await response.write(chunk)
        await response.write_eof()
        return response


def busy_responder(nginx_conf: str) -> web.Application:
    """The 503 responder as the rendered nginx server block says: its Retry-After header and
    its `return 503 '<body>'` for every path but the health path."""
    retry = re.search(r"add_header Retry-After (\d+) always;", nginx_conf)
    body = re.search(r"return 503 '(.*)';", nginx_conf)
    health = re.search(r"location = (\S+) ", nginx_conf)
    if not (retry and body and health):
        raise ValueError("the responder's nginx configuration lacks Retry-After, its 503 or health")

    async def handle(request: web.Request) -> web.Response:
        if request.path == health.group(1):
            return web.Response(text="ok")
        return web.Response(
            status=503,
            text=body.group(1).replace("\\'", "'"),
            content_type="application/json",
            headers={"Retry-After": retry.group(1)},
        )

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


@dataclass
class FakeServer:
    """An OpenAI-compatible server as the workload runs it: /health, and /v1/completions behind
    a bearer key; a streamed completion sends one SSE event, then waits for `release` before the
    rest (so a test can see the first event arrive while the stream is still open)."""

    api_key: str
    release: asyncio.Event = field(default_factory=asyncio.Event)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/health", self._health)
        app.router.add_post("/v1/completions", self._completions)
        return app

    async def _health(self, request: web.Request) -> web.Response:
        return web.Response(text="")

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        if request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return web.json_response({"error": {"message": "Unauthorized"}}, status=401)
        payload = await request.json()
        if not payload.get("stream"):
            return web.json_response({"choices": [{"text": "hello", "index": 0}]})
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for i, text in enumerate(["hel", "lo"]):
            if i == 1:
                await self.release.wait()
            event = {"choices": [{"text": text, "index": 0}]}
            await response.write(f"data: {json.dumps(event)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


async def start(app: web.Application) -> tuple[web.AppRunner, str]:
    """Serve `app` on 127.0.0.1 at a free port; returns the runner and the base URL."""
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return runner, f"http://127.0.0.1:{port}"


async def scaler(
    interceptor: Interceptor, scale_up: Callable[[], Awaitable[str]], seen: list[int]
) -> None:
    """Activates on the first request the interceptor counts (as KEDA's external-push trigger
    does), records how many were in flight then, and brings the backend up."""
    async with interceptor.changed:
        await interceptor.changed.wait_for(lambda: interceptor.arrivals > 0)
        seen.append(interceptor.in_flight)
    interceptor.backend.serve_at(await scale_up())
