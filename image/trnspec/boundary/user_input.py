"""How user input is read: config files, `--set` and `cdk -c` values, one rule for all.

The rule (the README, "The serving engine: `python -m trnspec`"):
- Files and `PATH=VALUE` values are YAML 1.2 core schema, not PyYAML's YAML 1.1: only
  true/false are booleans (`yes`, `on` stay text), numbers are decimal, `0o17` or `0x1f` (a
  leading zero is not octal), and dates stay text.
- A field typed as text gets the value exactly as written, even when it looks like a number:
  `target.revision=0123456` is "0123456", `kubernetes_version=1.30` is "1.30". Numbers read from
  YAML remember their text (`YamlInt`, `YamlFloat`) so the field's type decides, not the parser.
- Integer fields refuse booleans (`tensor_parallel_size=true` is an error, not 1); text fields
  refuse control characters.
- Numbers are finite (`.nan`, `.inf` and 1e999 are refused) and keys are unique (a duplicate is
  an error naming both lines, not silently the last value).
- Bounded: a file larger than MAX_INPUT_BYTES, more than MAX_ALIASES YAML aliases (a
  nested-alias "billion laughs" document) or nesting deeper than Python's stack is refused
  quickly with one line, never expanded.

Only pure functions and pydantic types; an `InputReadError` (an InputError) carries the reason,
and the caller names the field (`InputReadError.named`).
"""

from __future__ import annotations

import math
import os
import re
import stat
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import AfterValidator, BeforeValidator

from trnspec.boundary.problems import ABSENT, InputError, Problem

#: Largest config or profile file read (a real one is a few KB).
MAX_INPUT_BYTES = 1024 * 1024
#: YAML aliases (*name) allowed in one document; profiles use none.
MAX_ALIASES = 64


class InputReadError(InputError):
    """Input that cannot be read (not YAML, too large, a duplicate key): an InputError whose
    message is the reason alone, since the caller, not the parser, knows which flag or field
    holds it (the one Problem's field is "input" until the caller names it: `named`)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__([Problem("input", ABSENT, reason)])

    def __str__(self) -> str:
        return self.reason

    def named(self, field: str, value: object) -> InputError:
        """The same refusal as an InputError naming the field and the value."""
        return InputError([Problem(field, value, self.reason)])


class YamlInt(int):
    """An integer read from YAML that remembers how it was written ("0123456", "0x1F")."""

    text: str

    def __new__(cls, value: int, text: str | None = None) -> YamlInt:
        obj = super().__new__(cls, value)
        obj.text = str(value) if text is None else text
        return obj

    def __getnewargs__(self) -> tuple[int, str]:  # type: ignore[override]
        return int(self), self.text


class YamlFloat(float):
    """A float read from YAML that remembers how it was written ("1.30")."""

    text: str

    def __new__(cls, value: float, text: str | None = None) -> YamlFloat:
        obj = super().__new__(cls, value)
        obj.text = repr(float(value)) if text is None else text
        return obj

    def __getnewargs__(self) -> tuple[float, str]:  # type: ignore[override]
        return float(self), self.text


_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")


class _CoreLoader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 core-schema scalars and an alias budget."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise InputReadError(
                    f"more than {MAX_ALIASES} YAML aliases (*name); write the values out"
                )
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        """A mapping whose explicit keys are unique: a duplicate (PyYAML keeps the last one
        silently) is an InputReadError naming the key and both lines. Keys merged in with `<<`
        may still be overridden, as YAML's merge allows."""
        if isinstance(node, yaml.MappingNode):
            first_line: dict[str, int] = {}
            for key_node, _value in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(
                    key_node, yaml.ScalarNode
                ):
                    continue
                line = key_node.start_mark.line + 1
                if key_node.value in first_line:
                    raise InputReadError(
                        f"duplicate key {key_node.value[:80]!r} on line {line} (first on line"
                        f" {first_line[key_node.value]}); keep one"
                    )
                first_line[key_node.value] = line
        return super().construct_mapping(node, deep)


# Keep null and merge from SafeLoader; replace bool/int/float, drop timestamps (dates are text).
_CoreLoader.yaml_implicit_resolvers = {
    first: [
        (tag, rx)
        for tag, rx in resolvers
        if tag.rsplit(":", 1)[-1] not in {"bool", "int", "float", "timestamp"}
    ]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_CoreLoader.add_implicit_resolver("tag:yaml.org,2002:bool", _BOOL, list("tTfF"))
_CoreLoader.add_implicit_resolver("tag:yaml.org,2002:int", _INT, list("-+0123456789"))
_CoreLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))


