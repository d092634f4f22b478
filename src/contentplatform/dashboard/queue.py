"""The "needs me" queue (dashboard.pendingReviews): one list ordered by when each item is due.

- a draft in review (`draft_review`): waiting since its last change, due REVIEW_DUE later;
- a workflow run waiting at a review gate (`workflow_gate`): due when the gate times out (the
  run's `waiting_until`), its draft's reviewer the one it waits on;
- a failing publisher (`publisher_failing`, status error): due since it failed, as nothing
  publishes through it until it is fixed. It has no assignee.

A draft a gate waits on is listed once, as the gate (its due time is the gate's)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.dashboard import schemas
from contentplatform.drafts import service as drafts
from contentplatform.generation import service as generation
from contentplatform.kit.db import utcnow
from contentplatform.kit.schemas import window_of
from contentplatform.publishers import service as publishers
from contentplatform.publishers.schemas import ListConnectionsInput

# A review not done within this is overdue (the review_overdue alert says so too).
REVIEW_DUE = timedelta(hours=48)
# Items read of each kind at most: the queue of a team is tens, not thousands.
MAX_ITEMS = 1000


async def items(
    session: AsyncSession, tenant_id: uuid.UUID, now: datetime | None = None
) -> list[schemas.PendingItem]:
    """Every item of the tenant's queue, the soonest due first."""
    now = now or utcnow()
    reviewing = await drafts.in_review(session, tenant_id, MAX_ITEMS)
    by_id = {draft.id: draft for draft in reviewing}
    gates = await generation.waiting_review(session, tenant_id, MAX_ITEMS)
    gated = {run.draft_id for run in gates}
    found: list[schemas.PendingItem] = []
    for run in gates:
        draft = by_id.get(run.draft_id)
        due = run.waiting_until
        found.append(
            schemas.PendingItem(
                type="workflow_gate",
                title=draft.title if draft is not None else "Workflow run waiting for review",
                due_at=due,
                overdue=due is not None and due <= now,
                waiting_since=draft.updated_at if draft is not None else run.updated_at,
                assignee_id=draft.assignee_id if draft is not None else None,
                draft_id=run.draft_id,
                seo_score=draft.seo_score if draft is not None else None,
                job_id=run.job_id,
                workflow_run_id=run.id,
                publisher_id=None,
            )
        )
    for draft in reviewing:
        if draft.id in gated:
            continue
        due = draft.updated_at + REVIEW_DUE
        found.append(
            schemas.PendingItem(
                type="draft_review",
                title=draft.title,
                due_at=due,
                overdue=due <= now,
                waiting_since=draft.updated_at,
                assignee_id=draft.assignee_id,
                draft_id=draft.id,
                seo_score=draft.seo_score,
                job_id=draft.job_id,
                workflow_run_id=None,
                publisher_id=None,
            )
        )
    failing = await publishers.list_connections(
        session, tenant_id, ListConnectionsInput(status="error")
    )
    for connection in failing.data:
        since = connection.last_tested_at or connection.updated_at
        found.append(
            schemas.PendingItem(
                type="publisher_failing",
                title=f"Connection {connection.name} is failing",
                due_at=since,
                overdue=True,
                waiting_since=since,
                assignee_id=None,
                draft_id=None,
                seo_score=None,
                job_id=None,
                workflow_run_id=None,
                publisher_id=connection.id,
            )
        )
    found.sort(key=_order)
    return found


def _order(item: schemas.PendingItem) -> tuple[bool, datetime, datetime, str]:
    due = item.due_at
    return (
        due is None,
        (due or item.waiting_since).replace(tzinfo=None),
        item.waiting_since.replace(tzinfo=None),
        str(item.draft_id or item.publisher_id or item.workflow_run_id),
    )


async def pending(
    session: AsyncSession, tenant_id: uuid.UUID, subject: str, data: schemas.PendingReviewsInput
) -> schemas.PendingPage:
    found = await items(session, tenant_id)
    if data.assigned_to_me:
        found = [item for item in found if item.assignee_id == subject]
    window = window_of(data)
    return schemas.PendingPage(
        data=found[window["offset"] : window["offset"] + window["limit"]],
        total=len(found),
        page=data.page,
        limit=data.limit,
    )
