"""Properties of trnspec_tools.boundary.usage: a completion-token count is used only when
physics allows it."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trnspec_tools.boundary.usage import checked_completion_tokens

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

reported = st.one_of(
    st.integers(-10, 10_000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=5),
    st.none(),
)


@SETTINGS
@given(reported, st.integers(0, 200), st.integers(1, 2000), st.one_of(st.none(), st.integers(1, 8)))
def test_a_used_count_lies_between_the_chunks_and_max_tokens_and_k_plus_1_per_chunk(
    value, chunks, max_tokens, k
):
    checked = checked_completion_tokens(value, streamed_chunks=chunks, max_tokens=max_tokens, k=k)
    if checked.tokens is None:
        assert checked.reason
        return
    assert isinstance(checked.tokens, int) and not isinstance(checked.tokens, bool)
    assert chunks <= checked.tokens <= max_tokens
    assert k is None or checked.tokens <= chunks * (k + 1)


def test_1600_tokens_for_16_streamed_chunks_is_refused():
    checked = checked_completion_tokens(1600, streamed_chunks=16, max_tokens=16)
    assert checked.tokens is None and "max_tokens=16" in str(checked.reason)
    checked = checked_completion_tokens(1600, streamed_chunks=16, max_tokens=4096, k=4)
    assert checked.tokens is None and "k+1=5" in str(checked.reason)
