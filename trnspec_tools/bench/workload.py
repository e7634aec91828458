"""What the benchmark sends, and when.

Prompts are either synthetic (a fixed number of words drawn from a seeded vocabulary: the client
has no tokenizer, so input length is counted in words, which is close to tokens for a word-level
vocabulary and the same for every arm of a comparison) or read from a JSONL dataset. Arrival times
are a seeded Poisson process for open-loop load, or all at once for closed-loop concurrency. The
same seed gives the same prompts in the same order, which is what makes an A/B comparison fair.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from trnspec.boundary import files
from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.numbers import MAX_COUNT

from trnspec_tools.client.request_spec import RequestSpec

#: Largest dataset file read, bytes, and most prompt lines (a benchmark needs a few thousand).
MAX_DATASET_BYTES = 256 * 1024 * 1024
MAX_DATASET_LINES = 1_000_000
#: Deepest JSON nesting of one dataset line (a prompt line is an object of plain values).
MAX_LINE_DEPTH = 8

# A small, neutral vocabulary; prompts only need a controllable length, not meaning.
VOCABULARY: tuple[str, ...] = tuple(
    " ".join(
        (
            "the of and to in is that for it as with was on be by at this are from or have an",
            "they which one you were all we can her has there been if more when will would who so",
            "no what time year people way day man thing woman life child world school state",
            "family student group country problem hand part place case week company system",
            "program question work government number night point home water room mother area",
            "money story fact month lot right study book eye job word business issue side kind",
            "head house service friend father power hour game line end",
        )
    ).split()
)


#: `--dataset` name of the built-in workload: prompts in the style the embedded default's tiny
#: models were trained on (tiny_corpus), where a good draft is expected to agree. Random
#: words are the opposite case (acceptance near zero), so both are worth measuring.
TINY_CORPUS = "tiny-corpus"


class WorkloadError(BoundaryError):
    """Bad workload input: one problem naming the flag, the value and the fix."""


def synthetic_prompts(
    num_prompts: int, input_len: int, output_len: int, seed: int
) -> list[RequestSpec]:
    """num_prompts prompts of input_len words each, different per prompt, fixed by seed."""
    if num_prompts < 1:
        raise WorkloadError("--num-prompts", num_prompts, "must be at least 1")
    if input_len < 1:
        raise WorkloadError("--input-len", input_len, "must be at least 1 word")
    if output_len < 1:
        raise WorkloadError("--output-len", output_len, "must be at least 1 token")
    rng = random.Random(seed)
    return [
        RequestSpec(" ".join(rng.choice(VOCABULARY) for _ in range(input_len)), output_len)
        for _ in range(num_prompts)
    ]


@dataclass(frozen=True)
class DatasetLine:
    """One prompt of a JSONL dataset, with its line number and raw "category" (None if absent)."""

    lineno: int
    spec: RequestSpec
    category: object = None


def _lone_surrogate(value: object) -> int | None:
    """Where a string holds a lone surrogate (JSON's "\\udc80" reads as one: it cannot be
    encoded, so the report or a print of it would end in a traceback), else None."""
    if not isinstance(value, str):
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def read_dataset(path: Path, output_len: int) -> list[DatasetLine]:
    """Every prompt of a JSONL file: one object per line with "prompt" (and optional
    "max_tokens", default `output_len`, and "category"). WorkloadError names the bad line."""
    if not path.is_file():
        raise WorkloadError("--dataset", str(path), "no such file; give a JSONL file of prompts")
    try:
        # lines end at a newline only: a U+2028 or NEL in a prompt is text (read_json_lines)
        objects = files.read_json_lines(
            path,
            "--dataset",
            MAX_DATASET_BYTES,
            max_depth=MAX_LINE_DEPTH,
            max_lines=MAX_DATASET_LINES,
        )
    except BoundaryError as exc:
        raise WorkloadError(exc.field, exc.value, exc.fix) from None
    lines: list[DatasetLine] = []
    for lineno, obj in objects:
        if not isinstance(obj, dict) or not isinstance(obj.get("prompt"), str):
            raise WorkloadError(
                "--dataset",
                f"{path} line {lineno}",
                'needs a string field "prompt", e.g. {"prompt": "Hello", "max_tokens": 64}',
            )
        max_tokens = obj.get("max_tokens", output_len)
        if (
            isinstance(max_tokens, bool)
            or not isinstance(max_tokens, int)
            or not 1 <= max_tokens <= MAX_COUNT
        ):
            raise WorkloadError(
                "--dataset",
                f"{path} line {lineno}",
                f"max_tokens={max_tokens!r:.40} must be an integer in 1..{MAX_COUNT}",
            )
        for field in ("prompt", "category"):
            if (at := _lone_surrogate(obj.get(field))) is not None:
                raise WorkloadError(
                    "--dataset",
                    f"{path} line {lineno}",
                    f"{field} holds a lone surrogate (\\u{ord(obj[field][at]):04x} at character"
                    f" {at + 1}), not Unicode text; pair it or remove it",
                )
        lines.append(
            DatasetLine(lineno, RequestSpec(obj["prompt"], max_tokens), obj.get("category"))
        )
    if not lines:
        raise WorkloadError("--dataset", str(path), "the file holds no prompts")
    return lines


def sample_or_cycle(specs: list[RequestSpec], n: int, rng: random.Random) -> list[RequestSpec]:
    """`n` prompts: sampled with `rng` when there are more, cycled in order when fewer."""
    if len(specs) >= n:
        return rng.sample(specs, n)
    return [specs[i % len(specs)] for i in range(n)]


def load_dataset(path: Path, num_prompts: int, output_len: int, seed: int) -> list[RequestSpec]:
    """Prompts from a JSONL file (read_dataset).

    More lines than needed are sampled with the seed; fewer are cycled, so --num-prompts is always
    honoured and the order is reproducible.
    """
    if num_prompts < 1:
        raise WorkloadError("--num-prompts", num_prompts, "must be at least 1")
    specs = [line.spec for line in read_dataset(path, output_len)]
    return sample_or_cycle(specs, num_prompts, random.Random(seed))


def arrival_offsets(num_requests: int, request_rate: float, seed: int) -> list[float]:
    """Send times in seconds from the start: Poisson with request_rate/s, or all 0 when infinite."""
    if request_rate <= 0:
        raise WorkloadError("--request-rate", request_rate, "must be > 0 (or inf for closed loop)")
    if request_rate == float("inf"):
        return [0.0] * num_requests
    rng = random.Random(seed)
    t, out = 0.0, []
    for _ in range(num_requests):
        out.append(t)
        t += rng.expovariate(request_rate)
    return out


def select_workload(
    dataset: str | None, num_prompts: int, input_len: int, output_len: int, seed: int
) -> list[RequestSpec]:
    """The `--dataset` flag of bench and tune: a JSONL path, the built-in `tiny-corpus`, or
    (None) synthetic prompts of `input_len` words."""
    if dataset is None:
        return synthetic_prompts(num_prompts, input_len, output_len, seed)
    if dataset == TINY_CORPUS:
        if num_prompts < 1:
            raise WorkloadError("--num-prompts", num_prompts, "must be at least 1")
        from trnspec_tools.local_engine.tiny_corpus import completion_prompts

        return [RequestSpec(p, output_len) for p in completion_prompts(num_prompts, seed)]
    return load_dataset(Path(dataset), num_prompts, output_len, seed)


@dataclass(frozen=True)
class Workload:
    """The workload flags of bench and tune (bench.workload_args), as one value."""

    #: a JSONL path, TINY_CORPUS, or None for synthetic prompts
    dataset: str | None
    num_prompts: int
    #: words per synthetic prompt
    input_len: int
    output_len: int
    seed: int

    def specs(self) -> list[RequestSpec]:
        """The prompts, in their reproducible order (select_workload)."""
        return select_workload(
            self.dataset, self.num_prompts, self.input_len, self.output_len, self.seed
        )

    @property
    def description(self) -> str:
        """What the prompts are, for reports."""
        return f"dataset {self.dataset}" if self.dataset else f"{self.input_len} words"
