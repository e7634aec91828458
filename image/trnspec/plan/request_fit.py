"""Whether the requests a prediction or a plan is asked about fit the engine at all: a prompt of
--input-len tokens plus --output-len generated tokens must fit the config's max_model_len, or
vLLM refuses every such request (its context-length check), and a speed figure for it would
describe a server that never answers."""

from __future__ import annotations

from trnspec.boundary.problems import Problem
from trnspec.config.serving import ServingConfig


def request_fit_problems(input_len: int, output_len: int, cfg: ServingConfig) -> list[Problem]:
    """One problem naming --input-len when prompt + output exceed `cfg.max_model_len`."""
    total = input_len + output_len
    if total <= cfg.max_model_len:
        return []
    return [
        Problem(
            "--input-len",
            input_len,
            f"a prompt of {input_len} plus {output_len} output tokens ({total}) does not fit"
            f" max_model_len {cfg.max_model_len} of {cfg.name}: shorten --input-len/--output-len"
            f" or serve a config with max_model_len >= {total}",
        )
    ]
