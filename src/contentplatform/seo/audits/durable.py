"""Audits as durable work: one DBOS workflow per audit (`seo.audit:<audit id>`), enqueued once
createAudit (or a completed scan) commits.

It has no DBOS steps: an audit's results are stored in one transaction at its end (work.py),
so a workflow DBOS recovers after a crash (kill -9 mid-audit) evaluates again from the start
and stores once. The reconciler restarts an audit whose workflow is missing (a crash between
the commit and the enqueue), and fails one whose workflow ended in error or that has been
queued or running for STALL_SECONDS: an audit never stays `running`.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from dbos import DBOS
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import runtime
from contentplatform.kit import durable
from contentplatform.kit.db import utcnow
from contentplatform.seo.audits import repository, work

log = logging.getLogger(__name__)

STALL_SECONDS = 60 * 60
# Audits at once per process, one per organization.
QUEUE = durable.declare_queue("seo.audits", worker_concurrency=2, per_tenant=1)
INTERNAL = "The audit stopped on an internal error; the service logged it."


def workflow_id(audit_id: uuid.UUID) -> str:
    return f"seo.audit:{audit_id}"


def enqueue_after_commit(session: AsyncSession, tenant_id: uuid.UUID, audit_id: uuid.UUID) -> None:
    durable.enqueue_after_commit(
        session,
        run_audit,
        [(workflow_id(audit_id), (str(tenant_id), str(audit_id)))],
        queue=QUEUE,
    )


@DBOS.workflow(name="seo.run_audit")
async def run_audit(tenant_id: str, audit_id: str) -> str:
    db = runtime.current().db
    tenant, audit = uuid.UUID(tenant_id), uuid.UUID(audit_id)
    try:
        async with db.unit_of_work() as session:
            if not await work.begin(session, tenant, audit):
                return "settled"
        result = await work.evaluate(db, tenant, audit)
        async with db.unit_of_work() as session:
            await work.store(session, tenant, audit, result)
        return "completed"
    except Exception:
        log.exception("audit %s failed", audit_id)
        # The error's own text may hold SQL: it goes to the log, not to the client.
        async with db.unit_of_work() as session:
            await work.fail(session, tenant, audit, INTERNAL)
        return "failed"


@durable.reconcile_source("seo.audit")
async def unfinished_audits(session: AsyncSession) -> list[durable.Unfinished]:
    now = utcnow()
    return [
        durable.Unfinished(
            workflow_id=workflow_id(audit_id),
            restart=durable.restarter(
                run_audit, workflow_id(audit_id), str(tenant_id), str(audit_id), queue=QUEUE
            ),
            give_up=_giver_up(tenant_id, audit_id),
            stalled_reason="stalled" if (now - created).total_seconds() > STALL_SECONDS else None,
        )
        for tenant_id, audit_id, created in await repository.unfinished(session)
    ]


def _giver_up(tenant_id: uuid.UUID, audit_id: uuid.UUID) -> Any:
    async def give_up(session: AsyncSession, reason: str) -> None:
        message = (
            "The audit ran for an hour without finishing and was stopped."
            if reason == "stalled"
            else f"The audit's background work ended unexpectedly ({reason})."
        )
        await work.fail(session, tenant_id, audit_id, message)

    return give_up
