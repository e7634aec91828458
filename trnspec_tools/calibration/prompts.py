"""The prompts a calibration sends: the user's JSONL file (a local path or s3://BUCKET/KEY, one
{"prompt": ..., optional "max_tokens"} per line; bench.workload.read_dataset's format), else the
shipped default set below. Acceptance is a property of the prompts, so the user's own are the
ones that decide; the default set mixes the kinds of request a chat service sees (code, prose,
extraction, reasoning), none asking the model to copy its input (which would overstate it)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from trnspec.config.s3_uri import is_s3_uri, parse_s3_uri

from trnspec_tools.bench.workload import load_dataset, sample_or_cycle
from trnspec_tools.client.request_spec import RequestSpec

DEFAULT_SET = "default"

DEFAULT_PROMPTS: tuple[str, ...] = (
    "Write a Python function that merges two sorted lists into one sorted list, with a docstring"
    " and two examples.",
    "Explain to a new engineer what a database index is and when adding one makes writes slower.",
    "Summarize the trade-offs between renting GPUs by the hour and buying them, in five bullets.",
    "A train leaves at 9:40 and arrives at 13:15. How long is the trip? Show your steps.",
    "Write a SQL query returning the ten customers with the highest total order value in 2025,"
    " given tables customers(id, name) and orders(id, customer_id, total, created_at).",
    "Draft a short, polite email asking a supplier to confirm a delivery date moved to Friday.",
    "List the steps to rotate an API key without downtime for a service behind a load balancer.",
    "What is the difference between a process and a thread? Answer in two paragraphs.",
    "Write a bash script that prints the five largest files under a directory given as argument.",
    "Extract every date and amount from this text as JSON: 'Paid 120 EUR on 3 March, then 75.50"
    " EUR on 19 April and 300 EUR on 2 May.'",
    "Give a recipe for a vegetarian lentil soup for four people, with quantities.",
    "Explain speculative decoding in language models to a product manager, without formulas.",
    "Write a unit test in pytest for a function slugify(text) that lowercases and joins words"
    " with hyphens.",
    "Compare TCP and UDP for a multiplayer game's position updates, and recommend one.",
    "Write a haiku sequence of three stanzas about a lighthouse in winter.",
    "Translate into French: 'The meeting is postponed until next Tuesday at ten in the morning.'",
)


def default_specs(num_prompts: int, output_len: int, seed: int = 0) -> list[RequestSpec]:
    import random

    specs = [RequestSpec(p, output_len) for p in DEFAULT_PROMPTS]
    return sample_or_cycle(specs, num_prompts, random.Random(seed))


#: (bucket, key, local path) -> downloads the object to the path.
Download = Callable[[str, str, Path], None]


def load_prompts(
    source: str | None,
    num_prompts: int,
    output_len: int,
    seed: int = 0,
    download: Download | None = None,
) -> list[RequestSpec]:
    """`num_prompts` requests from `source` (None or "default": the shipped set)."""
    if source is None or source == DEFAULT_SET:
        return default_specs(num_prompts, output_len, seed)
    if not is_s3_uri(source):
        return load_dataset(Path(source), num_prompts, output_len, seed)
    where = parse_s3_uri(source)
    if download is None:
        raise ValueError("an s3:// prompt file needs a download function")
    with tempfile.TemporaryDirectory(prefix="trnspec-prompts-") as tmp:
        path = Path(tmp) / "prompts.jsonl"
        download(where.bucket, where.prefix, path)
        return load_dataset(path, num_prompts, output_len, seed)
