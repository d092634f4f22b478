"""Deliveries as durable work: the listener that makes them from new events, the workflows
that send them, the reconciler's view and the log's retention.

An event's first attempts go together: one workflow per event (`webhook-event:<event>`),
started directly once the dispatcher's transaction commits (no queue to wait for), with one
step that sends to every endpoint at once (at most `sending.MAX_IN_FLIGHT` POSTs per process)
and one step that records every outcome in one transaction. A fan-out to 100 endpoints costs
one workflow, not 100. What failed and deserves a retry goes on as a workflow per attempt on
the `webhooks.deliveries` queue (`webhook-delivery:<delivery>:<round>`, and `:<attempt>` after
the first), enqueued with the wait as its delay: a wait of hours is a DBOS delayed entry, not a
sleeping workflow holding a place of the queue, so an endpoint that fails for a day never
holds back another's deliveries. A redelivery starts such a workflow for its new round.

A crash mid-send reruns the send on recovery (the receiver may see the `webhook-id` twice:
delivery is at least once, and receivers dedupe on it); a crash between the listener's commit
and the start leaves deliveries with no workflow, which the reconciler starts once they are
overdue.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from dbos import DBOS
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import runtime
from contentplatform.events import service as events
from contentplatform.events.models import Event
from contentplatform.kit import durable
from contentplatform.kit.db import Database, utcnow
from contentplatform.tenants import service as tenants
from contentplatform.webhooks import deliveries, sending

# Deliveries at once per process; one organization's (a slow endpoint, a burst of events) hold
# at most half of them.
QUEUE = durable.declare_queue("webhooks.deliveries", worker_concurrency=100, per_tenant=50)
# Deliveries whose next attempt is overdue by this much are checked for a missing workflow.
RECONCILE_AFTER = timedelta(seconds=15)
RECONCILE_BATCH = 500
# The delivery log is kept this long.
RETENTION_DAYS = 30
# How often a delivery of a suspended tenant looks again whether it may go (admin.setTenantStatus):
# it waits, durably, rather than fail.
SUSPENDED_RECHECK_SECONDS = 60.0


@events.listener("webhooks")
async def fan_out(session: AsyncSession, batch: Sequence[Event]) -> None:
    """Every new event, to the enabled endpoints of its tenant subscribed to its type: the
    deliveries commit with the dispatcher's claim, each event's workflow starts after it."""
    for workflow_id, args in await deliveries.fan_out(session, runtime.current().settings, batch):
        durable.start_after_commit(session, deliver_event, workflow_id, *args)


@DBOS.workflow(name="webhooks.deliver_event")
async def deliver_event(tenant_id: str, event_id: str) -> None:
    """The first attempt to every endpoint the event is for; retries go on one by one."""
    first = runtime.current().settings.webhook_retry_seconds[0]
    if first > 0:
        await DBOS.sleep_async(first)
    await _while_suspended(tenant_id)
    sent = await send_first(tenant_id, event_id)
    if not sent:
        return
    for delivery_id, delay in await record_first(tenant_id, sent):
        await _enqueue_attempt(tenant_id, delivery_id, 0, 2, delay)


async def _while_suspended(tenant_id: str) -> None:
    """Wait while the tenant is suspended: its deliveries are paused, not failed (each check a
    step, each wait a durable sleep, so a restart resumes the wait)."""
    while not await tenant_active(tenant_id):
        await DBOS.sleep_async(SUSPENDED_RECHECK_SECONDS)


@DBOS.step(name="webhooks.tenant_active")
async def tenant_active(tenant_id: str) -> bool:
    """False while the tenant is suspended (a deleted one's deliveries go on as before)."""
    async with runtime.current().db.unit_of_work() as session:
        tenant = await tenants.tenant_by_id(session, uuid.UUID(tenant_id))
        return tenant is None or tenant.status != "suspended"


@DBOS.step(name="webhooks.send_first")
async def send_first(tenant_id: str, event_id: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(delivery, endpoint, outcome) of each first attempt still to make, all sent at once."""
    current = runtime.current()
    async with current.db.unit_of_work() as session:
        ready = await deliveries.prepare_first(
            session, current.settings, uuid.UUID(tenant_id), uuid.UUID(event_id)
        )
        targets = [(str(found.id), str(found.endpoint_id), message) for found, message in ready]

    async def one(delivery_id: str, endpoint_id: str, message: deliveries.Prepared) -> Any:
        outcome = await sending.post(
            current.settings, message.url, message.message_id, message.body, message.secrets
        )
        return delivery_id, endpoint_id, outcome.as_json()

    return list(await asyncio.gather(*(one(*target) for target in targets)))


@DBOS.step(name="webhooks.record_first")
async def record_first(
    tenant_id: str, sent: list[tuple[str, str, dict[str, Any]]]
) -> list[tuple[str, float]]:
    """Record every first attempt in one transaction; (delivery, wait) of those to retry."""
    current = runtime.current()
    async with current.db.unit_of_work() as session:
        retries = await deliveries.record_first(
            session,
            current.settings,
            uuid.UUID(tenant_id),
            [
                (uuid.UUID(delivery), uuid.UUID(endpoint), sending.Outcome.of(outcome))
                for delivery, endpoint, outcome in sent
            ],
        )
    return [(str(delivery), delay) for delivery, delay in retries]


async def _enqueue_attempt(
    tenant_id: str, delivery_id: str, round_: int, attempt: int, delay: float
) -> None:
    await durable.enqueue_later(
        deliver,
        deliveries.workflow_id(delivery_id, round_, attempt),
        tenant_id,
        delivery_id,
        round_,
        attempt,
        queue=QUEUE,
        delay_seconds=delay,
    )


@DBOS.workflow(name="webhooks.deliver")
async def deliver(tenant_id: str, delivery_id: str, round_: int, attempt: int) -> None:
    if attempt == 1:
        # The schedule's first wait (0 by default: none).
        first = runtime.current().settings.webhook_retry_seconds[0]
        if first > 0:
            await DBOS.sleep_async(first)
    await _while_suspended(tenant_id)
    outcome = await send(tenant_id, delivery_id, round_, attempt)
    if outcome is None:
        return
    delay = await record(tenant_id, delivery_id, round_, attempt, outcome)
    if delay is None:
        return
    await _enqueue_attempt(tenant_id, delivery_id, round_, attempt + 1, delay)


@DBOS.step(name="webhooks.send")
async def send(
    tenant_id: str, delivery_id: str, round_: int, attempt: int
) -> dict[str, Any] | None:
    """One POST of the delivery, if it is still due: what came of it (no secret in it)."""
    current = runtime.current()
    async with current.db.unit_of_work() as session:
        prepared = await deliveries.prepare(
            session,
            current.settings,
            uuid.UUID(tenant_id),
            uuid.UUID(delivery_id),
            round_,
            attempt,
        )
    if prepared is None:
        return None
    outcome = await sending.post(
        current.settings, prepared.url, prepared.message_id, prepared.body, prepared.secrets
    )
    return outcome.as_json()


@DBOS.step(name="webhooks.record")
async def record(
    tenant_id: str, delivery_id: str, round_: int, attempt: int, outcome: dict[str, Any]
) -> float | None:
    current = runtime.current()
    async with current.db.unit_of_work() as session:
        return await deliveries.record(
            session,
            current.settings,
            uuid.UUID(tenant_id),
            uuid.UUID(delivery_id),
            round_,
            attempt,
            sending.Outcome.of(outcome),
        )


# --- the reconciler's view, and retention ------------------------------------------------------


@durable.reconcile_source("webhooks.deliver")
async def overdue_deliveries(session: AsyncSession) -> list[durable.Unfinished]:
    """Pending deliveries overdue by a while: a missing workflow (a crash before the enqueue)
    is started; one that failed (a bug) fails the delivery visibly."""
    work = []
    for delivery in await deliveries.overdue(session, utcnow() - RECONCILE_AFTER, RECONCILE_BATCH):
        workflow, args = deliveries.start_of(delivery)
        restart = durable.restarter(deliver, workflow, *args, queue=QUEUE)
        first = deliveries.first_of(delivery)
        if first is not None:  # its event's workflow makes the first attempt
            workflow, event_args = first
            restart = durable.restarter(deliver_event, workflow, *event_args)
        work.append(
            durable.Unfinished(workflow_id=workflow, restart=restart, give_up=_giver_up(args))
        )
    return work


def _giver_up(args: tuple[str, str, int, int]) -> Any:
    tenant_id, delivery_id, round_, attempt = args

    async def give_up(session: AsyncSession, reason: str) -> None:
        await deliveries.give_up(
            session, uuid.UUID(tenant_id), uuid.UUID(delivery_id), round_, attempt, reason
        )

    return give_up


@durable.maintenance("webhooks.retention")
async def forget_old_deliveries(db: Database) -> int:
    async with db.unit_of_work() as session:
        return await deliveries.forget_older_than(
            session, utcnow() - timedelta(days=RETENTION_DAYS)
        )
