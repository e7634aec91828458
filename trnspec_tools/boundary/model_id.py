"""A served model id, from a server's /v1/models or from --model: text the tools can send back
in a JSON body and print."""

from __future__ import annotations

import argparse

#: Longest model id accepted (Hugging Face ids are at most 96 characters).
MAX_MODEL_ID_CHARS = 512


def is_model_id(value: object) -> bool:
    """A non-empty string of printable characters that encodes as UTF-8 (no lone surrogate), at
    most MAX_MODEL_ID_CHARS long. Rich markup characters are allowed (and escaped when shown)."""
    if not isinstance(value, str) or not 0 < len(value) <= MAX_MODEL_ID_CHARS:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return value.isprintable()


def model_id_arg(text: str) -> str:
    """argparse `type=` for --model."""
    if not is_model_id(text):
        raise argparse.ArgumentTypeError(
            f"{text.encode('utf-8', 'backslashreplace').decode()[:80]!r}: must be printable UTF-8"
            f" text of 1 to {MAX_MODEL_ID_CHARS} characters (the served model name)"
        )
    return text
