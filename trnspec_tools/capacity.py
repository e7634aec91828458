"""Capacity preflight: will the Trn2 node pools of a deployment profile get instances?

Trn2 capacity is scarce and AZ-bound. A deploy whose instance type is not offered in the pool's
AZ, or whose capacity block is in another AZ, expired, or for another instance type, fails (or
sits with pending pods) an hour into `cdk deploy`. This script asks EC2 first and prints one line
per check. It reads the same typed settings as the CDK app (`infra.settings`).

    python scripts/capacity.py --profile capacity-block [-c trn2_pools.0.max_size=2] [--region R]

Exit codes: 0 every check passed (warnings allowed); 1 at least one check says the deploy would
fail for capacity; 2 bad settings or arguments; 3 nothing failed but something could not be
verified (no or partial credentials, no permission, an unreachable endpoint, or an API the
endpoint does not implement). "Cannot verify" is never reported as "ok". Every outcome is a
report or one line on stderr, never a traceback; each EC2 call is bounded by explicit timeouts
and a retry budget (EC2_CONNECT_TIMEOUT_S, EC2_READ_TIMEOUT_S, EC2_TOTAL_ATTEMPTS), and the
whole preflight by `--timeout` (default TOTAL_TIMEOUT_S): botocore's timeouts are per read, so an
endpoint that sends one byte a second would otherwise hold it for ever. A check the bound cut
off is "cannot verify", naming the bound.

Structure: `requirements` and the `evaluate_*` functions are pure (settings and EC2 responses in,
findings out); `fetch_*` do the boto3 calls on an injected client.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypeVar

from trnspec.boundary.aws_names import region_problem
from trnspec.boundary.errors import exits_on_bad_input
from trnspec.boundary.http_read import CallTimedOut, within
from trnspec.boundary.numbers import float_arg

Status = Literal["ok", "warn", "fail", "unknown"]
EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_UNKNOWN = 0, 1, 2, 3
#: A capacity block ending sooner than this is flagged: nodes are reclaimed at its end.
ENDING_SOON = timedelta(hours=24)
#: An env-agnostic CDK VPC takes the region's first two AZs (Fn::GetAZs, index 0 and 1).
DEFAULT_VPC_AZS = 2

#: Reservation states in which instances can launch now / later / never.
_ACTIVE = {"active"}
_LATER = {"scheduled", "pending", "payment-pending", "assessing", "delayed"}
#: Pool capacity kind -> the EC2 reservation type it needs.
_RESERVATION_TYPE = {"capacity-block": "capacity-block", "reservation": "default"}
#: Bounds on every EC2 call (botocore's defaults are 60 s connect and read, 5 legacy attempts):
#: https://botocore.amazonaws.com/v1/documentation/api/latest/reference/config.html
EC2_CONNECT_TIMEOUT_S = 5.0
EC2_READ_TIMEOUT_S = 20.0
EC2_TOTAL_ATTEMPTS = 3
#: Seconds for the whole preflight (every EC2 call, retries included), unless --timeout.
TOTAL_TIMEOUT_S = 180.0

T = TypeVar("T")


@dataclass(frozen=True)
class Budget:
    """The whole preflight's time: `total_s` from `started` on `clock`."""

    total_s: float
    started: float
    clock: Callable[[], float] = field(default=time.monotonic, compare=False)

    def left(self) -> float:
        return self.total_s - (self.clock() - self.started)


def _ask(budget: Budget | None, call: Callable[[], T]) -> T:
    """`call()` (an EC2 call) within what is left of `budget`; CallTimedOut naming the bound."""
    if budget is None:
        return call()
    try:
        return within(budget.left(), call)
    except CallTimedOut:
        raise CallTimedOut(
            f"cannot verify: EC2 gave no whole answer within --timeout {budget.total_s:g} s"
            " (it answers too slowly, or never); check the network and the region, or raise"
            " --timeout"
        ) from None


@dataclass(frozen=True)
class PoolRequirement:
    """What one Trn2 pool needs from EC2 (derived from the settings, no I/O)."""

    pool: str
    instance_type: str
    availability_zones: tuple[str, ...]  # where its nodes may launch; empty = decided at deploy
    pinned: bool  # True when the pool itself is pinned to an AZ
    kind: str
    reservation_id: str | None
    desired_size: int
    max_size: int


@dataclass(frozen=True)
class Finding:
    pool: str
    check: str
    status: Status
    detail: str

    def line(self) -> str:
        label = "CANNOT VERIFY" if self.status == "unknown" else self.status.upper()
        return f"{label:<13} {self.pool:<16} {self.check:<34} {self.detail}"


