"""`python -m trnspec stage ...`: publish, fetch and verify models and compiled artifacts by hand.

The serve entrypoint stages automatically; these commands are for publishing a model once
(`upload`, or `hub` straight from the Hugging Face Hub: what the weights Job runs), pre-warming
a node or debugging a pod (`download`, `verify`), and finding a config's compile cache in S3
(`cache-key`).

Exit codes: 0 done; 1 a transfer or verification failed, or the directory is not exactly the
manifest's files (the message names the file and the cause; nothing unverified is left in
place); 2 bad input (arguments, a DEST that is a file or not writable); 3 S3 could not be
reached: no credentials or an unreachable endpoint (nothing was changed; run again once fixed).
Every failure is one message on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from trnspec.boundary.args import int_arg, path_arg
from trnspec.boundary.text import printable
from trnspec.cli.config_args import add_config_arguments, config_from_args
from trnspec.config.pod_contract import ENV_HF_TOKEN_SECRET
from trnspec.config.serving import ConfigError, Problem
from trnspec.staging.cache_key import compile_cache_key
from trnspec.staging.hub import (
    hub_to_s3,
    repo_id_problem,
    revision_problem,
    token_from_secret,
)
from trnspec.staging.manifest import FileEntry, ManifestError, read_manifest, verify, walk_files
from trnspec.staging.transfer import (
    MiB,
    StagingError,
    TransferSettings,
    download,
    ensure_writable_dir,
    parse_s3_uri,
    rich_progress,
    s3_client,
    upload,
)

EXIT_OK, EXIT_FAILED, EXIT_UNREACHABLE = 0, 1, 3
#: Characters of a failure shown (it may quote S3 keys and a manifest's paths: outside text).
MAX_SHOWN_ERROR = 1000


def _settings(args: argparse.Namespace) -> TransferSettings:
    part = args.part_size_mib * MiB
    return TransferSettings(
        workers=args.workers,
        max_attempts=args.attempts,
        multipart_threshold=part,
        multipart_chunksize=part,
        max_concurrency=args.parts_in_flight,
    )


def _s3_client() -> Any:
    return s3_client()


def _failed(action: str, err: StagingError) -> int:
    print(f"{action} failed: {printable(err, MAX_SHOWN_ERROR)}", file=sys.stderr)
    return EXIT_UNREACHABLE if err.retryable else EXIT_FAILED


def _location(value: str, flag: str) -> Any:
    try:
        return parse_s3_uri(value)
    except ValueError as err:
        raise ConfigError([Problem(flag, value, str(err))]) from None


def _cmd_download(args: argparse.Namespace) -> int:
    source = _location(args.source, "SOURCE")
    dest = Path(args.dest)
    try:
        ensure_writable_dir(dest)
    except StagingError as err:
        raise ConfigError([Problem("DEST", str(dest), str(err))]) from None
    try:
        with rich_progress(not args.no_progress) as bar:
            result = download(_s3_client(), source, dest, _settings(args), bar, prune=args.prune)
    except StagingError as err:
        return _failed("download", err)
    print(result.summary())
    if result.stale and not result.pruned:
        print(f"{dest}: not an exact copy (stale files kept); see above", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _unpublishable(src: Path) -> list[Problem]:
    """Files under src whose names a manifest cannot hold (a backslash, `..`), one Problem
    each, before any byte is sent: the manifest's own path rule (FileEntry) decides."""
    problems = []
    for path in walk_files(src):
        rel = path.relative_to(src).as_posix()
        try:
            FileEntry(path=rel, size=0, sha256="0" * 64)
        except ValidationError as err:
            why = str(err.errors()[0]["msg"]).removeprefix("Value error, ")
            problems.append(Problem("SRC", rel, f"{why}; rename the file"))
    return problems


def _cmd_upload(args: argparse.Namespace) -> int:
    src = Path(args.src)
    if not src.is_dir():
        raise ConfigError([Problem("SRC", str(src), "must be an existing local directory")])
    target = _location(args.target, "TARGET")
    if unpublishable := _unpublishable(src):
        raise ConfigError(unpublishable)
    try:
        with rich_progress(not args.no_progress) as bar:
            result = upload(_s3_client(), src, target, _settings(args), bar)
    except StagingError as err:
        return _failed("upload", err)
    print(result.summary())
    return EXIT_OK


def _hub_token() -> str | None:
    """The token in the secret named by ENV_HF_TOKEN_SECRET, read now (never at synth)."""
    arn = os.environ.get(ENV_HF_TOKEN_SECRET)
    if not arn:
        return None
    import boto3

    return token_from_secret(boto3.client("secretsmanager"), arn)


