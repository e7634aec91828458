"""Move models and compiled Neuron artifacts between S3 and local disk, verified by a manifest.

Why it is built this way:
- A model is tens of GB: files are fetched in parallel and each large file as parallel ranged GETs
  (boto3's TransferConfig), with a progress bar.
- A pod can be killed mid-download and restarted: a rerun skips every file whose sha256 already
  matches the manifest (resume at file granularity; a half-written file is discarded, not resumed).
- A truncated or altered object must never be loaded: each file is written to a temporary name
  in its final directory and renamed only when its size and sha256 match the manifest; otherwise
  it is deleted and fetched again, a bounded number of times, then the stage fails loudly.
- A reader must never see a half-published model: upload first removes the remote manifest, then
  uploads the files, and writes the manifest last. No manifest means "not published".
- A copy is exact: a download with `prune=True` (what serve does: its directories are its own)
  removes files the manifest does not list, e.g. a shard of an earlier version; without it they
  are reported in `StageResult.stale`, and `verify` never calls such a directory exact.
- Every wait is bounded: `s3_client()` sets connect/read timeouts and a retry budget, and a
  missing credential or an unreachable endpoint is one `StagingError` (marked `retryable`, so a
  pod that starts before its credentials are ready can wait and try again).

The S3 client is passed in (tests use moto and fault-injecting wrappers around it).
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from trnspec.boundary.shell import shell_command
from trnspec.config.s3_uri import S3Location, is_s3_uri, parse_s3_uri
from trnspec.staging.manifest import (
    MANIFEST_NAME,
    PARTIAL_SUFFIX,
    FileEntry,
    Manifest,
    ManifestError,
    build_manifest,
    check_file,
    check_path,
    extra_files,
    is_partial,
    verify,
    write_manifest,
)

__all__ = ["S3Location", "is_s3_uri", "parse_s3_uri"]  # re-exported for callers of this module

MiB = 1024 * 1024
#: S3 error codes that retrying cannot fix.
_PERMANENT_CODES = frozenset(
    {"AccessDenied", "403", "NoSuchBucket", "NoSuchKey", "404", "InvalidAccessKeyId"}
)


#: Explicit bounds for every S3 call (botocore's defaults are 60 s connect and read).
#: https://botocore.amazonaws.com/v1/documentation/api/latest/reference/config.html
S3_CONNECT_TIMEOUT_S = 10.0
S3_READ_TIMEOUT_S = 60.0
#: Attempts per call, the first included ("standard" retry mode backs off exponentially).
S3_TOTAL_ATTEMPTS = 5


def s3_client() -> Any:
    """The boto3 S3 client every command uses: bounded timeouts and retries."""
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=S3_CONNECT_TIMEOUT_S,
        read_timeout=S3_READ_TIMEOUT_S,
        retries={"total_max_attempts": S3_TOTAL_ATTEMPTS, "mode": "standard"},
    )
    try:
        return boto3.client("s3", config=config)
    except BotoCoreError as err:  # e.g. a malformed AWS_REGION or AWS config file
        raise StagingError(f"cannot create an S3 client: {type(err).__name__}: {err}") from None


class StagingError(RuntimeError):
    """A transfer that could not be completed and verified; the message names file and cause.

    `retryable` marks causes that time can fix (no credentials yet, endpoint unreachable)."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


class NotPublishedError(StagingError):
    """No manifest at the source: nothing published there yet. Not `retryable` (time alone does
    not fix it), but a pod started before its weights Job finished may wait for it (serve's
    `weights_wait_delays`)."""

    def __init__(self, source: S3Location) -> None:
        super().__init__(
            f"nothing published at {source}: no {MANIFEST_NAME} (missing, or an upload is in "
            "progress). Publish with "
            f"`{shell_command('python', '-m', 'trnspec', 'stage', 'upload', 'DIR', source)}` or "
            "`python -m trnspec stage hub REPO DEST`."
        )
        self.source = source


