"""Generated, template-like Python code for training the tiny target/draft pair.

Speculative decoding only pays off when the draft can predict the target, so the corpus is built
so that almost every token is determined by a few earlier ones: a function's name (verb + noun)
fixes its whole body, and each noun has one fixed set of attributes. A small target learns those
rules in a minute, and a smaller draft distilled from it learns to agree with it. The only free
choices are which function comes next, which is where acceptance dips (as it does on real text).

Everything here is pure and seeded: the same seed gives the same corpus and the same prompts.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}"
)
"""ChatML, as Qwen3 uses it: the served chat endpoint and the training data share this format."""

END_OF_TEXT = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
SPECIAL_TOKENS = (END_OF_TEXT, IM_START, IM_END)


@dataclass(frozen=True)
class Noun:
    """A domain object: its attributes are fixed so the body of every function is predictable."""

    name: str
    plural: str
    key: str
    attr: str
    limit: int
    error: str


NOUNS: tuple[Noun, ...] = (
    Noun("user", "users", "name", "age", 18, "too young"),
    Noun("order", "orders", "order_id", "total", 100, "too small"),
    Noun("item", "items", "sku", "price", 20, "too cheap"),
    Noun("record", "records", "record_id", "size", 512, "too small"),
    Noun("file", "files", "path", "bytes", 4096, "too large"),
    Noun("task", "tasks", "task_id", "priority", 3, "not urgent"),
    Noun("event", "events", "event_id", "duration", 60, "too short"),
    Noun("message", "messages", "sender", "length", 280, "too long"),
    Noun("account", "accounts", "email", "balance", 0, "overdrawn"),
    Noun("invoice", "invoices", "number", "amount", 1000, "too high"),
    Noun("product", "products", "code", "stock", 10, "out of stock"),
    Noun("session", "sessions", "token", "idle", 900, "expired"),
    Noun("packet", "packets", "sequence", "ttl", 64, "dropped"),
    Noun("job", "jobs", "job_id", "retries", 5, "failed"),
    Noun("ticket", "tickets", "ticket_id", "severity", 2, "critical"),
    Noun("device", "devices", "serial", "battery", 15, "low on power"),
    Noun("sensor", "sensors", "sensor_id", "reading", 75, "out of range"),
    Noun("report", "reports", "title", "pages", 40, "too long"),
)


def _filter(n: Noun) -> str:
    return (
        f"def filter_{n.plural}({n.plural}):\n"
        f'    """Return the {n.plural} whose {n.attr} is above {n.limit}."""\n'
        f"    result = []\n"
        f"    for {n.name} in {n.plural}:\n"
        f"        if {n.name}.{n.attr} > {n.limit}:\n"
        f"            result.append({n.name})\n"
        f"    return result\n"
    )


def _count(n: Noun) -> str:
    return (
        f"def count_{n.plural}({n.plural}):\n"
        f'    """Count the {n.plural} whose {n.attr} is at most {n.limit}."""\n'
        f"    count = 0\n"
        f"    for {n.name} in {n.plural}:\n"
        f"        if {n.name}.{n.attr} <= {n.limit}:\n"
        f"            count += 1\n"
        f"    return count\n"
    )


def _total(n: Noun) -> str:
    return (
        f"def total_{n.attr}({n.plural}):\n"
        f'    """Add up the {n.attr} of all {n.plural}."""\n'
        f"    total = 0\n"
        f"    for {n.name} in {n.plural}:\n"
        f"        total += {n.name}.{n.attr}\n"
        f"    return total\n"
    )


def _find(n: Noun) -> str:
    return (
        f"def find_{n.name}({n.plural}, {n.key}):\n"
        f'    """Return the {n.name} with the given {n.key}, or None."""\n'
        f"    for {n.name} in {n.plural}:\n"
        f"        if {n.name}.{n.key} == {n.key}:\n"
        f"            return {n.name}\n"
        f"    return None\n"
    )


def _sort(n: Noun) -> str:
    return (
        f"def sort_{n.plural}({n.plural}):\n"
        f'    """Sort the {n.plural} by {n.attr}, largest first."""\n'
        f"    return sorted({n.plural}, key=lambda {n.name}: {n.name}.{n.attr}, reverse=True)\n"
    )


def _group(n: Noun) -> str:
    return (
        f"def group_{n.plural}({n.plural}):\n"
        f'    """Group the {n.plural} by {n.key}."""\n'
        f"    groups = {{}}\n"
        f"    for {n.name} in {n.plural}:\n"
        f"        groups.setdefault({n.name}.{n.key}, []).append({n.name})\n"
        f"    return groups\n"
    )


def _validate(n: Noun) -> str:
    return (
        f"def validate_{n.name}({n.name}):\n"
        f'    """Raise ValueError if the {n.name} is {n.error}."""\n'
        f"    if {n.name}.{n.attr} > {n.limit}:\n"
        f'        raise ValueError(f"{n.name} {{{n.name}.{n.key}}} is {n.error}")\n'
        f"    return {n.name}\n"
    )


def _klass(n: Noun) -> str:
    cls = n.name.capitalize()
    return (
        f"class {cls}:\n"
        f'    """A {n.name} with a {n.key} and a {n.attr}."""\n'
        f"\n"
        f"    def __init__(self, {n.key}, {n.attr}={n.limit}):\n"
        f"        self.{n.key} = {n.key}\n"
        f"        self.{n.attr} = {n.attr}\n"
        f"\n"
        f"    def __repr__(self):\n"
        f'        return f"{cls}({n.key}={{self.{n.key}!r}}, {n.attr}={{self.{n.attr}!r}})"\n'
    )


TEMPLATES: dict[str, tuple[Callable[[Noun], str], str]] = {
    "filter": (_filter, "filters {plural} by {attr}"),
    "count": (_count, "counts {plural} with a small {attr}"),
    "total": (_total, "adds up the {attr} of {plural}"),
    "find": (_find, "finds a {name} by {key}"),
    "sort": (_sort, "sorts {plural} by {attr}"),
    "group": (_group, "groups {plural} by {key}"),
    "validate": (_validate, "validates a {name}"),
    "class": (_klass, "defines a {name} class"),
}
"""Template name -> (code generator, what a user would ask for in chat)."""

IMPORTS = ("import json", "import logging", "import os", "from dataclasses import dataclass")


def code_unit(template: str, noun: Noun) -> str:
    """One function or class: fully determined by the template and the noun."""
    return TEMPLATES[template][0](noun)


def chat_request(template: str, noun: Noun) -> str:
    """The user message that asks for `code_unit(template, noun)`."""
    what = TEMPLATES[template][1].format(
        plural=noun.plural, attr=noun.attr, name=noun.name, key=noun.key
    )
    return f"Write a Python function that {what}."


def chat_document(template: str, noun: Noun) -> str:
    """A whole ChatML exchange, in the exact format CHAT_TEMPLATE renders."""
    return (
        f"{IM_START}user\n{chat_request(template, noun)}{IM_END}\n"
        f"{IM_START}assistant\n{code_unit(template, noun)}{IM_END}\n"
    )


def module_document(rng: random.Random) -> str:
    """A small module: a header of imports, then a few units separated by two blank lines."""
    header = "\n".join(sorted(rng.sample(IMPORTS, rng.randint(1, 3))))
    units = [
        code_unit(rng.choice(list(TEMPLATES)), rng.choice(NOUNS)) for _ in range(rng.randint(3, 6))
    ]
    return header + "\n\n\n" + "\n\n".join(units)


def corpus(seed: int, documents: int, chat_fraction: float = 0.5) -> list[str]:
    """`documents` training documents (modules and chat exchanges), reproducible from `seed`."""
    rng = random.Random(seed)
    docs = []
    for _ in range(documents):
        if rng.random() < chat_fraction:
            docs.append(chat_document(rng.choice(list(TEMPLATES)), rng.choice(NOUNS)))
        else:
            docs.append(module_document(rng))
    return docs


def completion_prompts(count: int, seed: int = 0) -> list[str]:
    """Prompts in the corpus's style (an import header and a unit's first line): the demo's
    workload, on which the pair is expected to agree."""
    rng = random.Random(seed)
    prompts = []
    for _ in range(count):
        template, noun = rng.choice(list(TEMPLATES)), rng.choice(NOUNS)
        first_line = code_unit(template, noun).split("\n", 1)[0]
        prompts.append(f"{rng.choice(IMPORTS)}\n\n\n{first_line}\n")
    return prompts


def chat_prompts(count: int, seed: int = 0) -> list[str]:
    """User messages in the corpus's style, for the chat endpoint."""
    rng = random.Random(seed)
    return [chat_request(rng.choice(list(TEMPLATES)), rng.choice(NOUNS)) for _ in range(count)]
