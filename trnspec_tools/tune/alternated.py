"""tune's measurements: the plain server and every window, alternated, at every level.

The plain arm (speculation off) stays up for the whole run; each window's server is opened in
turn and, at every concurrency level, the two are measured back to back `--rounds` times in ABBA
order (plain/window, window/plain, ...), so drift of the host hits both arms alike. While one
local server is measured the other's processes are stopped (SIGSTOP), so an idle server's
polling threads cannot take a core from the measured one; remote servers are left alone. Each
round is a RoundPair (its ratio to plain, round_run.py); the run of median throughput stands for
the arm at that level (the step-time model's points and the JSON's `by_concurrency`).

`load_measurements` reads the same back from an earlier `--out` JSON (`--from-json`); a file
written before alternation has no "rounds": each run's ratio to its level's baseline stands for
one round.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trnspec.boundary import json_io
from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.problems import ABSENT

from trnspec_tools.ab.comparison import compare
from trnspec_tools.ab.median_round import median_round
from trnspec_tools.ab.order import round_order, step_index
from trnspec_tools.bench.bench import Arm, opened, served_model
from trnspec_tools.bench.json_fields import Fields
from trnspec_tools.bench.options import UsageError
from trnspec_tools.bench.run import RunOptions, run_level
from trnspec_tools.bench.run_result import ArmRun, RunResult
from trnspec_tools.client.metrics import MAX_POSITIONS
from trnspec_tools.client.request_spec import RequestSpec
from trnspec_tools.local_engine.paused import paused
from trnspec_tools.tune.round_run import RoundPair, RoundRun
from trnspec_tools.tune.tune_options import TuneOptions
from trnspec_tools.tune.versus_plain import PLAIN_OVERRIDE, VersusPlain

OVERRIDE_KEY = "speculation.num_speculative_tokens"

#: One arm's runs by concurrency level.
Levels = dict[int, ArmRun]
#: Per category, the speculative runs by k (at the fit concurrency).
Categories = dict[str, dict[int, RunResult]]
#: The alternated rounds: rounds[k][c].
Rounds = dict[int, dict[int, list[RoundPair]]]


@dataclass(frozen=True)
class SweepRuns:
    """What the sweep measured (or read back), by concurrency and by k."""

    baseline: Levels
    runs: dict[int, Levels]
    #: the alternated rounds (empty for a file written before alternation)
    rounds: Rounds
    cats: Categories

    def versus_plain(self) -> VersusPlain:
        """Each window's comparison with plain per level: its rounds, else its one run against the
        baseline's (one round: no verdict)."""
        if self.rounds:
            return VersusPlain.of_rounds(self.rounds)
        return VersusPlain(
            {
                k: {
                    c: compare([self.baseline[c].result.as_round(0)], [arm.result.as_round(0)])
                    for c, arm in by_c.items()
                    if c in self.baseline
                }
                for k, by_c in self.runs.items()
            }
        )

    def rounds_json(self) -> dict[str, object]:
        return {
            str(k): {str(c): [p.to_json() for p in pairs] for c, pairs in by_c.items()}
            for k, by_c in self.rounds.items()
        }


def arms_of(opts: TuneOptions) -> tuple[Arm, dict[int, Arm]]:
    """The baseline arm and one arm per k: remote servers, or the local launcher's."""
    if opts.remote:
        if opts.k or not opts.baseline:
            raise UsageError.of(
                "--endpoint-for-k", ABSENT, "give --baseline URL and no --k (remote mode)"
            )
        arms = {k: Arm(f"k={k}", url, k=k) for k, url in opts.endpoints.items()}
        return Arm("baseline", opts.baseline), arms
    if not opts.k:
        raise UsageError.of(
            "--k", ABSENT, "give k values for the local launcher, or --endpoint-for-k"
        )
    overrides = list(opts.overrides)
    arms = {k: Arm(f"k={k}", None, [*overrides, f"{OVERRIDE_KEY}={k}"], k=k) for k in opts.k}
    base_arm = (
        Arm("baseline", opts.baseline)
        if opts.baseline
        else Arm("baseline", None, [*overrides, PLAIN_OVERRIDE])
    )
    return base_arm, arms


Log = Callable[[str], None]


def _log(msg: str) -> None:
    print(f"tune.py: {msg}", file=sys.stderr)


@dataclass(frozen=True)
class _Served:
    """A live arm: its URL, the model it serves, its run options and its process group."""

    url: str
    model: str
    opts: RunOptions
    pid: int | None

    @classmethod
    async def of(cls, live: Arm, options: TuneOptions, k: int | None) -> _Served:
        """The opened arm `live`, measured with window k (None: plain)."""
        return cls(
            live.endpoint or "",
            await served_model(live, options.run, options.model),
            dataclasses.replace(options.run, num_speculative_tokens=k),
            live.pid,
        )

    async def run(self, specs: list[RequestSpec], c: int, other: _Served) -> RunResult:
        """One measurement at level c with the other arm's server stopped."""
        with paused([other.pid]):
            return await run_level(self.url, self.model, specs, c, self.opts)


async def alternate(
    plain: _Served,
    window: _Served,
    specs: list[RequestSpec],
    level: tuple[int, int],
    rounds: int,
    log: Log,
) -> tuple[list[RoundPair], list[RunResult], list[RunResult]]:
    """`rounds` back-to-back pairs in ABBA order at level (index, concurrency): the pairs, the
    plain runs, the window runs."""
    i, c = level
    pairs, plain_runs, window_runs = [], [], []
    for r in range(rounds):
        log(f"plain and k={window.opts.num_speculative_tokens} at c={c}, round {r + 1}/{rounds}")
        ran: dict[str, RunResult] = {}
        order = round_order(("plain", "window"), step_index(i, rounds, r))
        for arm in order:
            this, other = (plain, window) if arm == "plain" else (window, plain)
            ran[arm] = await this.run(specs, c, other)
        p, x = ran["plain"], ran["window"]
        plain_runs.append(p)
        window_runs.append(x)
        pairs.append(RoundPair.measured(order[0] == "plain", RoundRun.of(p), RoundRun.of(x)))
    return pairs, plain_runs, window_runs


