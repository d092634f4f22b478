"""Starting publish attempts: one at a time per draft and target; unpublish attempts, which take
a draft's copies down; and auto-publish, which approves and publishes what a job wrote when its
SEO score reaches the job's threshold.

Which connection a person's publish goes to is decided by flows/publishing.py. Never commits.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.drafts import publication as draft_publication
from contentplatform.drafts.models import Draft
from contentplatform.kit import durable
from contentplatform.kit.db import utcnow
from contentplatform.publishers import durable as publishers_durable
from contentplatform.publishers import repository
from contentplatform.publishers.attempts import IN_FLIGHT
from contentplatform.publishers.errors import AttemptUnderWay, PublisherDisabled
from contentplatform.publishers.models import PublishAttempt, PublisherConnection


async def start(
    session: AsyncSession,
    draft: Draft,
    connection: PublisherConnection,
    mode: str,
    *,
    by: str,
    scheduled_at: datetime | None,
    force: bool = False,
) -> PublishAttempt:
    """A person's attempt to publish `draft` to `connection`, started once this commits.

    The caller holds the draft's row lock, so requests for one draft take turns here, and a
    request the target needs nothing for is a no-op answering with the attempt that did it: this
    version of the draft already went there with the same outcome (live, or a target's draft),
    or is being sent there now. `force` sends it again anyway."""
    if not force:
        same = await _same_request(session, draft, connection.id, mode)
        if same is not None:
            return same
    await _supersede(session, draft.tenant_id, draft.id, connection.id)
    attempt = _new_attempt(draft, connection, mode, "user", by, scheduled_at=scheduled_at)
    await _begin(session, attempt)
    return attempt


async def unpublish(
    session: AsyncSession,
    draft: Draft,
    connection: PublisherConnection | None,
    *,
    by: str | None,
    take_down: bool = True,
) -> list[PublishAttempt]:
    """Take `draft` down from `connection` (None: from every connection it is live or scheduled
    on): its scheduled publishes there are cancelled, and each live copy gets an unpublish
    attempt, run by the publishing workflow once this commits. Without `take_down` only the
    scheduled publishes are cancelled (an archive that leaves the copies up).

    The caller holds the draft's row lock. An attempt still under way to one of those
    connections is 409, as is a copy on a disabled one; nothing is changed then. Answers the
    cancelled and the new attempts: none when there was nothing to do."""
    tenant_id = draft.tenant_id
    live = await repository.live_connection_ids(session, tenant_id, draft.id) if take_down else []
    unfinished = await repository.unfinished_of_draft(session, tenant_id, draft.id)
    if connection is not None:
        live = [connection_id for connection_id in live if connection_id == connection.id]
        unfinished = [a for a in unfinished if a.connection_id == connection.id]
    scheduled = [attempt for attempt in unfinished if attempt.status == "scheduled"]
    if take_down:
        targeted = {*live, *(a.connection_id for a in scheduled)}
        if connection is not None:
            targeted.add(connection.id)
        for attempt in unfinished:
            if attempt.status in IN_FLIGHT and attempt.connection_id in targeted:
                raise AttemptUnderWay(
                    "An attempt to that connection is still under way for this draft; wait for "
                    f"the attempt {attempt.id} to finish."
                )
    targets = []
    for connection_id in live:
        target = await repository.connection(session, tenant_id, connection_id)
        assert target is not None, "live copies are on connections that are not deleted"
        if target.status == "disabled":
            raise PublisherDisabled(
                f"The publisher connection {target.name!r} is disabled: enable it to take the "
                "draft down there."
            )
        targets.append(target)
    now = utcnow()
    for attempt in scheduled:
        attempt.status = "cancelled"
        attempt.finished_at = attempt.updated_at = now
    started = [_new_attempt(draft, target, "unpublish", "user", by) for target in targets]
    for attempt in started:
        await _begin(session, attempt)
    return [*scheduled, *started]


def _outcome(mode: str) -> str:
    """What an attempt in `mode` leaves on its target: a live post, a target's draft, nothing."""
    return {"draft": "draft", "unpublish": "unpublished"}.get(mode, "published")


async def _same_request(
    session: AsyncSession, draft: Draft, connection_id: uuid.UUID, mode: str
) -> PublishAttempt | None:
    """The attempt that sent, or is sending, this version of the draft to the connection with
    the outcome `mode` asks for; None when the target needs the request."""
    rows, _ = await repository.attempts(
        session, draft.tenant_id, limit=20, offset=0, draft_id=draft.id, connection_id=connection_id
    )
    for attempt in rows:  # newest first
        if attempt.status in ("scheduled", "failed", "cancelled"):
            continue  # left the target as it was (as far as we know)
        same = attempt.draft_version == draft.version and _outcome(attempt.mode) == _outcome(mode)
        # Under way or succeeded: the newest such attempt says what the target has (or will).
        return attempt if same else None
    return None


async def _supersede(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID, connection_id: uuid.UUID
) -> None:
    """One attempt per draft and target at a time: a scheduled one gives way to the new
    request; one already under way makes the new request a 409."""
    rows, _ = await repository.attempts(
        session, tenant_id, limit=20, offset=0, draft_id=draft_id, connection_id=connection_id
    )
    for attempt in rows:
        if attempt.status in IN_FLIGHT:
            raise AttemptUnderWay(
                "This draft is already being published to that connection; wait for the "
                f"attempt {attempt.id} to finish."
            )
        if attempt.status == "scheduled":
            attempt.status = "cancelled"
            attempt.finished_at = attempt.updated_at = utcnow()


def _new_attempt(
    draft: Draft,
    connection: PublisherConnection,
    mode: str,
    triggered_by: str,
    by: str | None,
    *,
    scheduled_at: datetime | None = None,
) -> PublishAttempt:
    now = utcnow()
    return PublishAttempt(
        id=uuid.uuid4(),
        tenant_id=draft.tenant_id,
        draft_id=draft.id,
        connection_id=connection.id,
        mode=mode,
        status="scheduled" if scheduled_at else "pending",
        tries=0,
        draft_version=draft.version,
        triggered_by=triggered_by,
        triggered_by_id=by,
        scheduled_at=scheduled_at,
        created_at=now,
        updated_at=now,
    )


async def _begin(session: AsyncSession, attempt: PublishAttempt) -> None:
    """Record the attempt; its workflow starts once this commits."""
    session.add(attempt)
    await session.flush()
    durable.start_after_commit(
        session,
        publishers_durable.publish_draft,
        publishers_durable.workflow_id(attempt.id),
        str(attempt.tenant_id),
        str(attempt.id),
    )


async def auto_publish(
    session: AsyncSession,
    draft: Draft,
    *,
    connection_id: uuid.UUID | None,
    threshold: int | None,
    rules: dict[str, Any] | None = None,
    broken: str | None = None,
) -> None:
    """A job's run wrote `draft` (in review) and the job publishes automatically: approve and
    publish it when its SEO score reaches the threshold and it breaks no error-level content
    rule, else hold it for review with the reason. `rules` is the content rules' check of the
    draft at stage publish (kept on the decision), `broken` the reason it fails, if it does
    (the flow asks the settings domain, which sits above this one)."""
    note: dict[str, Any] = {
        "seo_score": draft.seo_score,
        "threshold": threshold,
        "decided_at": utcnow().isoformat(),
    }
    if rules is not None:
        note["rules"] = rules
    connection = None
    if connection_id is not None:
        connection = await repository.connection(session, draft.tenant_id, connection_id)
    reason = _hold_reason(draft, connection, connection_id, threshold, broken)
    if reason is not None:
        draft_publication.hold_for_review(draft, {**note, "decision": "held", "reason": reason})
        return
    assert connection is not None
    score = draft.seo_score
    decision = {
        **note,
        "decision": "published",
        "reason": f"SEO score {score} reached the threshold {threshold}."
        if threshold is not None
        else "The job publishes every draft it writes.",
    }
    if draft.status == "approved":  # a person approved it (a workflow's review gate)
        draft.auto_publish = {**decision, "reason": f"Approved by {draft.approved_by}."}
    else:
        draft_publication.approve_automatically(draft, decision)
    await _begin(session, _new_attempt(draft, connection, "publish", "auto_publish", None))


def _hold_reason(
    draft: Draft,
    connection: PublisherConnection | None,
    connection_id: uuid.UUID | None,
    threshold: int | None,
    broken: str | None,
) -> str | None:
    if connection_id is None:
        return "The job has no publisher connection."
    if connection is None:
        return "The job's publisher connection was deleted."
    if connection.status == "disabled":
        return f"The publisher connection {connection.name!r} is disabled."
    if broken is not None:  # a content rule holds it, whatever its score
        return broken
    if threshold is not None and (draft.seo_score or 0) < threshold:
        return f"SEO score {draft.seo_score or 0} is below the threshold {threshold}."
    return None
