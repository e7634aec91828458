"""client.served_model: one parser of /v1/models for the sync client and the async discovery."""

from __future__ import annotations

import asyncio

import pytest
from fake_openai_server import running

from trnspec_tools.client.served_model import (
    ModelListError,
    discover_model,
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


def test_discovery_of_an_endpoint_that_does_not_answer_is_none() -> None:
    assert asyncio.run(discover_model("http://127.0.0.1:9", timeout_s=1.0)) is None
