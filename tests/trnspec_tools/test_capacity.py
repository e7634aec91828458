"""Capacity preflight: offerings against moto's EC2; reservations (which moto does not implement)
through botocore's Stubber; and "cannot verify" whenever an answer is missing."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from infra.settings import parse_settings
from trnspec_tools.capacity import (
    EXIT_FAIL,
    EXIT_OK,
    EXIT_UNKNOWN,
    EXIT_USAGE,
    Budget,
    PoolRequirement,
    Unavailable,
    evaluate_offering,
    evaluate_reservation,
    exit_code,
    fetch_reservation,
    main,
    requirements,
    run_preflight,
)

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
CR = "cr-0123456789abcdef0"


@pytest.fixture
def aws_env(fake_aws_env: None) -> None:
    """Every AWS call in these tests goes to moto or a Stubber."""


@pytest.fixture
def moto_ec2(aws_env: None) -> Any:
    with mock_aws():
        yield lambda region: boto3.client("ec2", region_name=region)


def block_pool(**pool: Any) -> Any:
    base = {
        "name": "trn2-cb",
        "instance_type": "trn2.48xlarge",
        "min_size": 0,
        "desired_size": 0,
        "max_size": 1,
        "availability_zone": "us-east-2a",
        "capacity": {"kind": "capacity-block", "reservation_id": CR},
    }
    return parse_settings(
        {
            "region": "us-east-2",
            "vpc": {"availability_zones": ["us-east-2a", "us-east-2b"]},
            "trn2_pools": [base | pool],
        }
    )


def reservation(**fields: Any) -> dict[str, Any]:
    base = {
        "CapacityReservationId": CR,
        "InstanceType": "trn2.48xlarge",
        "AvailabilityZone": "us-east-2a",
        "State": "active",
        "ReservationType": "capacity-block",
        "TotalInstanceCount": 1,
        "AvailableInstanceCount": 1,
        "StartDate": NOW - timedelta(days=1),
        "EndDate": NOW + timedelta(days=6),
    }
    return base | fields


class ReservationsFrom:
    """moto's EC2 for everything except describe_capacity_reservations (moto lacks it)."""

    def __init__(self, moto_client: Any, stubbed: Any) -> None:
        self._moto, self._stubbed = moto_client, stubbed

    def __getattr__(self, name: str) -> Any:
        return getattr(self._moto, name)

    def describe_capacity_reservations(self, **kwargs: Any) -> Any:
        return self._stubbed.describe_capacity_reservations(**kwargs)


def stubbed_reservations(response: dict[str, Any] | None = None, error: str | None = None) -> Any:
    client = boto3.client("ec2", region_name="us-east-2")
    stub = Stubber(client)
    if error:
        stub.add_client_error(
            "describe_capacity_reservations",
            service_error_code=error,
            expected_params={"CapacityReservationIds": [CR]},
        )
    else:
        stub.add_response(
            "describe_capacity_reservations",
            {"CapacityReservations": [response] if response else []},
            {"CapacityReservationIds": [CR]},
        )
    stub.activate()
    return client


# --- offerings (moto) ---------------------------------------------------------------------------


def test_default_profile_passes_where_moto_offers_trn2(moto_ec2: Any, capsys: Any) -> None:
    assert main(["--profile", "default", "--region", "us-east-2"], ec2=moto_ec2("us-east-2")) == 0
    out = capsys.readouterr().out
    assert "OK" in out and "trn2.48xlarge offered" in out and "us-east-2a, us-east-2b" in out


def test_region_without_trn2_fails_the_preflight(moto_ec2: Any, capsys: Any) -> None:
    code = main(["--profile", "default", "--region", "us-east-1"], ec2=moto_ec2("us-east-1"))
    assert code == EXIT_FAIL
    assert "not offered in any AZ of us-east-1" in capsys.readouterr().out


def test_capacity_block_without_reservation_api_reports_cannot_verify(
    moto_ec2: Any, capsys: Any
) -> None:
    code = main(["--profile", "capacity-block"], ec2=moto_ec2("us-east-2"))
    out = capsys.readouterr().out
    assert code == EXIT_UNKNOWN
    assert f"CANNOT VERIFY {'trn2-cb':<16} reservation {CR}" in out
    assert "does not implement" in out
    assert "OK: capacity" not in out


@pytest.mark.parametrize(
    ("pinned", "azs", "offered", "status"),
    [
        (True, ("us-east-2a",), {"us-east-2a", "us-east-2b"}, "ok"),
        (True, ("us-east-2c",), {"us-east-2a", "us-east-2b"}, "fail"),
        (False, ("us-east-2a", "us-east-2c"), {"us-east-2a"}, "warn"),
        (False, (), {"us-east-2b"}, "warn"),  # first two AZs: a and b
        (False, (), {"us-east-2c"}, "fail"),
        (False, (), set(), "fail"),
    ],
)
def test_offering_must_cover_the_azs_the_pool_launches_in(
    pinned: bool, azs: tuple[str, ...], offered: set[str], status: str
) -> None:
    req = PoolRequirement("p", "trn2.48xlarge", azs, pinned, "on-demand", None, 0, 2)
    region_azs = ["us-east-2c", "us-east-2a", "us-east-2b"]
    assert evaluate_offering(req, offered, "us-east-2", region_azs).status == status


