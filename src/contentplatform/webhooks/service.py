"""The rules of webhook endpoints: checked, sealed, rotated, tested; and their delivery log. Never
commits.

Secrets are `whsec_` values sealed with the publishers' vault (the same Fernet keys,
CONTENTPLATFORM_PUBLISHER_CREDENTIALS_KEYS); each is answered once, on create and rotate. Every
change of an endpoint is an audit event (`webhook_endpoint.*`), carrying the URL's host only:
a URL's path or query may hold a token.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.billing import service as billing
from contentplatform.config import Settings
from contentplatform.events import service as events
from contentplatform.kit import durable, errors
from contentplatform.kit.db import Required, utcnow
from contentplatform.kit.schemas import window_of
from contentplatform.publishers.vault import vault
from contentplatform.tenants import service as tenants
from contentplatform.webhooks import deliveries, messages, repository, schemas, sending
from contentplatform.webhooks import durable as webhooks_durable
from contentplatform.webhooks.errors import (
    DeliveryNotFound,
    DeliveryNotRedeliverable,
    EndpointDisabled,
    EndpointNotFound,
    EndpointUrlRefused,
)
from contentplatform.webhooks.models import WebhookDelivery, WebhookEndpoint

REDELIVERABLE = ("failed", "exhausted", "cancelled")


require = Required(repository.endpoint, EndpointNotFound)


async def endpoint_count(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    """What the plan's `webhook_endpoints` limit counts: every endpoint, disabled ones too."""
    return await repository.endpoint_count(session, tenant_id)


def _view(endpoint: WebhookEndpoint) -> schemas.WebhookEndpoint:
    return schemas.WebhookEndpoint.model_validate(endpoint)


async def list_endpoints(session: AsyncSession, tenant_id: uuid.UUID) -> schemas.EndpointList:
    found = [_view(endpoint) for endpoint in await repository.endpoints(session, tenant_id)]
    return schemas.EndpointList(data=found, total=len(found))


async def get_endpoint(
    session: AsyncSession, tenant_id: uuid.UUID, endpoint_id: uuid.UUID
) -> schemas.EndpointWithStats:
    endpoint = await require(session, tenant_id, endpoint_id)
    succeeded, failed, median = await repository.stats_since(
        session, tenant_id, endpoint_id, utcnow() - timedelta(hours=24)
    )
    stats = schemas.EndpointStats(succeeded=succeeded, failed=failed, p50_latency_ms=median)
    return schemas.EndpointWithStats.model_validate(
        {**_view(endpoint).model_dump(), "stats_24h": stats}
    )


async def create_endpoint(
    session: AsyncSession,
    settings: Settings,
    tenant_id: uuid.UUID,
    data: schemas.CreateEndpointInput,
) -> schemas.CreatedEndpoint:
    """A new endpoint and its secret (answered this once); the URL is checked (resolved now)
    and the plan's `webhook_endpoints` limit holds (403)."""
    await _check_url(settings, data.url)
    secret = messages.new_secret()
    now = utcnow()
    endpoint = WebhookEndpoint(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        url=data.url,
        description=data.description,
        events=list(data.events),
        enabled=data.enabled,
        disabled_reason=None if data.enabled else "manual",
        secret_sealed=vault(settings).seal(secret),
        secret_hint=messages.hint(secret),
        created_at=now,
        updated_at=now,
    )
    # Whether the plan has room is decided one transaction at a time per tenant.
    await tenants.lock_tenant(session, tenant_id)
    await billing.check_limit(
        session, tenant_id, "webhook_endpoints", used=lambda: endpoint_count(session, tenant_id)
    )
    session.add(endpoint)
    await session.flush()
    events.emit(
        session,
        tenant_id,
        "webhook_endpoint.created",
        resource_id=endpoint.id,
        payload={"endpoint_id": endpoint.id, **_audited(endpoint)},
    )
    created = _view(endpoint).model_dump()
    return schemas.CreatedEndpoint.model_validate({**created, "secret": secret})