async def measure_all(
    options: TuneOptions,
    specs: list[RequestSpec],
    categories: Mapping[str, list[RequestSpec]] | None = None,
    category_level: int | None = None,
    log: Log = _log,
) -> SweepRuns:
    """Every window alternated with plain at every level (see the module docstring), and per
    category at `category_level` for the windows (acceptance only)."""
    base_arm, arms = arms_of(options)
    plain_runs: dict[int, list[RunResult]] = {}
    runs: dict[int, Levels] = {}
    rounds: Rounds = {}
    cats: Categories = {}
    with opened(base_arm) as live_plain:
        plain = await _Served.of(live_plain, options, None)
        for k, arm in sorted(arms.items()):
            with opened(arm) as live:
                window = await _Served.of(live, options, k)
                for i, c in enumerate(options.levels):
                    level = (i, c)
                    pairs, p, x = await alternate(plain, window, specs, level, options.rounds, log)
                    plain_runs.setdefault(c, []).extend(p)
                    rounds.setdefault(k, {})[c] = pairs
                    runs.setdefault(k, {})[c] = ArmRun(
                        arm.name, window.url, window.model, median_round(x)
                    )
                for cat, cat_specs in (categories or {}).items():
                    if category_level is None:
                        break
                    log(f"measuring {arm.name} on category {cat}")
                    cats.setdefault(cat, {})[k] = await window.run(cat_specs, category_level, plain)
    baseline = {
        c: ArmRun(base_arm.name, plain.url, plain.model, median_round(found))
        for c, found in plain_runs.items()
    }
    return SweepRuns(baseline, runs, rounds, cats)


def load_measurements(path: Path, levels: Sequence[int]) -> SweepRuns:
    """The runs (and rounds) of an earlier tune.py --out JSON, every figure checked as it is
    read (a bad figure names its field's path)."""
    try:
        data = json_io.loads(path.read_bytes(), "--from-json", shown=str(path))
    except BoundaryError as exc:
        raise UsageError(exc.problems) from None
    except OSError as exc:
        raise UsageError.of(
            "--from-json", str(path), f"cannot read ({exc.strerror or exc})"
        ) from None
    try:
        by_c = Fields(data, "").sub("by_concurrency")
        missing = [c for c in levels if str(c) not in by_c.obj]
        if missing:
            raise UsageError.of(
                "--from-json", str(path), f"no measurements at concurrency {missing}"
            )
        baseline = {c: ArmRun.from_json(*by_c.sub(str(c)).item("baseline")) for c in levels}
        runs: dict[int, Levels] = {}
        for c in levels:
            level_runs = by_c.sub(str(c)).sub("runs")
            for k in _keys(level_runs):
                runs.setdefault(window_key(k, level_runs), {})[c] = ArmRun.from_json(
                    *level_runs.item(k)
                )
        cats = {
            cat: {window_key(k, entry): RunResult.from_json(*entry.item(k)) for k in _keys(entry)}
            for cat, entry in _category_runs(data)
        }
        rounds = _rounds(data, levels)
    except BoundaryError as exc:
        raise UsageError.of("--from-json", str(path), f"not a tune.py result: {exc}") from None
    return SweepRuns(baseline, runs, rounds, cats)


def _keys(f: Fields) -> list[str]:
    if not isinstance(f.obj, dict):
        raise BoundaryError(f.where, f.obj, "must be a JSON object")
    return list(f.obj)


def _rounds(data: Any, levels: Sequence[int]) -> Rounds:
    """The "rounds" of a result written with alternation (absent before: empty)."""
    if not isinstance(data, dict) or data.get("rounds") is None:
        return {}
    written = Fields(data, "").sub("rounds")
    out: Rounds = {}
    for k in _keys(written):
        by_c = written.sub(k)
        for c in levels:
            if str(c) in by_c.obj:
                where = by_c.path(str(c))
                pairs = by_c.opt_list(str(c)) or []
                out.setdefault(window_key(k, written), {})[c] = [
                    RoundPair.from_json(p, f"{where}[{i}]") for i, p in enumerate(pairs)
                ]
    return out


def _category_runs(data: Any) -> list[tuple[str, Fields]]:
    """The per-category "runs" objects of a tune result (categories without runs left out)."""
    cats = data.get("categories") if isinstance(data, dict) else None
    return [
        (cat, Fields(entry, f"categories.{cat}").sub("runs"))
        for cat, entry in (cats or {}).items()
        if isinstance(entry, dict) and entry.get("runs")
    ]


def window_key(key: str, where: Fields) -> int:
    """A window k written as a JSON key: canonical ASCII decimal ("2", never "02", "+2" or
    "²"), 1..MAX_POSITIONS, so two keys never name one window and no k is too large to use."""
    fix = f"a run's key must be its window k, written as 1..{MAX_POSITIONS} without leading zeros"
    if not (key.isascii() and key.isdigit()) or len(key) > 2 or key != str(int(key)):
        raise BoundaryError(where.path(key[:40]), key[:40], fix)
    if not 1 <= int(key) <= MAX_POSITIONS:
        raise BoundaryError(where.path(key), key, fix)
    return int(key)
