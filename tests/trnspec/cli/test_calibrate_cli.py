"""`python -m trnspec.cli.calibrate --add`: a user's own rows refit the constants; a file that
cannot be read is refused in one line."""

from __future__ import annotations

import pytest
from trnspec.cli.calibrate import main
from trnspec.perf.published import data_text


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
        ("measurements: [\n", "not YAML"),
    ],
)
def test_add_refuses_a_file_it_cannot_read_in_one_line(tmp_path, capsys, text, needle):
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    assert main(["--add", str(path)]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1
