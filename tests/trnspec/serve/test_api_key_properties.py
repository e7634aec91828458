"""Properties of the API-key check on any key and any file layout: a key is accepted exactly from
MIN_KEY_LENGTH characters (surrounding whitespace not counted), a refusal names the secret and
the length but never the value, and a file holds the key wherever it sits relative to the read
chunks."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from trnspec.config.pod_contract import ENV_API_KEY_SECRET
from trnspec.config.serving import ConfigError
from trnspec.serve.api_key import (
    MIN_KEY_LENGTH,
    auth_headers,
    files_holding_key,
    load_api_key,
    secrets_manager_fetch,
)

SETTINGS = settings(max_examples=100, deadline=None)
key_chars = st.characters(min_codepoint=0x21, max_codepoint=0x7E)  # printable, no whitespace
#: Symbols no refusal message uses, so a key found in one was echoed.
echo_free = st.sampled_from("#$%&*+<>?@^~|")
padding = st.sampled_from(["", " ", "\n", " \t", "\r\n"])


@SETTINGS
@given(st.text(echo_free, min_size=1, max_size=2 * MIN_KEY_LENGTH), padding, padding)
@example("#" * MIN_KEY_LENGTH, " ", "\n")
@example("#" * (MIN_KEY_LENGTH - 1), "", "")
def test_a_key_is_accepted_exactly_from_the_minimum_length(key, before, after):
    asked: list[str] = []

    def fetch(secret_id: str) -> str:
        asked.append(secret_id)
        return before + key + after

    env = {ENV_API_KEY_SECRET: " arn:secret "}
    if len(key) >= MIN_KEY_LENGTH:
        assert load_api_key(env, fetch) == key
    else:
        with pytest.raises(ConfigError) as err:
            load_api_key(env, fetch)
        (problem,) = err.value.problems
        assert problem.field == ENV_API_KEY_SECRET and problem.value == "arn:secret"
        assert f"holds {len(key)} characters" in problem.fix
        assert key not in str(err.value)
    assert asked == ["arn:secret"]


@pytest.mark.parametrize("named", ["", "   ", "\n"])
def test_a_blank_secret_name_means_no_key_and_no_fetch(named):
    def fetch(_: str) -> str:
        raise AssertionError("fetched without a secret name")

    assert load_api_key({ENV_API_KEY_SECRET: named}, fetch) is None


def test_a_failed_read_names_the_error_class_and_message():
    def fetch(_: str) -> str:
        raise TimeoutError("endpoint unreachable")

    with pytest.raises(ConfigError, match="TimeoutError: endpoint unreachable"):
        load_api_key({ENV_API_KEY_SECRET: "arn:x"}, fetch)


def test_a_binary_secret_is_refused_as_unreadable():
    class BinaryOnly:
        def get_secret_value(self, SecretId: str) -> dict:
            return {"SecretBinary": b"\0" * 48}

    with pytest.raises(ConfigError) as err:
        load_api_key({ENV_API_KEY_SECRET: "arn:x"}, secrets_manager_fetch(BinaryOnly()))
    (problem,) = err.value.problems
    assert problem.fix.startswith(
        "cannot read the API key (ValueError: the secret has no SecretString (binary secrets"
        " are not supported)); "
    )


@SETTINGS
@given(st.text(key_chars, min_size=1, max_size=40))
def test_requests_carry_the_key_as_a_bearer_token(key):
    assert auth_headers(key) == {"Authorization": f"Bearer {key}"}


@SETTINGS
@given(
    st.text(key_chars, min_size=1, max_size=24),
    st.integers(0, 200),
    st.integers(0, 50),
    st.integers(1, 80),
    st.booleans(),
)
@example("ab", 1, 0, 2, True)  # a two-byte key split over two two-byte reads
@example("X", 0, 3, 1, False)  # nothing read yet must match nothing
def test_a_file_holds_the_key_wherever_it_sits_against_the_chunks(key, lead, trail, chunk, whole):
    needle = key.encode() if whole else key.encode()[:-1]
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "sub").mkdir()
        (Path(tmp) / "sub" / "f.bin").write_bytes(b"\0" * lead + needle + b"\0" * trail)
        found = files_holding_key(Path(tmp), key, chunk=chunk)
    assert found == (["sub/f.bin"] if whole else [])


def test_an_empty_key_is_in_no_file(tmp_path: Path):
    (tmp_path / "f").write_bytes(b"anything")
    assert files_holding_key(tmp_path, "") == []


def test_without_a_client_the_default_credential_chain_reads_the_secret(fake_aws_env):
    import boto3
    from moto import mock_aws

    key = "#" * MIN_KEY_LENGTH
    with mock_aws():
        arn = boto3.client("secretsmanager").create_secret(Name="k", SecretString=key)["ARN"]
        assert load_api_key({ENV_API_KEY_SECRET: arn}, secrets_manager_fetch()) == key
