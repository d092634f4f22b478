"""What the Admin operations refuse."""

from __future__ import annotations

from contentplatform.kit.errors import BadRequest, Conflict, RecordNotFound


class TenantNotFound(RecordNotFound):
    """There is no tenant of that id."""

    record = "tenant"


class PlanNotFound(BadRequest):
    """`planOverride.planId` names no plan of the catalogue."""


class IdempotencyKeyReused(Conflict):
    """The idempotency key was used before with another tenant or body: a grant is never made
    twice, nor answered for a request it was not made for."""


class CreditsWouldGoNegative(Conflict):
    """A clawback larger than the tenant's available credits (it cannot go below zero)."""


class GrantCannotExpire(BadRequest):
    """`expiresAt` on a clawback (a negative amount), or not in the future."""


class FlagNotFound(RecordNotFound):
    """No feature flag of that key is declared in the code."""

    record = "feature flag"


class UnknownPlan(BadRequest):
    """`plans` names a key that is no plan of the catalogue (billing.listPlans; `free` is one),
    where billing is configured."""


class InboundEventNotFound(RecordNotFound):
    """There is no stored inbound event of that id (identity or payments)."""

    record = "inbound event"


class InboundEventBusy(Conflict):
    """The event is being processed (`received`): a replay waits until it settles."""
