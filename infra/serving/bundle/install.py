"""The init container's script: fetch the trnspec bundle from S3, check its sha256, extract it,
and check the image has what it needs. Runs inside the public Neuron image before any container
that runs trnspec (infra/serving/manifests/bundle.py renders it as `python -c <this file>`), so
it imports nothing but the standard library and boto3 (in AWS's Neuron vLLM images:
infra/serving/manifests/bundle.py cites the Dockerfile).

    python -c "$(cat install.py)" --uri s3://B/K --sha256 HEX --dest DIR \\
        --require pydantic=pydantic>=2.7,<3 ...

Each failure is one line on stderr naming what is wrong and the fix, and exit status 1.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import importlib.metadata
import io
import os
import re
import shutil
import sys
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path, PurePosixPath

#: Waits between download attempts: Pod Identity credentials or the endpoint may lag the pod.
RETRY_DELAYS = (5.0, 10.0, 20.0, 40.0, 80.0)
#: What every failure line starts with.
PREFIX = "trnspec bundle:"
_OPS = {
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
}


class InstallError(Exception):
    """One line: what is wrong and the fix."""


#: S3 general purpose bucket names (Amazon S3 User Guide, "General purpose bucket naming rules"):
#: trnspec.boundary.aws_names.bucket_problem's rule, which this script cannot import (it runs
#: before trnspec is installed); tests/infra/serving/bundle/test_install.py holds the two equal.
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", re.ASCII)
_IPV4_FORM = re.compile(r"[0-9]{1,3}(?:\.[0-9]{1,3}){3}", re.ASCII)
_BUCKET_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
_BUCKET_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")


def is_bucket_name(name: str) -> bool:
    """Whether S3 takes `name` as a general purpose bucket's name."""
    return (
        _BUCKET.fullmatch(name) is not None
        and not any(bad in name for bad in ("..", ".-", "-."))
        and not _IPV4_FORM.fullmatch(name)
        and not name.startswith(_BUCKET_PREFIXES)
        and not name.endswith(_BUCKET_SUFFIXES)
    )


def parse_s3_uri(uri: str) -> tuple[str, str]:
    """(bucket, key) of s3://BUCKET/KEY: a bucket name S3 takes and a key that is not empty."""
    bucket, slash, key = uri.removeprefix("s3://").partition("/")
    if not uri.startswith("s3://") or not slash or not key:
        raise InstallError(f"--uri {uri!r}: not s3://bucket/key; fix: render the manifests again")
    if not is_bucket_name(bucket):
        raise InstallError(
            f"--uri {uri!r}: {bucket!r} is not an S3 bucket name (3-63 lowercase letters, digits,"
            " dots or hyphens); fix: render the manifests again with the bundle's bucket"
        )
    return bucket, key


def download(uri: str, sleep: Callable[[float], None], delays: tuple[float, ...]) -> bytes:
    """The object's bytes, retried after each of `delays` for any AWS or network error."""
    import boto3  # the image's; checked with the rest in check_requirements
    from botocore.exceptions import BotoCoreError, ClientError

    bucket, key = parse_s3_uri(uri)
    client = boto3.client("s3")
    for delay in (*delays, None):
        try:
            return client.get_object(Bucket=bucket, Key=key)["Body"].read()
        except (BotoCoreError, ClientError) as err:
            if delay is None:
                detail = " ".join(str(err).split())
                raise InstallError(
                    f"cannot read {uri}: {detail}; fix: the pod's role needs s3:GetObject on it "
                    "(infra/serving/stack.py grants it) and the bundle must be uploaded "
                    "(cdk deploy of the serving stack)"
                ) from None
            sleep(delay)
    raise AssertionError("unreachable")


def check_sha256(data: bytes, expected: str, uri: str) -> None:
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected.lower():
        raise InstallError(
            f"{uri} has sha256 {actual}, the manifest expects {expected}; fix: redeploy the "
            "serving stack (cdk deploy uploads the bundle its manifests name)"
        )


#: The prefix of the staging directory an extraction fills inside `--dest` before it replaces
#: dest's contents (inside, not beside: dest is the bundle emptyDir's mount point, which cannot
#: be renamed, under a read-only root filesystem).
STAGING_PREFIX = ".trnspec-incoming-"
#: What reading a damaged archive raises: a truncated or foreign object, a bad CRC, a broken
#: deflate stream, an unsupported compression method or an encrypted entry.
_BAD_ARCHIVE = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError)


