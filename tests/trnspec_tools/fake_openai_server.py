"""A streaming OpenAI-compatible server with exactly known timing and spec-decode counters.

The benchmark's accuracy tests (and the reference comparison with `vllm bench serve`) run against
this server: it emits the first token after --ttft-ms and then one chunk per simulated decode step
every --itl-ms, on an absolute schedule (t0 + ttft + j*itl) so event-loop jitter does not
accumulate. Each decode step carries tokens_per_step[j % len] tokens, i.e. the target accepted
that many minus one of k drafts, and the vLLM spec-decode counters on /metrics advance by exactly
those amounts. Prompts containing FAULT markers make it misbehave on purpose:
FAULT:500 (always 500), FAULT:500ONCE (500 on the first attempt only), FAULT:DROP (abort the TCP
connection mid-stream), FAULT:TRUNCATE (end the stream cleanly without [DONE]), FAULT:ERROREVENT
(an in-stream error event after two chunks, as vLLM sends after a 200 header), FAULT:SLOW
(sleep --slow-s before answering, to trip the client's timeout). A prompt containing STEPS:n
emits n tokens per decode step whatever --tokens-per-step says (a category with known acceptance).
With --api-key KEY it answers 401 on /v1/* without `Authorization: Bearer KEY`, as vLLM does.

Run: python tests/trnspec_tools/fake_openai_server.py --port 0 --ttft-ms 60 --itl-ms 25 --k 4
It prints "PORT <n>" once it listens on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web


@dataclass
class State:
    ttft_s: float
    itl_s: float
    k: int
    tokens_per_step: list[int]
    spec_metrics: bool
    slow_s: float
    model: str
    #: with a key, /v1/* answers 401 unless `Authorization: Bearer <key>` (vLLM's --api-key)
    api_key: str | None = None
    #: how many /v1/models requests are answered 503 before the model is listed (still loading)
    unready_models: int = 0
    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    accepted_per_pos: list[int] = field(default_factory=list)
    attempts: Counter[str] = field(default_factory=Counter)
    generation_requests: int = 0
    #: what really happened, per completed request in completion order: arrival, each content
    #: write and the [DONE] write (perf_counter just before the write, CLOCK_MONOTONIC,
    #: comparable across processes), the tokens of each chunk, the request's ignore_eos and its
    #: prompt (what the client's record of the same request is matched by)
    timings: list[dict[str, object]] = field(default_factory=list)

    def record_step(self, tokens: int) -> None:
        accepted = tokens - 1
        self.drafts += 1
        self.draft_tokens += self.k
        self.accepted += accepted
        for i in range(accepted):
            self.accepted_per_pos[i] += 1


def actual(base_url: str, skip: int) -> dict[str, list[float]]:
    """The server's own record of the requests after the first `skip` (the warm-up): TTFTs,
    inter-write gaps and end-to-end times in seconds, plus the window first arrival-last write."""
    import httpx

    records = httpx.get(base_url + "/debug/timings").json()[skip:]
    return {
        "ttft": [r["writes"][0] - r["arrival"] for r in records],
        "itl": [b - a for r in records for a, b in itertools.pairwise(r["writes"])],
        "e2e": [r["done"] - r["arrival"] for r in records],
        "window": [max(r["done"] for r in records) - min(r["arrival"] for r in records)],
    }


def plan_chunks(max_tokens: int, tokens_per_step: list[int]) -> list[int]:
    """Token counts per chunk: 1 from prefill, then the step pattern, the last step clipped."""
    chunks = [1]
    left = max_tokens - 1
    j = 0
    while left > 0:
        n = min(tokens_per_step[j % len(tokens_per_step)], left)
        chunks.append(n)
        left -= n
        j += 1
    return chunks


def steps_for(prompt: str, default: list[int]) -> list[int]:
    """The tokens-per-step cycle of one request: [n] when the prompt says STEPS:n."""
    for word in prompt.split():
        if word.startswith("STEPS:") and word[6:].isdigit():
            return [int(word[6:])]
    return default


def metrics_text(s: State) -> str:
    labels = f'engine="0",model_name="{s.model}"'
    lines = [
        "# HELP vllm:num_requests_running Number of requests in model execution batches.",
        "# TYPE vllm:num_requests_running gauge",
        f"vllm:num_requests_running{{{labels}}} 0.0",
    ]
    if s.spec_metrics:
        for name, value in (
            ("num_drafts", s.drafts),
            ("num_draft_tokens", s.draft_tokens),
            ("num_accepted_tokens", s.accepted),
        ):
            lines += [
                f"# HELP vllm:spec_decode_{name} counter",
                f"# TYPE vllm:spec_decode_{name} counter",
                f"vllm:spec_decode_{name}_total{{{labels}}} {float(value)}",
                f"vllm:spec_decode_{name}_created{{{labels}}} 1.7e9",
            ]
        lines += [
            "# HELP vllm:spec_decode_num_accepted_tokens_per_pos Accepted tokens per position.",
            "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos counter",
        ]
        for pos, value in enumerate(s.accepted_per_pos):
            lines.append(
                f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="{pos}"}}'
                f" {float(value)}"
            )
    return "\n".join(lines) + "\n"


def make_app(s: State) -> web.Application:
    async def models(_: web.Request) -> web.Response:
        if s.unready_models > 0:
            s.unready_models -= 1
            return web.json_response({"error": "loading"}, status=503)
        return web.json_response({"object": "list", "data": [{"id": s.model, "object": "model"}]})

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(text=metrics_text(s), content_type="text/plain")

    async def timings(_: web.Request) -> web.Response:
        return web.json_response(s.timings)

    async def generate(request: web.Request) -> web.StreamResponse:
        t0 = time.perf_counter()
        body = await request.json()
        chat = request.path.endswith("/chat/completions")
        prompt = body["messages"][-1]["content"] if chat else body["prompt"]
        s.attempts[prompt] += 1
        if "FAULT:500ONCE" in prompt and s.attempts[prompt] == 1:
            return web.json_response({"error": "injected"}, status=500)
        if "FAULT:500" in prompt and "FAULT:500ONCE" not in prompt:
            return web.json_response({"error": "injected"}, status=500)
        if "FAULT:SLOW" in prompt:
            await asyncio.sleep(s.slow_s)
        s.generation_requests += 1
        max_tokens = int(body.get("max_tokens") or 16)
        chunks = plan_chunks(max_tokens, steps_for(prompt, s.tokens_per_step))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        created = int(time.time())
        writes: list[float] = []
        for j, n in enumerate(chunks):
            due = t0 + s.ttft_s + j * s.itl_s
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            if j > 0:
                s.record_step(n)
            if j == 2 and "FAULT:DROP" in prompt:
                assert request.transport is not None
                request.transport.abort()
                return resp
            if j == 2 and "FAULT:ERROREVENT" in prompt:
                err = {"error": {"message": "injected", "type": "InternalServerError"}}
                await resp.write(f"data: {json.dumps(err)}\n\ndata: [DONE]\n\n".encode())
                await resp.write_eof()
                return resp
            if j == 2 and "FAULT:TRUNCATE" in prompt:
                await resp.write_eof()
                return resp
            text = "tok " * n
            last = j == len(chunks) - 1
            choice: dict[str, object] = {"index": 0, "finish_reason": "length" if last else None}
            if chat:
                choice["delta"] = {"content": text}
            else:
                choice["text"] = text
            event = {"id": "x", "created": created, "model": s.model, "choices": [choice]}
            # stamped before the write: a client can only read the chunk after it (stamped after,
            # a server descheduled between the write and the stamp records the chunk late and
            # the client appears to under-report; this failed under 4 test workers)
            writes.append(time.perf_counter())
            await resp.write(f"data: {json.dumps(event)}\n\n".encode())
        usage = {
            "prompt_tokens": len(prompt.split()),
            "completion_tokens": sum(chunks),
            "total_tokens": len(prompt.split()) + sum(chunks),
        }
        final = {"id": "x", "created": created, "model": s.model, "choices": [], "usage": usage}
        done = time.perf_counter()  # before the write, as above
        await resp.write(f"data: {json.dumps(final)}\n\ndata: [DONE]\n\n".encode())
        s.timings.append(
            {
                "arrival": t0,
                "writes": writes,
                "tokens": chunks,
                "done": done,
                "ignore_eos": body.get("ignore_eos"),
                "prompt": prompt,
            }
        )
        await resp.write_eof()
        return resp

    @web.middleware
    async def key_check(request: web.Request, handler: Any) -> web.StreamResponse:
        wanted = f"Bearer {s.api_key}"
        if (
            s.api_key
            and request.path.startswith("/v1")
            and request.headers.get("Authorization") != wanted
        ):
            return web.json_response({"error": "Unauthorized"}, status=401)
        return await handler(request)

    app = web.Application(middlewares=[key_check])
    app.router.add_get("/v1/models", models)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/debug/timings", timings)
    app.router.add_post("/v1/completions", generate)
    app.router.add_post("/v1/chat/completions", generate)
    return app


async def serve(s: State, port: int) -> None:
    runner = web.AppRunner(make_app(s), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    sockets = site._server.sockets if site._server else []  # type: ignore[union-attr]
    print(f"PORT {sockets[0].getsockname()[1]}", flush=True)
    await asyncio.Event().wait()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--ttft-ms", type=float, default=60.0)
    p.add_argument("--itl-ms", type=float, default=25.0)
    p.add_argument("--k", type=int, default=4)
    p.add_argument("--tokens-per-step", default="3,1,5,2", help="cycle of tokens per decode step")
    p.add_argument("--no-spec-metrics", action="store_true")
    p.add_argument("--slow-s", type=float, default=5.0)
    p.add_argument("--model", default="fake")
    p.add_argument("--api-key", help="answer 401 on /v1/* without this bearer key")
    p.add_argument("--unready-models", type=int, default=0, help="first N /v1/models answer 503")
    a = p.parse_args()
    pattern = [int(x) for x in a.tokens_per_step.split(",")]
    if any(n < 1 or n > a.k + 1 for n in pattern):
        p.error(f"--tokens-per-step={a.tokens_per_step}: each step emits 1..k+1={a.k + 1} tokens")
    state = State(
        ttft_s=a.ttft_ms / 1000.0,
        itl_s=a.itl_ms / 1000.0,
        k=a.k,
        tokens_per_step=pattern,
        spec_metrics=not a.no_spec_metrics,
        slow_s=a.slow_s,
        model=a.model,
        api_key=a.api_key,
        unready_models=a.unready_models,
        accepted_per_pos=[0] * a.k,
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(state, a.port))


@contextlib.contextmanager
def running(*args: str, start_timeout_s: float = 20.0) -> Iterator[str]:
    """Start this server in a subprocess (its own interpreter, so its event loop does not share
    the GIL with the client under test) and yield its base URL; always stopped afterwards."""
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + start_timeout_s
        line = ""
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if line.startswith("PORT ") or proc.poll() is not None:
                break
        if not line.startswith("PORT "):
            err = proc.stderr.read() if proc.stderr else ""
            raise RuntimeError(f"fake server did not start: {line!r} {err[-500:]}")
        yield f"http://127.0.0.1:{int(line.split()[1])}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main()
