"""Instance prices and the cost of an output token.

Cost per output token is the number a buyer compares across deployments: a faster server is only
cheaper if its throughput gain outruns its hourly price. Prices are on-demand, Linux, USD per hour,
kept as data with where each came from and when, because they move and must be re-checked before
anyone quotes them; `--price-per-hour` overrides the table.

Lives in the serving package so `trnspec predict` (installed alone in the image) can price a
profile; the benchmark and the tuner import it from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from trnspec.boundary.errors import BoundaryError


@dataclass(frozen=True)
class InstancePrice:
    """One on-demand price with its provenance."""

    instance_type: str
    usd_per_hour: float | None
    region: str
    source: str
    as_of: str
    note: str = ""


PRICES: dict[str, InstancePrice] = {
    p.instance_type: p
    for p in (
        InstancePrice(
            "trn2.48xlarge",
            35.76,
            "us-east-2",
            "instances.vantage.sh data as mirrored in github.com/tsaol/aws-gpu"
            " data/trn2_instances.js (35.76); a public LLMPerf report script lists 35.7608"
            " for us-east-1",
            "2025-11-30",
            "third-party price lists; confirm on the AWS EC2 pricing page before quoting",
        ),
        InstancePrice(
            "trn2.3xlarge",
            2.235,
            "ap-southeast-4",
            "public SDXL benchmark report (AWS on-demand table, 2026-05): $2.235/h, which is"
            " exactly 1/16 of the trn2.48xlarge price (one chip of sixteen)",
            "2026-05",
            "third-party; trn2.3xlarge is offered in few regions",
        ),
        InstancePrice(
            "trn2u.48xlarge",
            None,
            "-",
            "no published on-demand price found (searched public price lists 2026-11-30);"
            " UltraServer members are sold through Capacity Blocks",
            "2026-11-30",
            "pass --price-per-hour with your Capacity Block or contract rate",
        ),
        InstancePrice(
            "cpu-local",
            0.10,
            "-",
            "nominal figure for the local CPU embedded default (a small 2-vCPU machine);"
            " not a quote, only so the cost column is never empty locally",
            "2026-11-30",
            "nominal",
        ),
    )
}


#: Where AWS's own price list was not reachable (the Price List bulk file
#: pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/<region>/index.json,
#: or `aws pricing get-products`): the session that wrote this had no network to it.
_NO_AWS_PRICE = (
    "AWS's price list for this region was not readable offline (Price List bulk file "
    "AmazonEC2/current/{region}/index.json, or `aws pricing get-products --service-code AmazonEC2 "
    "--filters Type=TERM_MATCH,Field=instanceType,Value={itype} "
    "Type=TERM_MATCH,Field=regionCode,Value={region}`)"
)


# Called only while the module loads (REGIONAL_PRICES), before mutation testing can switch a
# mutant on: its mutants could never be observed, so mutmut leaves it alone.
def _unread(instance_type: str, region: str) -> InstancePrice:  # pragma: no mutate block
    return InstancePrice(
        instance_type,
        None,
        region,
        _NO_AWS_PRICE.format(region=region, itype=instance_type),
        "2026-12-02",
        "pass --price-per-hour with the on-demand rate from that list",
    )


#: On-demand Linux prices per region where EC2 offers the type (the regions of
#: infra/platform/cluster/offerings.py, from EC2's own offerings), each with its own source.
REGIONAL_PRICES: dict[tuple[str, str], InstancePrice] = {
    (p.instance_type, p.region): p
    for p in (
        PRICES["trn2.48xlarge"],
        _unread("trn2.48xlarge", "ap-south-2"),
        PRICES["trn2.3xlarge"],
        _unread("trn2.3xlarge", "ap-south-2"),
        _unread("trn2.3xlarge", "sa-east-1"),
    )
}


def regional_price(instance_type: str, region: str) -> InstancePrice | None:
    """The price entry of `instance_type` in `region`, or None when the table has no row."""
    return REGIONAL_PRICES.get((instance_type, region))


class PriceError(BoundaryError):
    """A price cannot be resolved: one problem naming the flag, the value and the fix."""


def resolve_price(
    instance_type: str, override: float | None = None, region: str | None = None
) -> tuple[float, str]:
    """The hourly price to use and a one-line provenance for the report; with `region`, that
    region's row (REGIONAL_PRICES) when the table has one."""
    if override is not None:
        if override <= 0:
            raise PriceError("--price-per-hour", override, "must be a positive USD amount")
        return override, "--price-per-hour (user supplied)"
    entry = (regional_price(instance_type, region) if region else None) or PRICES.get(instance_type)
    if entry is None:
        raise PriceError(
            "--instance-type",
            instance_type,
            f"no price known; use one of {', '.join(PRICES)} or pass --price-per-hour",
        )
    if entry.usd_per_hour is None:
        raise PriceError("--instance-type", instance_type, f"{entry.source}; {entry.note}")
    return entry.usd_per_hour, f"{entry.source} ({entry.region}, as of {entry.as_of})"


def cost_per_1m_output_tokens(usd_per_hour: float, output_tokens_per_s: float) -> float | None:
    """USD per million output tokens at a sustained throughput; None when nothing was produced."""
    if output_tokens_per_s <= 0:
        return None
    return usd_per_hour / (output_tokens_per_s * 3600.0) * 1e6
