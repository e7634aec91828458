"""`python -m trnspec fit --add`: a user's own rows refit the constants; a file that cannot be
read is refused in one line. `python -m trnspec.cli.calibrate`, its former name, still runs it
for one release after saying so."""

from __future__ import annotations

from pathlib import Path

import pytest
from trnspec.cli import calibrate
from trnspec.cli.main import main as trnspec_main
from trnspec.perf.published import data_text


def main(argv: list[str]) -> int:
    return trnspec_main(["fit", *argv])


def test_add_refits_with_a_users_own_rows(tmp_path, capsys):
    row = tmp_path / "mine.yaml"
    row.write_text(
        """measurements:
  - id: my-llama31-8b-tp4-c2
    role: baseline
    source: https://example.com/my-run
    quote: "tune --stack: TPOT 25.9 ms at concurrency 2"
    date: "2026-12-01"
    stack: vLLM Neuron plugin, trnspec tune
    stack_group: plugin-sync
    target: Llama-3.1-8B
    instance: trn2.3xlarge
    tp: 4
    lnc: 2
    batch: 2
    input_len: 64
    output_len: 192
    weight_bytes: 2
    tpot_ms: 25.9
""",
        encoding="utf-8",
    )
    out = tmp_path / "fit.json"
    assert main(["--add", str(row), "--out", str(out)]) == 0
    assert "my-llama31-8b-tp4-c2" in capsys.readouterr().out and out.exists()


def test_add_refuses_a_row_that_repeats_a_shipped_id(tmp_path, capsys):
    row = tmp_path / "dup.yaml"
    text = data_text()
    row.write_text(text[text.index("measurements:") :], encoding="utf-8")
    assert main(["--add", str(row)]) == 2
    assert "appear more than once" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (
            "measurements:\n  - id: x\n    role: baseline\n    quote: some words here\n",
            "missing fields",
        ),
        ("measurements: [\n", "not valid YAML"),
    ],
)
def test_add_refuses_a_file_it_cannot_read_in_one_line(tmp_path, capsys, text, needle):
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    assert main(["--add", str(path)]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


ROW = """measurements:
  - id: my-row
    role: baseline
    source: https://example.com/my-run
    quote: "tune --stack: TPOT 25.9 ms at concurrency 2"
    date: "2026-12-01"
    stack: vLLM Neuron plugin, trnspec tune
    stack_group: plugin-sync
    target: Llama-3.1-8B
    instance: trn2.3xlarge
    tp: 4
    lnc: 2
    batch: 2
    input_len: 64
    output_len: 192
    weight_bytes: 2
    tpot_ms: 25.9
"""


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("tpot_ms: 25.9", "tpot_ms: .nan", ".nan on line 17"),
        ("tpot_ms: 25.9", "tpot_ms: .inf", ".inf on line 17"),
        ("tpot_ms: 25.9", "tpot_ms: 1.0e+999", "1.0e+999 on line 17"),
        ("tpot_ms: 25.9", "tpot_ms: -5", "measurements[0].tpot_ms=-5"),
        ("tp: 4", "tp: true", "measurements[0].tp=True"),
        ("tp: 4", "tp: 4\n    tp: 8", "duplicate key 'tp'"),
        ("id: my-row", 'id: "my\\x1b[31mrow"', "measurements[0].id="),
    ],
)
def test_an_added_row_has_finite_positive_typed_figures_unique_keys_and_printable_text(
    tmp_path, capsys, old, new, field
):
    path = tmp_path / "rows.yaml"
    path.write_text(ROW.replace(old, new), encoding="utf-8")
    assert main(["--add", str(path)]) == 2
    captured = capsys.readouterr()
    assert field in captured.err and "\x1b" not in captured.err + captured.out
    assert "nan" not in captured.out and "Traceback" not in captured.err
    assert captured.out == ""  # no report from a refused file


def test_an_added_file_is_a_mapping_of_rows_not_a_list(tmp_path, capsys):
    path = tmp_path / "rows.yaml"
    path.write_text("- id: x\n", encoding="utf-8")
    assert main(["--add", str(path)]) == 2
    assert "must be a mapping with measurements:" in capsys.readouterr().err


def test_an_added_file_is_a_regular_file_never_a_device(capsys):
    assert main(["--add", "/dev/zero"]) == 2
    err = capsys.readouterr().err
    assert "it is a device; give a regular file" in err and err.count("\n") == 1


def test_out_under_a_file_is_refused_before_the_fit_in_one_line(tmp_path, capsys):
    rows = tmp_path / "rows.yaml"
    rows.write_text(ROW, encoding="utf-8")
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    assert main(["--add", str(rows), "--out", str(blocker / "fit.json")]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("--out=") and captured.err.count("\n") == 1
    assert captured.out == "" and blocker.read_text(encoding="utf-8") == "x"


def test_out_that_fails_while_writing_keeps_the_fit_elsewhere_and_says_where(
    tmp_path, capsys, monkeypatch
):
    import trnspec.boundary.write as write

    rows = tmp_path / "rows.yaml"
    rows.write_text(ROW, encoding="utf-8")
    target = tmp_path / "fit.json"
    real = write.write_file

    def full_disk(path, data):
        if Path(path) == target:
            raise OSError(28, "No space left on device")
        return real(path, data)

    monkeypatch.setattr(write, "write_file", full_disk)
    assert main(["--add", str(rows), "--out", str(target)]) == 1
    err = capsys.readouterr().err
    assert "No space left on device" in err and "kept it at " in err
    kept = Path(err.split("kept it at ")[1].split()[0])
    assert "data_sha256" in kept.read_text(encoding="utf-8")


def test_the_former_command_says_where_it_went_in_one_line_and_runs_the_fit(tmp_path, capsys):
    """The alias hands its flags to the fit: the same flags give the same answer (a rows file
    that is absent is refused before any refit, so the check costs no fit)."""
    absent = str(tmp_path / "absent.yaml")
    code = calibrate.main(["--add", absent])
    captured = capsys.readouterr()
    assert captured.err.startswith(calibrate.NOTICE + "\n")
    assert "`python -m trnspec fit`" in calibrate.NOTICE
    assert main(["--add", absent]) == code != 0
    fit_said = capsys.readouterr()
    assert captured.err.removeprefix(calibrate.NOTICE + "\n") == fit_said.err
    assert "absent.yaml" in fit_said.err and captured.out == fit_said.out
