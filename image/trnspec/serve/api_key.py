"""The OpenAI endpoint's API key: read from AWS Secrets Manager at start, given only to vLLM.

The pod carries the secret's ARN (env TRNSPEC_API_KEY_SECRET_ARN), never the key: the serve
entrypoint reads the value with the pod's own identity (EKS Pod Identity), then sets
VLLM_API_KEY in the vLLM child's environment only. So the key is in no manifest, ConfigMap,
rendered argv, Kubernetes Secret or log line, and `kubectl describe pod` shows only the ARN.

vLLM checks `Authorization: Bearer <key>` on API paths only (0.9.1:
vllm/entrypoints/openai/api_server.py, `url_path.startswith("/v1")`; 0.24.0:
vllm/entrypoints/serve/utils/server_utils.py, `GUARDED_PREFIX = ("/v1", "/v2", "/inference")`),
so /health (liveness, NLB health checks) and /metrics (Prometheus) stay open, and the readiness
probe of /v1/models sends the key (`auth_headers`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

#: Env var with the ARN (or name) of the Secrets Manager secret holding the key (the pod sets it).
from trnspec.config.pod_contract import ENV_API_KEY_SECRET
from trnspec.config.serving import ConfigError, Problem
from trnspec.staging.manifest import walk_files

#: What vLLM reads when --api-key is absent (vllm.envs.VLLM_API_KEY).
VLLM_API_KEY_ENV = "VLLM_API_KEY"
#: Shorter keys are refused: the stack generates 48 characters.
MIN_KEY_LENGTH = 32

Fetch = Callable[[str], str]


def secrets_manager_fetch(client: Any | None = None) -> Fetch:
    """GetSecretValue with the default credential chain (the pod identity in the cluster)."""

    def fetch(secret_id: str) -> str:
        sm = client
        if sm is None:
            import boto3

            sm = boto3.client("secretsmanager")
        value = sm.get_secret_value(SecretId=secret_id).get("SecretString")
        if value is None:
            raise ValueError("the secret has no SecretString (binary secrets are not supported)")
        return str(value)

    return fetch


def load_api_key(environ: Mapping[str, str], fetch: Fetch | None = None) -> str | None:
    """The key when the environment names a secret, None when it names none.

    Refuses to start rather than serve an open endpoint: an unreadable, empty or short secret
    raises ConfigError naming the secret (never its value).
    """
    secret_id = environ.get(ENV_API_KEY_SECRET, "").strip()
    if not secret_id:
        return None
    try:
        key = (fetch or secrets_manager_fetch())(secret_id).strip()
    except Exception as err:  # any SDK or network error: report its class and message
        raise ConfigError(
            [
                Problem(
                    ENV_API_KEY_SECRET,
                    secret_id,
                    f"cannot read the API key ({type(err).__name__}: {err}); check the pod "
                    "identity's secretsmanager:GetSecretValue and the network policy",
                )
            ]
        ) from None
    if len(key) < MIN_KEY_LENGTH:
        raise ConfigError(
            [
                Problem(
                    ENV_API_KEY_SECRET,
                    secret_id,
                    f"the secret holds {len(key)} characters; store a key of at least "
                    f"{MIN_KEY_LENGTH} (e.g. `openssl rand -hex 24`)",
                )
            ]
        )
    return key


def child_env(env: Mapping[str, str], key: str | None) -> dict[str, str]:
    """vLLM's environment: `env` plus VLLM_API_KEY when there is a key."""
    out = dict(env)
    if key is not None:
        out[VLLM_API_KEY_ENV] = key
    return out


def auth_headers(key: str | None) -> dict[str, str]:
    """Headers for requests to vLLM's /v1 paths (none without a key)."""
    return {"Authorization": f"Bearer {key}"} if key is not None else {}


def files_holding_key(root: Path, key: str, chunk: int = 1 << 20) -> list[str]:
    """Files under root (relative POSIX paths, sorted) whose bytes contain the key.

    vLLM 0.24 folds every VLLM_* variable it knows, VLLM_API_KEY included, into its torch.compile
    cache key and writes the raw values to `cache_key_factors.json` under VLLM_CACHE_ROOT, which
    is the compile directory the pod publishes to S3: such a file must not leave the pod. Read in
    chunks that overlap by len(key) - 1 bytes, so a key split across chunks is still found.
    """
    needle = key.encode()
    if not needle:
        return []
    root = Path(root)
    return [
        path.relative_to(root).as_posix()
        for path in walk_files(root)  # what a publish would upload
        if path.is_file() and _holds(path, needle, max(chunk, len(needle)))
    ]


def _holds(path: Path, needle: bytes, chunk: int) -> bool:
    tail = b""
    with path.open("rb") as f:
        while block := f.read(chunk):
            if needle in tail + block:
                return True
            tail = block[-(len(needle) - 1) :] if len(needle) > 1 else b""
    return False
