"""`predict --format json` and `plan-deploy --format json` print strict JSON (issue 50): a figure
that overflows is null, never `Infinity` or `NaN` (which no strict reader accepts).

The flags bound every price they take (boundary.args.price_arg: at most 10,000 USD an hour), so
the path exercised here is the other source of a price: the price table, patched to a finite
1e308 whose costs overflow (a month of it is inf), or to inf itself. Before the commands wrote
through boundary.json_io, plan-deploy printed `Infinity` and `NaN` for these."""

from __future__ import annotations

import json
import math

import pytest
from trnspec.cli.main import main
from trnspec.plan import deploy_plan
from trnspec.plan import predict as predict_module

PLAN_GOAL = (
    *("--profile", "qwen3-4b-dflash", "--profile", "qwen3-4b-baseline"),
    *("--acceptance-length", "2.1", "--acceptance-k", "15", "--tpot-ms", "30"),
    *("--peak-streams", "16", "--format", "json"),
)
PREDICT_QUERY = (
    *("--profile", "qwen3-32b-draft", "--acceptance-length", "3.5", "--batch", "1,8"),
    *("--format", "json"),
)


def strict(text: str) -> dict[str, object]:
    """JSON as RFC 8259 has it: NaN, Infinity and -Infinity are not JSON."""

    def refuse(constant: str) -> object:
        raise ValueError(f"{constant} is not JSON")

    doc = json.loads(text, parse_constant=refuse)
    assert isinstance(doc, dict)
    return doc


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    assert code == 0, err
    return strict(out)


def price_table(monkeypatch: pytest.MonkeyPatch, module: object, price: float) -> None:
    monkeypatch.setattr(module, "resolve_price", lambda _type, _given: (price, "patched table"))


def test_plan_deploy_writes_a_month_that_overflows_as_null_and_keeps_the_finite_figures(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    price_table(monkeypatch, deploy_plan, 1e308)
    doc = run(capsys, "plan-deploy", *PLAN_GOAL)
    idle = doc["idle_cost"]
    assert isinstance(idle, dict)
    assert idle["min_replicas"]["usd_per_hour"] == 1e308  # one node: finite, kept
    assert idle["min_replicas"]["usd_per_30_day_month"] is None  # 720 h of it: inf
    assert idle["calibrating"]["usd_at_most"] is None
    assert idle["scale_to_zero"]["usd_per_30_day_month"] == 0.0


def test_plan_deploy_writes_costs_of_an_infinite_price_as_null(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    price_table(monkeypatch, deploy_plan, math.inf)
    doc = run(capsys, "plan-deploy", *PLAN_GOAL)
    profiles = doc["profiles"]
    assert isinstance(profiles, list) and profiles
    costs = [
        row["cost_per_1m_output_tokens_usd"]
        for p in profiles
        for row in p.values()
        if isinstance(row, dict) and "cost_per_1m_output_tokens_usd" in row
    ]
    assert costs and all(c is None for c in costs)
    # 0 x inf is NaN: the idle cost at zero replicas
    assert doc["idle_cost"]["scale_to_zero"]["usd_per_hour"] is None


def test_plan_deploy_json_of_a_table_price_is_the_figure_itself(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer nulls only what is not finite: a plain price's month is price x 720 h."""
    price_table(monkeypatch, deploy_plan, 2.5)
    idle = run(capsys, "plan-deploy", *PLAN_GOAL)["idle_cost"]
    assert isinstance(idle, dict)
    assert idle["min_replicas"]["usd_per_hour"] == 2.5
    assert idle["min_replicas"]["usd_per_30_day_month"] == pytest.approx(2.5 * 720)


def test_predict_writes_a_cost_that_overflows_as_null_and_keeps_the_finite_ones(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    price_table(monkeypatch, predict_module, 1e308)
    doc = run(capsys, "predict", *PREDICT_QUERY)
    assert doc["inputs"]["price_per_hour_usd"]["value"] == 1e308
    costs = {(r["batch"], r["k"]): r["cost_per_1m_output_tokens_usd"] for r in doc["rows"]}
    assert costs[(1, 0)] is None  # the slowest row: 1e308 over its tokens/s overflows
    assert all(isinstance(c, float) and c > 1e307 for b_k, c in costs.items() if b_k != (1, 0))


def test_predict_writes_an_infinite_price_and_its_costs_as_null(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    price_table(monkeypatch, predict_module, math.inf)
    doc = run(capsys, "predict", *PREDICT_QUERY)
    assert doc["inputs"]["price_per_hour_usd"]["value"] is None
    rows = doc["rows"]
    assert isinstance(rows, list) and rows
    assert all(r["cost_per_1m_output_tokens_usd"] is None for r in rows)
