"""Which model an OpenAI-compatible endpoint serves: `GET /v1/models`, parsed once for the sync
client (smoke, demo) and the async discovery (bench, tune, bench.versus_vllm_bench).

vLLM answers `{"object": "list", "data": [{"id": "<served-model-name>", ...}, ...]}` (the OpenAI
list-models shape: https://platform.openai.com/docs/api-reference/models/list)."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any

from trnspec.boundary import json_io
from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.problems import ABSENT
from trnspec.boundary.text import printable
from trnspec.config.pod_contract import MODELS_PATH

from trnspec_tools.boundary.endpoint import BoundKey
from trnspec_tools.boundary.model_id import is_model_id
from trnspec_tools.client.bench_client import ConnectFailed, StreamClient
from trnspec_tools.client.http_stream import Deadlines, ProtocolError


class ModelListError(ValueError):
    """The /v1/models answer is not the OpenAI list shape."""


class NoServedModel(BoundaryError):
    """No model name to send: none was given and the endpoint's /v1/models names none."""

    def __init__(self, endpoint: str, why: str | None = None) -> None:
        said = why or "no answer, another shape or an empty list"
        super().__init__(
            "--model",
            ABSENT,
            f"{endpoint.rstrip('/')}{MODELS_PATH} named no served model ({said}); pass"
            " --model NAME",
        )


@dataclass(frozen=True)
class Discovery:
    """What GET /v1/models told: the first served model, or why there is none, said as it
    happened (a refused certificate, a failed TLS handshake, a status, a shape)."""

    model: str | None
    why: str | None = None


def _status_said(status: int) -> str:
    """A non-200 answer to GET /v1/models, in words."""
    if status == 404:
        return (
            "the server answered HTTP 404: nothing at that path; give the server's base URL,"
            " e.g. http://host:8000"
        )
    if status in (401, 403):
        return f"the server answered HTTP {status}: it refused this client's key (--api-key)"
    return f"the server answered HTTP {status}"


def _connect_said(cause: BaseException | None) -> str:
    """Why a connection could not be opened: TLS said apart from the network."""
    if isinstance(cause, ssl.SSLCertVerificationError):
        return f"its TLS certificate was refused ({printable(cause.verify_message, 120)})"
    if isinstance(cause, ssl.SSLError):
        return f"the TLS handshake failed ({printable(cause.reason or str(cause), 120)})"
    name = type(cause).__name__ if cause is not None else "OSError"
    return f"could not connect ({name}: {printable(str(cause), 120)})"


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
    shown = json_io.dumps(value, None, default=str, newline=False)[:60]
    return f"a JSON {type(value).__name__} ({shown})"


async def discover(
    base_url: str, timeout_s: float = 10.0, api_key: str | BoundKey | None = None
) -> Discovery:
    """The first served model name from /v1/models, or why there is none. Sends `api_key` (a
    BoundKey only to its origin) and nothing else: no key from the environment is added here."""
    d = Deadlines(connect_s=timeout_s, first_byte_s=timeout_s, total_s=timeout_s)
    try:
        async with StreamClient(base_url, d, api_key) as client:
            status, body = await client.get(MODELS_PATH)
        if status != 200:
            return Discovery(None, _status_said(status))
        # bounded: size, depth (a 100,000-deep answer is refused, not a RecursionError)
        ids = served_model_ids(json_io.loads(body, f"GET {MODELS_PATH}"))
    except ConnectFailed as exc:
        return Discovery(None, _connect_said(exc.__cause__))
    except ssl.SSLError as exc:  # a TLS failure after the connection was opened
        return Discovery(None, _connect_said(exc))
    except TimeoutError:
        return Discovery(None, f"no answer within {timeout_s:g} s")
    except (OSError, ProtocolError) as exc:
        return Discovery(None, f"the answer broke off ({type(exc).__name__})")
    except BoundaryError as exc:
        return Discovery(None, f"an answer that is not a model list: {exc.fix}")
    except ModelListError as exc:
        return Discovery(None, str(exc))
    return Discovery(ids[0], None) if ids else Discovery(None, "it lists no model")


async def discover_model(
    base_url: str, timeout_s: float = 10.0, api_key: str | BoundKey | None = None
) -> str | None:
    """The first served model name from /v1/models (discover), None when there is none."""
    return (await discover(base_url, timeout_s, api_key)).model


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
    found = await discover(endpoint, timeout_s, api_key)
    if found.model is None:
        raise NoServedModel(endpoint, found.why)
    return found.model
