"""End to end on the local engine: `tune` alternates the plain server with each window, never
recommends a window it measured slower than plain (random words: low acceptance), and writes an
override line the profile accepts. The window is the shared speculative server's, so both arms
are the session's shared servers (server_pool.py). Deselect with `-m "not e2e"`."""

from __future__ import annotations

import json

import pytest
from server_pool import ServerPool
from shared_server import SPECULATIVE_K as K

from trnspec_tools.tune.override_check import check_override
from trnspec_tools.tune.tune import main
from trnspec_tools.tune.versus_plain import PLAIN_OVERRIDE

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


def test_tune_on_the_local_engine_recommends_only_what_beat_plain(
    servers_from_the_pool: ServerPool, tmp_path
):
    out = tmp_path / "tune.json"
    argv = ["--k", str(K), "--concurrency", "1", "--rounds", "2", "--num-prompts", "4"]
    argv += ["--input-len", "16", "--output-len", "24", "--no-plots", "--out", str(out)]
    assert main(argv) == 0
    result = json.loads(out.read_text())
    rec = result["recommendation"]
    assert [p["order"] for p in result["rounds"][str(K)]["1"]] == ["plain-first", "candidate-first"]
    (measured,) = [row for row in result["rows"] if row["k"] == K]
    low = measured["ratio_to_plain"]["low"]
    if rec["speculation"]:
        # k=K beat plain beyond its spread; the window deployed is K or one the model predicts
        # faster from that measurement, labelled as unmeasured (it was not run)
        assert low > 1.0
        assert rec["override"] == f"speculation.num_speculative_tokens={rec['k']}"
        assert rec["k"] == K or (not rec["measured"] and "confirm with a run" in rec["reason"])
    else:
        assert low <= 1.0 and rec["override"] == PLAIN_OVERRIDE
        assert out.with_suffix(".override").read_text() == PLAIN_OVERRIDE + "\n"
    # whichever it recommends, the line it wrote is one the local profile takes
    assert check_override(out.with_suffix(".override").read_text().strip(), "local-tiny") is None
