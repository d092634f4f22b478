"""What the billing domain refuses."""

from __future__ import annotations

from contentplatform.kit.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    RecordNotFound,
    ServiceUnavailable,
)

# How a limit key reads in a sentence ("Your plan allows 3 active jobs").
LIMIT_NOUNS = {
    "members": "members (pending invitations included)",
    "documents": "documents",
    "storage_bytes": "bytes of storage",
    "active_jobs": "active jobs",
    "publishers": "publisher connections",
    "webhook_endpoints": "webhook endpoints",
    "api_keys": "API keys",
    "crawl_pages": "pages per website crawl",
    "monthly_credits": "credits a month",
}


class PlanLimitReached(Forbidden):
    """The write would take the organization past a limit of its plan (403 naming the limit:
    `limit_key` and `limit` in the problem); an admin can upgrade the plan."""

    def __init__(self, limit_key: str, limit: int) -> None:
        noun = LIMIT_NOUNS.get(limit_key, limit_key.replace("_", " "))
        super().__init__(
            f"Your plan allows {limit} {noun}; upgrade to add more.",
            extensions={"limit_key": limit_key, "limit": limit},
        )
        self.limit_key = limit_key
        self.limit = limit


class PlanNotFound(RecordNotFound):
    """There is no such plan or credit pack (or it is no longer sold)."""

    record = "plan"


class AlreadySubscribed(Conflict):
    """The organization has a subscription already: plans are changed in the customer portal."""


class NoCustomer(Conflict):
    """The organization has no customer at the payment provider yet (nothing was ever bought)."""


class NotForSale(Conflict):
    """The plan has no provider price (the free plan) and cannot be bought."""


class RedirectNotAllowed(BadRequest):
    """A return URL is not an https URL on an allowed origin."""


class BillingUnavailable(ServiceUnavailable):
    """Billing is not configured (CONTENTPLATFORM_STRIPE_SECRET_KEY), or the payment provider
    could not be reached or failed (503; `retryable` says whether trying again may help);
    nothing was changed."""


class EventRefused(BadRequest):
    """A payment event whose `Stripe-Signature` does not hold (wrong, stale or missing), whose
    body is not an event, or whose livemode is not this environment's; nothing was stored."""
