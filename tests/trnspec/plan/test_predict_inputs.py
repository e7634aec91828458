"""predict's inputs are an immutable record in the order they were read
(trnspec.plan.predict.Inputs)."""

from __future__ import annotations

import pytest
from trnspec.plan.predict import Inputs, Sourced


def test_adding_an_input_leaves_the_record_it_was_added_to_unchanged() -> None:
    empty = Inputs()
    one = empty.add("a", 1, "flag")
    assert empty.by_name() == {} and one.by_name() == {"a": Sourced(1, "flag")}
    with pytest.raises(AttributeError):
        one.entries = ()  # type: ignore[misc]


def test_inputs_keep_the_order_read_and_a_name_given_again_takes_the_later_value() -> None:
    first = Inputs().add("acceptance_rate", 0.5, "--acceptance-rate").add("target", "T", "hub")
    later = Inputs().add("acceptance_rate", 0.6, "refit")
    merged = (first + later).by_name()
    assert list(merged) == ["acceptance_rate", "target"]
    assert merged["acceptance_rate"] == Sourced(0.6, "refit")
