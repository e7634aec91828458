"""`tune --schedule`: measure plain, static k and k schedules per concurrency band, side by side.

    python scripts/tune.py --schedule --k 1,2,4 --concurrency 1,8,32 --set max_num_seqs=32 \\
        --dataset tiny-corpus --num-prompts 64 --output-len 48 --rounds 4 \\
        --out reports/tune_schedule.json

One plain server (no speculation) stays up for the whole run; each candidate's server is started
in turn, and at every concurrency level the two are measured alternately, round by round, in the
order plain/candidate, candidate/plain, plain/candidate, ... (ABBA), so slow drift of the host
hits both arms alike. Each round gives one ratio (candidate tok/s / plain tok/s, measured back to
back); the rounds give its spread. While one arm is measured the other server's processes are
stopped (SIGSTOP), so an idle server's polling threads cannot take a core from the measured one.

First the static k values, then the schedules built from them (schedule_choice.py): the best
static k per band and, where plain beat every k, the same with k=0 there. The recommendation is the
candidate best at every band measured, printed as `--set` flags for `python -m trnspec render` and
`bench --local`, and as the deployment's `-c serving.overrides=[...]`.

Each level runs min(--num-prompts, max(8, 4 x concurrency)) prompts per arm and round (a closed
loop at concurrency c needs at least c in flight), after one warm-up request per slot.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trnspec.boundary import json_io
from trnspec.boundary.problems import ABSENT
from trnspec.boundary.write import moved_lines, write_outputs
from trnspec.config.serving import apply_overrides, load_profile

from trnspec_tools.ab.comparison import Comparison
from trnspec_tools.ab.order import round_order, step_index
from trnspec_tools.ab.spread import Spread
from trnspec_tools.bench.json_fields import Fields
from trnspec_tools.bench.options import UsageError
from trnspec_tools.bench.run import RunOptions, run_level
from trnspec_tools.client.request_spec import RequestSpec
from trnspec_tools.local_engine.local_server import LocalServer
from trnspec_tools.local_engine.paused import paused
from trnspec_tools.tune.round_run import RoundPair, RoundRun
from trnspec_tools.tune.schedule_choice import (
    PLAIN,
    Candidate,
    Choice,
    ZeroBand,
    choose,
    level_bands,
    schedule_candidates,
    scheduled,
    spreads,
    static,
    zero_bands,
)
from trnspec_tools.tune.schedule_report import markdown, plot
from trnspec_tools.tune.schedule_result import (
    MeasuredCandidate,
    Recommendation,
    ScheduleResult,
    ScheduleWorkload,
)
from trnspec_tools.tune.tune_options import TuneOptions
from trnspec_tools.tune.versus_plain import rounds_comparison

#: The alternated rounds of one candidate, by concurrency level.
Rounds = dict[int, list[RoundPair]]


def prompts_for_level(specs: Sequence[RequestSpec], c: int) -> list[RequestSpec]:
    """The level's prompts: enough to keep c in flight for a while, never more than given."""
    return list(specs[: min(len(specs), max(8, 4 * c))])


def stopped(server: LocalServer) -> contextlib.AbstractContextManager[None]:
    """The server's whole process group stopped (SIGSTOP) for the block, then continued."""
    return paused([server.pid])


async def _measure(server: LocalServer, other: LocalServer, specs, c, opts) -> RoundRun:
    with stopped(other):
        return RoundRun.of(await run_level(server.base_url, server.model, specs, c, opts))


async def alternate(
    plain: LocalServer,
    cand: LocalServer,
    specs: Sequence[RequestSpec],
    levels: Sequence[int],
    rounds: int,
    opts: RunOptions,
    log: Any = None,
) -> Rounds:
    """Per level, `rounds` back-to-back pairs in ABBA order; each pair's ratio and both runs."""
    out: Rounds = {}
    for i, c in enumerate(levels):
        level_specs = prompts_for_level(specs, c)
        pairs = []
        for r in range(rounds):
            if log:
                log(f"c={c} round {r + 1}/{rounds}")
            ran: dict[str, RoundRun] = {}
            order = round_order(("plain", "candidate"), step_index(i, rounds, r))
            for arm in order:
                this, other = (plain, cand) if arm == "plain" else (cand, plain)
                ran[arm] = await _measure(this, other, level_specs, c, opts)
            pairs.append(RoundPair.measured(order[0] == "plain", ran["plain"], ran["candidate"]))
        out[c] = pairs
    return out


