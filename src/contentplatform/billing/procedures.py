"""billing.* (plans, the subscription, usage, invoices, checkout and portal sessions on Stripe)
and the payment provider's inbound events (webhooks.receivePaymentEvent)."""

from __future__ import annotations

import json
import logging
from typing import Any

import stripe

from contentplatform.auth.context import Access, Role
from contentplatform.billing import durable as billing_durable
from contentplatform.billing import payment_events, schemas, service
from contentplatform.billing.errors import (
    EventRefused,
)
from contentplatform.config import Settings
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.kit.inbound import start_processing
from contentplatform.kit.schemas import Empty

log = logging.getLogger(__name__)

router = ProcedureRouter("billing", tag="Billing and Credits")
# The provider's inbound events. The API files them under the `webhooks` group and
# /api/webhooks/ paths (the contract); in the code they are inbound, apart from the outbound
# webhook endpoints of the `webhooks` domain.
inbound = ProcedureRouter("webhooks", tag="Webhooks", api_keys=False)

PROVIDER = (
    " Billing not configured (CONTENTPLATFORM_STRIPE_SECRET_KEY: no plan is for sale, so an "
    "unknown plan is 404 and a tenant without a customer 409 first), or Stripe unreachable or "
    "failing: 503 with `retryable`, and nothing changed. Return URLs must be https URLs on an "
    "allowed origin (CONTENTPLATFORM_BILLING_REDIRECT_ORIGINS): else 400."
)


@router.get("listPlans", "/v1/billing/plans", access=Access.member)
async def list_plans(ctx: Context, data: Empty) -> schemas.PlanListing:
    """Plans and credit packs the tenant can buy, with the current one marked.

    The catalogue mirrors Stripe's products and prices (read at start-up, hourly, and on
    product and price events); the built-in free plan, first, has no provider price."""
    return await service.list_plans(ctx.session, ctx.tenant.tenant_id)


@router.get("getSubscription", "/v1/billing/subscription", access=Access.member)
async def get_subscription(ctx: Context, data: Empty) -> schemas.SubscriptionView:
    """The tenant's subscription as last reported by the payment provider.

    Fed by the provider's events; `status: none` is the free plan. `past_due` pauses monthly
    grants and keeps the balance usable. `payment_method` is shown to admins only."""
    tenant = ctx.tenant
    return await service.get_subscription(
        ctx.session, tenant.tenant_id, with_payment_method=tenant.role is Role.admin
    )


@router.get("getUsage", "/v1/billing/usage", access=Access.member)
async def get_usage(ctx: Context, data: schemas.UsageInput) -> schemas.UsageListing:
    """Credit consumption in time buckets, optionally grouped (OpenAI usage-API shape).

    Computed from committed ledger debits only; open holds are in credits.listReservations. The
    window is at most 366 days; 1h buckets only for windows of 7 days or less (else 400)."""
    return await service.usage(ctx.session, ctx.tenant.tenant_id, data)


@router.get("listInvoices", "/v1/billing/invoices", access=Access.admin, api_keys=False)
async def list_invoices(ctx: Context, data: schemas.ListInvoicesInput) -> schemas.InvoicePage:
    """Invoices issued by the payment provider, newest first.

    A local copy kept from invoice.* events, so paging never calls the provider; the URLs are
    the provider's hosted pages."""
    return await service.list_invoices(ctx.session, ctx.tenant.tenant_id, data)


# --- the provider's events ----------------------------------------------------------------------


@inbound.post(
    "receivePaymentEvent",
    "/api/webhooks/payments",
    access=Access.public,
    description=(
        "No token: the body (a Stripe event) is verified on its raw bytes against "
        "`Stripe-Signature` (`t=<unix>,v1=<hex>`: HMAC-SHA256 of `<t>.<body>` keyed by "
        "CONTENTPLATFORM_STRIPE_WEBHOOK_SECRET, within 5 minutes) by the `stripe` library. A bad "
        "or stale signature, a body that is not an event, or a `livemode` not this "
        "environment's: 400, nothing stored. The event is stored once per id (sent again: "
        "`duplicate: true`, nothing changes), then applied by a durable workflow: "
        "checkout.session.completed (a pack's credits granted once; a subscription's customer "
        "stored), customer.subscription.created|updated|deleted (plan and monthly grant; an "
        "event older than the state applied changes nothing), invoice.finalized|paid|"
        "payment_failed (kept for billing.listInvoices; a paid subscription invoice grants its "
        "period's credits once), charge.refunded (a refunded pack's unspent credits removed), "
        "product.*|price.* (the catalogue read again); other types are stored as ignored."
    ),
    errors=[EventRefused],
)
async def receive_payment_event(
    ctx: Context, data: schemas.PaymentEventInput
) -> schemas.EventReceipt:
    """Inbound events from the payment provider (Stripe)."""
    body = await ctx.request.body()
    event = verified_event(ctx.settings, data, body)
    stored = await payment_events.receive_event(ctx.session, event["id"], event["type"], event)
    new = start_processing(
        ctx.session, stored, billing_durable.process_event, billing_durable.event_workflow_id
    )
    return schemas.EventReceipt(received=True, duplicate=not new)


def verified_event(
    settings: Settings, data: schemas.PaymentEventInput, body: bytes
) -> dict[str, Any]:
    """The event, once the signature over the raw bytes holds."""
    secret = settings.stripe_webhook_secret
    if secret is None:
        log.error("a payment event arrived but CONTENTPLATFORM_STRIPE_WEBHOOK_SECRET is not set")
        raise EventRefused(
            "Payment events are not accepted here: no signing secret is configured "
            "(CONTENTPLATFORM_STRIPE_WEBHOOK_SECRET)."
        )
    if not data.stripe_signature:
        raise EventRefused("The event carries no Stripe-Signature header.")
    try:
        # The signature alone: Stripe's `construct_event` also builds an event object from the
        # body, and fails inside the library (a 500) on JSON that is not an object.
        stripe.WebhookSignature.verify_header(
            body, data.stripe_signature, secret.get_secret_value(), stripe.Webhook.DEFAULT_TOLERANCE
        )
    except stripe.SignatureVerificationError:
        raise EventRefused("The event's signature does not hold, or it is stale.") from None
    try:
        event = json.loads(body)
    except ValueError:
        raise EventRefused("The signed body is not JSON.") from None
    if not (
        isinstance(event, dict)
        and isinstance(event.get("type"), str)
        and isinstance(event.get("id"), str)
        and event["id"]
    ):
        raise EventRefused("The signed body is not an event (an object with an `id` and a `type`).")
    if len(event["type"]) > 100 or len(event["id"]) > 255:
        raise EventRefused("The event's type or id is too long.")
    if bool(event.get("livemode")) != settings.stripe_livemode:
        raise EventRefused(
            "The event's livemode is not this environment's (CONTENTPLATFORM_STRIPE_LIVEMODE)."
        )
    return event
