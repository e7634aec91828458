"""Evidence a plan reads from outside: a rows file (a path or `s3://BUCKET/KEY`) and a JSON answer
of an HTTP API, each bounded in size and time; every failure is one BoundaryError naming the
flag, the value and the fix (never a traceback, never a partial read used)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trnspec.boundary import http_read
from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.json_io import loads
from trnspec.boundary.user_input import MAX_INPUT_BYTES, InputReadError, read_text_file
from trnspec.config.s3_uri import is_s3_uri, parse_s3_uri

#: Largest HTTP answer read (a Prometheus query of two sums is a few hundred bytes).
MAX_HTTP_BYTES = 1024 * 1024
#: Seconds for the whole of one HTTP answer (connect, headers and body), and to connect.
HTTP_TOTAL_S = 20.0
HTTP_CONNECT_S = 5.0
#: Seconds for the whole of one S3 object read (botocore's timeouts are per read).
S3_TOTAL_S = 60.0


def read_rows_text(flag: str, location: str) -> str:
    """The text of a rows file at a local path or an S3 URI (at most MAX_INPUT_BYTES, UTF-8)."""
    if is_s3_uri(location):
        return _read_s3(flag, location)
    try:
        return read_text_file(Path(location))
    except (OSError, InputReadError) as err:
        why = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise BoundaryError(flag, location, f"cannot read it ({why}); give a rows file") from None


def _read_s3(flag: str, uri: str, total_s: float = S3_TOTAL_S) -> str:
    from botocore.exceptions import BotoCoreError, ClientError

    from trnspec.staging.transfer import StagingError, s3_client

    try:
        where = parse_s3_uri(uri)
    except ValueError as err:
        raise BoundaryError(flag, uri, str(err)) from None

    def read() -> bytes:
        body = s3_client().get_object(Bucket=where.bucket, Key=where.prefix)["Body"]
        return bytes(body.read(MAX_INPUT_BYTES + 1))

    try:
        data = http_read.within(total_s, read)
    except http_read.CallTimedOut:
        raise BoundaryError(
            flag,
            uri,
            f"S3 gave no whole object within {total_s:g} s; check the network, or"
            " copy the file here and give its path",
        ) from None
    except ClientError as err:
        code = err.response.get("Error", {}).get("Code", "error")
        raise BoundaryError(flag, uri, f"S3 answered {code}; check the bucket and key") from None
    except (BotoCoreError, StagingError) as err:
        raise BoundaryError(
            flag, uri, f"S3 unreachable ({type(err).__name__}); check credentials and region"
        ) from None
    if len(data) > MAX_INPUT_BYTES:
        raise BoundaryError(flag, uri, f"larger than {MAX_INPUT_BYTES // 1024} KiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise BoundaryError(flag, uri, "not UTF-8 text; give a rows file") from None


def http_url(flag: str, url: str) -> str:
    """An http(s) URL with a host DNS can look up, without credentials or a query
    (BoundaryError otherwise), without its trailing slash."""
    return http_read.base_url(flag, url)


def get_json(flag: str, url: str, params: dict[str, str], total_s: float = HTTP_TOTAL_S) -> Any:
    """GET `url` with `params`: the JSON answer, at most MAX_HTTP_BYTES, whole within `total_s`
    (a server that trickles its answer is cut off there, not waited on per read)."""
    bounds = http_read.Bounds(total_s, MAX_HTTP_BYTES, HTTP_CONNECT_S)
    try:
        answer = http_read.get(url, bounds, params=params)
    except http_read.ReadFailed as err:
        fix = {
            "timeout": "check that the URL is the Prometheus HTTP API and reachable from here",
            "too_large": "is it the Prometheus API?",
            "unreachable": "check the host and port",
        }[err.kind]
        raise BoundaryError(flag, url, f"{err}; {fix}") from None
    if answer.status != 200:
        raise BoundaryError(flag, url, f"answered HTTP {answer.status}; is it the Prometheus API?")
    return loads(answer.body, flag, shown=url, max_bytes=MAX_HTTP_BYTES)
