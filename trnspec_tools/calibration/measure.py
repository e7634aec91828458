"""Run the rounds: wait until both arms answer, then every (level, round, arm) in ABBA order, each
one `bench.run.run_level` (the benchmark's runner: warm-up, /metrics snapshots, measured requests,
typed RunResult). A run that raises is kept as a failed run with its reason, never dropped."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from trnspec.boundary.text import printable

from trnspec_tools.ab.order import measurement_steps
from trnspec_tools.bench.run import RunOptions, run_level
from trnspec_tools.bench.run_result import RunResult
from trnspec_tools.calibration.summary import ARMS, Arm, CalibrationRun
from trnspec_tools.client.request_spec import RequestSpec
from trnspec_tools.client.served_model import discover_model

#: run_level's signature, injectable for tests that only check the order.
Runner = Callable[[str, str, Sequence[RequestSpec], int, RunOptions], Awaitable[RunResult]]


@dataclass(frozen=True)
class ArmEndpoint:
    """Where one arm answers and what it is asked for."""

    arm: Arm
    url: str
    model: str
    options: RunOptions


async def _level_runner(
    url: str, model: str, specs: Sequence[RequestSpec], c: int, opts: RunOptions
) -> RunResult:
    return await run_level(url, model, specs, c, opts)


async def wait_ready(
    urls: Mapping[Arm, str],
    budget_s: float,
    api_key: str | None = None,
    poll_s: float = 10.0,
    log: Callable[[str], None] = print,
) -> dict[Arm, str]:
    """{arm: served model} once every arm's /v1/models names a model; TimeoutError naming the
    arms still silent after `budget_s`."""
    deadline = time.monotonic() + budget_s
    models: dict[Arm, str] = {}
    while True:
        for arm, url in urls.items():
            if arm not in models and (name := await discover_model(url, 10.0, api_key)):
                models[arm] = name
                log(f"{arm} arm ready at {url}: {name}")
        if len(models) == len(urls):
            return models
        if time.monotonic() + poll_s > deadline:
            silent = ", ".join(f"{a} ({urls[a]})" for a in urls if a not in models)
            raise TimeoutError(f"not ready within {budget_s:.0f} s: {silent}")
        await asyncio.sleep(poll_s)


async def measure(
    arms: Mapping[Arm, ArmEndpoint],
    specs: Sequence[RequestSpec],
    levels: Sequence[int],
    rounds: int,
    *,
    deadline_s: float | None = None,
    runner: Runner = _level_runner,
    log: Callable[[str], None] = print,
) -> list[CalibrationRun]:
    """Every run of the calibration, in the order run. Past `deadline_s` (seconds from now) the
    remaining runs are recorded as failed ("not run: ...") instead of started."""
    start = time.monotonic()
    out: list[CalibrationRun] = []
    position: dict[int, int] = {}
    for step in measurement_steps(ARMS, levels, rounds):
        c, r, arm = step.level, step.round, step.arm
        pos = position.get(c, 0)
        position[c] = pos + 1
        if deadline_s is not None and time.monotonic() - start > deadline_s:
            why = f"not run: the deadline passed ({deadline_s:.0f} s were left for the rounds)"
            out.append(CalibrationRun(arm, c, r, pos, None, why))
            continue
        ep = arms[arm]
        try:
            result = await runner(ep.url, ep.model, specs, c, ep.options)
        except Exception as exc:  # any fault of one run is that arm's failure, with its reason
            out.append(
                CalibrationRun(arm, c, r, pos, None, printable(f"{type(exc).__name__}: {exc}"))
            )
            log(f"concurrency {c} round {r + 1} {arm}: failed ({type(exc).__name__})")
            continue
        out.append(CalibrationRun(arm, c, r, pos, result))
        req = result.requests
        log(
            f"concurrency {c} round {r + 1} {arm}: {req.output_tokens_per_s:.1f} tok/s, "
            f"p50 TPOT {req.tpot_ms.p50 if req.tpot_ms.p50 is not None else float('nan'):.2f} ms,"
            f" {req.completed}/{req.num_requests} completed"
        )
    return out
