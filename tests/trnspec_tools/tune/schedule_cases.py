"""Alternated rounds made for the schedule result's tests: two sets of ratios per candidate and
level, written as an earlier `tune --schedule` result and analysed the way `--from-json` does
(test_schedule_result.py, test_schedule_report.py)."""

from __future__ import annotations

import json
from pathlib import Path

from made_runs import kept_run

from trnspec_tools.bench.run_result import AcceptanceFigures
from trnspec_tools.tune.round_run import RoundPair
from trnspec_tools.tune.schedule_result import ScheduleResult
from trnspec_tools.tune.schedule_tune import load_rounds, schedule_result, sweep_of
from trnspec_tools.tune.tune import build_parser
from trnspec_tools.tune.tune_options import tune_options

#: the run analysed: --k 2,4 at concurrency 1, 8 and 32, max_num_seqs 32, three rounds
SCHEDULE_ARGV = ("--schedule", "--k", "2,4", "--concurrency", "1,8,32", "--set", "max_num_seqs=32")
SCHEDULE_ARGV += ("--rounds", "3", "--num-prompts", "64")
#: the plain server's tok/s per level, round by round
PLAIN_TPS = {1: (100.0, 104.0, 96.0), 8: (400.0, 410.0, 390.0), 32: (800.0, 780.0, 820.0)}
SCHEDULE = "schedule [[1,1,4],[2,32,2]]"
ZERO_SCHEDULE = "schedule [[1,1,4],[2,8,2],[9,32,0]]"
#: each candidate's ratio to plain per level, round by round (None: a round with errors)
RATIOS: dict[str, dict[int, tuple[float | None, ...]]] = {
    "k=2": {1: (1.3, 1.25, 1.35), 8: (1.2, 1.15, 1.25), 32: (1.05, 1.0, 1.1)},
    "k=4": {1: (1.6, 1.5, 1.7), 8: (1.1, 1.05, 1.15), 32: (0.9, 0.92, 0.95)},
    SCHEDULE: {1: (1.58, 1.55, 1.6), 8: (1.21, 1.2, 1.22), 32: (1.04, 1.03, 1.06)},
    ZERO_SCHEDULE: {1: (1.57, 1.56, 1.59), 8: (1.2, 1.19, 1.21), 32: (0.97, 0.96, 0.98)},
}
#: the same candidates measured closer: a schedule the data cannot tell from k=2, and a k=0 band
#: that holds its own against plain
CLOSE: dict[str, dict[int, tuple[float | None, ...]]] = {
    "k=2": {1: (1.3, 1.2, 1.4), 8: (1.2, 1.1, 1.3), 32: (1.05, 0.95, 1.15)},
    "k=4": {1: (1.35, 1.25, 1.45), 8: (1.1, 1.0, 1.2), 32: (0.9, 0.85, 0.95)},
    SCHEDULE: {1: (1.35, 1.3, 1.4), 8: (1.2, 1.15, 1.25), 32: (1.06, 1.0, 1.1)},
    ZERO_SCHEDULE: {1: (1.3, 1.25, 1.35), 8: (1.15, 1.1, 1.2), 32: (1.01, 1.0, 1.02)},
}
#: the candidate's draft tokens per draft (None: no counters)
K_USED = {"k=2": 2.0, "k=4": 3.5, SCHEDULE: None, ZERO_SCHEDULE: 2.5}


def _pair(r: int, plain_tps: float, ratio: float | None, k_used: float | None) -> dict:
    plain = kept_run(plain_tps)
    cand_tps = plain_tps * (ratio if ratio is not None else 0.5)
    cand = kept_run(cand_tps, acceptance=AcceptanceFigures(k_used=k_used))
    if ratio is None:
        cand = type(cand)(**{**vars(cand), "errors": 1})
    return RoundPair.measured(r % 2 == 0, plain, cand).to_json()


def earlier_result(tmp_path: Path, ratios=RATIOS) -> Path:
    """A --from-json input: only its "runs" are read back."""
    runs = {
        name: {
            str(c): [_pair(r, PLAIN_TPS[c][r], x, K_USED[name]) for r, x in enumerate(xs)]
            for c, xs in by_c.items()
        }
        for name, by_c in ratios.items()
    }
    path = tmp_path / "earlier.json"
    path.write_text(json.dumps({"runs": runs}))
    return path


def analysed(tmp_path: Path, ratios=RATIOS, check=lambda items, profile: None) -> ScheduleResult:
    """The result `tune --schedule --from-json` builds from the given rounds (nothing written)."""
    earlier = earlier_result(tmp_path, ratios)
    argv = [*SCHEDULE_ARGV, "--from-json", str(earlier), "--out", str(tmp_path / "t.json")]
    opts = tune_options(build_parser().parse_args(argv))
    sweep = sweep_of(opts)
    return schedule_result(sweep, load_rounds(earlier, sweep.levels), (1.0, 2.0, 3.0), check)