def test_offering_api_failure_is_cannot_verify_never_ok() -> None:
    req = PoolRequirement("p", "trn2.48xlarge", (), False, "on-demand", None, 0, 2)
    finding = evaluate_offering(req, Unavailable("cannot verify: x"), "us-east-2", [])
    assert finding.status == "unknown"
    assert exit_code([finding]) == EXIT_UNKNOWN


# --- reservations (Stubber) ---------------------------------------------------------------------


def test_matching_active_capacity_block_passes(moto_ec2: Any) -> None:
    ec2 = ReservationsFrom(moto_ec2("us-east-2"), stubbed_reservations(reservation()))
    findings = run_preflight(ec2, block_pool(), "us-east-2", NOW)
    assert [(f.check, f.status) for f in findings] == [
        ("trn2.48xlarge offered", "ok"),
        (f"reservation {CR}", "ok"),
    ]
    assert exit_code(findings) == EXIT_OK


def test_unknown_reservation_id_fails(moto_ec2: Any) -> None:
    stubbed = stubbed_reservations(error="InvalidCapacityReservationId.NotFound")
    findings = run_preflight(
        ReservationsFrom(moto_ec2("us-east-2"), stubbed), block_pool(), "us-east-2", NOW
    )
    assert findings[-1].status == "fail" and "does not exist" in findings[-1].detail
    assert exit_code(findings) == EXIT_FAIL


def test_missing_permission_is_cannot_verify() -> None:
    found = fetch_reservation(stubbed_reservations(error="UnauthorizedOperation"), CR)
    assert isinstance(found, Unavailable) and "UnauthorizedOperation" in found.reason
    req = requirements(block_pool())[0]
    assert [f.status for f in evaluate_reservation(req, found, NOW)] == ["unknown"]


@pytest.mark.parametrize(
    ("fields", "pool", "status", "says"),
    [
        ({"InstanceType": "trn2.3xlarge"}, {}, "fail", "is for trn2.3xlarge"),
        ({"AvailabilityZone": "us-east-2b"}, {}, "fail", "is in us-east-2b"),
        ({"ReservationType": "default"}, {}, "fail", "capacity.kind is capacity-block"),
        ({"State": "expired"}, {}, "fail", "is expired"),
        ({"State": "scheduled", "StartDate": NOW + timedelta(days=2)}, {}, "warn", "starts"),
        ({"EndDate": NOW - timedelta(minutes=1)}, {}, "fail", "ended"),
        ({"EndDate": NOW + timedelta(hours=3)}, {}, "warn", "reclaimed"),
        ({"AvailableInstanceCount": 0}, {"desired_size": 1}, "fail", "0 instance(s) available"),
        ({}, {"max_size": 4}, "warn", "max_size is 4"),
    ],
)
def test_reservation_that_does_not_match_the_pool_is_flagged(
    fields: dict[str, Any], pool: dict[str, Any], status: str, says: str
) -> None:
    req = requirements(block_pool(**pool))[0]
    findings = evaluate_reservation(req, reservation(**fields), NOW)
    assert [(f.status, says in f.detail) for f in findings] == [(status, True)]


def test_on_demand_reservation_kind_needs_a_default_reservation() -> None:
    req = requirements(block_pool(capacity={"kind": "reservation", "reservation_id": CR}))[0]
    wrong = evaluate_reservation(req, reservation(), NOW)
    assert [f.status for f in wrong] == ["fail"]
    right = evaluate_reservation(req, reservation(ReservationType="default"), NOW)
    assert [f.status for f in right] == ["ok"]


# --- command line ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["--profile", "no-such-profile"],
        ["--profile", "default", "-c", "trn2_pools.0.max_size=-1"],
        ["--profile", "default", "-c", "novalue"],
        ["--profile", "capacity-block", "--region", "us-west-2"],
    ],
)
def test_bad_input_exits_2_with_a_message(moto_ec2: Any, argv: list[str], capsys: Any) -> None:
    assert main(argv, ec2=moto_ec2("us-east-2")) == EXIT_USAGE
    assert capsys.readouterr().err.strip()


# --- faults: the exit-code contract holds for bad regions, credentials and endpoints ----------


