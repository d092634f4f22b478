"""Delivery as durable work: each attempt at a message is a workflow on the `mail.deliveries`
queue (`mail:<message id>:<attempt>`, so an attempt is made by one workflow however often it is
enqueued). A retry is the next attempt enqueued with its wait as a DBOS delay: a message waiting
out an SMTP outage holds no place of the queue, and the queue's entries survive any crash.

A crash during an attempt is recovered by DBOS (the attempt is made again: see delivery.py for
what that means to the recipient); a crash between the send's commit and the first enqueue, or
between an attempt's record and the next one's enqueue, leaves an unsettled row with no
workflow, which the reconcile source below starts.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from dbos import DBOS
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import runtime
from contentplatform.kit import durable
from contentplatform.kit.db import utcnow
from contentplatform.mail import delivery, repository, smtp

QUEUE = durable.declare_queue("mail.deliveries", worker_concurrency=16)
# Unsettled mail untouched for this long is checked for a missing workflow.
RECONCILE_AFTER = timedelta(seconds=30)
RECONCILE_BATCH = 500


def workflow_id(message_id: str, attempt: int) -> str:
    return f"mail:{message_id}:{attempt}"


@DBOS.workflow(name="mail.deliver")
async def deliver(message_id: str, number: int) -> None:
    """Attempt `number` at the message; if it is to be tried again, the next one, enqueued."""
    settings = runtime.current().settings
    if await attempt(message_id, number >= settings.mail_retry_attempts):
        return
    wait = delivery.wait_before(settings.mail_retry_first_seconds, number)
    await durable.enqueue_later(
        deliver,
        workflow_id(message_id, number + 1),
        message_id,
        number + 1,
        queue=QUEUE,
        delay_seconds=wait,
    )


# A database error around the SMTP conversation is retried here; what SMTP says is not (the
# next attempt, enqueued with its wait, handles that).
@DBOS.step(name="mail.attempt", retries_allowed=True, max_attempts=3)
async def attempt(message_id: str, final: bool) -> bool:
    return await delivery.attempt(message_id, final=final)


async def start(message_id: str, number: int = 1) -> None:
    await durable.start(deliver, workflow_id(message_id, number), message_id, number, queue=QUEUE)


@durable.reconcile_source("mail.deliver")
async def unsettled_mail(session: AsyncSession) -> list[durable.Unfinished]:
    """Mail queued or sending, untouched for a while: a missing workflow (the attempt being
    made, or the next one when none is) is started; one that ended in failure fails the
    message visibly. Nothing while mail is not configured: it waits."""
    if smtp.target(runtime.current().settings) is None:
        return []
    found = await repository.unsettled(session, utcnow() - RECONCILE_AFTER, RECONCILE_BATCH)
    work = []
    for message_id, status, attempts in found:
        number = attempts if status == "sending" else attempts + 1
        work.append(
            durable.Unfinished(
                workflow_id=workflow_id(message_id, number),
                restart=_restarter(message_id, number),
                give_up=_giver_up(message_id),
            )
        )
    return work


def _restarter(message_id: str, number: int) -> Any:
    async def restart() -> None:
        await start(message_id, number)

    return restart


def _giver_up(message_id: str) -> Any:
    async def give_up(session: AsyncSession, reason: str) -> None:
        await repository.settle(session, message_id, status="failed", error=reason)

    return give_up
