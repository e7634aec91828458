"""One table of predictions serves every fit of a refit: a fit read from a shared table (made for
more rows and for the current model's terms) is the fit a fresh table gives, bit for bit."""

from __future__ import annotations

import re

import pytest
from trnspec.perf.fit import (
    FIRST_PASS,
    SECOND_PASS,
    THIRD_PASS,
    ModelTerms,
    StepTable,
    fit_constants,
    fit_rows,
)
from trnspec.perf.published import load_published
from trnspec.perf.trn2_fit import _Deferred

MEASUREMENTS, SHAPES = load_published()
#: The first twelve rows (four studies; baselines and speculative rows, on synchronous and
#: asynchronous stacks), so that the tables stay small.
ROWS = fit_rows(MEASUREMENTS, THIRD_PASS)[:12]
#: A fold's rows: one study with speculative rows left out.
LEFT_OUT = next(m.held_out_unit for m in ROWS if m.role == "speculative")
SUBSET = [m for m in ROWS if m.held_out_unit != LEFT_OUT]


def test_a_fit_from_a_shared_table_is_the_fit_from_a_fresh_one_for_each_model():
    assert {m.role for m in SUBSET} == {"baseline", "speculative"}
    assert len({m.stack_group for m in SUBSET}) >= 3
    table = StepTable(ROWS, SHAPES, THIRD_PASS)
    # the model before (fewer shared constants) first: the table keeps each fit by its terms
    for terms in (SECOND_PASS, THIRD_PASS, FIRST_PASS):
        rows = fit_rows(SUBSET, terms)
        shared = fit_constants(rows, SHAPES, terms, table=table)
        fresh = fit_constants(rows, SHAPES, terms)
        assert shared == fresh, terms.name
        assert shared.rms_rel_error == fresh.rms_rel_error


def test_a_table_returns_the_fit_it_made_for_the_same_rows_and_terms():
    rows = SUBSET[:4]
    table = StepTable(rows, SHAPES, THIRD_PASS)
    fit = fit_constants(rows, SHAPES, THIRD_PASS, table=table)
    assert fit_constants(list(rows), SHAPES, THIRD_PASS, table=table) is fit


def test_a_table_without_a_column_the_fit_needs_is_refused_naming_both_models():
    first = StepTable(SUBSET[:2], SHAPES, FIRST_PASS)
    with pytest.raises(ValueError, match=r"for 'first pass.*lacks columns of 'second pass"):
        fit_constants(SUBSET[:2], SHAPES, SECOND_PASS, table=first)
    # every shared constant present, but no draft-pass column
    passes = ModelTerms("floor and draft passes", ("collective_latency_s",), True, True)
    assert not first.covers(passes) and first.covers(FIRST_PASS, SUBSET[:2])
    with pytest.raises(ValueError, match="lacks columns of 'floor and draft passes'"):
        fit_constants(SUBSET[:2], SHAPES, passes, table=first)


def test_a_row_outside_the_table_is_refused_naming_it():
    table = StepTable(SUBSET[:1], SHAPES, FIRST_PASS)
    assert not table.covers(FIRST_PASS, SUBSET[:2])
    with pytest.raises(ValueError, match=re.escape(f"row {SUBSET[1].id!r} is not in the table")):
        fit_constants(SUBSET[:2], SHAPES, FIRST_PASS, table=table)


def test_the_model_befores_validation_is_computed_once_and_only_when_read():
    calls: list[int] = []
    before = _Deferred(lambda: tuple(calls.append(1) or calls))
    assert calls == []
    assert before() == (1,) and before() == (1,)
    assert calls == [1]
