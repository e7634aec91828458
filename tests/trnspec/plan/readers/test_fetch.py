"""Outside evidence is read bounded and refused in one line naming the flag: a rows file at a path
or in S3 (moto), and an HTTP API's base URL (trnspec.plan.readers.fetch)."""

from __future__ import annotations

import socket
import threading
from pathlib import Path
from typing import Any

import pytest
from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.user_input import MAX_INPUT_BYTES
from trnspec.plan.readers.fetch import _read_s3, get_json, http_url, read_rows_text


def test_a_local_rows_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "rows.yaml"
    path.write_text("measurements: []\n")
    assert read_rows_text("--measured", str(path)) == "measurements: []\n"


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(BoundaryError) as err:
        read_rows_text("--measured", str(tmp_path / "none.yaml"))
    assert "cannot read it (No such file or directory)" in str(err.value)


def test_a_rows_file_in_s3_is_read(s3_bkt: Any) -> None:
    s3_bkt.put_object(Bucket="bkt", Key="calibration/t/trn2_rows.yaml", Body=b"measurements: []\n")
    text = read_rows_text("--measured", "s3://bkt/calibration/t/trn2_rows.yaml")
    assert text == "measurements: []\n"


@pytest.mark.parametrize(
    ("key", "body", "needle"),
    [
        ("missing.yaml", None, "S3 answered NoSuchKey"),
        ("big.yaml", b"x" * (MAX_INPUT_BYTES + 1), "larger than"),
        ("binary.yaml", b"\xff\xfe", "not UTF-8"),
    ],
    ids=["missing", "too-large", "not-utf8"],
)
def test_an_s3_object_that_cannot_be_rows_is_one_line(
    s3_bkt: Any, key: str, body: bytes | None, needle: str
) -> None:
    if body is not None:
        s3_bkt.put_object(Bucket="bkt", Key=key, Body=body)
    with pytest.raises(BoundaryError) as err:
        read_rows_text("--measured", f"s3://bkt/{key}")
    assert str(err.value).startswith(f"--measured=s3://bkt/{key}: ") and needle in str(err.value)


@pytest.mark.parametrize(
    "url",
    ["ftp://host", "http://", "http://u:p@host:9090", "http://host:9090/?q=1", "localhost:9090"],
)
def test_only_a_plain_http_base_url_is_taken(url: str) -> None:
    with pytest.raises(BoundaryError):
        http_url("--acceptance-from", url)


def test_a_base_url_loses_its_trailing_slash() -> None:
    assert http_url("--acceptance-from", "http://127.0.0.1:9090/") == "http://127.0.0.1:9090"


def test_an_api_that_never_answers_is_cut_off_at_the_total_bound_in_one_line() -> None:
    """A server that accepts and never answers (a listening socket nobody reads): the error
    names the flag, the URL, the bound and the fix (the time it took is not asserted)."""
    with socket.create_server(("127.0.0.1", 0)) as silent:
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/api/v1/query"
        with pytest.raises(BoundaryError) as err:
            get_json("--acceptance-from", url, {"query": "up"}, total_s=0.2)
    message = str(err.value)
    assert message.startswith(f"--acceptance-from={url}: no whole answer within 0.2 s")
    assert "check that the URL is the Prometheus HTTP API" in message and "\n" not in message


@pytest.mark.parametrize(
    "url",
    ["http://[::1", "http://a..b:9090", "http://" + "a" * 64 + ".example.com:9090"],
    ids=["open-ipv6-bracket", "empty-label", "64-char-label"],
)
def test_a_url_no_client_could_use_is_one_line_before_any_connection(url: str) -> None:
    with pytest.raises(BoundaryError) as err:
        http_url("--acceptance-from", url)
    assert (err.value.field, err.value.value) == ("--acceptance-from", url)
    assert "\n" not in str(err.value)


def test_an_s3_read_that_never_ends_is_cut_off_at_its_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """botocore's timeouts are per read: the object read as a whole has its own bound."""
    release = threading.Event()

    class Stuck:
        def get_object(self, **_: object) -> dict[str, object]:
            release.wait(3.0)  # then an empty answer: a read with no bound fails otherwise
            return {}

    monkeypatch.setattr("trnspec.staging.transfer.s3_client", lambda: Stuck())
    try:
        with pytest.raises(BoundaryError) as err:
            _read_s3("--measured", "s3://bkt/rows.yaml", total_s=0.05)
    finally:
        release.set()
    assert str(err.value).startswith(
        "--measured=s3://bkt/rows.yaml: S3 gave no whole object within 0.05 s"
    )
