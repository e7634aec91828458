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
from trnspec.boundary.write import moved_lines, write_outputs
from trnspec.config.serving import apply_overrides, load_profile

from trnspec_tools.bench.bench_options import UsageError
from trnspec_tools.bench.bench_report import save_figure
from trnspec_tools.bench.bench_run import RunOptions, run_level
from trnspec_tools.bench.json_fields import Fields
from trnspec_tools.client.request_spec import RequestSpec
from trnspec_tools.local_engine.local_server import LocalServer
from trnspec_tools.tune.alternated import paused
from trnspec_tools.tune.round_run import RoundPair, RoundRun
from trnspec_tools.tune.schedule_choice import (
    PLAIN,
    Candidate,
    Choice,
    Spread,
    ZeroBand,
    choose,
    deploy_line,
    level_bands,
    schedule_candidates,
    scheduled,
    set_line,
    spreads,
    static,
    zero_bands,
)
from trnspec_tools.tune.tune_options import TuneOptions

#: The alternated rounds of one candidate, by concurrency level.
Rounds = dict[int, list[RoundPair]]


def prompts_for_level(specs: Sequence[RequestSpec], c: int) -> list[RequestSpec]:
    """The level's prompts: enough to keep c in flight for a while, never more than given."""
    return list(specs[: min(len(specs), max(8, 4 * c))])


def stopped(server: LocalServer) -> contextlib.AbstractContextManager[None]:
    """The server's whole process group stopped (SIGSTOP) for the block, then continued."""
    return paused(server.pid)


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
    for c in levels:
        level_specs = prompts_for_level(specs, c)
        pairs = []
        for r in range(rounds):
            plain_first = r % 2 == 0
            if log:
                log(f"c={c} round {r + 1}/{rounds}")
            if plain_first:
                p = await _measure(plain, cand, level_specs, c, opts)
                x = await _measure(cand, plain, level_specs, c, opts)
            else:
                x = await _measure(cand, plain, level_specs, c, opts)
                p = await _measure(plain, cand, level_specs, c, opts)
            pairs.append(RoundPair.measured(plain_first, p, x))
        out[c] = pairs
    return out


def ratios_of(rounds: Rounds) -> dict[int, list[float]]:
    return {c: [p.ratio for p in pairs if p.ratio is not None] for c, pairs in rounds.items()}


def k_used_of(rounds: Rounds) -> dict[int, float | None]:
    """Mean draft tokens per draft the candidate ran at each level (None without counters)."""
    out: dict[int, float | None] = {}
    for c, pairs in rounds.items():
        values = [p.candidate.k_used for p in pairs if p.candidate.k_used is not None]
        out[c] = sum(values) / len(values) if values else None
    return out


def _spread_json(s: Spread) -> dict[str, Any]:
    return dataclasses.asdict(s)


def choice_json(choice: Choice, base: Sequence[str]) -> dict[str, Any]:
    items = [*base, *choice.candidate.overrides()]
    return {
        "candidate": choice.candidate.name,
        "candidate_overrides": choice.candidate.overrides(),
        "overrides": items,
        "set_line": set_line(items),
        "deploy_line": deploy_line(items),
        "worst_ratio_to_best": choice.worst_relative,
        "leader": choice.leader,
        "ties_within_spread": list(choice.ties),
        "per_level": {
            str(c): {
                "best": best,
                "best_ratio_to_plain": _spread_json(best_s),
                "chosen_ratio_to_plain": _spread_json(chosen_s),
                "chosen_over_best": chosen_s.median / best_s.median,
            }
            for c, (best, best_s, chosen_s) in choice.per_level.items()
        },
    }


