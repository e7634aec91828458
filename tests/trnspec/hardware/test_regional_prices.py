"""Prices per region: every row names its own source, and a region whose price AWS's list could
not give here refuses to price (no borrowed figure). The regions are EC2's offerings
(tests/infra/platform/cluster/test_offerings.py)."""

from __future__ import annotations

import pytest
from trnspec.hardware.pricing import REGIONAL_PRICES, PriceError, regional_price, resolve_price


def test_every_row_names_its_region_and_source() -> None:
    for (itype, region), price in REGIONAL_PRICES.items():
        assert (price.instance_type, price.region) == (itype, region)
        assert price.source and price.as_of


def test_a_region_without_a_read_price_refuses_and_says_where_to_read_it() -> None:
    assert regional_price("trn2.3xlarge", "sa-east-1") is not None
    with pytest.raises(PriceError) as err:
        resolve_price("trn2.3xlarge", region="sa-east-1")
    assert "AmazonEC2/current/sa-east-1/index.json" in str(err.value)
    assert "--price-per-hour" in str(err.value)


def test_a_regions_own_price_is_used_and_an_override_wins() -> None:
    price, source = resolve_price("trn2.3xlarge", region="ap-southeast-4")
    assert price == 2.235 and "ap-southeast-4" in source
    assert resolve_price("trn2.3xlarge", 3.0, region="sa-east-1")[0] == 3.0
    # Without a region: the type's default row, as before.
    assert resolve_price("trn2.48xlarge")[0] == 35.76
