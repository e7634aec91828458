"""An endpoint URL as the tools accept it, and the header values they send to it.

Refused with one line naming the fix: a scheme other than http(s), no host, a port that is not a
number in 1..65535, a malformed IPv6 literal, a host DNS cannot look up (an empty label as in
`a..b`, a label over 63 characters: the IDNA codec's UnicodeError inside getaddrinfo otherwise),
whitespace or control characters, a query or fragment, and credentials
(`http://user:pass@host`): a password in a URL lands in reports, logs and shell history; the key
belongs in an environment variable (`--api-key-env`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.http_read import url_parts

#: The fix for a URL that carries credentials.
CREDENTIALS_FIX = (
    "credentials in the URL are refused (they would land in reports and logs); remove"
    " 'user:password@' and put the API key in an environment variable named by --api-key-env"
)


@dataclass(frozen=True)
class Endpoint:
    """A checked base URL: scheme, host (an IPv6 literal without brackets), port, base path."""

    scheme: str
    host: str
    port: int
    base_path: str

    @classmethod
    def parse(cls, url: str, field: str = "--endpoint") -> Endpoint:
        """The URL's parts, or BoundaryError naming `field`, the URL and the fix."""
        parts = url_parts(field, url, "http://127.0.0.1:8000 or http://[::1]:8000", CREDENTIALS_FIX)
        port = parts.port
        default = 443 if parts.scheme == "https" else 80
        return cls(parts.scheme, parts.hostname or "", port or default, parts.path.rstrip("/"))

    @property
    def default_port(self) -> bool:
        return self.port == (443 if self.scheme == "https" else 80)

    @property
    def host_header(self) -> str:
        """The Host header: an IPv6 literal in brackets, the port unless it is the default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.default_port else f"{host}:{self.port}"

    @property
    def origin(self) -> str:
        """scheme://host[:port], the identity an API key is bound to."""
        return f"{self.scheme}://{self.host_header}"


def header_value(name: str, value: str) -> str:
    """A header value safe to send: no CR, LF or NUL (header injection), latin-1 only."""
    if any(c in value for c in "\r\n\x00"):
        shown = "***" if name.lower() == "authorization" else value
        raise BoundaryError(
            f"header {name}", shown, "must not contain CR, LF or NUL; check the variable's value"
        )
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        raise BoundaryError(
            f"header {name}", "***", "must be ASCII/latin-1 text; check the variable's value"
        ) from None
    return value


@dataclass(frozen=True)
class BoundKey:
    """An API key bound to the origin (scheme, host, port) of the endpoint it was given for: a
    client for any other origin (a `--compare` baseline elsewhere, say) does not get it."""

    origin: str
    value: str = field(repr=False)

    def for_url(self, url: str) -> str | None:
        """The key when `url` has the bound origin, else None."""
        try:
            return self.value if Endpoint.parse(url).origin == self.origin else None
        except BoundaryError:
            return None


def bind_key(key: str | BoundKey | None, endpoint: str | None) -> str | BoundKey | None:
    """The key bound to `endpoint`'s origin (unchanged without an endpoint, or when the key is
    already bound)."""
    if key is None or isinstance(key, BoundKey) or endpoint is None:
        return key
    return BoundKey(Endpoint.parse(endpoint).origin, key)
