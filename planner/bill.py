"""What a plan will cost at the store, in requests, bytes and money, before it runs.

The prices are list prices, so the figure is an estimate: S3 Standard GETs at
$0.0004 per 1,000 and internet egress at $0.09 per GB (the first 10 TB of a
month, us-east-1); GCS Standard class B operations at $0.0004 per 1,000 and
internet egress at $0.12 per GB (premium tier, the first TB).  Reads inside
the cloud region cost no egress: pass ``Prices(egress_per_gb=0)``.  Any other
store (HTTP, local) is priced at nothing unless prices are given.
"""

from __future__ import annotations

from dataclasses import dataclass

from csup_async.model.errors import ArgumentError

__all__ = ["GCS_PRICES", "NO_PRICES", "S3_PRICES", "Bill", "Prices", "bill", "prices_for"]


@dataclass(frozen=True, slots=True)
class Prices:
    """Dollars per 1,000 GET requests and per GB (10⁹ bytes) sent out."""

    get_per_1000: float = 0.0
    egress_per_gb: float = 0.0
    name: str = "given prices"

    def __post_init__(self) -> None:
        for field in ("get_per_1000", "egress_per_gb"):
            v = getattr(self, field)
            if not isinstance(v, (int, float)) or not v >= 0 or v == float("inf"):
                raise ArgumentError(f"Prices.{field} must be a finite number >= 0, not {v!r}")


S3_PRICES = Prices(0.0004, 0.09, "S3 list prices")
GCS_PRICES = Prices(0.0004, 0.12, "GCS list prices")
NO_PRICES = Prices(0.0, 0.0, "no prices")


def prices_for(profile_name: str) -> Prices:
    """The default prices of a planner profile's store (S3, GCS; nothing for others)."""
    if profile_name.startswith("s3"):
        return S3_PRICES
    if profile_name.startswith("gcs"):
        return GCS_PRICES
    return NO_PRICES


@dataclass(frozen=True, slots=True)
class Bill:
    requests: int
    bytes: int
    prices: Prices

    @property
    def request_cost(self) -> float:
        return self.requests * self.prices.get_per_1000 / 1000.0

    @property
    def egress_cost(self) -> float:
        return self.bytes * self.prices.egress_per_gb / 1e9

    @property
    def total(self) -> float:
        return self.request_cost + self.egress_cost

    def __str__(self) -> str:
        return (f"estimated cost ${self.total:.6f}: {self.requests:,} GET"
                f"{'' if self.requests == 1 else 's'} ${self.request_cost:.6f} + "
                f"{self.bytes:,} bytes out ${self.egress_cost:.6f} ({self.prices.name}: "
                f"${self.prices.get_per_1000:g} per 1,000 GETs, "
                f"${self.prices.egress_per_gb:g} per GB; an estimate)")


def bill(requests: int, nbytes: int, prices: Prices) -> Bill:
    return Bill(requests, nbytes, prices)