@pytest.mark.parametrize("region", ["us-east-2x", "US-EAST-2", "us east 2", "useast2"])
def test_malformed_region_is_bad_input_without_any_call(
    aws_env: None, region: str, capsys: Any
) -> None:
    assert main(["--profile", "default", "--region", region]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "not a region name" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_malformed_region_in_the_settings_is_bad_input(aws_env: None, capsys: Any) -> None:
    assert main(["--profile", "default", "-c", "region=us-east-2x"]) == EXIT_USAGE
    assert "region=us-east-2x" in capsys.readouterr().err


def test_partial_credentials_cannot_verify(
    aws_env: None, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.delenv("AWS_SESSION_TOKEN")
    assert main(["--profile", "default", "--region", "us-east-2"]) == EXIT_UNKNOWN
    err = capsys.readouterr().err
    assert "incomplete AWS credentials" in err and "AWS_SECRET_ACCESS_KEY" in err
    assert "Traceback" not in err


def test_no_credentials_cannot_verify(
    aws_env: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Any, capsys: Any
) -> None:
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(var)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    assert main(["--profile", "default", "--region", "us-east-2"]) == EXIT_UNKNOWN
    assert "no AWS credentials" in capsys.readouterr().out


def test_unreachable_endpoint_cannot_verify_within_the_retry_budget(
    aws_env: None, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    import trnspec_tools.capacity as capacity

    monkeypatch.setenv("AWS_ENDPOINT_URL_EC2", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setattr(capacity, "EC2_TOTAL_ATTEMPTS", 1)
    assert main(["--profile", "default", "--region", "us-east-2"]) == EXIT_UNKNOWN
    out = capsys.readouterr().out
    assert "EC2 unreachable" in out and "OK" not in out.splitlines()[-1]


def test_ec2_client_has_explicit_timeouts_and_retry_limits(aws_env: None) -> None:
    import trnspec_tools.capacity as capacity

    code, ec2, region = capacity._client("us-east-2")
    assert (code, region) == (EXIT_OK, "us-east-2")
    cfg = ec2.meta.config
    assert (cfg.connect_timeout, cfg.read_timeout) == (
        capacity.EC2_CONNECT_TIMEOUT_S,
        capacity.EC2_READ_TIMEOUT_S,
    )
    assert cfg.retries == {"total_max_attempts": capacity.EC2_TOTAL_ATTEMPTS, "mode": "standard"}


def test_a_region_with_no_availability_zones_is_not_ok(aws_env: None) -> None:
    client = boto3.client("ec2", region_name="us-east-2")
    stub = Stubber(client)
    stub.add_response("describe_availability_zones", {"AvailabilityZones": []})
    stub.add_response("describe_instance_type_offerings", {"InstanceTypeOfferings": []})
    stub.activate()
    findings = run_preflight(client, parse_settings({}), "us-east-2", NOW)
    assert [f.status for f in findings] == ["fail"]
    assert "lists no availability zones" in findings[0].detail
    assert exit_code(findings) == EXIT_FAIL
    req = PoolRequirement("p", "trn2.48xlarge", (), False, "on-demand", None, 0, 2)
    assert evaluate_offering(req, {"us-east-2a"}, "us-east-2", []).status == "fail"


# --- the whole preflight's time bound (botocore's timeouts are per read) ------------------------


class StuckEc2:
    """An EC2 client whose every call waits (as on an endpoint that sends one byte a second),
    until released or 3 s pass, then fails: a preflight without its bound gets another outcome."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls: list[str] = []

    def _wait(self, name: str) -> Any:
        self.calls.append(name)
        self.release.wait(3.0)
        raise RuntimeError("released")

    def describe_availability_zones(self, **_: Any) -> Any:
        return self._wait("describe_availability_zones")

    def describe_capacity_reservations(self, **_: Any) -> Any:
        return self._wait("describe_capacity_reservations")

    def get_paginator(self, name: str) -> Any:
        outer = self

        class Pages:
            def paginate(self, **_: Any) -> Any:
                return outer._wait(name)

        return Pages()


def test_ec2_that_never_finishes_answering_is_cannot_verify_at_the_total_bound() -> None:
    ec2 = StuckEc2()
    try:
        findings = run_preflight(
            ec2, block_pool(), "us-east-2", NOW, budget=Budget(0.05, time.monotonic())
        )
    finally:
        ec2.release.set()
    assert [f.status for f in findings] == ["unknown", "unknown"]
    assert all("within --timeout 0.05 s" in f.detail for f in findings)
    assert exit_code(findings) == EXIT_UNKNOWN


def test_no_ec2_call_starts_once_the_budget_is_spent() -> None:
    ec2 = StuckEc2()
    spent = Budget(10.0, started=0.0, clock=lambda: 10.0)
    findings = run_preflight(ec2, block_pool(), "us-east-2", NOW, budget=spent)
    assert ec2.calls == []
    assert [f.status for f in findings] == ["unknown", "unknown"]


def test_the_timeout_flag_reaches_the_preflight(
    moto_ec2: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import trnspec_tools.capacity as capacity

    seen: list[Budget] = []
    real = capacity.run_preflight

    def spy(*args: Any, budget: Budget | None = None, **kw: Any) -> list[Any]:
        assert budget is not None
        seen.append(budget)
        return real(*args, budget=budget, **kw)

    monkeypatch.setattr(capacity, "run_preflight", spy)
    ec2 = moto_ec2("us-east-2")
    assert main(["--profile", "default", "--region", "us-east-2", "--timeout", "7"], ec2=ec2) == 0
    assert [b.total_s for b in seen] == [7.0]
