"""The outbound webhooks operations (admins only, never an API key): declarations only; the
rules live in service.py, the deliveries in deliveries.py and durable.py."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.billing.errors import PlanLimitReached
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.kit.schemas import SUCCESS, Empty, Success
from contentplatform.webhooks import schemas, service
from contentplatform.webhooks.errors import (
    DeliveryNotFound,
    DeliveryNotRedeliverable,
    EndpointDisabled,
    EndpointNotFound,
    EndpointUrlRefused,
)

router = ProcedureRouter("webhooks", tag="Webhooks", api_keys=False)


@router.get("listEndpoints", "/v1/webhooks/endpoints", access=Access.admin)
async def list_endpoints(ctx: Context, _: Empty) -> schemas.EndpointList:
    """Outbound webhook endpoints of the organization, oldest first.

    Secrets are never shown again after they are made: `secret_hint` is the last 4 characters.
    `last_delivery` is the last attempt of a delivery, `failing_since` the first failed one
    since the last success."""
    return await service.list_endpoints(ctx.session, ctx.tenant.tenant_id)


@router.post(
    "createEndpoint",
    "/v1/webhooks/endpoints",
    access=Access.admin,
    errors=[EndpointUrlRefused, PlanLimitReached],
)
async def create_endpoint(
    ctx: Context, data: schemas.CreateEndpointInput
) -> schemas.CreatedEndpoint:
    """Subscribe a URL to platform events.

    Each event of a subscribed type is POSTed to it as `{type, timestamp, data}`, signed per
    the Standard Webhooks specification (see Webhooks in this document for each type's body
    and how to verify it), retried with backoff for about a day when it fails.

    `events` are types of the event catalog that endpoints may subscribe to (400 naming the
    field otherwise). The URL is resolved now and must be a public https address (400 naming
    `url`: loopback, private, link-local, CGNAT and metadata addresses are refused before
    anything is stored). The `whsec_` signing secret is answered this once. The plan's
    `webhook_endpoints` limit counts every endpoint, disabled ones too (403 past it)."""
    return await service.create_endpoint(ctx.session, ctx.settings, ctx.tenant.tenant_id, data)


@router.get(
    "getEndpoint", "/v1/webhooks/endpoints/{id}", access=Access.admin, errors=[EndpointNotFound]
)
async def get_endpoint(ctx: Context, data: schemas.EndpointIdInput) -> schemas.EndpointWithStats:
    """One endpoint with delivery stats.

    `stats_24h` counts the attempts of the last 24 hours (tests included): succeeded (2xx),
    failed, and their median latency."""
    return await service.get_endpoint(ctx.session, ctx.tenant.tenant_id, data.id)


@router.patch(
    "updateEndpoint",
    "/v1/webhooks/endpoints/{id}",
    access=Access.admin,
    errors=[EndpointNotFound, EndpointUrlRefused],
)
async def update_endpoint(
    ctx: Context, data: schemas.UpdateEndpointInput
) -> schemas.WebhookEndpoint:
    """Change URL, events, description or enabled.

    A new URL passes the same checks as on create. Disabling (`enabled` false) cancels the
    pending deliveries; enabling again clears `disabled_reason` and the failure streak, and
    delivers the events that come from then on (webhooks.redeliver sends a cancelled or failed
    one again)."""
    return await service.update_endpoint(ctx.session, ctx.settings, ctx.tenant.tenant_id, data)


@router.delete(
    "deleteEndpoint",
    "/v1/webhooks/endpoints/{id}",
    access=Access.admin,
    errors=[EndpointNotFound],
)
async def delete_endpoint(ctx: Context, data: schemas.EndpointIdInput) -> Success:
    """Delete an endpoint.

    Its delivery log goes with it; a delivery under way makes no further attempt."""
    await service.delete_endpoint(ctx.session, ctx.tenant.tenant_id, data.id)
    return SUCCESS


@router.post(
    "rotateEndpointSecret",
    "/v1/webhooks/endpoints/{id}/rotate-secret",
    access=Access.admin,
    errors=[EndpointNotFound],
)
async def rotate_endpoint_secret(
    ctx: Context, data: schemas.RotateSecretInput
) -> schemas.RotatedSecret:
    """Rotate an endpoint's signing secret.

    The new `whsec_` secret is answered this once. Until `previous_secret_expires_at`
    (`expireCurrentInSeconds` from now, 0-604800, default 86400) the replaced secret signs
    too: `webhook-signature` holds two `v1,` signatures, so a receiver verifies with either
    while it switches. A secret replaced by an earlier rotation stops at once."""
    return await service.rotate_secret(ctx.session, ctx.settings, ctx.tenant.tenant_id, data)


@router.post(
    "testEndpoint",
    "/v1/webhooks/endpoints/{id}/test",
    access=Access.admin,
    errors=[EndpointNotFound],
)
async def test_endpoint(ctx: Context, data: schemas.TestEndpointInput) -> schemas.Delivery:
    """Send one signed sample event now.

    One attempt, within the delivery timeout (15 seconds by default), answered with its
    delivery whatever came of it (`status` succeeded or failed, the attempt's
    `response_status`, `latency_ms` and `error`); recorded in the delivery log with `test`
    true, never retried, and it changes nothing about the endpoint (a disabled one can be
    tested too). It is signed as every delivery is (see Webhooks in this document)."""
    return await service.test_endpoint(ctx.session, ctx.settings, ctx.tenant.tenant_id, data)


@router.get(
    "listDeliveries",
    "/v1/webhooks/endpoints/{id}/deliveries",
    access=Access.admin,
    errors=[EndpointNotFound],
)
async def list_deliveries(ctx: Context, data: schemas.ListDeliveriesInput) -> schemas.DeliveryPage:
    """Delivery log of an endpoint, newest first.

    Each delivery shows its attempts (status, latency, error), the body as sent and the last
    answer's first 2 KB. Kept 30 days. Filter by status, event type and creation time."""
    return await service.list_deliveries(ctx.session, ctx.tenant.tenant_id, data)


@router.post(
    "redeliver",
    "/v1/webhooks/deliveries/{id}/redeliver",
    access=Access.admin,
    errors=[DeliveryNotFound, DeliveryNotRedeliverable, EndpointDisabled],
)
async def redeliver(ctx: Context, data: schemas.DeliveryIdInput) -> schemas.Delivery:
    """Send a delivery again.

    A failed, exhausted or cancelled delivery runs the retry schedule again from its start:
    the same body and `webhook-id` (receivers drop duplicates), a fresh timestamp and
    signature at each attempt. It answers the delivery `pending` with its first attempt
    queued. A delivery still pending or succeeded, or a test, is 409; so is one whose
    endpoint is disabled (enable it first)."""
    return await service.redeliver(ctx.session, ctx.settings, ctx.tenant.tenant_id, data.id)