def _unreachable(what: str, err: BotoCoreError) -> StagingError:
    """A botocore failure before any S3 answer: credentials, endpoint, timeouts."""
    name = type(err).__name__
    if "Credential" in name or "Token" in name:
        fix = (
            "give this host or pod AWS credentials (AWS_PROFILE, AWS_ACCESS_KEY_ID/"
            "AWS_SECRET_ACCESS_KEY, or an EKS Pod Identity / IRSA role)"
        )
    else:
        fix = "check the network, the region (AWS_REGION) and any AWS_ENDPOINT_URL"
    return StagingError(f"{what}: {name}: {err}; {fix}", retryable=True)


@dataclass(frozen=True)
class TransferSettings:
    """Parallelism and retry bounds. Defaults suit multi-GB safetensors shards on a 48xlarge."""

    workers: int = 4
    """Files transferred at once."""
    max_attempts: int = 3
    """Attempts per file before the stage fails (a corrupt object is never used)."""
    multipart_threshold: int = 64 * MiB
    """Files at least this large are split into parallel ranged parts."""
    multipart_chunksize: int = 64 * MiB
    """Part size of a split transfer."""
    max_concurrency: int = 8
    """Parallel parts per file."""

    def transfer_config(self) -> Any:
        from boto3.s3.transfer import TransferConfig

        return TransferConfig(
            multipart_threshold=self.multipart_threshold,
            multipart_chunksize=self.multipart_chunksize,
            max_concurrency=self.max_concurrency,
            use_threads=True,
        )


@dataclass
class StageResult:
    """What a transfer did, for the log line and for tests."""

    source: str
    destination: str
    transferred: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    bytes_transferred: int = 0
    #: Files the manifest does not list: removed with prune=True, else left and listed here.
    stale: list[str] = field(default_factory=list)
    pruned: bool = False

    def summary(self) -> str:
        text = (
            f"{self.source} -> {self.destination}: {len(self.transferred)} file(s) transferred "
            f"({self.bytes_transferred / MiB:.1f} MiB), {len(self.skipped)} already verified"
        )
        if self.stale and self.pruned:
            text += f", {len(self.stale)} stale file(s) removed"
        elif self.stale:
            shown = ", ".join(self.stale[:3]) + (", ..." if len(self.stale) > 3 else "")
            text += (
                f"; NOT EXACT: {len(self.stale)} file(s) not in the manifest left in place "
                f"({shown}); rerun with --prune to remove them"
            )
        return text


class Progress(Protocol):
    """Receives byte counts from transfer threads (negative when a failed attempt is rewound)."""

    def start(self, description: str, total_bytes: int) -> None: ...
    def advance(self, nbytes: int) -> None: ...


class NullProgress:
    def start(self, description: str, total_bytes: int) -> None:
        pass

    def advance(self, nbytes: int) -> None:
        pass


class RichProgress:
    """A rich progress bar on stderr: bytes, speed, ETA. Thread-safe (rich locks internally)."""

    def __init__(self, progress: Any) -> None:
        self._progress = progress
        self._task: Any = None

    def start(self, description: str, total_bytes: int) -> None:
        self._task = self._progress.add_task(description, total=total_bytes)

    def advance(self, nbytes: int) -> None:
        if self._task is not None:
            self._progress.advance(self._task, nbytes)


@contextmanager
def rich_progress(enabled: bool = True) -> Iterator[Progress]:
    if not enabled:
        yield NullProgress()
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )
    from rich.progress import Progress as _RichProgress

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    with _RichProgress(*columns, console=Console(stderr=True)) as bar:
        yield RichProgress(bar)


# ---------------------------------------------------------------------------------------------
# Manifests in S3


def fetch_manifest(client: Any, location: S3Location) -> Manifest | None:
    """The published manifest at location, or None when nothing (complete) is published there."""
    key = location.key(MANIFEST_NAME)
    try:
        body = client.get_object(Bucket=location.bucket, Key=key)["Body"]
    except BotoCoreError as err:
        raise _unreachable(f"cannot read {location}/{MANIFEST_NAME}", err) from None
    except ClientError as err:
        if _code(err) in {"NoSuchKey", "404"}:
            return None
        if _code(err) in {"AccessDenied", "403"} and not _listed(client, location.bucket, key):
            # S3 answers 403, not 404, for a missing key unless the caller may list the whole
            # bucket; a role allowed to list only its prefix learns "missing" from the listing.
            return None
        raise StagingError(f"cannot read {location}/{MANIFEST_NAME}: {_describe(err)}") from None
    try:
        return Manifest.from_json(body.read())
    except BotoCoreError as err:
        raise _unreachable(f"cannot read {location}/{MANIFEST_NAME}", err) from None
    except ManifestError as err:
        raise StagingError(f"{location}/{MANIFEST_NAME}: {err}") from None


