"""Instance prices and cost per million output tokens."""

from __future__ import annotations

import pytest
from trnspec.boundary.problems import Problem
from trnspec.hardware.pricing import PRICES, PriceError, cost_per_1m_output_tokens, resolve_price


@pytest.mark.parametrize(
    "instance_type", ["trn2.48xlarge", "trn2u.48xlarge", "trn2.3xlarge", "cpu-local"]
)
def test_price_table_has_every_instance_with_source_and_date(instance_type):
    entry = PRICES[instance_type]
    assert entry.source and entry.as_of


def test_cost_per_million_tokens_is_price_over_hourly_token_volume():
    # 36 USD/h at 1000 tok/s: 3.6 M tokens per hour -> 10 USD per million
    assert cost_per_1m_output_tokens(36.0, 1000.0) == pytest.approx(10.0)


def test_cost_is_undefined_without_throughput():
    assert cost_per_1m_output_tokens(36.0, 0.0) is None


def test_override_price_wins_over_the_table():
    price, source = resolve_price("trn2.48xlarge", 12.5)
    assert price == 12.5 and "--price-per-hour" in source


UNPRICED = PRICES["trn2u.48xlarge"]


@pytest.mark.parametrize(
    ("instance_type", "override", "problem"),
    [
        (
            "p5.48xlarge",
            None,
            Problem(
                "--instance-type",
                "p5.48xlarge",
                f"no price known; use one of {', '.join(PRICES)} or pass --price-per-hour",
            ),
        ),
        (
            "trn2u.48xlarge",
            None,
            Problem("--instance-type", "trn2u.48xlarge", f"{UNPRICED.source}; {UNPRICED.note}"),
        ),
        (
            "trn2.48xlarge",
            -1.0,
            Problem("--price-per-hour", -1.0, "must be a positive USD amount"),
        ),
    ],
)
def test_unusable_price_inputs_are_one_problem_naming_the_flag_the_value_and_the_fix(
    instance_type, override, problem
):
    with pytest.raises(PriceError) as err:
        resolve_price(instance_type, override)
    assert err.value.problems == [problem]
    assert str(err.value) == str(problem)
    assert "pass --price-per-hour" in problem.fix or problem.field == "--price-per-hour"


def test_table_price_reports_its_provenance():
    price, source = resolve_price("trn2.48xlarge")
    assert price == PRICES["trn2.48xlarge"].usd_per_hour
    assert PRICES["trn2.48xlarge"].as_of in source