@dataclass(frozen=True)
class Unavailable:
    """An API answer we could not get; the reason goes into an 'unknown' finding."""

    reason: str


def requirements(settings: Any) -> list[PoolRequirement]:
    """One requirement per Trn2 pool of an `infra.settings.DeploymentSettings`."""
    out = []
    for pool in settings.trn2_pools:
        azs = (pool.availability_zone,) if pool.availability_zone else ()
        out.append(
            PoolRequirement(
                pool=pool.name,
                instance_type=pool.instance_type,
                availability_zones=azs or tuple(settings.vpc.availability_zones),
                pinned=bool(pool.availability_zone),
                kind=pool.capacity.kind,
                reservation_id=pool.capacity.reservation_id,
                desired_size=pool.desired_size,
                max_size=pool.max_size,
            )
        )
    return out


# --- pure evaluation ---------------------------------------------------------------------------


def evaluate_offering(
    req: PoolRequirement, offered: set[str] | Unavailable, region: str, region_azs: Sequence[str]
) -> Finding:
    """Is the instance type offered where the pool's nodes will launch?"""
    check = f"{req.instance_type} offered"
    if isinstance(offered, Unavailable):
        return Finding(req.pool, check, "unknown", offered.reason)
    if not region_azs and not req.availability_zones:
        return Finding(
            req.pool,
            check,
            "fail",
            f"{region} lists no availability zones for this account (not enabled, or not a "
            "region); enable it or choose another region",
        )
    where = sorted(offered)
    if not where:
        return Finding(
            req.pool, check, "fail", f"not offered in any AZ of {region}; choose another region"
        )
    if req.availability_zones:
        azs, source = list(req.availability_zones), "pool AZ" if req.pinned else "VPC AZs"
    else:
        azs = sorted(region_azs)[:DEFAULT_VPC_AZS]
        source = "first two AZs (an env-agnostic VPC uses them)"
    missing = [az for az in azs if az not in offered]
    if not missing:
        return Finding(req.pool, check, "ok", f"in {', '.join(azs)} ({source})")
    fix = f"offered in {', '.join(where)}"
    if len(missing) == len(azs):
        return Finding(
            req.pool, check, "fail", f"not in {', '.join(missing)} ({source}); {fix}: pin one"
        )
    return Finding(
        req.pool,
        check,
        "warn",
        f"not in {', '.join(missing)} ({source}); nodes can launch only in the others ({fix})",
    )


def evaluate_reservation(
    req: PoolRequirement, found: dict[str, Any] | Unavailable | None, now: datetime
) -> list[Finding]:
    """Does the configured reservation exist and match the pool (type, AZ, kind, state, size)?"""
    if req.reservation_id is None:
        return []
    check = f"reservation {req.reservation_id}"

    def finding(status: Status, detail: str) -> Finding:
        return Finding(req.pool, check, status, detail)

    if isinstance(found, Unavailable):
        return [finding("unknown", found.reason)]
    if found is None:
        return [finding("fail", "does not exist in this region/account; check the cr- id")]
    problems: list[Finding] = []
    itype, az = found.get("InstanceType"), found.get("AvailabilityZone")
    if itype != req.instance_type:
        problems.append(finding("fail", f"is for {itype}, pool wants {req.instance_type}"))
    if req.availability_zones and az not in req.availability_zones:
        problems.append(
            finding("fail", f"is in {az}, pool launches in {', '.join(req.availability_zones)}")
        )
    wanted_type = _RESERVATION_TYPE.get(req.kind)
    rtype = found.get("ReservationType", "default")
    if wanted_type and rtype != wanted_type:
        problems.append(
            finding("fail", f"is a {rtype} reservation, the pool's capacity.kind is {req.kind}")
        )
    state = str(found.get("State", ""))
    if state in _LATER:
        start = found.get("StartDate")
        when = f" (starts {start:%Y-%m-%d %H:%M} UTC)" if isinstance(start, datetime) else ""
        problems.append(finding("warn", f"is {state}{when}: nodes cannot launch before then"))
    elif state not in _ACTIVE:
        problems.append(finding("fail", f"is {state or 'in an unknown state'}: cannot launch"))
    end = found.get("EndDate")
    if isinstance(end, datetime):
        end = end if end.tzinfo else end.replace(tzinfo=UTC)
        if end <= now:
            problems.append(finding("fail", f"ended {end:%Y-%m-%d %H:%M} UTC"))
        elif end - now < ENDING_SOON:
            problems.append(
                finding("warn", f"ends {end:%Y-%m-%d %H:%M} UTC: nodes are reclaimed then")
            )
    total = int(found.get("TotalInstanceCount", 0))
    available = int(found.get("AvailableInstanceCount", 0))
    if req.desired_size > available:
        problems.append(
            finding(
                "fail",
                f"{available} instance(s) available, desired_size is {req.desired_size}: "
                f"lower desired_size or free instances",
            )
        )
    if req.max_size > total:
        problems.append(finding("warn", f"holds {total} instance(s), max_size is {req.max_size}"))
    if problems:
        return problems
    return [finding("ok", f"{state}, {itype} in {az}, {available}/{total} available")]


