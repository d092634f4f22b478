"""A plan's generation as durable work: a DBOS workflow (`seoPlans.generate:<plan>:<round>`)
enqueued once seoPlans.generate or regenerate commits.

It has no DBOS steps: the plan's row is its checkpoint. The first transaction marks the step
`collecting`; the second gathers the signals, makes and writes every item, ends the plan
`draft` and commits the credits, all at once, so a process killed at any point leaves either
the plan still `generating` (the reconciler restarts its workflow, which does it all again, with
the same result: generation is deterministic) or the finished plan. A generation that fails ends
the plan `failed` with the reason and gives the credits back.
"""

from __future__ import annotations

import logging
import math
import uuid

from dbos import DBOS
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import runtime
from contentplatform.credits import pricing
from contentplatform.credits import service as credits
from contentplatform.kit import durable
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import PlatformError
from contentplatform.seo.models import SeoPlan
from contentplatform.seo.plans import generation, repository

log = logging.getLogger(__name__)

QUEUE = durable.declare_queue("seo.plans", worker_concurrency=2, per_tenant=1)
INTERNAL = "The generation stopped on an internal error; the service logged it."
ITEMS_PER_CREDIT = pricing.SEO_PLAN_ITEMS_PER_CREDIT


def workflow_id(plan_id: uuid.UUID, round_: int) -> str:
    return f"seoPlans.generate:{plan_id}:{round_}"


def enqueue_after_commit(
    session: AsyncSession, tenant_id: uuid.UUID, plan_id: uuid.UUID, round_: int
) -> None:
    durable.enqueue_after_commit(
        session,
        generate_plan,
        [(workflow_id(plan_id, round_), (str(tenant_id), str(plan_id), round_))],
        queue=QUEUE,
    )


@DBOS.workflow(name="seoPlans.generate")
async def generate_plan(tenant_id: str, plan_id: str, round_: int) -> str:
    db = runtime.current().db
    tenant, plan = uuid.UUID(tenant_id), uuid.UUID(plan_id)
    try:
        async with db.unit_of_work() as session:
            row = await _current(session, tenant, plan, round_)
            if row is None:
                return "settled"
            row.generation = {**row.generation, "step": "collecting", "percent": 10}
        async with db.unit_of_work() as session:
            row = await _current(session, tenant, plan, round_)
            if row is None:
                return "settled"
            try:
                written = await generation.build(session, tenant, row)
            except generation.NoPublishDay as error:
                await fail(session, tenant, row, str(error))
                return "failed"
            await _settle(session, tenant, row, written)
            row.status = "draft"
            row.generation = {
                **row.generation,
                "status": "succeeded",
                "step": "done",
                "percent": 100,
            }
            row.updated_at = utcnow()
            return "draft"
    except Exception:
        log.exception("SEO plan generation %s failed", plan_id)
        async with db.unit_of_work() as session:
            row = await _current(session, tenant, plan, round_)
            if row is not None:
                await fail(session, tenant, row, INTERNAL)
        return "failed"


async def _current(
    session: AsyncSession, tenant_id: uuid.UUID, plan_id: uuid.UUID, round_: int
) -> SeoPlan | None:
    """The plan, locked, when this round of its generation is still to finish."""
    row = await repository.get(session, tenant_id, plan_id, for_update=True)
    if row is None or row.status != "generating" or row.generation_round != round_:
        return None
    return row


async def _settle(session: AsyncSession, tenant_id: uuid.UUID, row: SeoPlan, written: int) -> None:
    """Commit 1 credit per started ITEMS_PER_CREDIT items written (at least 1, at most the
    hold); nothing written: the hold given back."""
    if row.reservation_id is None:
        return
    used = max(1, math.ceil(written / ITEMS_PER_CREDIT)) if written else 0
    try:
        if used:
            await credits.commit(
                session,
                tenant_id,
                row.reservation_id,
                used,
                description=f"seoPlans.generate: {written} items ({row.month}, plan {row.id})",
            )
        else:
            await credits.release(session, tenant_id, row.reservation_id)
        row.credits_used += used
    except PlatformError:
        # The hold expired or was settled meanwhile: nothing more is charged.
        log.exception("SEO plan %s could not settle its credits", row.id)


async def fail(session: AsyncSession, tenant_id: uuid.UUID, row: SeoPlan, reason: str) -> None:
    """The plan failed with `reason`; its hold given back."""
    if row.reservation_id is not None:
        try:
            await credits.release(session, tenant_id, row.reservation_id)
        except PlatformError:
            log.exception("SEO plan %s could not release its credits", row.id)
    row.status = "failed"
    row.generation = {**row.generation, "status": "failed", "error": reason[:1000]}
    row.updated_at = utcnow()


@durable.reconcile_source("seo.plans")
async def unfinished_plans(session: AsyncSession) -> list[durable.Unfinished]:
    """Plans still generating: restarted when their workflow is missing, failed when it ended
    in error."""
    found = []
    for row in await repository.generating(session):
        tenant_id, plan_id, round_ = row.tenant_id, row.id, row.generation_round

        async def give_up(
            session: AsyncSession,
            reason: str,
            tenant_id: uuid.UUID = tenant_id,
            plan_id: uuid.UUID = plan_id,
            round_: int = round_,
        ) -> None:
            current = await repository.get(session, tenant_id, plan_id, for_update=True)
            if (
                current is not None
                and current.status == "generating"
                and current.generation_round == round_
            ):
                await fail(session, tenant_id, current, f"The generation stopped: {reason}.")

        found.append(
            durable.Unfinished(
                workflow_id=workflow_id(plan_id, round_),
                restart=durable.restarter(
                    generate_plan,
                    workflow_id(plan_id, round_),
                    str(tenant_id),
                    str(plan_id),
                    round_,
                    queue=QUEUE,
                ),
                give_up=give_up,
            )
        )
    return found
