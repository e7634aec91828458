"""Properties of bench.workload.read_dataset on hostile JSONL (issue 24): every line is a prompt
with a bounded max_tokens, or the file is refused with one line naming the line."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trnspec.boundary.numbers import MAX_COUNT

from trnspec_tools.bench.workload import WorkloadError, read_dataset

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

lines = st.one_of(
    st.builds(
        lambda prompt, max_tokens: json.dumps({"prompt": prompt, "max_tokens": max_tokens}),
        st.one_of(st.text(max_size=10), st.integers(), st.none()),
        st.one_of(
            st.integers(-5, 2 * MAX_COUNT), st.booleans(), st.floats(allow_nan=True), st.none()
        ),
    ),
    st.sampled_from(
        ['{"prompt": "x", "max_tokens": NaN}', '{"prompt": "x", "max_tokens": 1e999}', "[]", "{"]
    ),
    st.integers(0, 20_000).map(lambda n: '{"prompt": "x", "c": ' + "[" * n + "]" * n + "}"),
    st.text(max_size=20),
)


@SETTINGS
@given(st.lists(lines, min_size=1, max_size=5))
def test_a_dataset_is_bounded_prompts_or_one_line_naming_the_line(jsonl):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "d.jsonl"
        path.write_text("\n".join(jsonl), encoding="utf-8", errors="surrogatepass")
        try:
            data = read_dataset(path, output_len=16)
        except WorkloadError as exc:
            assert "\n" not in str(exc)
            return
    for line in data:
        assert isinstance(line.spec.prompt, str)
        assert isinstance(line.spec.max_tokens, int) and not isinstance(line.spec.max_tokens, bool)
        assert 1 <= line.spec.max_tokens <= MAX_COUNT
