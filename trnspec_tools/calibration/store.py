"""Where a calibration's results live: s3://BUCKET/calibration/<UTC yyyymmddThhmmssZ>/ holding
calibration.json and trn2_rows.yaml, written by the Job (or `calibrate local`) and read back by
`calibrate fetch`. boto3 clients are passed in (moto in tests and in `calibrate local`).

Every read of the bucket (a listing, a head, an object with its body) is bounded in total time by
trnspec.boundary.http_read.within (botocore's timeouts are per read: an S3 answer that trickles
would hold `calibrate fetch` for as long as it trickles); past it, StoreError naming the object."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from trnspec.boundary.http_read import CallTimedOut, within
from trnspec.boundary.write import write_file

PREFIX = "calibration/"
RESULT_JSON = "calibration.json"
ROWS_YAML = "trn2_rows.yaml"
RESULT_FILES = (RESULT_JSON, ROWS_YAML)
STAMP_FORMAT = "%Y%m%dT%H%M%SZ"
_STAMP = re.compile(r"^\d{8}T\d{6}Z$")
#: The largest object `calibrate fetch` or the prompt reader takes (a result is tens of KB).
MAX_OBJECT_BYTES = 64 * 1024 * 1024
#: The longest one read of the bucket may take in all, s (as client.stack_endpoint's AWS calls).
READ_TIMEOUT_S = 60.0

T = TypeVar("T")


class StoreError(RuntimeError):
    """The bucket cannot be read or written as asked: one line naming what and the fix."""


def _bounded(timeout_s: float, where: str, call: Callable[[], T]) -> T:
    """`call()` (a blocking boto3 call) within `timeout_s` in all, else StoreError."""
    try:
        return within(timeout_s, call)
    except CallTimedOut:
        raise StoreError(_late(where, timeout_s)) from None


def _late(where: str, timeout_s: float) -> str:
    return (
        f"{where}: S3 gave no whole answer within {timeout_s:g} s (it answers too slowly, or"
        " never); check the network and --region"
    )


def stamp(now: datetime | None = None) -> str:
    """The UTC stamp naming a run's prefix (sorts in time order as text)."""
    return (now or datetime.now(UTC)).astimezone(UTC).strftime(STAMP_FORMAT)


def run_prefix(run_stamp: str) -> str:
    if not _STAMP.match(run_stamp):
        raise ValueError(f"stamp={run_stamp!r}: use the UTC form yyyymmddThhmmssZ")
    return f"{PREFIX}{run_stamp}/"


def upload(s3: Any, bucket: str, run_stamp: str, files: Mapping[str, bytes]) -> str:
    """Put `files` ({name: bytes}) under the run's prefix; calibration.json last, so a prefix
    that holds it is complete. Returns s3://BUCKET/PREFIX."""
    prefix = run_prefix(run_stamp)
    order = sorted(files, key=lambda name: name == RESULT_JSON)
    for name in order:
        s3.put_object(Bucket=bucket, Key=prefix + name, Body=files[name])
    return f"s3://{bucket}/{prefix}"


def run_stamps(s3: Any, bucket: str, timeout_s: float = READ_TIMEOUT_S) -> list[str]:
    """Every run stamp under calibration/ (oldest first)."""
    stamps: list[str] = []
    paginator = s3.get_paginator("list_objects_v2")
    pages = _bounded(
        timeout_s,
        f"s3://{bucket}/{PREFIX}",
        lambda: list(paginator.paginate(Bucket=bucket, Prefix=PREFIX, Delimiter="/")),
    )
    for page in pages:
        for common in page.get("CommonPrefixes", []):
            name = str(common.get("Prefix", ""))[len(PREFIX) :].rstrip("/")
            if _STAMP.match(name):
                stamps.append(name)
    return sorted(stamps)


def _has(s3: Any, bucket: str, key: str, timeout_s: float = READ_TIMEOUT_S) -> bool:
    from botocore.exceptions import ClientError

    try:
        _bounded(timeout_s, f"s3://{bucket}/{key}", lambda: s3.head_object(Bucket=bucket, Key=key))
    except ClientError:
        return False
    return True


def newest_complete(s3: Any, bucket: str, timeout_s: float = READ_TIMEOUT_S) -> str | None:
    """The newest stamp whose prefix holds calibration.json (a run still writing has none)."""
    for run_stamp in reversed(run_stamps(s3, bucket, timeout_s)):
        if _has(s3, bucket, run_prefix(run_stamp) + RESULT_JSON, timeout_s):
            return run_stamp
    return None


def read_object(s3: Any, bucket: str, key: str, timeout_s: float = READ_TIMEOUT_S) -> bytes:
    """An object's bytes, at most MAX_OBJECT_BYTES, the whole answer within `timeout_s`;
    StoreError naming the object otherwise."""
    from botocore.exceptions import BotoCoreError, ClientError

    where = f"s3://{bucket}/{key}"
    deadline = time.monotonic() + timeout_s
    try:
        obj = _bounded(timeout_s, where, lambda: s3.get_object(Bucket=bucket, Key=key))
        if int(obj.get("ContentLength", 0)) > MAX_OBJECT_BYTES:
            raise StoreError(
                f"{where}: larger than {MAX_OBJECT_BYTES // 2**20} MiB; "
                "a calibration file is far smaller"
            )
        left = deadline - time.monotonic()
        return bytes(within(left, lambda: obj["Body"].read(MAX_OBJECT_BYTES + 1)))
    except CallTimedOut:
        raise StoreError(_late(where, timeout_s)) from None
    except ClientError as exc:
        message = exc.response.get("Error", {}).get("Message", str(exc))
        raise StoreError(f"s3://{bucket}/{key}: {message}") from exc
    except BotoCoreError as exc:
        raise StoreError(f"s3://{bucket}/{key}: cannot reach S3 ({exc})") from exc


def download_to(
    s3: Any, bucket: str, key: str, path: Path, timeout_s: float = READ_TIMEOUT_S
) -> Path:
    return write_file(path, read_object(s3, bucket, key, timeout_s))


def read_run(
    s3: Any, bucket: str, run_stamp: str, timeout_s: float = READ_TIMEOUT_S
) -> dict[str, bytes]:
    """The run's files ({name: bytes}, only the ones present; calibration.json always), read
    whole before anything is written; each read within `timeout_s` in all."""
    prefix = run_prefix(run_stamp)
    return {
        name: read_object(s3, bucket, prefix + name, timeout_s)
        for name in RESULT_FILES
        if name == RESULT_JSON or _has(s3, bucket, prefix + name, timeout_s)
    }


def fetch_run(s3: Any, bucket: str, run_stamp: str, out_dir: Path) -> list[Path]:
    """The run's files into `out_dir`/<stamp>/ (only the ones present; calibration.json always)."""
    prefix = run_prefix(run_stamp)
    written = []
    for name in RESULT_FILES:
        key = prefix + name
        if name != RESULT_JSON and not _has(s3, bucket, key):
            continue
        written.append(download_to(s3, bucket, key, out_dir / run_stamp / name))
    return written
