"""Which model an OpenAI-compatible endpoint serves: `GET /v1/models`, parsed once for the sync
client (smoke, demo) and the async discovery (bench, tune, bench.versus_vllm_bench).

vLLM answers `{"object": "list", "data": [{"id": "<served-model-name>", ...}, ...]}` (the OpenAI
list-models shape: https://platform.openai.com/docs/api-reference/models/list)."""

from __future__ import annotations

import json
from typing import Any

from trnspec.boundary import json_io
from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.problems import ABSENT
from trnspec.config.pod_contract import MODELS_PATH

from trnspec_tools.boundary.endpoint import BoundKey
from trnspec_tools.boundary.model_id import is_model_id
from trnspec_tools.client.bench_client import StreamClient
from trnspec_tools.client.http_stream import Deadlines, ProtocolError


class ModelListError(ValueError):
    """The /v1/models answer is not the OpenAI list shape."""


class NoServedModel(BoundaryError):
    """No model name to send: none was given and the endpoint's /v1/models names none."""

    def __init__(self, endpoint: str) -> None:
        super().__init__(
            "--model",
            ABSENT,
            f"{endpoint.rstrip('/')}{MODELS_PATH} named no served model (no answer, another"
            " shape or an empty list); pass --model NAME",
        )


def served_model_ids(doc: Any) -> list[str]:
    """The model ids of a parsed /v1/models answer, in the server's order (entries without a
    usable id, see is_model_id, are skipped); ModelListError when the answer has no 'data'
    list."""
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list):
        raise ModelListError(
            f"GET {MODELS_PATH}: expected an object with a 'data' list, got {json_shape(doc)}"
        )
    ids = [m.get("id") for m in data if isinstance(m, dict)]
    return [i for i in ids if is_model_id(i)]


def json_shape(value: object) -> str:
    """A short description of a JSON value that is not what was expected (for error messages)."""
    if value is None:
        return "null"
    return f"a JSON {type(value).__name__} ({json.dumps(value, default=str)[:60]})"


async def discover_model(
    base_url: str, timeout_s: float = 10.0, api_key: str | BoundKey | None = None
) -> str | None:
    """The first served model name from /v1/models, so --model can be left out (None when the
    endpoint does not answer, answers another shape or lists no model). Sends `api_key` (a
    BoundKey only to its origin) and nothing else: no key from the environment is added here."""
    d = Deadlines(connect_s=timeout_s, first_byte_s=timeout_s, total_s=timeout_s)
    try:
        async with StreamClient(base_url, d, api_key) as client:
            status, body = await client.get(MODELS_PATH)
        if status != 200:
            return None
        # bounded: size, depth (a 100,000-deep answer is refused, not a RecursionError)
        ids = served_model_ids(json_io.loads(body, f"GET {MODELS_PATH}"))
    except (OSError, ProtocolError, TimeoutError, ValueError):
        return None
    return ids[0] if ids else None


def choose_model(ids: list[str], endpoint: str, wanted: str | None = None) -> str:
    """The model to send to an endpoint serving `ids`: `wanted` when it is served, else the
    first served one; NoServedModel when it serves none."""
    if not ids:
        raise NoServedModel(endpoint)
    return wanted if wanted in ids else ids[0]


async def resolve_model(
    endpoint: str,
    *given: str | None,
    timeout_s: float = 10.0,
    api_key: str | BoundKey | None = None,
) -> str:
    """The one model-name resolver of bench, tune and bench.versus_vllm_bench: the first of `given`
    that is set (the --model flag, then the name a local arm serves), else the endpoint's first
    served model (discover_model); NoServedModel when there is none."""
    for name in given:
        if name:
            return name
    found = await discover_model(endpoint, timeout_s, api_key)
    if found is None:
        raise NoServedModel(endpoint)
    return found