def markdown(result: dict[str, Any]) -> str:
    levels = result["levels"]
    names = list(result["candidates"])
    lines = [
        "# Batch-aware speculation: candidates per concurrency band",
        "",
        f"- workload: {result['dataset']}, output {result['output_len']} tokens,"
        f" prompts per arm and round {result['prompts_per_level']}, {result['rounds']} alternated"
        f" rounds (ABBA), max_num_seqs {result['max_num_seqs']}",
        f"- bands (batches per level): {result['bands']}",
        f"- host load at start / end: {result['load_average']} / {result['load_average_after']}",
        "- each cell: median ratio to plain (same rounds, back to back) [spread], k used",
        "",
        "| candidate | " + " | ".join(f"c={c}" for c in levels) + " |",
        "|---|" + "---:|" * len(levels),
    ]
    plain_tps = result["plain_tokens_per_s"]
    lines.append(
        f"| {PLAIN} (tok/s) | "
        + " | ".join(f"1.00x ({plain_tps[str(c)]:.0f} tok/s)" for c in levels)
        + " |"
    )
    for name in names:
        if name == PLAIN:
            continue
        cells = []
        for c in levels:
            s = result["spreads"].get(name, {}).get(str(c))
            k = result["k_used"].get(name, {}).get(str(c))
            cells.append(
                "-"
                if s is None
                else f"{s['median']:.2f}x [{s['low']:.2f}-{s['high']:.2f}]"
                + (f", k {k:.2f}" if k is not None else "")
            )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    rec = result["recommendation"]
    lines += ["", "## Recommendation", "", f"**{rec['candidate']}**", ""]
    for c, entry in rec["per_level"].items():
        lines.append(
            f"- c={c}: {entry['chosen_ratio_to_plain']['median']:.2f}x plain;"
            f" best measured {entry['best']} {entry['best_ratio_to_plain']['median']:.2f}x;"
            f" chosen / best = {entry['chosen_over_best']:.3f}"
        )
    if rec["ties_within_spread"]:
        lines.append(
            f"- within the measured spread of {rec['leader']} at every level: "
            f"{', '.join(rec['ties_within_spread'])}; the simplest of them is recommended"
            " (the data cannot tell them apart)"
        )
    lines += [f"- {note}" for note in result["zero_band_notes"]]
    lines += [
        "",
        f"render / bench --local: `{rec['set_line']}`",
        "",
        f"deploy: `{rec['deploy_line']}`",
        "",
        f"check against profile {result['profile']}: {rec['override_check']}",
    ]
    return "\n".join(lines) + "\n"


def plot(result: dict[str, Any], path: Path) -> Path:
    """Ratio to plain per level, one line per candidate, with the spread as error bars."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 4.2))
    ax = fig.subplots()
    levels = result["levels"]
    for name, by_c in result["spreads"].items():
        xs = [c for c in levels if str(c) in by_c]
        med = [by_c[str(c)]["median"] for c in xs]
        lo = [by_c[str(c)]["median"] - by_c[str(c)]["low"] for c in xs]
        hi = [by_c[str(c)]["high"] - by_c[str(c)]["median"] for c in xs]
        width = 2.2 if name == result["recommendation"]["candidate"] else 1.0
        ax.errorbar(xs, med, yerr=[lo, hi], marker="o", capsize=3, lw=width, label=name)
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    concurrency_axes(
        ax,
        levels,
        "output tok/s relative to plain (alternated rounds)",
        "Candidates per concurrency band (bold: recommended)",
    )
    save_figure(fig, path)
    return path


def concurrency_axes(ax: Any, levels: Sequence[int], ylabel: str, title: str) -> None:
    """A log2 concurrency axis with the measured levels as ticks, labels, grid and legend."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(levels), [str(c) for c in levels])
    ax.set_xlabel("concurrency")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)