def comparisons_of(rounds: Rounds) -> dict[int, Comparison]:
    """The A/B core's comparison with plain at each level (plain is the reference)."""
    return {c: rounds_comparison(pairs) for c, pairs in rounds.items() if pairs}


def k_used_of(rounds: Rounds) -> dict[int, float | None]:
    """Mean draft tokens per draft the candidate ran at each level (None without counters)."""
    out: dict[int, float | None] = {}
    for c, pairs in rounds.items():
        values = [p.candidate.k_used for p in pairs if p.candidate.k_used is not None]
        out[c] = sum(values) / len(values) if values else None
    return out


def analyse(
    rounds_by_cand: dict[str, Rounds],
    candidates: Sequence[Candidate],
    levels: Sequence[int],
    max_num_seqs: int,
) -> tuple[dict[str, dict[int, Spread]], Choice, list[ZeroBand]]:
    """Spreads, the choice (schedules with a losing k=0 band left out) and the k=0 verdicts."""
    comparisons = {name: comparisons_of(r) for name, r in rounds_by_cand.items()}
    measured = spreads(comparisons)
    zeros = zero_bands(comparisons, candidates, levels, max_num_seqs)
    losers = {z.candidate for z in zeros if z.loses}
    eligible = [c for c in candidates if c.name not in losers]
    return measured, choose(measured, eligible, levels), zeros


@dataclass(frozen=True)
class Sweep:
    """What one `tune --schedule` run measures: the options, the workload and the levels."""

    options: TuneOptions
    specs: list[RequestSpec]
    levels: list[int]
    bands: list[tuple[int, int]]
    max_num_seqs: int


