"""Stripe, through the official `stripe` library, and how its objects read here.

The client is made per call from the settings (the API base is configurable, so the tests and a
local trial point it at a stand-in); it speaks async httpx and never retries on its own (a retry
is the caller's: nothing here is half-done). A failure is a clear problem: unreachable, 5xx or
our key refused -> 503 (BillingUnavailable, `retryable`); Stripe's 429 -> 429; a request Stripe
refuses as invalid -> 503 too, not retryable (our catalogue or settings are wrong, not the
caller's input).

Stripe metadata (on the product; a price's own metadata wins key by key) that makes a price a
plan here (a product without `kind` is not ours and is not mirrored):

    kind             subscription | credit_pack
    plan_key         the plan's key (default: the price's lookup_key, else the product id)
    monthly_credits  credits granted per paid period (subscription plans)
    pack_credits     credits one pack grants (credit packs)
    rollover_cap     credits carried into the next period at most
    limit_<name>     members, documents, storage_bytes, active_jobs, publishers,
                     webhook_endpoints, api_keys, crawl_pages (pages per website crawl): a
                     number, or absent/"unlimited" for none
    features         comma-separated feature names, shown as they are
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import stripe

from contentplatform.billing.errors import BillingUnavailable
from contentplatform.billing.schemas import LIMIT_KEYS
from contentplatform.config import Settings
from contentplatform.kit import health
from contentplatform.kit.errors import TooManyRequests

log = logging.getLogger(__name__)

SOURCE = "stripe"
KINDS = ("subscription", "credit_pack")


def instant(value: object) -> datetime | None:
    """A Stripe timestamp (seconds since the epoch) as an instant."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        try:
            return datetime.fromtimestamp(value, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    return None


def text(value: object, limit: int = 255) -> str | None:
    return value[:limit] if isinstance(value, str) and value else None


def ref_id(value: object) -> str | None:
    """An id a Stripe object names another by: the id itself, or the expanded object's."""
    if isinstance(value, dict):
        value = value.get("id")
    return text(value)


def _count(value: object) -> int | None:
    """A metadata number (metadata values are strings); absent, "unlimited" or junk: None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return max(value, 0)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


@dataclass(frozen=True)
class CatalogPrice:
    """One price of ours, with its product: what a Plan row holds."""

    price_id: str
    product_id: str
    values: dict[str, Any]


def catalog_price(price: dict[str, Any], product: dict[str, Any]) -> CatalogPrice | None:
    """The plan a Stripe price and its product describe, or None when it is not one of ours."""
    price_id, product_id = text(price.get("id")), text(product.get("id"))
    metadata = {**_metadata(product), **_metadata(price)}
    kind = metadata.get("kind")
    amount = price.get("unit_amount")
    currency = text(price.get("currency"), 3)
    if price_id is None or product_id is None or kind not in KINDS or currency is None:
        return None
    if not isinstance(amount, int) or isinstance(amount, bool):
        return None
    recurring = price.get("recurring")
    interval = recurring.get("interval") if isinstance(recurring, dict) else None
    interval = interval if interval in ("month", "year") else None
    if (kind == "subscription") != (interval is not None):
        return None  # a plan is billed by the month or year; a pack is paid once
    key = text(metadata.get("plan_key"), 100) or text(price.get("lookup_key"), 100) or product_id
    features = metadata.get("features") or ""
    return CatalogPrice(
        price_id=price_id,
        product_id=product_id,
        values={
            "key": key,
            "name": text(product.get("name")) or key,
            "kind": kind,
            "interval": interval,
            "price_amount": amount,
            "currency": currency.lower(),
            "monthly_credits": _count(metadata.get("monthly_credits")) or 0,
            "pack_credits": _count(metadata.get("pack_credits")) or 0,
            "rollover_cap": _count(metadata.get("rollover_cap")) or 0,
            "limits": {name: _count(metadata.get(f"limit_{name}")) for name in LIMIT_KEYS},
            "features": [f.strip()[:100] for f in str(features).split(",") if f.strip()][:50],
            "active": bool(price.get("active", True)) and bool(product.get("active", True)),
        },
    )


def _metadata(obj: dict[str, Any]) -> dict[str, str]:
    found = obj.get("metadata")
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


class Stripe:
    """Stripe's API for one request or task."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def _client(self) -> stripe.StripeClient:
        key = self.settings.stripe_secret_key
        if key is None:
            raise BillingUnavailable(
                "Billing is not configured (CONTENTPLATFORM_STRIPE_SECRET_KEY); nothing can be "
                "bought here.",
                extensions={"retryable": False},
            )
        base = self.settings.stripe_api_base
        return stripe.StripeClient(
            key.get_secret_value(),
            base_addresses={"api": base.rstrip("/")} if base else None,
            max_network_retries=0,
            http_client=stripe.HTTPXClient(timeout=self.settings.stripe_timeout_seconds),
        )

    async def catalog(self) -> list[CatalogPrice]:
        """Every active price of ours, with its product."""
        async with _failures("list the catalogue"):
            client = self._client()
            products = {
                product.id: product.to_dict()
                async for product in (
                    await client.v1.products.list_async({"active": True, "limit": 100})
                ).auto_paging_iter()
            }
            prices = [
                price.to_dict()
                async for price in (
                    await client.v1.prices.list_async({"active": True, "limit": 100})
                ).auto_paging_iter()
            ]
        found = []
        for price in prices:
            product = products.get(ref_id(price.get("product")) or "")
            if product is not None and (plan := catalog_price(price, product)) is not None:
                found.append(plan)
        return found

    async def create_customer(self, tenant_id: str, name: str) -> str:
        async with _failures("create the customer"):
            customer = await self._client().v1.customers.create_async(
                {"name": name[:255], "metadata": {"tenant_id": tenant_id}},
                {"idempotency_key": f"customer-{tenant_id}"},
            )
        return str(customer.id)

    async def create_checkout(self, params: dict[str, Any]) -> dict[str, Any]:
        async with _failures("start the checkout"):
            made = await self._client().v1.checkout.sessions.create_async(params)  # type: ignore[arg-type]
        return made.to_dict()

    async def create_portal(self, params: dict[str, Any]) -> dict[str, Any]:
        async with _failures("open the customer portal"):
            made = await self._client().v1.billing_portal.sessions.create_async(params)  # type: ignore[arg-type]
        return made.to_dict()


class _failures:
    """Stripe's errors as our problems (nothing was changed here when one is raised)."""

    def __init__(self, doing: str) -> None:
        self.doing = doing

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, kind: type[BaseException] | None, error: Any, tb: Any) -> bool:
        status = getattr(error, "http_status", None)
        # For system.status (kit/health.py): unreachable or a 5xx is Stripe failing.
        failing = isinstance(error, stripe.APIConnectionError) or (
            isinstance(error, stripe.StripeError) and isinstance(status, int) and status >= 500
        )
        if error is None or isinstance(error, stripe.StripeError):
            health.record("payments", not failing)
        if error is None or not isinstance(error, stripe.StripeError):
            return False
        said = str(getattr(error, "user_message", None) or error)[:300]
        if isinstance(error, stripe.RateLimitError):
            raise TooManyRequests(f"Stripe is rate limiting us: {said}", retry_after=10) from None
        if isinstance(error, stripe.APIConnectionError):
            log.warning("stripe unreachable (%s): %r", self.doing, error)
            raise BillingUnavailable(
                "The payment provider could not be reached; nothing was changed. Try again.",
                extensions={"retryable": True},
            ) from None
        log.error("stripe refused to %s (%s): %s", self.doing, status, said)
        raise BillingUnavailable(
            f"The payment provider failed to {self.doing} ({status}); nothing was changed.",
            extensions={"retryable": isinstance(status, int) and status >= 500},
        ) from None