def _listed(client: Any, bucket: str, key: str) -> bool:
    """Whether key exists, by listing; True when even listing is denied (existence unknown)."""
    try:
        found = client.list_objects_v2(Bucket=bucket, Prefix=key, MaxKeys=1)
    except (ClientError, BotoCoreError):
        return True
    return any(o.get("Key") == key for o in found.get("Contents", []))


def _code(err: ClientError) -> str:
    return str(err.response.get("Error", {}).get("Code", ""))


def _describe(err: BaseException) -> str:
    if isinstance(err, ClientError):
        return f"{_code(err)}: {err.response.get('Error', {}).get('Message', '')}".strip(": ")
    return f"{type(err).__name__}: {err}"


def _is_permanent(err: BaseException) -> bool:
    return isinstance(err, ClientError) and _code(err) in _PERMANENT_CODES


# ---------------------------------------------------------------------------------------------
# Download


class _AttemptCounter:
    """Counts one attempt's bytes (from transfer threads) so a failed attempt can be rewound."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._seen = 0
        self._lock = threading.Lock()

    def __call__(self, nbytes: int) -> None:
        with self._lock:
            self._seen += nbytes
        self._progress.advance(nbytes)

    def rewind(self) -> None:
        with self._lock:
            seen, self._seen = self._seen, 0
        self._progress.advance(-seen)


def plan_download(manifest: Manifest, dest: Path) -> tuple[list[FileEntry], list[FileEntry]]:
    """Split entries into (to fetch, already verified locally). Reads local files, no network."""
    fetch, keep = [], []
    for entry in manifest.files:
        (keep if check_file(dest, entry) is None else fetch).append(entry)
    return fetch, keep


def _remove_partials(dest: Path) -> None:
    """Leftovers of a killed run are not resumed byte-wise: a fresh file is simpler to trust."""
    for p in dest.rglob(f"*{PARTIAL_SUFFIX}*"):
        if p.is_file() and is_partial(p.name):
            p.unlink(missing_ok=True)


def _download_one(
    client: Any,
    source: S3Location,
    entry: FileEntry,
    dest: Path,
    settings: TransferSettings,
    config: Any,
    progress: Progress,
) -> None:
    final = dest / entry.path
    final.parent.mkdir(parents=True, exist_ok=True)
    final.unlink(missing_ok=True)  # it did not verify: never leave a stale file in its place
    key = source.key(entry.path)
    problem = ""
    for _attempt in range(settings.max_attempts):
        # The name is capped so boto3's own temp extension never truncates the partial marker.
        fd, tmp_name = tempfile.mkstemp(
            dir=final.parent, prefix=f".{final.name[:100]}.", suffix=PARTIAL_SUFFIX
        )
        os.close(fd)
        tmp = Path(tmp_name)
        counter = _AttemptCounter(progress)
        try:
            client.download_file(source.bucket, key, tmp_name, Config=config, Callback=counter)
            mismatch = check_path(tmp, entry)
            if mismatch is None:
                os.replace(tmp, final)
                return
            problem = f"got {mismatch.reason} {mismatch.actual}, manifest has {mismatch.expected}"
        except Exception as err:  # any failure of one attempt is retried, bounded, below
            problem = _describe(err)
            if _is_permanent(err):
                break
        finally:
            tmp.unlink(missing_ok=True)
        counter.rewind()
    raise StagingError(
        f"s3://{source.bucket}/{key}: {problem} (gave up; max {settings.max_attempts} attempts); "
        f"not written to {final}. If the object was replaced after publication, publish again "
        f"with `python -m trnspec stage upload`."
    )


def _run_parallel(
    entries: list[FileEntry], work: Callable[[FileEntry], None], workers: int
) -> list[str]:
    """Run work over entries; every failure is collected (the others still complete)."""
    errors: list[str] = []
    if not entries:
        return errors
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="stage") as pool:
        futures = {pool.submit(work, e): e for e in entries}
        for fut in as_completed(futures):
            err = fut.exception()
            if err is not None:
                errors.append(str(err) if isinstance(err, StagingError) else _describe(err))
    return sorted(errors)


def ensure_writable_dir(dest: Path) -> None:
    """Create dest and prove a file can be written there, before anything is fetched."""
    try:
        dest.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=dest, prefix=".write-test", suffix=PARTIAL_SUFFIX)
        os.close(fd)
        os.unlink(probe)
    except FileExistsError:
        raise StagingError(f"{dest} exists and is not a directory; give a directory") from None
    except NotADirectoryError:
        raise StagingError(f"{dest}: a parent is a file, not a directory") from None
    except OSError as err:
        raise StagingError(
            f"cannot write to {dest}: {err.strerror or err}; give a writable directory"
        ) from None


def _prune(dest: Path, stale: list[str]) -> None:
    for rel in stale:
        (dest / rel).unlink(missing_ok=True)
    for dirpath, _dirs, _files in sorted(os.walk(dest), key=lambda w: -len(w[0])):
        if Path(dirpath) != dest and not os.listdir(dirpath):
            os.rmdir(dirpath)


def download(
    client: Any,
    source: S3Location,
    dest: Path,
    settings: TransferSettings | None = None,
    progress: Progress | None = None,
    *,
    prune: bool = False,
) -> StageResult:
    """Make dest a verified copy of the model published at source.

    The local manifest is removed first and written back last, so its presence in dest means the
    directory was completely verified. Files the manifest does not list are removed when `prune`
    (dest belongs to this copy), else left and reported in the result's `stale`.
    """
    settings = settings or TransferSettings()
    progress = progress or NullProgress()
    manifest = fetch_manifest(client, source)
    if manifest is None:
        raise NotPublishedError(source)
    dest = Path(dest)
    ensure_writable_dir(dest)
    (dest / MANIFEST_NAME).unlink(missing_ok=True)
    _remove_partials(dest)
    fetch, keep = plan_download(manifest, dest)
    result = StageResult(str(source), str(dest), skipped=[e.path for e in keep])
    progress.start(f"download {source}", sum(e.size for e in fetch))
    config = settings.transfer_config()
    errors = _run_parallel(
        fetch,
        lambda e: _download_one(client, source, e, dest, settings, config, progress),
        settings.workers,
    )
    if errors:
        raise StagingError(
            f"download {source} -> {dest} failed for {len(errors)} file(s):\n  "
            + "\n  ".join(errors)
        )
    result.transferred = [e.path for e in fetch]
    result.bytes_transferred = sum(e.size for e in fetch)
    try:
        result.stale = extra_files(dest, manifest)
        if prune and result.stale:
            _prune(dest, result.stale)
            result.pruned = True
        write_manifest(dest, manifest)
    except OSError as err:
        (dest / (MANIFEST_NAME + PARTIAL_SUFFIX)).unlink(missing_ok=True)
        raise StagingError(
            f"{dest}: every file was verified but finishing the copy failed "
            f"({err.strerror or err}); free space or fix permissions and run again "
            "(verified files are kept and skipped)"
        ) from None
    return result


# ---------------------------------------------------------------------------------------------
# Upload


def _remote_matches(client: Any, bucket: str, key: str, entry: FileEntry) -> bool:
    """An object uploaded by us earlier carries its sha256 in metadata: skip it on resume."""
    try:
        head = client.head_object(Bucket=bucket, Key=key)
    except (ClientError, BotoCoreError):
        return False
    return (
        head.get("ContentLength") == entry.size
        and head.get("Metadata", {}).get("sha256") == entry.sha256
    )


def _upload_one(
    client: Any,
    src: Path,
    target: S3Location,
    entry: FileEntry,
    settings: TransferSettings,
    config: Any,
    progress: Progress,
) -> bool:
    key = target.key(entry.path)
    if _remote_matches(client, target.bucket, key, entry):
        return False
    problem = ""
    for _attempt in range(settings.max_attempts):
        counter = _AttemptCounter(progress)
        try:
            client.upload_file(
                str(src / entry.path),
                target.bucket,
                key,
                ExtraArgs={"Metadata": {"sha256": entry.sha256}},
                Config=config,
                Callback=counter,
            )
            return True
        except Exception as err:  # retried, bounded
            problem = _describe(err)
            counter.rewind()
            if _is_permanent(err):
                break
    raise StagingError(f"upload {src / entry.path} -> s3://{target.bucket}/{key}: {problem}")


def upload(
    client: Any,
    src: Path,
    target: S3Location,
    settings: TransferSettings | None = None,
    progress: Progress | None = None,
) -> StageResult:
    """Publish a local directory at target: unpublish, upload files, then write the manifest."""
    settings = settings or TransferSettings()
    progress = progress or NullProgress()
    src = Path(src)
    try:
        manifest = build_manifest(src)
    except ManifestError as err:
        raise StagingError(f"{err}; nothing to publish") from None
    except OSError as err:
        raise StagingError(f"cannot read {err.filename or src}: {err.strerror or err}") from None
    if not manifest.files:
        raise StagingError(f"{src} has no files to publish")
    if fetch_manifest(client, target) is not None:  # only then is s3:DeleteObject needed
        try:
            client.delete_object(Bucket=target.bucket, Key=target.key(MANIFEST_NAME))
        except BotoCoreError as err:
            raise _unreachable(f"cannot unpublish {target}/{MANIFEST_NAME}", err) from None
        except ClientError as err:
            raise StagingError(
                f"cannot unpublish {target}/{MANIFEST_NAME} before replacing it: {_describe(err)}"
            ) from None
    progress.start(f"upload {src}", manifest.total_bytes)
    config = settings.transfer_config()
    uploaded: list[str] = []
    lock = threading.Lock()

    def work(entry: FileEntry) -> None:
        if _upload_one(client, src, target, entry, settings, config, progress):
            with lock:
                uploaded.append(entry.path)

    errors = _run_parallel(list(manifest.files), work, settings.workers)
    if errors:
        raise StagingError(
            f"upload {src} -> {target} failed for {len(errors)} file(s) (nothing published):\n  "
            + "\n  ".join(errors)
        )
    changed = verify(src, manifest)
    if changed:
        # Uploaded bytes may not match the hashes: publishing would hand readers a broken copy.
        raise StagingError(
            f"{src} changed while it was uploaded (nothing published): "
            + "; ".join(str(m) for m in changed)
        )
    try:
        client.put_object(
            Bucket=target.bucket,
            Key=target.key(MANIFEST_NAME),
            Body=manifest.to_json().encode(),
            ContentType="application/json",
        )
    except (ClientError, BotoCoreError) as err:
        raise StagingError(
            f"files uploaded but the manifest could not be written, so {target} is not "
            f"published: {_describe(err)}"
        ) from None
    done = sorted(uploaded)
    return StageResult(
        str(src),
        str(target),
        transferred=done,
        skipped=sorted({e.path for e in manifest.files} - set(done)),
        bytes_transferred=sum(e.size for e in manifest.files if e.path in set(done)),
    )


# ---------------------------------------------------------------------------------------------
# Compiled Neuron artifacts, keyed by trnspec.staging.cache_key


def compiled_location(cache_root: S3Location, key: str) -> S3Location:
    return cache_root.child(key)


def pull_compiled(
    client: Any,
    cache_root: S3Location,
    key: str,
    dest: Path,
    settings: TransferSettings | None = None,
    progress: Progress | None = None,
    *,
    prune: bool = False,
) -> StageResult | None:
    """Fetch the cached compile for key into dest; None on a cache miss (nothing published)."""
    location = compiled_location(cache_root, key)
    if fetch_manifest(client, location) is None:
        return None
    return download(client, location, dest, settings, progress, prune=prune)


def push_compiled(
    client: Any,
    src: Path,
    cache_root: S3Location,
    key: str,
    settings: TransferSettings | None = None,
    progress: Progress | None = None,
    replace: bool = False,
) -> StageResult | None:
    """Publish a fresh compile under key, unless another pod published it first (then None).

    replace=True republishes over an existing entry (one that failed verification on pull).
    """
    location = compiled_location(cache_root, key)
    if not replace and fetch_manifest(client, location) is not None:
        return None
    return upload(client, src, location, settings, progress)
