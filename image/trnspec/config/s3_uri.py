"""S3 URIs as the engine accepts them: `s3://BUCKET/KEY/PREFIX`, parsed and normalised.

Pure (no boto3), so the config schema can check model sources without importing staging.
A source decides where files are written (`<models root>/<bucket>/<prefix>`), so a prefix with
`.` or `..` segments, empty segments or control characters is refused rather than resolved.
Bucket names follow S3's general purpose bucket rules, the one rule in
trnspec.boundary.aws_names (3-63 characters; lowercase letters, digits, dots and hyphens; a
letter or digit at each end; no reserved prefix or suffix).
"""

from __future__ import annotations

from dataclasses import dataclass

from trnspec.boundary.aws_names import bucket_problem

_FORM = "expected s3://BUCKET/PREFIX"


@dataclass(frozen=True)
class S3Location:
    """A bucket and a key prefix (no leading or trailing slash; "" for the bucket root)."""

    bucket: str
    prefix: str = ""

    def key(self, relative: str) -> str:
        return f"{self.prefix}/{relative}" if self.prefix else relative

    def child(self, name: str) -> S3Location:
        return S3Location(self.bucket, self.key(name.strip("/")))

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"


def is_s3_uri(value: str) -> bool:
    return value.startswith("s3://")


def s3_folder_problem(text: str) -> str | None:
    """Why `text` is not s3://BUCKET or s3://BUCKET/PREFIX (an upload destination), or None."""
    try:
        parse_s3_uri(text, require_key=False)
    except ValueError as exc:
        return str(exc).replace(_FORM, "expected s3://BUCKET or s3://BUCKET/PREFIX")
    return None


def parse_s3_uri(uri: str, *, require_key: bool = True) -> S3Location:
    """s3://bucket/prefix -> S3Location (trailing slash dropped); a ValueError names the value,
    what is wrong and the expected form. `require_key=False` also accepts a bucket root."""
    if not isinstance(uri, str) or not is_s3_uri(uri):
        raise ValueError(f"not an S3 URI; {_FORM}")
    bucket, _, prefix = uri[len("s3://") :].partition("/")
    if not bucket:
        raise ValueError(f"no bucket; {_FORM}")
    if (problem := bucket_problem(bucket)) is not None:
        raise ValueError(f"{bucket[:70]!r}: {problem}; {_FORM}")
    prefix = prefix.rstrip("/")
    if not prefix:
        if require_key:
            raise ValueError(f"no key prefix; {_FORM} (the model's folder)")
        return S3Location(bucket, "")
    parts = prefix.split("/")
    if any(p in {"", ".", ".."} for p in parts):
        raise ValueError(
            "the prefix has an empty, '.' or '..' segment; write the folder's own path"
        )
    if not prefix.isprintable():
        raise ValueError("the prefix has a control character")
    return S3Location(bucket, prefix)
