"""A calibration's measurements as rows of the Trn2 data file (trnspec_tools.tune.trn2_rows: the
format `python -m trnspec.cli.calibrate --add FILE` and `plan-deploy --measured` read).

Per level where both arms are ok: one baseline row from the plain arm, under the plain profile's
conditions (its stack group by the stack-group rule), and one speculative row from the
speculative arm, under its profile's conditions, pointing at that baseline. Each row is one real
run, the level's median round by throughput (the lower of the middle two for an even count), not
an average of rounds; its figures (p50 TPOT, throughput, acceptance from the server's counters)
all come from that run. A level with a failed arm gives no row, and the reason is listed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from trnspec.perf.published import Measurement

from trnspec_tools.bench.run_result import ArmRun
from trnspec_tools.calibration.abba import Arm
from trnspec_tools.calibration.summary import RoundRun, Summary
from trnspec_tools.tune import trn2_rows
from trnspec_tools.tune.trn2_rows import Conditions, measured_rows


def median_round(runs: Sequence[RoundRun]) -> RoundRun | None:
    """The run at the (lower) median of the rounds' throughput."""
    done = [r for r in runs if r.result is not None]
    if not done:
        return None
    done.sort(key=lambda r: r.result.output_tokens_per_s if r.result else 0.0)
    return done[(len(done) - 1) // 2]


def calibration_rows(
    summary: Summary,
    runs: Sequence[RoundRun],
    plain: Conditions,
    speculative: Conditions,
    k: int,
    endpoints: dict[Arm, tuple[str, str]],
) -> tuple[list[Measurement], list[str]]:
    """(rows, one line per level or row left out and why). `endpoints`: {arm: (url, model)}."""
    skipped: list[str] = []
    baseline: dict[int, ArmRun] = {}
    spec: dict[int, ArmRun] = {}
    ok = {(a.arm, a.concurrency) for a in summary.arms if a.status == "ok"}
    for verdict in summary.verdicts:
        c = verdict.concurrency
        if ("plain", c) not in ok or ("speculative", c) not in ok:
            skipped.append(f"concurrency {c}: an arm failed, no rows")
            continue
        for arm, into, label in (("plain", baseline, "baseline"), ("speculative", spec, "target")):
            pick = median_round([r for r in runs if r.arm == arm and r.concurrency == c])
            if pick is None or pick.result is None:
                continue
            url, model = endpoints[arm]
            into[c] = ArmRun(arm=label, endpoint=url, model=model, result=pick.result)
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
    doc = trn2_rows.rows_document(speculative, rows)
    names = {s["name"] for s in doc["shapes"]}
    for shape in trn2_rows.rows_document(plain, [])["shapes"]:
        if shape["name"] not in names:
            doc["shapes"].append(shape)
    return trn2_rows.document_yaml(doc)
