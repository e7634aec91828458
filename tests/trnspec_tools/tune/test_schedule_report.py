"""What `tune --schedule` writes for given measurements: the JSON (golden), the Markdown table and
recommendation, and the plot, from alternated rounds re-analysed with --from-json."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from made_runs import kept_run

from trnspec_tools.bench.run_result import AcceptanceFigures
from trnspec_tools.tune.round_run import RoundPair

LEVELS = (1, 8, 32)
#: the plain server's tok/s per level, round by round
PLAIN_TPS = {1: (100.0, 104.0, 96.0), 8: (400.0, 410.0, 390.0), 32: (800.0, 780.0, 820.0)}
SCHEDULE = "schedule [[1,1,4],[2,32,2]]"
ZERO_SCHEDULE = "schedule [[1,1,4],[2,8,2],[9,32,0]]"
#: each candidate's ratio to plain per level, round by round (None: a round with errors)
RATIOS: dict[str, dict[int, tuple[float | None, ...]]] = {
    "k=2": {1: (1.3, 1.25, 1.35), 8: (1.2, 1.15, 1.25), 32: (1.05, 1.0, 1.1)},
    "k=4": {1: (1.6, 1.5, 1.7), 8: (1.1, 1.05, 1.15), 32: (0.9, None, 0.95)},
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
    plain = kept_run(plain_tps, int(plain_tps))
    cand_tps = plain_tps * (ratio if ratio is not None else 0.5)
    cand = kept_run(cand_tps, int(cand_tps), AcceptanceFigures(k_used=k_used))
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


@pytest.fixture
def fixed_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """The host's load and core count, fixed, so the written files are reproducible."""
    loads = iter([(1.0, 2.0, 3.0), (0.5, 0.25, 0.125)])
    monkeypatch.setattr(os, "getloadavg", lambda: next(loads))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)


def reanalysed(tmp_path: Path, earlier: Path, *extra: str) -> tuple[dict, str]:
    """tune --schedule --from-json on the earlier result: the JSON and Markdown it writes."""
    from trnspec_tools.tune.tune import main

    out = tmp_path / "out" / "schedule.json"
    argv = ["--schedule", "--from-json", str(earlier), "--k", "2,4", "--concurrency", "1,8,32"]
    argv += ["--set", "max_num_seqs=32", "--rounds", "3", "--num-prompts", "64", "--no-plots"]
    assert main([*argv, *extra, "--out", str(out)]) == 0
    return json.loads(out.read_text()), out.with_suffix(".md").read_text()


@pytest.mark.parametrize("ratios", [RATIOS, CLOSE], ids=["apart", "close"])
def test_the_written_json_and_markdown_are_the_golden_ones(tmp_path, fixed_host, snapshot, ratios):
    out = tmp_path / "out" / "schedule.json"
    reanalysed(tmp_path, earlier_result(tmp_path, ratios))
    assert out.read_text() == snapshot(name="json")
    assert out.with_suffix(".md").read_text() == snapshot(name="markdown")
