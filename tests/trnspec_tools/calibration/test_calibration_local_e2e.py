"""End to end on the local engine: `calibrate local` (what `make calibrate` runs) starts a plain and
a speculative CPU server of the tiny pair, measures both in ABBA rounds through `calibrate run`'s
own code, uploads the run to moto S3, brings it home as `calibrate fetch` does, and writes a plan
refitted on the measured rows; that plan is one the deployment accepts (`serving.plan`). Here the
two servers it starts are the session's shared ones (server_pool.py), of the same configs. Deselect
with `-m "not e2e"`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from server_pool import ServerPool
from shared_server import SPECULATIVE_K as K

from infra.app.composition import check_profile
from trnspec_tools.calibration.local import main

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]
ADMIN = "arn:aws:iam::123456789012:role/TrnspecAdmin"


def test_the_loop_measures_both_arms_writes_the_results_and_a_plan_that_deploys(
    servers_from_the_pool: ServerPool, tmp_path: Path
) -> None:
    # one level at the profile's max_num_seqs and its k: the session's shared servers
    argv = ["--concurrency", "4", "--rounds", "2", "--num-prompts", "4", "--output-len", "24"]
    assert main([*argv, "--k", str(K), "--reports", str(tmp_path)]) == 0

    run = json.loads((tmp_path / "calibration.json").read_text())
    assert {(r["arm"], r["status"]) for r in run["results"]} == {
        ("plain", "ok"),
        ("speculative", "ok"),
    }
    (verdict,) = run["verdicts"]
    assert verdict["decision"] in ("speculation", "plain", "undecided")
    assert len(verdict["speedup"]["values"]) == 2  # one ratio per ABBA round
    rows = yaml.safe_load((tmp_path / "trn2_rows.yaml").read_text())
    kinds = {m.get("method", "none") for m in rows["measurements"]}
    assert "dflash" in kinds and len(rows["measurements"]) >= 2  # a plain and a speculative row
    # the rows name where they were measured (local servers: never Trn2 figures)
    assert all("127.0.0.1" in m["source"] for m in rows["measurements"])

    plan = yaml.safe_load((tmp_path / "plan.yaml").read_text())
    assert plan["kind"] == "trnspec-deployment-plan"
    assert "--measured" in plan["plan"]["command"]
    checked = check_profile(
        "default",
        {"admin_principal_arns": [ADMIN], "serving.plan": str(tmp_path / "plan.yaml")},
    )
    assert checked.workload.spec.name
