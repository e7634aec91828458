"""schedule_tune's measuring loop against fake servers: ABBA order, side-by-side ratios, and the
idle arm really stopped while the other is measured."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from fake_openai_server import running

from trnspec_tools.bench.run import RunOptions
from trnspec_tools.bench.workload import synthetic_prompts
from trnspec_tools.tune.schedule_tune import (
    alternate,
    comparisons_of,
    k_used_of,
    prompts_for_level,
    stopped,
)


@dataclass
class Endpoint:
    """What alternate() needs of a server: where it answers, its model, its process (none)."""

    base_url: str
    model: str = "fake"
    pid: int | None = None


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _settles_to(pid: int, stopped_now: bool) -> bool:
    """Signals are delivered asynchronously: wait (bounded) for the state to follow."""
    for _ in range(200):
        if (_state(pid) == "T") is stopped_now:
            return True
        time.sleep(0.05)
    return False


def test_the_idle_arm_is_stopped_for_the_block_and_continued_after():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], process_group=0)
    try:
        server = Endpoint("http://unused", pid=proc.pid)
        with stopped(server):  # type: ignore[arg-type]
            assert _settles_to(proc.pid, stopped_now=True)
        assert _settles_to(proc.pid, stopped_now=False)
    finally:
        proc.kill()
        proc.wait()


def test_each_level_runs_enough_prompts_to_keep_its_concurrency_in_flight():
    specs = synthetic_prompts(64, 4, 8, seed=0)
    assert [len(prompts_for_level(specs, c)) for c in (1, 8, 32)] == [8, 32, 64]
    assert len(prompts_for_level(specs[:20], 32)) == 20


def test_rounds_alternate_abba_and_each_ratio_is_its_own_pairs():
    specs = synthetic_prompts(8, 4, 6, seed=1)
    opts = RunOptions(warmup=1)
    with (
        running("--ttft-ms", "5", "--itl-ms", "5") as plain_url,
        running("--ttft-ms", "5", "--itl-ms", "5", "--k", "3", "--tokens-per-step", "2,3") as url,
    ):
        out = asyncio.run(
            alternate(Endpoint(plain_url), Endpoint(url), specs, [1, 2], 3, opts)  # type: ignore[arg-type]
        )
    assert sorted(out) == [1, 2]
    # the count runs on across levels (trnspec_tools.ab.order): level 2 starts where 1 ended
    assert [p.order for p in out[1]] == ["plain-first", "candidate-first", "plain-first"]
    assert [p.order for p in out[2]] == ["candidate-first", "plain-first", "candidate-first"]
    for pairs in out.values():
        for p in pairs:
            assert p.ratio == pytest.approx(
                p.candidate.output_tokens_per_s / p.plain.output_tokens_per_s
            )
    # every round is paired or left out with its reason (a busy host may slow one arm's round
    # beyond what its tokens per step explain)
    compared = comparisons_of(out)
    assert {c: len(cmp.pairs) + len(cmp.left_out) for c, cmp in compared.items()} == {1: 3, 2: 3}
    used = k_used_of(out)
    assert used[1] == pytest.approx(3.0)  # the fake drafts k=3 per step


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--concurrency", "1,64", "--k", "2", "--set", "max_num_seqs=32"], "exceeds max_num_seqs"),
        (["--concurrency", "1,8"], "give the static k values"),
        (["--k", "2", "--rounds", "1"], "--rounds=1"),
        (["--k", "2", "--baseline", "http://h:1"], "local launcher only"),
    ],
)
def test_bad_schedule_runs_are_refused_before_any_server_starts(argv, says, tmp_path, capsys):
    from trnspec_tools.tune.tune import main

    assert main(["--schedule", *argv, "--out", str(tmp_path / "t.json")]) == 2
    assert says in capsys.readouterr().err


def test_a_results_candidates_are_read_back_from_their_names():
    from trnspec_tools.tune.schedule_choice import scheduled, static
    from trnspec_tools.tune.schedule_tune import candidate_named

    assert candidate_named("k=3") == static(3)
    sched = scheduled([(1, 8, 4), (9, 32, 1)])
    assert candidate_named(sched.name) == sched
    with pytest.raises(ValueError, match="unknown candidate"):
        candidate_named("plain-ish")
