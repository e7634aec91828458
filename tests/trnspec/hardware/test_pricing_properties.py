"""Properties of pricing on any price and throughput: a million tokens at the sustained rate cost
exactly the hours they take at the hourly price; an override is any positive amount and wins;
a region's own row wins over the default one, and a region without a row uses the default."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trnspec.hardware.pricing import (
    PRICES,
    REGIONAL_PRICES,
    PriceError,
    cost_per_1m_output_tokens,
    resolve_price,
)

SETTINGS = settings(max_examples=200, deadline=None)
prices = st.floats(0.01, 1000, allow_nan=False)
rates = st.floats(0.001, 1e7, allow_nan=False)


@SETTINGS
@given(prices, rates)
def test_a_million_tokens_cost_the_hours_they_take_at_the_hourly_price(usd_per_hour, tokens_per_s):
    cost = cost_per_1m_output_tokens(usd_per_hour, tokens_per_s)
    hours = 1e6 / tokens_per_s / 3600
    assert cost is not None and math.isclose(cost, usd_per_hour * hours, rel_tol=1e-9)


@SETTINGS
@given(prices, rates, st.floats(1.01, 100))
def test_more_throughput_costs_less_per_token_and_a_dearer_instance_more(price, rate, factor):
    base = cost_per_1m_output_tokens(price, rate)
    faster = cost_per_1m_output_tokens(price, rate * factor)
    dearer = cost_per_1m_output_tokens(price * factor, rate)
    assert base is not None and faster is not None and dearer is not None
    assert faster < base < dearer


@pytest.mark.parametrize("rate", [0.0, -0.0, -1.0, -1e-9])
def test_no_throughput_has_no_cost(rate):
    assert cost_per_1m_output_tokens(35.76, rate) is None


@SETTINGS
@given(st.sampled_from(sorted(PRICES)), prices, st.sampled_from([None, "us-east-2", "eu-west-9"]))
def test_any_positive_override_wins_with_its_provenance(instance_type, override, region):
    assert resolve_price(instance_type, override, region) == (
        override,
        "--price-per-hour (user supplied)",
    )


@pytest.mark.parametrize("override", [0.0, -0.01, -35.76])
def test_an_override_of_zero_or_less_is_refused_naming_the_flag(override):
    with pytest.raises(PriceError, match="--price-per-hour"):
        resolve_price("trn2.48xlarge", override)


@pytest.mark.parametrize(("instance_type", "region"), sorted(REGIONAL_PRICES))
def test_a_regions_own_row_is_the_price_used_there(instance_type, region):
    row = REGIONAL_PRICES[(instance_type, region)]
    if row.usd_per_hour is None:
        with pytest.raises(PriceError, match=region):
            resolve_price(instance_type, region=region)
    else:
        price, provenance = resolve_price(instance_type, region=region)
        assert price == row.usd_per_hour
        assert f"({region}, as of {row.as_of})" in provenance


@pytest.mark.parametrize("instance_type", [t for t, p in PRICES.items() if p.usd_per_hour])
def test_a_region_without_a_row_uses_the_default_price(instance_type):
    assert resolve_price(instance_type, region="eu-west-9") == resolve_price(instance_type)
    assert resolve_price(instance_type)[0] == PRICES[instance_type].usd_per_hour


def test_an_unknown_instance_type_lists_the_known_ones():
    with pytest.raises(PriceError) as err:
        resolve_price("p5.48xlarge")
    assert "--instance-type=p5.48xlarge" in str(err.value)
    assert f"use one of {', '.join(PRICES)} or pass --price-per-hour" in str(err.value)