def exit_code(findings: Sequence[Finding]) -> int:
    statuses = {f.status for f in findings}
    if "fail" in statuses:
        return EXIT_FAIL
    if "unknown" in statuses:
        return EXIT_UNKNOWN
    return EXIT_OK


# --- boto3 I/O ---------------------------------------------------------------------------------


def _why(err: BaseException) -> str:
    from botocore.exceptions import (
        ClientError,
        ConnectTimeoutError,
        EndpointConnectionError,
        NoCredentialsError,
        PartialCredentialsError,
        ReadTimeoutError,
    )

    if isinstance(err, CallTimedOut):
        return str(err)
    if isinstance(err, NotImplementedError):
        return f"cannot verify: the EC2 endpoint does not implement this call ({err})"
    if isinstance(err, NoCredentialsError):
        return "cannot verify: no AWS credentials (set AWS_PROFILE or keys)"
    if isinstance(err, PartialCredentialsError):
        return f"cannot verify: incomplete AWS credentials ({err}); set both keys or AWS_PROFILE"
    if isinstance(err, EndpointConnectionError | ConnectTimeoutError | ReadTimeoutError):
        return f"cannot verify: EC2 unreachable ({err}); check the network and the region"
    if isinstance(err, ClientError):
        e = err.response.get("Error", {})
        return f"cannot verify: {e.get('Code')}: {e.get('Message')}"
    return f"cannot verify: {type(err).__name__}: {err}"


def fetch_offerings(
    ec2: Any, instance_type: str, budget: Budget | None = None
) -> set[str] | Unavailable:
    """AZs of the client's region that offer instance_type."""

    def call() -> set[str]:
        pages = ec2.get_paginator("describe_instance_type_offerings").paginate(
            LocationType="availability-zone",
            Filters=[{"Name": "instance-type", "Values": [instance_type]}],
        )
        return {o["Location"] for page in pages for o in page["InstanceTypeOfferings"]}

    try:
        return _ask(budget, call)
    except Exception as err:  # every failure becomes an honest "cannot verify"
        return Unavailable(_why(err))


def fetch_region_azs(ec2: Any, budget: Budget | None = None) -> list[str] | Unavailable:
    try:
        zones = _ask(
            budget,
            lambda: ec2.describe_availability_zones(
                Filters=[{"Name": "zone-type", "Values": ["availability-zone"]}]
            ),
        )["AvailabilityZones"]
        return sorted(z["ZoneName"] for z in zones)
    except Exception as err:
        return Unavailable(_why(err))


def fetch_reservation(
    ec2: Any, reservation_id: str, budget: Budget | None = None
) -> dict[str, Any] | Unavailable | None:
    """One reservation by id (one call per id: a missing id fails the whole batched call)."""
    from botocore.exceptions import ClientError

    try:
        found = _ask(
            budget,
            lambda: ec2.describe_capacity_reservations(CapacityReservationIds=[reservation_id]),
        )
    except ClientError as err:
        if err.response.get("Error", {}).get("Code", "").startswith("InvalidCapacityReservationId"):
            return None
        return Unavailable(_why(err))
    except Exception as err:
        return Unavailable(_why(err))
    items = found.get("CapacityReservations", [])
    return items[0] if items else None


def run_preflight(
    ec2: Any,
    settings: Any,
    region: str,
    now: datetime | None = None,
    budget: Budget | None = None,
) -> list[Finding]:
    """Every finding for every pool; the client must be for `region`; every EC2 call within
    what is left of `budget` (None: botocore's own timeouts only)."""
    now = now or datetime.now(UTC)
    reqs = requirements(settings)
    region_azs = fetch_region_azs(ec2, budget)
    known_azs = region_azs if isinstance(region_azs, list) else []
    findings: list[Finding] = []
    offerings: dict[str, set[str] | Unavailable] = {}
    for req in reqs:
        if req.instance_type not in offerings:
            offerings[req.instance_type] = fetch_offerings(ec2, req.instance_type, budget)
        offered = offerings[req.instance_type]
        if isinstance(region_azs, Unavailable) and not req.availability_zones:
            # The AZs an unpinned pool lands in come from the region's list: unknown as well.
            offered = offered if isinstance(offered, Unavailable) else region_azs
        findings.append(evaluate_offering(req, offered, region, known_azs))
        if req.reservation_id:
            found = fetch_reservation(ec2, req.reservation_id, budget)
            findings.extend(evaluate_reservation(req, found, now))
    return findings


