"""`tune --rows-out FILE`: the sweep's runs as rows of trnspec's Trn2 data file (trn2_rows.py),
for `python -m trnspec fit --add FILE`.

The rows describe the deployed profile (`--trn2-profile`), so the flag is refused without one,
and the profile is checked before anything is measured (`rows_conditions`).
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

from trnspec.boundary.write import write_file
from trnspec.config.serving import ConfigError

from trnspec_tools.bench.options import UsageError
from trnspec_tools.tune.alternated import SweepRuns
from trnspec_tools.tune.trn2_rows import Conditions, conditions_for, measured_rows, rows_yaml
from trnspec_tools.tune.tune_options import TuneOptions
from trnspec_tools.tune.tune_report import RowsWritten


def rows_conditions(opts: TuneOptions) -> Conditions:
    """What --rows-out's rows record about the run, or UsageError naming the flag."""
    if not opts.trn2_profile:
        raise UsageError.of(
            "--rows-out",
            str(opts.rows_out),
            "needs --trn2-profile P, the deployed profile the rows describe",
        )
    try:
        return conditions_for(
            opts.trn2_profile,
            opts.workload.input_len,
            opts.workload.output_len,
            f"trnspec tune --out {opts.out}",
            date.today().isoformat(),
        )
    except ConfigError as exc:
        raise UsageError.of("--trn2-profile", opts.trn2_profile, str(exc)) from None


def write_rows(opts: TuneOptions, rows_out: Path, measured: SweepRuns) -> RowsWritten:
    """--rows-out: the run as data-file rows (trn2_rows)."""
    cond = rows_conditions(opts)
    rows, skipped = measured_rows(cond, measured.baseline, measured.runs)
    write_file(rows_out, rows_yaml(cond, rows))
    return RowsWritten(str(rows_out), len(rows), skipped)