def prepare_dest(dest: Path) -> Path:
    """A new, empty staging directory inside `dest` (made if absent), proving dest is a
    writable directory before anything is downloaded; InstallError otherwise."""
    fix = "fix: mount a writable volume there (the pod's trnspec-bundle emptyDir)"
    if dest.is_symlink():
        raise InstallError(f"--dest {dest}: is a symbolic link; {fix}, not a link")
    if dest.exists() and not dest.is_dir():
        raise InstallError(f"--dest {dest}: is not a directory; {fix}")
    try:
        dest.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=dest))
    except OSError as err:
        problem = err.strerror or err
        raise InstallError(f"--dest {dest}: cannot write there ({problem}); {fix}") from None


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def extract(
    data: bytes, dest: Path, staging: Path | None = None, source: str = "the bundle"
) -> list[str]:
    """Unpack into `dest`, replacing what an earlier run of this container left there. The
    archive is unpacked whole into `staging` (prepare_dest's) first; only then are dest's old
    entries removed and the new ones renamed into place, so a damaged archive or a full volume
    leaves dest as it was and no staging directory behind."""
    staging = prepare_dest(dest) if staging is None else staging
    try:
        names = _unpack(data, dest, staging, source)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    try:
        for child in dest.iterdir():
            if child != staging:
                _remove(child)  # an earlier run's files, or a staging dir it left when killed
        for child in staging.iterdir():
            child.rename(dest / child.name)
        staging.rmdir()
    except OSError as err:
        raise InstallError(
            f"--dest {dest}: cannot replace its contents ({err.strerror or err}); fix: mount an "
            "empty writable volume there (the pod's trnspec-bundle emptyDir)"
        ) from None
    return names


def _unpack(data: bytes, dest: Path, staging: Path, source: str) -> list[str]:
    rebuild = "fix: upload the bundle again (cdk deploy of the serving stack)"
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = archive.namelist()
            for name in names:
                path = PurePosixPath(name)
                if path.is_absolute() or ".." in path.parts or not path.parts:
                    raise InstallError(f"bundle entry {name!r} escapes {dest}; fix: rebuild it")
            for info in archive.infolist():
                archive.extract(info, staging)
    except _BAD_ARCHIVE as err:
        detail = " ".join(str(err).split())[:200]
        raise InstallError(
            f"{source} ({len(data)} bytes) is not a readable zip: {detail}; {rebuild}"
        ) from None
    except OSError as err:
        raise InstallError(
            f"--dest {dest}: cannot unpack {source} there ({err.strerror or err}); fix: give "
            "the volume room for it (the trnspec-bundle emptyDir's sizeLimit)"
        ) from None
    return names


def _release(version: str) -> tuple[int, ...]:
    """The leading numeric release: '2.11.7' -> (2, 11, 7), '1.26.0rc1' -> (1, 26, 0)."""
    parts = []
    for piece in version.split("."):
        digits = re.match(r"\d+", piece)
        if digits is None:
            break
        parts.append(int(digits.group()))
        if digits.group() != piece:
            break
    return tuple(parts)


def _satisfies(version: str, specifier: str) -> bool:
    for clause in filter(None, specifier.split(",")):
        op = next(o for o in sorted(_OPS, key=len, reverse=True) if clause.startswith(o))
        want, have = _release(clause[len(op) :]), _release(version)
        width = max(len(want), len(have))
        have, want = have + (0,) * (width - len(have)), want + (0,) * (width - len(want))
        if not _OPS[op](have, want):
            return False
    return True


def check_requirement(argument: str) -> str | None:
    """`module=distribution specifier` -> None when it imports within range, else the problem."""
    module, _, requirement = argument.partition("=")
    match = re.match(r"([A-Za-z0-9._-]+)(.*)", requirement)
    if not module or match is None:
        raise InstallError(f"--require {argument!r}: not module=distribution>=x,<y")
    distribution, specifier = match.groups()
    fix = (
        f"fix: run a Neuron image that ships {requirement}: its generation in "
        "trnspec.config.images, or an image built FROM it with that package "
        "(docs/platform.md, 'How trnspec reaches the pods')"
    )
    try:
        importlib.import_module(module)
    except ImportError as err:
        return f"{distribution} ({requirement}) does not import in this image: {err}; {fix}"
    try:
        version = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None  # importable without metadata (vendored): nothing to compare
    if not _satisfies(version, specifier):
        return f"{distribution} {version} in this image, trnspec needs {requirement}; {fix}"
    return None


def main(
    argv: list[str] | None = None,
    *,
    sleep: Callable[[float], None] = time.sleep,
    delays: tuple[float, ...] = RETRY_DELAYS,
) -> int:
    parser = argparse.ArgumentParser(prog="trnspec-bundle-install", description=__doc__)
    parser.add_argument("--uri", required=True, help="s3://bucket/key of the bundle")
    parser.add_argument("--sha256", required=True, help="its expected sha256 (hex)")
    parser.add_argument("--dest", required=True, type=Path, help="directory to extract into")
    parser.add_argument("--require", action="append", default=[], help="module=dist>=x,<y")
    args = parser.parse_args(argv)
    try:
        problems = [p for p in map(check_requirement, args.require) if p is not None]
        if problems:
            for problem in problems:
                print(PREFIX, problem, file=sys.stderr)
            return 1
        existed = os.path.lexists(args.dest)
        staging = prepare_dest(args.dest)  # before the download: a bad --dest costs nothing
        try:
            data = download(args.uri, sleep, delays)
            check_sha256(data, args.sha256, args.uri)
            names = extract(data, args.dest, staging, args.uri)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            if not existed:
                with contextlib.suppress(OSError):
                    args.dest.rmdir()  # made by prepare_dest: a failed run leaves none
            raise
    except InstallError as err:
        print(PREFIX, err, file=sys.stderr)
        return 1
    print(f"{PREFIX} {len(names)} files from {args.uri} (sha256 {args.sha256}) in {args.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