async def update_endpoint(
    session: AsyncSession,
    settings: Settings,
    tenant_id: uuid.UUID,
    data: schemas.UpdateEndpointInput,
) -> schemas.WebhookEndpoint:
    if data.url is not None:
        # Resolved before the endpoint is locked: on SQLite the lock holds every write back.
        await _check_url(settings, data.url)
    endpoint = await require(session, tenant_id, data.id, for_update=True)
    before, url_before = _audited(endpoint), endpoint.url
    if data.url is not None:
        endpoint.url = data.url
    if data.events is not None:
        endpoint.events = list(data.events)
    if "description" in data.model_fields_set:
        endpoint.description = data.description
    if data.enabled is True and not endpoint.enabled:
        # Enabled again: a fresh start, its failure streak forgotten.
        endpoint.enabled, endpoint.disabled_reason, endpoint.failing_since = True, None, None
    elif data.enabled is False and endpoint.enabled:
        endpoint.enabled, endpoint.disabled_reason = False, "manual"
        await deliveries.cancel_pending(session, tenant_id, endpoint.id, "manual")
    after = _audited(endpoint)
    changes = events.changes_between(before, after)
    if endpoint.url != url_before:
        # Told even when only the part the trail leaves out changed.
        changes["url"] = {"from": before["url"], "to": after["url"]}
    if changes:
        endpoint.updated_at = utcnow()
        events.emit(
            session,
            tenant_id,
            "webhook_endpoint.updated",
            resource_id=endpoint.id,
            payload={"endpoint_id": endpoint.id},
            changes=changes,
        )
    await session.flush()
    return _view(endpoint)


async def delete_endpoint(
    session: AsyncSession, tenant_id: uuid.UUID, endpoint_id: uuid.UUID
) -> None:
    """Gone with its delivery log; a delivery under way stops before its next attempt."""
    endpoint = await require(session, tenant_id, endpoint_id, for_update=True)
    events.emit(
        session,
        tenant_id,
        "webhook_endpoint.deleted",
        resource_id=endpoint.id,
        payload={"endpoint_id": endpoint.id, "url": deliveries.redacted(endpoint.url)},
    )
    await session.delete(endpoint)
    await session.flush()


async def rotate_secret(
    session: AsyncSession,
    settings: Settings,
    tenant_id: uuid.UUID,
    data: schemas.RotateSecretInput,
) -> schemas.RotatedSecret:
    """A new secret signs from now on; the current one signs beside it for
    `expireCurrentInSeconds` (a secret replaced earlier stops at once)."""
    endpoint = await require(session, tenant_id, data.id, for_update=True)
    secret = messages.new_secret()
    now = utcnow()
    overlap = data.expire_current_in_seconds
    until = now + timedelta(seconds=overlap) if overlap else None
    endpoint.previous_secret_sealed = endpoint.secret_sealed if until else None
    endpoint.previous_secret_expires_at = until
    endpoint.secret_sealed = vault(settings).seal(secret)
    endpoint.secret_hint = messages.hint(secret)
    endpoint.updated_at = now
    events.emit(
        session,
        tenant_id,
        "webhook_endpoint.secret_rotated",
        resource_id=endpoint.id,
        payload={"endpoint_id": endpoint.id, "previous_secret_expires_at": until},
    )
    await session.flush()
    return schemas.RotatedSecret(secret=secret, previous_secret_expires_at=until)


