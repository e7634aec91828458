"""client.served_model: one parser of /v1/models for the sync client and the async discovery."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from fake_openai_server import running
from fault_server import fault_server
from tls_listener import tls_server

from trnspec_tools.bench.bench import main as bench_main
from trnspec_tools.boundary.endpoint import BoundKey, Endpoint
from trnspec_tools.client.served_model import (
    ModelListError,
    NoServedModel,
    choose_model,
    discover_model,
    resolve_model,
    served_model_ids,
)


def test_ids_come_in_the_servers_order_and_entries_without_a_string_id_are_skipped() -> None:
    doc = {"object": "list", "data": [{"id": "a"}, {"id": 3}, "x", {"id": "b"}]}
    assert served_model_ids(doc) == ["a", "b"]


@pytest.mark.parametrize("doc", [None, [], {"data": {"id": "a"}}, {"models": []}])
def test_an_answer_without_a_data_list_names_what_came_back(doc: object) -> None:
    with pytest.raises(ModelListError, match=r"GET /v1/models: expected an object with a 'data'"):
        served_model_ids(doc)


def test_discovery_returns_the_first_served_model_of_a_live_server() -> None:
    with running() as url:
        model = asyncio.run(discover_model(url))
    assert model == "fake"  # the fake server's default --model


def test_discovery_sends_the_key_it_is_given_and_no_key_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TRNSPEC_API_KEY", "k1")
    with running("--api-key", "k1") as url:
        own, other = BoundKey(Endpoint.parse(url).origin, "k1"), BoundKey("http://elsewhere", "k1")
        assert asyncio.run(discover_model(url, api_key="k1")) == "fake"
        assert asyncio.run(discover_model(url, api_key=own)) == "fake"
        # a key bound to another origin, or none at all: the environment's key is not sent
        assert asyncio.run(discover_model(url, api_key=other)) is None
        assert asyncio.run(discover_model(url)) is None


def test_discovery_of_an_endpoint_that_does_not_answer_is_none() -> None:
    assert asyncio.run(discover_model("http://127.0.0.1:9", timeout_s=1.0)) is None


def test_the_wanted_model_is_chosen_when_served_else_the_first_served() -> None:
    assert choose_model(["a", "b"], "http://h", "b") == "b"
    assert choose_model(["a", "b"], "http://h", "c") == "a"
    assert choose_model(["a", "b"], "http://h") == "a"


def test_an_endpoint_serving_no_model_names_the_endpoint_and_the_flag() -> None:
    with pytest.raises(NoServedModel, match=r"--model: http://h/v1/models named no served model"):
        choose_model([], "http://h/")


def test_a_given_name_wins_over_discovery_without_asking_the_endpoint() -> None:
    # port 9 (discard) never answers: a given name must not need the endpoint
    assert asyncio.run(resolve_model("http://127.0.0.1:9", None, "local", timeout_s=1.0)) == "local"


def test_resolution_discovers_the_served_model_when_no_name_is_given() -> None:
    with running() as url:
        assert asyncio.run(resolve_model(url, None, None)) == "fake"


def test_resolution_against_a_silent_endpoint_says_which_flag_to_pass() -> None:
    with pytest.raises(NoServedModel, match=r"127\.0\.0\.1:9/v1/models .* pass --model NAME"):
        asyncio.run(resolve_model("http://127.0.0.1:9", None, timeout_s=1.0))


def test_an_answer_nested_thousands_deep_is_no_served_model_not_a_recursion_error() -> None:
    """A /v1/models answer 100,000 lists deep: discovery finds nothing (the bounded reader
    refuses it) and the resolver's one-line error asks for --model."""
    with fault_server("models_deep") as server:
        assert asyncio.run(discover_model(server.url)) is None
        with pytest.raises(NoServedModel) as err:
            asyncio.run(resolve_model(server.url))
    assert "\n" not in str(err.value) and "pass --model NAME" in str(err.value)


def refusal(url: str) -> str:
    """The one-line error of resolving the model of `url`."""
    with pytest.raises(NoServedModel) as err:
        asyncio.run(resolve_model(url, timeout_s=30.0))
    text = str(err.value)
    assert "\n" not in text and text.endswith("; pass --model NAME")
    return text


def test_a_refused_certificate_is_said_as_such(tmp_path: Path) -> None:
    with tls_server(tmp_path) as url:
        assert "its TLS certificate was refused (" in refusal(url)


def test_a_tls_handshake_with_a_plain_http_server_is_said_to_have_failed() -> None:
    with fault_server() as server:
        url = server.url.replace("http://", "https://")
        text = refusal(url)
    assert "the TLS handshake failed (" in text


def test_a_404_is_said_with_the_fix() -> None:
    with fault_server() as server:
        text = refusal(server.url + "/api")
    assert "HTTP 404" in text and "give the server's base URL" in text


def test_a_refused_connection_is_said_as_such() -> None:
    assert "could not connect (ConnectionRefusedError" in refusal("http://127.0.0.1:9")


def test_bench_says_the_tls_handshake_failed_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with fault_server() as server:
        url = server.url.replace("http://", "https://")
        argv = ["--endpoint", url, "--num-prompts", "2", "--output-len", "6", "--no-plots"]
        code = bench_main([*argv, "--no-progress", "--out", str(tmp_path / "b.json")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    (line,) = [x for x in err.splitlines() if "error" in x]
    assert "the TLS handshake failed (" in line and "--model" in line
