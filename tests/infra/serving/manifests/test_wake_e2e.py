"""The wake path end to end on 127.0.0.1: a client calls the wake Service's host name while the
workload has no replica; a stand-in of the KEDA HTTP add-on's interceptor (interceptor_standin:
NOT the real Go interceptor, which needs a cluster; its protocol as release 0.15.0's code reads,
where 0.16.0 is pinned)
holds the request, a stand-in scaler starts an OpenAI-compatible server on the first counted
request, and the held request is answered. Past the bound the route's fallback, the rendered
nginx responder's 503 with Retry-After, answers. The route and the responder come from the
manifests the deploy applies.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp import ClientSession, ClientTimeout, web
from interceptor_standin import (
    COLD_START_HEADER,
    Backend,
    FakeServer,
    Interceptor,
    RouteView,
    busy_responder,
    scaler,
    start,
)
from workload_cases import build

from infra.serving.manifests.wake import busy_name, wake_service_name

KEY = "test-key"


def _rendered(**wake: Any) -> tuple[dict[str, Any], str, str]:
    """The route, the responder's nginx configuration and the wake host, as deployed."""
    _, spec, manifests, _ = build(scale_to_zero=True, wake=wake)
    route = next(m for m in manifests.all() if m["kind"] == "InterceptorRoute")
    conf = next(
        (
            m["data"]["default.conf"]
            for m in manifests.all()
            if m["kind"] == "ConfigMap" and m["metadata"]["name"] == busy_name(spec)
        ),
        "",
    )
    return route, conf, f"{wake_service_name(spec)}.{spec.namespace}.svc.cluster.local"


async def _cluster(
    route: dict[str, Any], conf: str, *, capacity: bool, server: FakeServer
) -> tuple[str, Interceptor, list[int], list[web.AppRunner], asyncio.Task[None]]:
    """Start the responder, the interceptor and its scaler; the backend comes up only when
    there is `capacity` (a node to run it)."""
    runners: list[web.AppRunner] = []
    view = RouteView.of(route)
    fallback_url = None
    if view.fallback:
        runner, fallback_url = await start(busy_responder(conf))
        runners.append(runner)
    interceptor = Interceptor(route=view, backend=Backend(), fallback_url=fallback_url)
    proxy = web.Application()
    proxy.router.add_route("*", "/{tail:.*}", interceptor.handle)
    runner, proxy_url = await start(proxy)
    runners.append(runner)

    async def scale_up() -> str:
        runner, url = await start(server.app())
        runners.append(runner)
        async with ClientSession() as s, s.get(url + "/health") as r:
            assert r.status == 200  # the readiness probe passes before endpoints are ready
        return url

    seen: list[int] = []
    never = asyncio.Event()

    async def no_capacity() -> str:
        await never.wait()
        return ""

    task = asyncio.create_task(scaler(interceptor, scale_up if capacity else no_capacity, seen))
    return proxy_url, interceptor, seen, runners, task


async def _stop(runners: list[web.AppRunner], task: asyncio.Task[None]) -> None:
    task.cancel()
    for runner in runners:
        await runner.cleanup()


def _completion(stream: bool = False) -> dict[str, Any]:
    return {"model": "m", "prompt": "hi", "max_tokens": 2, "stream": stream}


def test_a_request_at_zero_replicas_waits_and_is_answered() -> None:
    route, conf, host = _rendered(hold_seconds=60)

    async def run() -> tuple[int, str, list[int], dict[str, Any]]:
        server = FakeServer(KEY)
        url, _, seen, runners, task = await _cluster(route, conf, capacity=True, server=server)
        try:
            async with (
                ClientSession() as s,
                s.post(
                    url + "/v1/completions",
                    json=_completion(),
                    headers={"Host": host, "Authorization": f"Bearer {KEY}"},
                ) as r,
            ):
                return r.status, r.headers.get(COLD_START_HEADER, ""), seen, await r.json()
        finally:
            await _stop(runners, task)

    status, cold, seen, body = asyncio.run(run())
    assert status == 200
    assert body["choices"][0]["text"] == "hello"
    # It was held: in flight when the scaler woke, and answered after a cold start.
    assert seen == [1]
    assert cold == "true"