def analyse(
    rounds_by_cand: dict[str, Rounds],
    candidates: Sequence[Candidate],
    levels: Sequence[int],
    max_num_seqs: int,
) -> tuple[dict[str, dict[int, Spread]], Choice, list[ZeroBand]]:
    """Spreads, the choice (schedules with a losing k=0 band left out) and the k=0 verdicts."""
    measured = spreads({name: ratios_of(r) for name, r in rounds_by_cand.items()})
    zeros = zero_bands(measured, candidates, levels, max_num_seqs)
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
    if opts.endpoints or opts.baseline:
        raise UsageError("--schedule: local launcher only (each candidate needs its own server)")
    if not opts.k:
        raise UsageError("--schedule: give the static k values to measure with --k, e.g. 1,2,4")
    if opts.rounds < 2:
        raise UsageError(f"--rounds={opts.rounds}: at least 2 (the spread needs two rounds)")
    levels = sorted(set(opts.levels))
    max_num_seqs = apply_overrides(load_profile(opts.profile), list(opts.overrides)).max_num_seqs
    try:
        bands = level_bands(levels, max_num_seqs)
    except ValueError as exc:
        shown = ",".join(map(str, opts.levels))
        raise UsageError(f"--concurrency={shown}: {exc}") from None
    specs = opts.workload.specs()
    sweep = Sweep(opts, specs, levels, bands, max_num_seqs)
    load = os.getloadavg()
    statics = [static(k) for k in opts.k]
    if opts.from_json:
        found = load_rounds(opts.from_json, levels)
    else:
        found = Measurements([Candidate(PLAIN), *statics])
        measure_all(sweep, statics, found)
    return report(sweep, found, load, check_override)


def load_rounds(path: Path, levels: Sequence[int]) -> Measurements:
    """The rounds and candidates of an earlier `tune --schedule --out` JSON (re-analysis)."""
    try:
        data = json_io.loads(path.read_text(encoding="utf-8"), "--from-json", shown=str(path))
        written = Fields(data, "").sub("runs")
        runs = {name: _levels_read(written.sub(name), levels) for name in written.obj}
        candidates = [Candidate(PLAIN)] + [candidate_named(n) for n in written.obj]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"--from-json={path}: not a tune --schedule result ({exc})") from None
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
        static_spreads = spreads({n: ratios_of(r) for n, r in found.rounds.items()})
        for cand in schedule_candidates(static_spreads, statics, sweep.levels, sweep.max_num_seqs):
            found.candidates.append(cand)
            measure(cand)


def report(
    sweep: Sweep, found: Measurements, load: tuple[float, float, float], check_override: Any
) -> int:
    """Analyse, write the JSON, Markdown, plot and override line, print the summary."""
    opts, levels, max_num_seqs, specs = sweep.options, sweep.levels, sweep.max_num_seqs, sweep.specs
    w = opts.workload
    candidates, rounds_by_cand = found.candidates, found.rounds
    measured, choice, zeros = analyse(rounds_by_cand, candidates, levels, max_num_seqs)
    rec = choice_json(choice, list(opts.overrides))
    problem = check_override(rec["overrides"], opts.profile)
    rec["override_check"] = problem or "ok"
    load_after = os.getloadavg()
    result = {
        "profile": opts.profile,
        "dataset": w.dataset or f"synthetic ({w.input_len} tokens)",
        "output_len": w.output_len,
        "levels": levels,
        "max_num_seqs": max_num_seqs,
        "bands": [list(b) for b in sweep.bands],
        "rounds": opts.rounds,
        "prompts_per_level": {str(c): len(prompts_for_level(specs, c)) for c in levels},
        "base_overrides": list(opts.overrides),
        "candidates": {c.name: {"overrides": c.overrides()} for c in candidates},
        "plain_tokens_per_s": {str(c): found.plain_tokens_per_s(c) for c in levels},
        "spreads": {
            name: {str(c): _spread_json(s) for c, s in by_c.items()}
            for name, by_c in measured.items()
        },
        "k_used": {
            name: {str(c): v for c, v in k_used_of(r).items()} for name, r in rounds_by_cand.items()
        },
        "zero_band_notes": [z.note() for z in zeros],
        "recommendation": rec,
        "runs": {
            name: {str(c): [p.to_json() for p in pairs] for c, pairs in r.items()}
            for name, r in rounds_by_cand.items()
        },
        "load_average": f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} cpus)",
        "load_average_after": f"{load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}",
    }
    md = markdown(result)
    written = write_outputs(
        "tune",
        [
            (opts.out, json_io.dumps(result)),
            (opts.out.with_suffix(".md"), md),
            (opts.override_out, rec["set_line"] + "\n"),
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