async def test_endpoint(
    session: AsyncSession,
    settings: Settings,
    tenant_id: uuid.UUID,
    data: schemas.TestEndpointInput,
) -> schemas.Delivery:
    """One signed sample event sent now (a disabled endpoint too), recorded as a test delivery
    whatever comes of it; never retried, and nothing about the endpoint changes."""
    endpoint = await require(session, tenant_id, data.id)
    event_id = uuid.uuid4()
    message_id = messages.message_id(event_id)
    now = utcnow()
    body = messages.body(data.event_type, now, messages.sample_data(data.event_type))
    box = vault(settings)
    secrets = [str(box.open(sealed)) for sealed in endpoint.secrets_sealed()]
    outcome = await sending.post(settings, endpoint.url, message_id, body, secrets)
    succeeded = outcome.verdict == "succeeded"
    delivery_id = uuid.uuid4()
    delivery: dict[str, Any] = {
        "id": delivery_id,
        "tenant_id": tenant_id,
        "endpoint_id": endpoint.id,
        "event_id": event_id,
        "event_type": data.event_type,
        "message_id": message_id,
        "test": True,
        "status": "succeeded" if succeeded else "failed",
        "error": None,
        "round": 0,
        "round_attempts": 1,
        "round_started_at": outcome.sent_at,
        "attempt_count": 1,
        "next_attempt_at": None,
        "request_body": body,
        "response_excerpt": outcome.excerpt,
        "created_at": now,
        "updated_at": utcnow(),
    }
    attempt: dict[str, Any] = {
        "id": uuid.uuid4(),
        "tenant_id": tenant_id,
        "delivery_id": delivery_id,
        "endpoint_id": endpoint.id,
        "n": 1,
        "at": outcome.sent_at,
        "succeeded": succeeded,
        "response_status": outcome.status,
        "latency_ms": outcome.latency_ms,
        "error": outcome.error,
        "response_excerpt": outcome.excerpt,
    }
    await repository.add_delivery_and_attempt(session, delivery, attempt)
    return schemas.delivery_of(
        WebhookDelivery(**delivery), [schemas.DeliveryAttempt.model_validate(attempt)]
    )


async def list_deliveries(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListDeliveriesInput
) -> schemas.DeliveryPage:
    await require(session, tenant_id, data.id)
    rows, total = await repository.deliveries(
        session,
        tenant_id,
        data.id,
        status=data.status,
        event_type=data.event_type,
        start=data.start_date,
        end=data.end_date,
        **window_of(data),
    )
    attempts = await repository.attempts_of(session, tenant_id, [row.id for row in rows])
    return schemas.DeliveryPage(
        data=[schemas.delivery_of(row, attempts[row.id]) for row in rows],
        total=total,
        page=data.page,
        limit=data.limit,
    )


async def redeliver(
    session: AsyncSession, settings: Settings, tenant_id: uuid.UUID, delivery_id: uuid.UUID
) -> schemas.Delivery:
    """The delivery's retry schedule run again from its start (its next round), with the same
    body and `webhook-id`, each attempt signed afresh; started once this commits."""
    found = await repository.delivery(session, tenant_id, delivery_id)
    found = errors.require(found, DeliveryNotFound, delivery_id)
    # Endpoint first, then delivery: the order every writer of both takes them in.
    endpoint = await require(session, tenant_id, found.endpoint_id, for_update=True)
    delivery = await repository.delivery(session, tenant_id, delivery_id, for_update=True)
    delivery = errors.require(delivery, DeliveryNotFound, delivery_id)
    if delivery.test or delivery.status not in REDELIVERABLE:
        raise DeliveryNotRedeliverable(delivery.status, test=delivery.test)
    if not endpoint.enabled:
        raise EndpointDisabled(endpoint.disabled_reason)
    now = utcnow()
    delivery.round += 1
    delivery.round_attempts = 0
    delivery.round_started_at = None
    delivery.status = "pending"
    delivery.error = None
    delivery.next_attempt_at = now + timedelta(seconds=settings.webhook_retry_seconds[0])
    delivery.updated_at = now
    await session.flush()
    durable.enqueue_after_commit(
        session,
        webhooks_durable.deliver,
        [deliveries.start_of(delivery)],
        queue=webhooks_durable.QUEUE,
    )
    attempts = await repository.attempts_of(session, tenant_id, [delivery.id])
    return schemas.delivery_of(delivery, attempts[delivery.id])


# --- helpers ------------------------------------------------------------------------------------


async def _check_url(settings: Settings, url: str) -> None:
    reason = await sending.check_url(settings, url)
    if reason is not None:
        raise EndpointUrlRefused(reason)


def _audited(endpoint: WebhookEndpoint) -> dict[str, Any]:
    """What the audit trail tells of an endpoint's settings: its URL without path or query."""
    return {
        "url": deliveries.redacted(endpoint.url),
        "events": list(endpoint.events),
        "description": endpoint.description,
        "enabled": endpoint.enabled,
    }
