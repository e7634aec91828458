"""Properties of trnspec_tools.boundary.endpoint: any text is a checked endpoint or one line; no
credentials in a URL; header values never break a header; a bound key stays with its origin."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trnspec.boundary.errors import BoundaryError

from trnspec_tools.boundary.endpoint import BoundKey, Endpoint, bind_key, header_value

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

url_parts = st.sampled_from(
    [
        "http://",
        "https://",
        "ftp://",
        "",
        "h",
        "[",
        "]",
        "::1",
        ":",
        "@",
        "u:p@",
        "/",
        "?",
        "#",
        "80",
        "65536",
        "-1",
        "0",
        "x",
        "127.0.0.1",
        " ",
        "\n",
        "\x00",
        "%",
        "[::1]",
        "[fe80::1%eth0]",
        "a..b",
        ".",
        "a" * 64,
    ]
)
urls = st.one_of(st.text(max_size=40), st.lists(url_parts, max_size=8).map("".join))


@SETTINGS
@given(urls)
def test_any_text_is_a_checked_endpoint_or_one_line_naming_the_flag(text):
    try:
        ep = Endpoint.parse(text)
    except BoundaryError as exc:
        assert str(exc).startswith("--endpoint=") and "\n" not in str(exc)
        return
    assert ep.scheme in ("http", "https") and ep.host
    assert 1 <= ep.port <= 65535
    assert ep.host_header.startswith("[") == (":" in ep.host)
    header_value("Host", ep.host_header)  # never breaks the request head
    ep.host.encode("idna")  # what getaddrinfo does to a name: never a UnicodeError there


@pytest.mark.parametrize(
    "url", ["http://a..b:8000", "http://" + "a" * 64 + ".example.com", "https://.x:443"]
)
def test_a_host_dns_cannot_look_up_is_one_line_not_a_unicode_error(url):
    with pytest.raises(BoundaryError) as exc:
        Endpoint.parse(url, "--baseline-endpoint")
    assert exc.value.field == "--baseline-endpoint" and "DNS" in exc.value.fix


@SETTINGS
@given(st.ip_addresses(v=6), st.integers(1, 65535))
def test_an_ipv6_host_header_has_brackets(address, port):
    ep = Endpoint.parse(f"http://[{address}]:{port}")
    expected = f"[{address}]" if port == 80 else f"[{address}]:{port}"
    assert ep.host_header == expected


@SETTINGS
@given(
    st.text(alphabet="abcdefgh", min_size=1, max_size=8),
    st.text(alphabet="ABCDEFGH12345", min_size=4, max_size=12),
)
def test_credentials_in_the_url_are_refused_and_never_echoed(user, password):
    with pytest.raises(BoundaryError) as err:
        Endpoint.parse(f"http://{user}:{password}@host:8000")
    assert password not in str(err.value) and "--api-key-env" in str(err.value)


@SETTINGS
@given(st.text(max_size=40))
def test_a_header_value_is_sent_unchanged_or_refused_without_showing_the_key(value):
    try:
        sent = header_value("Authorization", f"Bearer {value}")
    except BoundaryError as exc:
        assert str(exc).startswith("header Authorization=***:")
        return
    assert sent == f"Bearer {value}" and not any(c in sent for c in "\r\n\x00")


@SETTINGS
@given(st.sampled_from(["http://a:1", "http://a:2", "https://a:1", "http://b:1", "http://[::1]:1"]))
def test_a_bound_key_goes_only_to_its_origin(url):
    key = bind_key("sk", "http://a:1/v1")
    assert isinstance(key, BoundKey)
    assert key.for_url(url) == ("sk" if url == "http://a:1" else None)
    assert "sk" not in repr(key)
