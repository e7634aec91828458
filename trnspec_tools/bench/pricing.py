"""Instance prices and the cost of an output token: re-exported from `trnspec.pricing`.

The table lives in the serving package (the image installs trnspec alone and `trnspec predict`
prices profiles); the benchmark and the tuner import it from here as before.
"""

from __future__ import annotations

from trnspec.pricing import (
    PRICES,
    InstancePrice,
    PriceError,
    cost_per_1m_output_tokens,
    resolve_price,
)

__all__ = ["PRICES", "InstancePrice", "PriceError", "cost_per_1m_output_tokens", "resolve_price"]