def _cmd_hub(args: argparse.Namespace) -> int:
    repo, at, revision = args.repo.partition("@")
    problems = [Problem("REPO", args.repo, why) for why in (repo_id_problem(repo),) if why]
    if at and (why := revision_problem(revision)) is not None:
        problems.append(Problem("REPO", args.repo, why))
    if problems:
        raise ConfigError(problems)
    target = _location(args.target, "TARGET")
    try:
        result = hub_to_s3(
            _s3_client(),
            repo,
            revision or None,
            target,
            Path(args.work_dir),
            settings=_settings(args),
            token=_hub_token(),
        )
    except StagingError as err:
        return _failed("hub", err)
    print(result.summary())
    return EXIT_OK


def _cmd_verify(args: argparse.Namespace) -> int:
    root = Path(args.dir)
    try:
        problems = verify(root, read_manifest(root))
    except ManifestError as err:
        print(f"verify failed: {printable(err, MAX_SHOWN_ERROR)}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as err:
        where = printable(err.filename or root)
        print(f"verify failed: {where}: {printable(err.strerror or err)}", file=sys.stderr)
        return EXIT_FAILED
    for p in problems[:50]:
        print(printable(p, MAX_SHOWN_ERROR), file=sys.stderr)
    if len(problems) > 50:
        print(f"... and {len(problems) - 50} more", file=sys.stderr)
    if problems:
        print(
            f"{root}: {len(problems)} file(s) missing, different or not in the manifest",
            file=sys.stderr,
        )
        return EXIT_FAILED
    print(f"{root}: exactly the manifest's files, each matching it")
    return EXIT_OK


def _cmd_cache_key(args: argparse.Namespace) -> int:
    print(compile_cache_key(config_from_args(args)))
    return EXIT_OK


def _transfer_flags(p: argparse.ArgumentParser) -> None:
    d = TransferSettings()
    part_mib = d.multipart_chunksize // MiB
    counts = (
        ("--workers", d.workers, "files in flight"),
        ("--parts-in-flight", d.max_concurrency, "parallel parts per large file"),
        ("--part-size-mib", part_mib, "multipart threshold and part size in MiB"),
        ("--attempts", d.max_attempts, "attempts per file before failing"),
    )
    for flag, default, meaning in counts:
        p.add_argument(
            flag, type=int_arg(1, 10_000), default=default, help=f"{meaning} (%(default)s)"
        )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


#: The line `trnspec --help` lists for the subcommand, and its description.
HELP = "publish/fetch/verify models and compiled artifacts in S3 (sha256 manifest)"
DESCRIPTION = (__doc__ or "").split("\n\n")[0]


def main(args: argparse.Namespace) -> int:
    """Run the parsed `stage ACTION`."""
    return int(args.stage_func(args))


def add_arguments(stage: argparse.ArgumentParser) -> None:
    """The actions of `stage` and their flags."""
    sub = stage.add_subparsers(dest="stage_command", required=True, metavar="ACTION")

    p = sub.add_parser("download", help="S3 -> local dir, verified and resumable")
    p.add_argument("source", metavar="SOURCE", help="s3://bucket/prefix (with a manifest)")
    p.add_argument("dest", metavar="DEST", type=path_arg(), help="local directory")
    p.add_argument(
        "--prune",
        action="store_true",
        help="remove files in DEST that the manifest does not list (else: listed, exit 1)",
    )
    _transfer_flags(p)
    p.set_defaults(stage_func=_cmd_download)

    p = sub.add_parser("upload", help="publish a local dir: files first, manifest last")
    p.add_argument("src", metavar="SRC", type=path_arg(), help="local directory")
    p.add_argument("target", metavar="TARGET", help="s3://bucket/prefix")
    _transfer_flags(p)
    p.set_defaults(stage_func=_cmd_upload)

    p = sub.add_parser(
        "hub",
        help="Hugging Face Hub -> S3: snapshot REPO@REVISION, then publish it (manifest last)",
    )
    p.add_argument("repo", metavar="REPO", help="owner/name, or owner/name@revision")
    p.add_argument("target", metavar="TARGET", help="s3://bucket/prefix")
    p.add_argument(
        "--work-dir",
        required=True,
        type=path_arg(),
        help="local directory for the snapshot (a rerun resumes the files already there)",
    )
    _transfer_flags(p)
    p.set_defaults(stage_func=_cmd_hub)

    p = sub.add_parser("verify", help="check a local dir against its manifest")
    p.add_argument("dir", metavar="DIR", type=path_arg())
    p.set_defaults(stage_func=_cmd_verify)

    p = sub.add_parser("cache-key", help="print the compile-cache key of a config")
    add_config_arguments(p)
    p.set_defaults(stage_func=_cmd_cache_key)
