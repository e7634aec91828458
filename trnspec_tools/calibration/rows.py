"""A calibration's measurements as rows of the Trn2 data file (trnspec_tools.tune.trn2_rows: the
format `python -m trnspec fit --add FILE` and `plan-deploy --measured` read).

Per level where both arms are ok: one baseline row from the plain arm, under the plain profile's
conditions (its stack group by the stack-group rule), and one speculative row from the
speculative arm, under its profile's conditions, pointing at that baseline. Each row is one real
run, the level's median round by throughput (trnspec_tools.ab.median_round), not an average of
rounds; its figures (p50 TPOT, throughput, acceptance from the server's counters) all come from
that run. A level without a verdict (a failed arm, or a round the A/B core could not pair, e.g.
an arm that stopped early) gives no row, and the reason is listed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from trnspec.perf.published import Measurement

from trnspec_tools.ab.median_round import median_round
from trnspec_tools.bench.run_result import ArmRun, RunResult
from trnspec_tools.calibration.summary import Arm, CalibrationRun, Summary
from trnspec_tools.tune import trn2_rows
from trnspec_tools.tune.trn2_rows import Conditions, measured_rows


def calibration_rows(
    summary: Summary,
    runs: Sequence[CalibrationRun],
    plain: Conditions,
    speculative: Conditions,
    k: int,
    endpoints: dict[Arm, tuple[str, str]],
) -> tuple[list[Measurement], list[str]]:
    """(rows, one line per level or row left out and why). `endpoints`: {arm: (url, model)}."""
    skipped: list[str] = []
    baseline: dict[int, ArmRun] = {}
    spec: dict[int, ArmRun] = {}
    for verdict in summary.verdicts:
        c = verdict.concurrency
        if verdict.verdict is None:
            skipped.append(f"concurrency {c}: no verdict, no rows ({verdict.text})")
            continue
        for arm, into, label in (("plain", baseline, "baseline"), ("speculative", spec, "target")):
            results: list[RunResult] = [
                r.result for r in runs if r.arm == arm and r.concurrency == c and r.result
            ]
            url, model = endpoints[arm]
            into[c] = ArmRun(arm=label, endpoint=url, model=model, result=median_round(results))
    base_rows, base_skipped = measured_rows(plain, baseline, {})
    base_ids = {row.batch: row.id for row in base_rows}
    spec_all, spec_skipped = measured_rows(speculative, baseline, {k: spec})
    spec_rows = [
        dataclasses.replace(row, baseline=base_ids.get(row.batch))
        for row in spec_all
        if row.role == "speculative" and row.batch in base_ids
    ]
    skipped += base_skipped + [s for s in spec_skipped if s.startswith(f"k={k}")]
    return base_rows + spec_rows, skipped


def combined_rows_yaml(
    plain: Conditions, speculative: Conditions, rows: Sequence[Measurement]
) -> str:
    """The Trn2 data file's YAML text of the rows with the shapes they need (target, and the
    draft when it is a separate model)."""
    return trn2_rows.rows_yaml(speculative, rows, plain)
