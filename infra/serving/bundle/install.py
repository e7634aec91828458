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
import hashlib
import importlib
import importlib.metadata
import io
import re
import shutil
import sys
import time
import zipfile
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


def parse_s3_uri(uri: str) -> tuple[str, str]:
    if not uri.startswith("s3://") or "/" not in uri[5:]:
        raise InstallError(f"--uri {uri!r}: not s3://bucket/key; fix: render the manifests again")
    bucket, _, key = uri[5:].partition("/")
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


def extract(data: bytes, dest: Path) -> list[str]:
    """Unpack into `dest`, replacing what an earlier run of this container left there."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = archive.namelist()
        for name in names:
            path = PurePosixPath(name)
            if path.is_absolute() or ".." in path.parts or not path.parts:
                raise InstallError(f"bundle entry {name!r} escapes {dest}; fix: rebuild it")
        dest.mkdir(parents=True, exist_ok=True)
        for child in dest.iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()
        archive.extractall(dest)
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
        data = download(args.uri, sleep, delays)
        check_sha256(data, args.sha256, args.uri)
        names = extract(data, args.dest)
    except InstallError as err:
        print(PREFIX, err, file=sys.stderr)
        return 1
    print(f"{PREFIX} {len(names)} files from {args.uri} (sha256 {args.sha256}) in {args.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
