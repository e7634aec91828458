"""The one retry rule of the client tools (bench, tune, smoke, demo). Pure: no I/O.

A request is retried only before the first byte of a real answer: when the connection could not
be opened, or the server answered at once with a status that says "not now" (429, or 500/502/503/
504 before any event). Once a response body has started, a failure is a failure of that request
and is counted by kind; nothing is ever re-sent after a timeout waiting for a reply (the server
may be generating, and a re-sent POST would make it generate twice).

Retry-After (seconds, or an HTTP date) is honoured on 429 and 503, capped so a hostile value
cannot stall a run; other waits back off exponentially from `backoff_s`.
"""

from __future__ import annotations

from email.utils import parsedate_to_datetime

from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.numbers import int_text

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
RETRY_AFTER_STATUS = frozenset({429, 503})
DEFAULT_RETRY_AFTER_CAP_S = 10.0


def parse_retry_after(value: str | None, now_epoch_s: float) -> float | None:
    """Seconds to wait from a Retry-After header value, or None if absent or unreadable."""
    if value is None:
        return None
    text = value.strip()
    try:
        # delay-seconds is 1*DIGIT, ASCII (RFC 9110 10.2.3): not '²', not 400 digits
        return float(int_text(text, "Retry-After", 0, None))
    except BoundaryError:
        pass
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - now_epoch_s)


def retry_delay(
    attempt: int,
    *,
    status: int | None,
    retry_after: str | None = None,
    backoff_s: float = 0.5,
    cap_s: float = DEFAULT_RETRY_AFTER_CAP_S,
    now_epoch_s: float = 0.0,
) -> float | None:
    """How long to wait before retry number `attempt + 1`, or None when the failure is final.

    `status` is the HTTP status of an answer that carried no content yet, or None for a
    connection that could not be opened (the only transport failure that is retried)."""
    if status is not None and status not in RETRY_STATUS:
        return None
    backoff = backoff_s * 2**attempt
    if status in RETRY_AFTER_STATUS:
        asked = parse_retry_after(retry_after, now_epoch_s)
        if asked is not None:
            return min(asked, cap_s)
    return min(backoff, cap_s)
