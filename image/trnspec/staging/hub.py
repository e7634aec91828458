"""Copy a model from the Hugging Face Hub to S3: a snapshot of one repository at one revision,
then the usual verified upload (`trnspec.staging.transfer.upload`: files first, manifest last).

This is what the weights Job runs on the first deploy (`python -m trnspec stage hub`), so the
pods never reach the Hub themselves. The token of a gated model (Llama) comes from the
environment: `HF_TOKEN` (which huggingface_hub reads itself), or the Secrets Manager secret named
by `TRNSPEC_HF_TOKEN_SECRET_ARN`, read here at run time with the pod's identity (an empty secret
means no token). It is never an argument, so it cannot reach argv, logs or the Job's spec.
The download is an injected function: tests run offline with a fake that writes files.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trnspec.staging.transfer import (
    S3Location,
    StageResult,
    StagingError,
    TransferSettings,
    upload,
)

#: Downloads repo at revision (None: the default branch) into an empty-or-partial local dir,
#: with a token (None: huggingface_hub's own, e.g. HF_TOKEN, or anonymous).
HubDownload = Callable[[str, str | None, Path, str | None], None]

#: huggingface_hub keeps its resume metadata here inside local_dir; not part of the model.
HUB_METADATA_DIR = ".cache"

#: The Hub's repository id rules (huggingface_hub.utils.validate_repo_id, mirroring the Hub's
#: own): "namespace/name", each 1..96 of [A-Za-z0-9_.-] starting and ending with a letter, digit
#: or "_" ... as a word boundary allows, no "--" or "..", not ending in ".git".
MAX_REPO_ID_CHARS = 96
_REPO_PART = re.compile(r"\b[\w\-.]{1,96}\b", re.ASCII)
#: A revision is a branch, a tag or a commit: printable, no spaces, at most this long.
MAX_REVISION_CHARS = 256


def repo_id_problem(repo: str) -> str | None:
    """Why `repo` is not a Hub repository id of the form owner/name (None: it is one), by the
    Hub's rules, so a bad id is refused in one line before any call."""
    owner, slash, name = repo.partition("/")
    if not slash or not owner or not name:
        return "a Hub repository id: owner/name[@revision], e.g. Qwen/Qwen3-4B"
    if len(repo) > MAX_REPO_ID_CHARS * 2 + 1 or len(name) > MAX_REPO_ID_CHARS:
        return f"owner and name are at most {MAX_REPO_ID_CHARS} characters each"
    if not all(_REPO_PART.fullmatch(part) for part in (owner, name)):
        return (
            "owner and name use letters, digits, '-', '_' and '.' only, and neither starts nor"
            " ends with '-' or '.'"
        )
    if "--" in repo or ".." in repo:
        return "the Hub forbids '--' and '..' in a repository id"
    if repo.endswith(".git"):
        return "drop the '.git' ending"
    return None


def revision_problem(revision: str) -> str | None:
    """Why `revision` (after '@') is not a branch, tag or commit name (None: it may be one)."""
    if not revision:
        return "give a revision after '@' (a branch, tag or commit), or drop the '@'"
    if len(revision) > MAX_REVISION_CHARS:
        return f"a revision is at most {MAX_REVISION_CHARS} characters"
    if not revision.isprintable() or any(c.isspace() for c in revision) or ".." in revision:
        return "a revision has no spaces, control characters or '..'"
    return None


def token_from_secret(client: Any, secret_arn: str) -> str | None:
    """The Hub token in the secret (its SecretString); None when it holds none yet."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        value = client.get_secret_value(SecretId=secret_arn).get("SecretString") or ""
    except ClientError as err:
        code = err.response.get("Error", {}).get("Code", "")
        if code == "ResourceNotFoundException":  # a secret with no value yet
            return None
        raise StagingError(
            f"cannot read the Hub token secret {secret_arn}: {code or err}; the pod's "
            "role needs secretsmanager:GetSecretValue on it"
        ) from None
    except BotoCoreError as err:
        raise StagingError(
            f"cannot read the Hub token secret {secret_arn}: {err}", retryable=True
        ) from None
    return value.strip() or None


def snapshot_download(repo: str, revision: str | None, dest: Path, token: str | None) -> None:
    """huggingface_hub's snapshot into dest (it resumes partial files and reads HF_TOKEN)."""
    try:
        from huggingface_hub import snapshot_download as hub_snapshot
        from huggingface_hub.utils import (  # also in huggingface_hub.errors since 0.23
            GatedRepoError,
            HfHubHTTPError,
            RepositoryNotFoundError,
            RevisionNotFoundError,
        )
    except ImportError:
        raise StagingError(
            "huggingface_hub is not installed: run this in the serving image (vLLM depends "
            "on it) or `pip install huggingface_hub`"
        ) from None
    try:
        hub_snapshot(repo_id=repo, revision=revision, local_dir=str(dest), token=token)
    except GatedRepoError:
        raise StagingError(
            f"{repo} is gated: accept its licence on huggingface.co with the token's account and "
            "put the token in the stack's HfTokenSecretArn secret (docs/platform.md)"
        ) from None
    except RepositoryNotFoundError:
        raise StagingError(
            f"{repo}: no such repository, or private and the token cannot see it"
        ) from None
    except RevisionNotFoundError:
        raise StagingError(f"{repo}: no revision {revision!r}") from None
    except (HfHubHTTPError, OSError) as err:
        # Network trouble: a rerun resumes the files already fetched.
        raise StagingError(f"{repo}: download failed: {err}", retryable=True) from None


def hub_to_s3(
    client: Any,
    repo: str,
    revision: str | None,
    target: S3Location,
    work_dir: Path,
    download: HubDownload | None = None,
    settings: TransferSettings | None = None,
    token: str | None = None,
) -> StageResult:
    """Snapshot repo@revision into work_dir (with `download`, by default huggingface_hub's
    `snapshot_download`), then publish it at target (manifest last)."""
    download = download or snapshot_download
    work_dir = Path(work_dir)
    try:
        work_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise StagingError(f"cannot create {work_dir}: {err.strerror or err}") from None
    download(repo, revision, work_dir, token)
    shutil.rmtree(work_dir / HUB_METADATA_DIR, ignore_errors=True)
    return upload(client, work_dir, target, settings)