@dataclass
class Measurements:
    """What the run has measured so far: the candidates and their alternated rounds."""

    candidates: list[Candidate]
    rounds: dict[str, Rounds] = field(default_factory=dict)

    def plain_tokens_per_s(self, c: int) -> float | None:
        """The plain server's median tok/s at level c over every round of every candidate."""
        values = sorted(
            p.plain.output_tokens_per_s for r in self.rounds.values() for p in r.get(c, [])
        )
        return values[len(values) // 2] if values else None


def run(opts: TuneOptions, check_override: Any) -> int:
    """The whole `tune --schedule` run (called by tune.main)."""
    sweep = sweep_of(opts)
    load = os.getloadavg()
    statics = [static(k) for k in opts.k or ()]
    if opts.from_json:
        found = load_rounds(opts.from_json, sweep.levels)
    else:
        found = Measurements([Candidate(PLAIN), *statics])
        measure_all(sweep, statics, found)
    return write(opts, schedule_result(sweep, found, load, check_override))


def sweep_of(opts: TuneOptions) -> Sweep:
    """What the run measures, its flags checked before any server starts (UsageError)."""
    if opts.endpoints or opts.baseline:
        raise UsageError.of(
            "--schedule", ABSENT, "local launcher only (each candidate needs its own server)"
        )
    if not opts.k:
        raise UsageError.of(
            "--schedule", ABSENT, "give the static k values to measure with --k, e.g. 1,2,4"
        )
    if opts.rounds < 2:
        raise UsageError.of("--rounds", opts.rounds, "at least 2 (the spread needs two rounds)")
    levels = sorted(set(opts.levels))
    max_num_seqs = apply_overrides(load_profile(opts.profile), list(opts.overrides)).max_num_seqs
    try:
        bands = level_bands(levels, max_num_seqs)
    except ValueError as exc:
        shown = ",".join(map(str, opts.levels))
        raise UsageError.of("--concurrency", shown, str(exc)) from None
    return Sweep(opts, opts.workload.specs(), levels, bands, max_num_seqs)


def load_rounds(path: Path, levels: Sequence[int]) -> Measurements:
    """The rounds and candidates of an earlier `tune --schedule --out` JSON (re-analysis)."""
    try:
        data = json_io.loads(path.read_text(encoding="utf-8"), "--from-json", shown=str(path))
        written = Fields(data, "").sub("runs")
        runs = {name: _levels_read(written.sub(name), levels) for name in written.obj}
        candidates = [Candidate(PLAIN)] + [candidate_named(n) for n in written.obj]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError.of(
            "--from-json", str(path), f"not a tune --schedule result ({exc})"
        ) from None
    return Measurements(candidates, runs)


def _levels_read(by_c: Fields, levels: Sequence[int]) -> Rounds:
    """One candidate's written rounds at the given levels, every pair checked (RoundPair)."""
    out: Rounds = {}
    for c in by_c.obj:
        if int(c) in levels:
            pairs = by_c.opt_list(c) or []
            where = by_c.path(c)
            out[int(c)] = [RoundPair.from_json(p, f"{where}[{i}]") for i, p in enumerate(pairs)]
    return out


def candidate_named(name: str) -> Candidate:
    """The candidate a result names: "k=N" or "schedule [[a,b,k],...]"."""
    if name.startswith("k="):
        return static(int(name[2:]))
    if name.startswith("schedule "):
        bands = json_io.loads(name.removeprefix("schedule "), "--from-json candidate", shown=name)
        return scheduled([tuple(b) for b in bands])
    raise ValueError(f"unknown candidate {name!r}")


def measure_all(sweep: Sweep, statics: Sequence[Candidate], found: Measurements) -> None:
    """The statics against one plain server, then the schedules built from them."""
    opts = sweep.options
    base = list(opts.overrides)

    def log(msg: str) -> None:
        print(f"tune.py --schedule: {msg}", file=sys.stderr)

    with LocalServer([*base, "speculation.method=none"], profile=opts.profile) as plain:

        def measure(cand: Candidate) -> None:
            log(f"starting {cand.name}")
            overrides = [*base, *cand.overrides()]
            with LocalServer(overrides, profile=opts.profile) as server:
                run_opts = dataclasses.replace(opts.run, num_speculative_tokens=cand.window)
                found.rounds[cand.name] = asyncio.run(
                    alternate(plain, server, sweep.specs, sweep.levels, opts.rounds, run_opts, log)
                )

        for cand in statics:
            measure(cand)
        static_spreads = spreads({n: comparisons_of(r) for n, r in found.rounds.items()})
        for cand in schedule_candidates(static_spreads, statics, sweep.levels, sweep.max_num_seqs):
            found.candidates.append(cand)
            measure(cand)


def schedule_result(
    sweep: Sweep, found: Measurements, load: tuple[float, float, float], check_override: Any
) -> ScheduleResult:
    """The run's result, analysed from its rounds; the override line checked on the profile."""
    opts, levels, w = sweep.options, sweep.levels, sweep.options.workload
    measured, choice, zeros = analyse(found.rounds, found.candidates, levels, sweep.max_num_seqs)
    overrides = (*opts.overrides, *choice.candidate.overrides())
    problem = check_override(list(overrides), opts.profile)
    load_after = os.getloadavg()
    by_name = {c.name: c for c in found.candidates}
    return ScheduleResult(
        profile=opts.profile,
        workload=ScheduleWorkload(
            dataset=w.dataset or f"synthetic ({w.input_len} tokens)",
            output_len=w.output_len,
            prompts_per_level={c: len(prompts_for_level(sweep.specs, c)) for c in levels},
            rounds=opts.rounds,
        ),
        levels=tuple(levels),
        max_num_seqs=sweep.max_num_seqs,
        bands=tuple(sweep.bands),
        base_overrides=tuple(opts.overrides),
        measured=tuple(
            MeasuredCandidate(by_name[name], measured[name], k_used_of(rounds), rounds)
            for name, rounds in found.rounds.items()
        ),
        plain_tokens_per_s={c: found.plain_tokens_per_s(c) for c in levels},
        zero_bands=tuple(zeros),
        recommendation=Recommendation(choice, overrides, problem or "ok"),
        load_average=f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} cpus)",
        load_average_after=f"{load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}",
    )


def write(opts: TuneOptions, result: ScheduleResult) -> int:
    """The JSON, the Markdown, the override line and the plot; the summary printed."""
    md = markdown(result)
    written = write_outputs(
        "tune",
        [
            (opts.out, json_io.dumps(result.to_json())),
            (opts.out.with_suffix(".md"), md),
            (opts.override_out, result.recommendation.set_line + "\n"),
        ],
    )
    print(md)
    if moved := moved_lines(written):
        for line in moved:
            print(f"tune.py: error: {line}", file=sys.stderr)
        return 1
    if opts.plots:
        plot(result, opts.out.with_name(f"{opts.out.stem}_bands.png"))
    return 0