def _construct_bool(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> bool:
    return str(loader.construct_scalar(node)).lower() == "true"


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> YamlInt | str:
    text = str(loader.construct_scalar(node))
    body = text.lstrip("+-")
    sign = -1 if text.startswith("-") else 1
    try:
        if body.startswith("0o"):
            value = int(body[2:], 8)
        elif body.startswith("0x"):
            value = int(body[2:], 16)
        else:
            value = int(body, 10)
    except ValueError:
        return text  # an explicit !!int that is not one: leave it to the field's type
    return YamlInt(sign * value, text)


def _construct_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> YamlFloat | str:
    """A finite float; `.nan`, `.inf` (and a literal too large, 1e999) are refused: no setting
    is infinite, and a NaN passes every comparison a check makes."""
    text = str(loader.construct_scalar(node))
    lowered = text.lower().replace(".inf", "inf").replace(".nan", "nan")
    try:
        value = float(lowered)
    except ValueError:
        return text
    if not math.isfinite(value):
        raise InputReadError(
            f"{text[:40]} on line {node.start_mark.line + 1} is not a finite number; write a"
            " finite value"
        )
    return YamlFloat(value, text)


_CoreLoader.add_constructor("tag:yaml.org,2002:bool", _construct_bool)
_CoreLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_CoreLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)


def load_yaml(text: str) -> Any:
    """Parse one YAML document under the rule above; InputReadError says what is wrong."""
    if len(text) > MAX_INPUT_BYTES:
        raise InputReadError(f"larger than {MAX_INPUT_BYTES // 1024} KiB; a config is a few KB")
    try:
        value = yaml.load(text, Loader=_CoreLoader)  # a SafeLoader subclass: no object tags
    except yaml.YAMLError as err:
        raise InputReadError(f"not valid YAML: {' '.join(str(err).split())}") from None
    except RecursionError:
        raise InputReadError("nested too deeply to be a config") from None
    if _refers_to_itself(value):
        raise InputReadError("an alias refers to the node that holds it (&a [*a]); write it out")
    return value


def _refers_to_itself(value: Any) -> bool:
    """Whether a list or mapping contains itself (a recursive YAML alias): every reader that
    walks it would recurse forever."""
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        item, leaving = stack.pop()
        if leaving:
            on_path.discard(id(item))
            continue
        if not isinstance(item, dict | list):
            continue
        if id(item) in on_path:
            return True
        on_path.add(id(item))
        stack.append((item, True))
        stack.extend(
            (child, False) for child in (item.values() if isinstance(item, dict) else item)
        )
    return False


def parse_value(raw: str) -> Any:
    """The VALUE of a `PATH=VALUE` override (`--set`, `cdk -c`, serving.overrides).

    One YAML 1.2 value (a scalar or a flow list/mapping); empty is the empty string; text that is
    not valid YAML is taken as-is. Numbers keep their text for fields typed as text.
    """
    if not raw.strip():
        return ""
    try:
        return load_yaml(raw)
    except InputReadError:
        return raw


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
    (stat.S_ISSOCK, "a socket"),
)


def read_regular(path: str | Path, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most max_bytes. The file is opened without blocking and
    inspected on the open descriptor, so a FIFO, a device (/dev/zero) or a directory is refused
    (InputReadError) before a byte is read, and a read never hangs or fills memory. OSError when
    it cannot be opened or read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise InputReadError(f"it is {kind}; give a regular file")
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > max_bytes:
        raise InputReadError(f"larger than the {max_bytes}-byte limit")
    return b"".join(chunks)


def read_text_file(path: Path) -> str:
    """A config file's text: a regular file (read_regular) of at most MAX_INPUT_BYTES, UTF-8.
    OSError or InputReadError."""
    data = read_regular(path, MAX_INPUT_BYTES)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputReadError(
            f"not UTF-8 text (byte {data[err.start]:#04x} at offset {err.start}); save it as UTF-8"
        ) from None


# --- field types ---------------------------------------------------------------------------


def as_text(value: Any) -> Any:
    """A number read from YAML becomes the text it was written as; others pass through."""
    text = getattr(value, "text", None)
    if isinstance(value, (YamlInt, YamlFloat)) and isinstance(text, str):
        return text
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


def _printable(value: str) -> str:
    if not value.isprintable():
        bad = next(c for c in value if not c.isprintable())
        raise ValueError(f"contains the control character {bad!r}; use printable text")
    return value


def refuse_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError(f"must be a number, not {str(value).lower()}")
    return value


def plain(value: Any) -> Any:
    """The same value with YAML-tagged numbers turned into plain int/float (recursively), for
    free-form fields whose values are passed on (e.g. vLLM's --speculative-config JSON)."""
    if isinstance(value, YamlInt):
        return int(value)
    if isinstance(value, YamlFloat):
        return float(value)
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


#: A free-form value: any YAML, numbers as plain int/float.
Plain = Annotated[Any, BeforeValidator(plain)]
#: A text field: numbers keep their written text, control characters are refused.
Text = Annotated[str, BeforeValidator(as_text), AfterValidator(_printable)]
#: An integer field that refuses true/false (pydantic's lax mode would read them as 1/0).
Int = Annotated[int, BeforeValidator(refuse_bool)]