def test_past_the_bound_it_gets_503_with_retry_after() -> None:
    route, conf, host = _rendered(hold_seconds=1, retry_after_seconds=420)

    async def run() -> tuple[int, str, dict[str, Any]]:
        server = FakeServer(KEY)
        url, _, _, runners, task = await _cluster(route, conf, capacity=False, server=server)
        try:
            async with (
                ClientSession() as s,
                s.post(url + "/v1/completions", json=_completion(), headers={"Host": host}) as r,
            ):
                return r.status, r.headers.get("Retry-After", ""), json.loads(await r.text())
        finally:
            await _stop(runners, task)

    status, retry_after, body = asyncio.run(run())
    assert (status, retry_after) == (503, "420")
    assert "retry after 420 s" in body["error"]["message"]


def test_reply_mode_answers_503_at_once_and_still_wakes_the_workload() -> None:
    route, conf, host = _rendered(mode="reply", retry_after_seconds=90)

    async def run() -> tuple[int, str, int]:
        server = FakeServer(KEY)
        url, interceptor, _, runners, task = await _cluster(
            route, conf, capacity=True, server=server
        )
        try:
            headers = {"Host": host, "Authorization": f"Bearer {KEY}"}
            async with (
                ClientSession() as s,
                s.post(url + "/v1/completions", json=_completion(), headers=headers) as r,
            ):
                first = (r.status, r.headers.get("Retry-After", ""))
            await asyncio.wait_for(interceptor.backend.ready.wait(), 60)
            async with (
                ClientSession() as s,
                s.post(url + "/v1/completions", json=_completion(), headers=headers) as r,
            ):
                return first[0], first[1], r.status
        finally:
            await _stop(runners, task)

    status, retry_after, later = asyncio.run(run())
    assert (status, retry_after, later) == (503, "90", 200)


def test_the_api_key_still_holds_through_the_interceptor() -> None:
    route, conf, host = _rendered()

    async def run() -> list[int]:
        server = FakeServer(KEY)
        url, _, _, runners, task = await _cluster(route, conf, capacity=True, server=server)
        try:
            statuses = []
            for auth in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Bearer {KEY}"}):
                async with (
                    ClientSession() as s,
                    s.post(
                        url + "/v1/completions", json=_completion(), headers={"Host": host, **auth}
                    ) as r,
                ):
                    statuses.append(r.status)
            return statuses
        finally:
            await _stop(runners, task)

    assert asyncio.run(run()) == [401, 401, 200]


def test_a_stream_passes_through_event_by_event() -> None:
    route, conf, host = _rendered()

    async def run() -> tuple[bytes, bool, bytes]:
        server = FakeServer(KEY)
        url, _, _, runners, task = await _cluster(route, conf, capacity=True, server=server)
        try:
            async with (
                ClientSession(timeout=ClientTimeout(total=60)) as s,
                s.post(
                    url + "/v1/completions",
                    json=_completion(stream=True),
                    headers={"Host": host, "Authorization": f"Bearer {KEY}"},
                ) as r,
            ):
                # The server holds the rest of the stream until released: the first event can
                # only arrive if the proxy passes it on before the response ends.
                first = await r.content.readuntil(b"\n\n")
                still_open = not server.release.is_set()
                server.release.set()
                rest = await r.content.read()
                return first, still_open, rest
        finally:
            await _stop(runners, task)

    first, still_open, rest = asyncio.run(run())
    assert first.startswith(b"data: ") and b'"hel"' in first
    assert still_open
    assert rest.endswith(b"data: [DONE]\n\n")


def test_a_host_the_route_does_not_name_is_not_routed() -> None:
    route, conf, _ = _rendered()

    async def run() -> int:
        url, _, _, runners, task = await _cluster(
            route, conf, capacity=False, server=FakeServer(KEY)
        )
        try:
            async with (
                ClientSession() as s,
                s.get(url + "/v1/models", headers={"Host": "other.trnspec.svc"}) as r,
            ):
                return r.status
        finally:
            await _stop(runners, task)

    assert asyncio.run(run()) == 404


@pytest.mark.parametrize("duration", ["5m", "1.5s"])
def test_the_stand_in_refuses_durations_it_cannot_read(duration: str) -> None:
    route, _, _ = _rendered()
    route = json.loads(json.dumps(route))
    route["spec"]["timeouts"]["readiness"] = duration
    with pytest.raises(ValueError, match="whole seconds"):
        RouteView.of(route)
