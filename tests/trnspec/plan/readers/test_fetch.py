"""Outside evidence is read bounded and refused in one line naming the flag: a rows file at a path
or in S3 (moto), and an HTTP API's base URL (trnspec.plan.readers.fetch)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.user_input import MAX_INPUT_BYTES
from trnspec.plan.readers.fetch import http_url, read_rows_text


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
