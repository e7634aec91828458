"""`trnspec predict`'s flags and JSON at their bounds: a price is a finite figure a cost can be
computed from, and the JSON is strict (never NaN or Infinity)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from trnspec.boundary.args import MAX_PRICE_PER_HOUR, MIN_PRICE_PER_HOUR
from trnspec.cli import predict as predict_cli
from trnspec.cli.main import main

QUERY = ("--profile", "qwen3-32b-draft", "--acceptance-length", "3.5", "--batch", "1,8")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(["predict", *QUERY, *argv])
    except SystemExit as exit_:  # a flag refused by its type= reader: argparse's exit 2
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def strict(text: str) -> object:
    """JSON as RFC 8259 has it: NaN, Infinity and -Infinity are not JSON."""

    def refuse(constant: str) -> object:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("price", ["1e308", "inf", "nan", "5e-324", "0", "-1", "10000.5"])
def test_a_price_that_gives_no_finite_printable_cost_is_refused_naming_the_flag(
    capsys: pytest.CaptureFixture[str], price: str
) -> None:
    code, out, err = run(capsys, "--price-per-hour", price)
    assert code == 2 and not out
    (line,) = [x for x in err.splitlines() if "error" in x]
    assert f"--price-per-hour: {price}" in line and "<= 10000" in line


@pytest.mark.parametrize("price", [MIN_PRICE_PER_HOUR, MAX_PRICE_PER_HOUR])
def test_the_bounds_themselves_give_finite_costs_in_strict_json(
    capsys: pytest.CaptureFixture[str], price: float
) -> None:
    code, out, err = run(capsys, "--price-per-hour", f"{price:g}", "--format", "json")
    assert code == 0, err
    doc = strict(out)
    assert isinstance(doc, dict)
    costs = [r["cost_per_1m_output_tokens_usd"] for r in doc["rows"]]
    assert costs and all(isinstance(c, float) and c > 0 for c in costs)


def test_a_figure_that_is_not_finite_is_written_as_null_never_as_infinity(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever the model computes, the JSON goes through the one writer (boundary.json_io)."""
    real = predict_cli.build

    def overflowing(*args: object) -> object:
        report = real(*args)  # type: ignore[arg-type]
        first = dataclasses.replace(report.rows[0], cost_per_1m_output_tokens_usd=float("inf"))
        return dataclasses.replace(report, rows=[first, *report.rows[1:]])

    monkeypatch.setattr(predict_cli, "build", overflowing)
    code, out, err = run(capsys, "--format", "json")
    assert code == 0, err
    doc = strict(out)
    assert isinstance(doc, dict) and doc["rows"][0]["cost_per_1m_output_tokens_usd"] is None
