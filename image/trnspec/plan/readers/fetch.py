"""Evidence a plan reads from outside: a rows file (a path or `s3://BUCKET/KEY`) and a JSON answer
of an HTTP API, each bounded in size and time; every failure is one BoundaryError naming the
flag, the value and the fix (never a traceback, never a partial read used)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.json_io import loads
from trnspec.boundary.user_input import MAX_INPUT_BYTES, InputReadError, read_text_file
from trnspec.config.s3_uri import is_s3_uri, parse_s3_uri

#: Largest HTTP answer read (a Prometheus query of two sums is a few hundred bytes).
MAX_HTTP_BYTES = 1024 * 1024
#: Seconds to connect to, and to read from, an HTTP API.
HTTP_TIMEOUT_S = 10.0


def read_rows_text(flag: str, location: str) -> str:
    """The text of a rows file at a local path or an S3 URI (at most MAX_INPUT_BYTES, UTF-8)."""
    if is_s3_uri(location):
        return _read_s3(flag, location)
    try:
        return read_text_file(Path(location))
    except (OSError, InputReadError) as err:
        why = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise BoundaryError(flag, location, f"cannot read it ({why}); give a rows file") from None


def _read_s3(flag: str, uri: str) -> str:
    from botocore.exceptions import BotoCoreError, ClientError

    from trnspec.staging.transfer import StagingError, s3_client

    try:
        where = parse_s3_uri(uri)
    except ValueError as err:
        raise BoundaryError(flag, uri, str(err)) from None
    try:
        body = s3_client().get_object(Bucket=where.bucket, Key=where.prefix)["Body"]
        data = body.read(MAX_INPUT_BYTES + 1)
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
    """An http(s) URL with a host, without credentials or a query (BoundaryError otherwise)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BoundaryError(flag, url, "give an http(s) URL, e.g. http://127.0.0.1:9090")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise BoundaryError(flag, url, "give the base URL only (no user, query or fragment)")
    return url.rstrip("/")


def get_json(flag: str, url: str, params: dict[str, str]) -> Any:
    """GET `url` with `params`; the JSON answer, at most MAX_HTTP_BYTES, within HTTP_TIMEOUT_S."""
    import httpx

    try:
        with (
            httpx.Client(timeout=HTTP_TIMEOUT_S, follow_redirects=False) as client,
            client.stream("GET", url, params=params) as response,
        ):
            data = bytearray()
            for chunk in response.iter_bytes():
                data += chunk
                if len(data) > MAX_HTTP_BYTES:
                    raise BoundaryError(flag, url, f"answered more than {MAX_HTTP_BYTES} bytes")
            status = response.status_code
    except httpx.HTTPError as err:
        raise BoundaryError(flag, url, f"unreachable ({type(err).__name__})") from None
    if status != 200:
        raise BoundaryError(flag, url, f"answered HTTP {status}; is it the Prometheus API?")
    return loads(bytes(data), flag, shown=url, max_bytes=MAX_HTTP_BYTES)