def report(findings: Sequence[Finding], region: str, profile: str) -> str:
    code = exit_code(findings)
    verdict = {
        EXIT_OK: "OK: capacity checks passed",
        EXIT_FAIL: "FAIL: the deploy would fail (or never get nodes) for capacity",
        EXIT_UNKNOWN: "CANNOT VERIFY: nothing failed, but some checks could not be run",
    }[code]
    lines = [f"capacity preflight: profile {profile}, region {region}"]
    lines += [f.line() for f in findings]
    lines.append(verdict)
    return "\n".join(lines)


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    """The capacity check flags (`python -m trnspec_tools capacity` and scripts/capacity.py)."""
    parser.add_argument("--profile", default="default", help="config/<profile>.yaml")
    parser.add_argument(
        "-c",
        "--context",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="settings override, as with `cdk -c` (repeatable)",
    )
    parser.add_argument("--region", help="region to check (default: the profile's, then AWS's)")
    parser.add_argument(
        "--timeout",
        type=float_arg(0, 86400.0, lo_open=True),
        default=TOTAL_TIMEOUT_S,
        help=f"seconds for the whole preflight, every EC2 call included (default"
        f" {TOTAL_TIMEOUT_S:g}); a check it cuts off is 'cannot verify'",
    )


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="capacity.py",
        description="Check Trn2 capacity for a deployment profile before `cdk deploy`.",
        epilog="Exit: 0 ok, 1 would fail for capacity, 2 bad input, 3 could not verify.",
    )
    add_cli_args(parser)
    return parser.parse_args(argv)


def _client(region: str | None) -> tuple[int, Any, str | None]:
    """(exit code, EC2 client or None, region): one line on stderr when there is no client."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, PartialCredentialsError

    try:
        session = boto3.session.Session()
        region = region or session.region_name
    except BotoCoreError as err:  # e.g. AWS_PROFILE names a profile that does not exist
        print(f"cannot read the AWS configuration: {err}", file=sys.stderr)
        return EXIT_USAGE, None, region
    if not region:
        print(
            "no region: set `region` in the profile, pass --region, or set AWS_REGION",
            file=sys.stderr,
        )
        return EXIT_USAGE, None, region
    if region_problem(region) is not None:
        print(f"region {region!r} is not a region name like us-east-2", file=sys.stderr)
        return EXIT_USAGE, None, region
    config = Config(
        connect_timeout=EC2_CONNECT_TIMEOUT_S,
        read_timeout=EC2_READ_TIMEOUT_S,
        retries={"total_max_attempts": EC2_TOTAL_ATTEMPTS, "mode": "standard"},
    )
    try:
        return EXIT_OK, session.client("ec2", region_name=region, config=config), region
    except PartialCredentialsError as err:
        print(
            f"CANNOT VERIFY: incomplete AWS credentials ({err}); set both keys or AWS_PROFILE",
            file=sys.stderr,
        )
        return EXIT_UNKNOWN, None, region
    except BotoCoreError as err:
        print(f"CANNOT VERIFY: cannot create an EC2 client: {err}", file=sys.stderr)
        return EXIT_UNKNOWN, None, region


@exits_on_bad_input("capacity.py")
def main(argv: Sequence[str] | None = None, ec2: Any = None) -> int:
    args = _parse_args(argv)
    from infra.settings import SettingsError, load_settings

    overrides: dict[str, str] = {}
    for item in args.context:
        key, sep, value = item.partition("=")
        if not sep or not key:
            print(f"-c {item!r}: use KEY=VALUE, e.g. -c region=us-east-2", file=sys.stderr)
            return EXIT_USAGE
        overrides[key] = value
    try:
        settings = load_settings(args.profile, overrides)
    except SettingsError as err:
        print(err, file=sys.stderr)
        return EXIT_USAGE
    region = args.region or settings.region
    if ec2 is None:
        code, ec2, region = _client(region)
        if ec2 is None:
            return code
    region = region or ec2.meta.region_name
    if region_problem(str(region)) is not None:
        print(f"region {region!r} is not a region name like us-east-2", file=sys.stderr)
        return EXIT_USAGE
    if settings.region and region != settings.region:
        print(f"--region {region} is not the profile's region {settings.region}", file=sys.stderr)
        return EXIT_USAGE
    findings = run_preflight(ec2, settings, region, budget=Budget(args.timeout, time.monotonic()))
    print(report(findings, region, args.profile))
    return exit_code(findings)


if __name__ == "__main__":
    sys.exit(main())
