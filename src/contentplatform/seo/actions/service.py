"""The rules of SEO actions: the list, manual actions, the moves between states, jobs made from
actions and the published draft that completes one. Never commits. Generation (the rules
applied to the signals) is generation.py.

States: open <-> in_progress; open | in_progress -> done; done -> open (reopen); open |
in_progress -> dismissed (with a reason); dismissed -> open (restore). verified is the
system's: generation moves a done action there when its signal is gone, and back to open when
the signal returns. Every move writes a history row (when, who: a user id or `system`, from,
to, why).
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.drafts import service as drafts
from contentplatform.job_instances import service as instances
from contentplatform.job_instances.errors import InstanceDateTaken
from contentplatform.job_instances.schemas import JobInstance
from contentplatform.jobs import schemas as job_schemas
from contentplatform.jobs import service as jobs
from contentplatform.kit.db import Required, utcnow
from contentplatform.kit.errors import FieldError, PlatformError
from contentplatform.kit.schemas import window_of
from contentplatform.kit.text import is_unseen
from contentplatform.seo import repository as seo_repository
from contentplatform.seo import service as seo
from contentplatform.seo.actions import repository, rules, schemas
from contentplatform.seo.actions.errors import (
    ActionNotForContent,
    AssigneeNotMember,
    IllegalActionTransition,
    SeoActionNotFound,
)
from contentplatform.seo.models import SeoAction, SeoActionHistory
from contentplatform.seo.pages.inventory import key_of
from contentplatform.tenants import service as tenants

require = Required(repository.get, SeoActionNotFound)

SYSTEM = "system"
ACTIVE = ("open", "in_progress")
# The moves a person may make (updateAction, bulkActions); dismissing is dismissAction's.
MOVES = frozenset(
    {
        ("open", "in_progress"),
        ("in_progress", "open"),
        ("open", "done"),
        ("in_progress", "done"),
        ("done", "open"),
        ("dismissed", "open"),
    }
)
# A manual action's impact_score: the floor of the priority band it was given.
MANUAL_IMPACT = {"critical": 80, "high": 60, "medium": 30, "low": 0}


def record(row: SeoAction) -> schemas.SeoAction:
    return schemas.SeoAction.model_validate(row)


def set_priority(row: SeoAction, priority: str) -> None:
    row.priority = priority
    row.priority_rank = rules.PRIORITY_RANK[priority]


def move(session: AsyncSession, row: SeoAction, to: str, actor: str, note: str | None) -> None:
    """Put the action in status `to` (unchecked: the caller checked the move) and write it in
    its history."""
    now = utcnow()
    before = row.status
    row.status = to
    if to == "done":
        row.done_at = now
    elif to == "verified":
        row.verified_at = now
    elif to == "open":
        # Reopened or restored: what it was done, verified or dismissed as no longer holds.
        row.done_at = row.verified_at = row.dismissed_reason = None
    row.updated_at = now
    written(session, row, before, actor, note, at=now)


def written(
    session: AsyncSession,
    row: SeoAction,
    before: str | None,
    actor: str,
    note: str | None,
    *,
    at: Any = None,
) -> None:
    session.add(
        SeoActionHistory(
            id=uuid.uuid4(),
            tenant_id=row.tenant_id,
            action_id=row.id,
            at=at or utcnow(),
            actor=actor,
            from_status=before,
            to_status=row.status,
            note=note,
        )
    )


def _check_move(row: SeoAction, to: str) -> None:
    if (row.status, to) not in MOVES:
        raise IllegalActionTransition(
            f"The action is {row.status}: it cannot move to {to}. Allowed: open <-> "
            "in_progress, open or in_progress -> done, done -> open, dismissed -> open."
        )


async def _assignee(session: AsyncSession, tenant_id: uuid.UUID, ref: str) -> str:
    """The identity provider's user id of the member `ref` names (their id or our user id);
    400 for anyone else."""
    subject = await tenants.member_subject(session, tenant_id, ref)
    if subject is None:
        raise AssigneeNotMember(
            f"{ref!r} is not a member of this organization.",
            errors=[FieldError("assigneeId", "must be a member of this organization")],
        )
    return subject


async def auto_generate(session: AsyncSession, tenant_id: uuid.UUID) -> bool:
    """The SEO settings' `actions.auto_generate` (read, never written)."""
    stored = await seo_repository.stored_settings(session, tenant_id)
    return bool(seo.blocks_of(stored)["actions"].get("auto_generate"))


# --- reading ----------------------------------------------------------------------------------


async def list_actions(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListActionsInput
) -> schemas.SeoActionPage:
    statuses = (
        None if data.status == "all" else ACTIVE if data.status == "active" else (data.status,)
    )
    assignee = data.assignee_id
    if assignee is not None:
        # Our user id or the identity provider's: actions store the latter.
        assignee = await tenants.member_subject(session, tenant_id, assignee) or assignee
    rows, total = await repository.page(
        session,
        tenant_id,
        statuses=statuses,
        filters={
            "type": data.type,
            "source": data.source,
            "priority": data.priority,
            "assignee_id": assignee,
        },
        search=data.search,
        page_id=data.page_id,
        sort_by=data.sort_by,
        descending=data.sort_order == "desc",
        **window_of(data),
    )
    return schemas.SeoActionPage(
        data=[record(row) for row in rows], total=total, page=data.page, limit=data.limit
    )


async def get_action(
    session: AsyncSession, tenant_id: uuid.UUID, action_id: uuid.UUID
) -> schemas.SeoActionDetail:
    row = await require(session, tenant_id, action_id)
    history = await repository.history(session, tenant_id, row.id)
    job = await jobs.find(session, tenant_id, row.job_id) if row.job_id else None
    draft = await drafts.require_or_none(session, tenant_id, row.draft_id) if row.draft_id else None
    return schemas.SeoActionDetail(
        **record(row).model_dump(),
        history=[
            schemas.ActionHistoryEntry(
                at=entry.at,
                actor=entry.actor,
                from_=entry.from_status,
                to=entry.to_status,
                note=entry.note,
            )
            for entry in history
        ],
        job=schemas.ActionJob(id=job.id, name=job.name, status=job.status) if job else None,
        draft=(
            schemas.ActionDraft(id=draft.id, status=draft.status, published_url=draft.published_url)
            if draft
            else None
        ),
        verification=(
            schemas.ActionVerification.model_validate(row.verification)
            if row.verification
            else None
        ),
    )


# --- writing ----------------------------------------------------------------------------------


async def create(
    session: AsyncSession, tenant_id: uuid.UUID, actor: str, data: schemas.CreateActionInput
) -> schemas.SeoAction:
    assignee = await _assignee(session, tenant_id, data.assignee_id) if data.assignee_id else None
    now = utcnow()
    action_id = uuid.uuid4()
    urls = list(dict.fromkeys(data.target_urls))
    keys = [key for url in urls if (key := key_of(url)) is not None]
    pages = await repository.pages_of(session, tenant_id, {key[1] for key in keys})
    row = SeoAction(
        id=action_id,
        tenant_id=tenant_id,
        type=data.type,
        source="manual",
        title=data.title,
        description=data.description,
        impact_score=MANUAL_IMPACT[data.priority],
        effort=rules.EFFORT[data.type],
        status="open",
        target_urls=urls,
        page_ids=list(dict.fromkeys(str(pages[key[1]][0]) for key in keys if key[1] in pages)),
        keywords=list(dict.fromkeys(data.keywords)),
        evidence={},
        # A manual action is about nothing generation finds: its own id is its subject.
        fingerprint=rules.fingerprint("manual", str(action_id)),
        assignee_id=assignee,
        due_date=data.due_date,
        created_at=now,
        updated_at=now,
    )
    set_priority(row, data.priority)
    session.add(row)
    written(session, row, None, actor, "Added by hand.", at=now)
    await session.flush()
    return record(row)


async def update(
    session: AsyncSession, tenant_id: uuid.UUID, actor: str, data: schemas.UpdateActionInput
) -> schemas.SeoAction:
    row = await require(session, tenant_id, data.id, for_update=True)
    given = data.model_fields_set
    moving = data.status is not None and data.status != row.status
    if moving:
        _check_move(row, str(data.status))
    if "assignee_id" in given:
        row.assignee_id = (
            await _assignee(session, tenant_id, data.assignee_id) if data.assignee_id else None
        )
    if data.title is not None:
        row.title = data.title
    if "description" in given:
        row.description = data.description
    if data.priority is not None:
        set_priority(row, data.priority)
    if "due_date" in given:
        row.due_date = data.due_date
    row.updated_at = utcnow()
    if moving:
        move(session, row, str(data.status), actor, None)
    await session.flush()
    return record(row)


def _dismiss(session: AsyncSession, row: SeoAction, actor: str, reason: str) -> None:
    if row.status not in ACTIVE:
        raise IllegalActionTransition(
            f"The action is {row.status}: only an open or in-progress action can be dismissed."
        )
    move(session, row, "dismissed", actor, reason)
    row.dismissed_reason = reason


async def dismiss(
    session: AsyncSession, tenant_id: uuid.UUID, actor: str, data: schemas.DismissActionInput
) -> schemas.SeoAction:
    row = await require(session, tenant_id, data.id, for_update=True)
    _dismiss(session, row, actor, data.reason)
    await session.flush()
    return record(row)


BULK_MOVES = {"start": "in_progress", "complete": "done", "reopen": "open"}


async def bulk(
    session: AsyncSession, tenant_id: uuid.UUID, actor: str, data: schemas.BulkActionsInput
) -> schemas.SeoActionBulkOutcome:
    """Each id on its own, by the single operations' rules; one that fails (missing or another
    organization's: NOT_FOUND; a move its status does not allow: CONFLICT) is reported and
    left untouched, as jobs.bulk does. Each check comes before any write to that action."""
    assignee = (
        await _assignee(session, tenant_id, str(data.assignee_id))
        if data.action == "assign"
        else None
    )
    ids = list(dict.fromkeys(data.action_ids))
    found = await repository.by_ids(session, tenant_id, ids)
    results = []
    for action_id in ids:
        row = found.get(action_id)
        try:
            if row is None:
                raise SeoActionNotFound(f"SEO action {action_id} not found.")
            if data.action == "dismiss":
                _dismiss(session, row, actor, str(data.reason))
            elif data.action == "assign":
                row.assignee_id = assignee
                row.updated_at = utcnow()
            else:
                to = BULK_MOVES[data.action]
                _check_move(row, to)
                move(session, row, to, actor, None)
        except PlatformError as error:
            results.append(schemas.SeoActionBulkResult(id=action_id, ok=False, error=error.code))
        else:
            results.append(schemas.SeoActionBulkResult(id=action_id, ok=True, error=None))
    await session.flush()
    affected = sum(result.ok for result in results)
    return schemas.SeoActionBulkOutcome(
        success=affected == len(results), affected=affected, results=results
    )


# --- jobs from actions ----------------------------------------------------------------------


def _instructions(row: SeoAction) -> str:
    """What the article is for, from the action and its evidence."""
    lines = [f"Written for the SEO action “{row.title}” ({row.type.replace('_', ' ')})."]
    if row.description:
        lines.append(row.description)
    if row.target_urls:
        lines.append("Target URLs: " + ", ".join(row.target_urls[:10]))
    facts = [
        f"{key}: {value}"
        for key, value in row.evidence.items()
        if key != "subject" and value not in (None, "", [])
    ]
    if facts:
        lines.append("Evidence: " + "; ".join(facts))
    return "\n".join(lines)[:5000]


def _visible(text: str, limit: int) -> str:
    """`text` as a name or topic takes it: no invisible characters, within `limit`."""
    return "".join(c for c in text if not is_unseen(c)).strip()[:limit].strip() or "SEO action"


async def create_job(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    actor: str,
    data: schemas.CreateJobFromActionInput,
) -> schemas.ActionJobCreated:
    # The tenant before the action, as every transaction that locks both (jobs.create locks it).
    await tenants.lock_tenant(session, tenant_id)
    row = await require(session, tenant_id, data.id, for_update=True)
    if row.type not in rules.CONTENT_TYPES or row.status not in ACTIVE:
        raise ActionNotForContent(
            f"The action is a {row.type} action, {row.status}: only an open or in-progress "
            "action of a content type (create_content, close_ai_gap, target_striking_distance, "
            "improve_snippet, improve_geo) becomes a job."
        )
    if row.type == "refresh_content":
        raise ActionNotForContent(
            "A refresh_content action needs a run that revises the page's existing draft as a "
            "new revision of it, which is not built yet: refresh the page by hand (or add a "
            "create_content action for a new article)."
        )
    keywords = list(data.keywords) if data.keywords is not None else row.keywords[:20]
    instructions = data.content_instructions or _instructions(row)
    timezone = await tenants.timezone_of(session, tenant_id)
    scheduled = tenants.in_zone(data.scheduled_date or utcnow(), timezone)
    if data.mode == "new_job":
        fields: dict[str, Any] = {
            "name": data.name or _visible(row.title, 100),
            "job_type": "one_off",
            "topic_source": "manual",
            "topics": [_visible(row.title, 500)],
            "keywords": keywords,
            "content_instructions": instructions,
            "seo_action_id": row.id,
        }
        for name in (
            "document_ids",
            "publisher_connection_id",
            "auto_publish",
            "auto_publish_threshold",
        ):
            if getattr(data, name) is not None:
                fields[name] = getattr(data, name)
        # A one-off job without a date runs only when started: its one instance is planned
        # below at scheduledDate, and the scheduler runs it then.
        job = await jobs.create(session, tenant_id, actor, job_schemas.CreateJobInput(**fields))
        values = instances.new_instance(tenant_id, job.id, scheduled)
    else:
        found = await jobs.require(session, tenant_id, data.job_id)  # type: ignore[arg-type]
        job = job_schemas.Job.model_validate(found)
        values = instances.new_instance(tenant_id, job.id, scheduled)
        values.update(
            keywords=instances.clean_keywords(keywords),
            # The job's own topic is written; the instructions say what it is for.
            content_instructions=instructions,
            document_ids=None
            if data.document_ids is None
            else await jobs.checked_documents(session, tenant_id, data.document_ids),
        )
    if not await instances.plan_once(session, values):
        raise InstanceDateTaken(f"The job already has an instance at {scheduled.isoformat()}.")
    instance = await instances.require(session, tenant_id, values["id"])  # type: ignore[arg-type]
    row.job_id, row.job_instance_id = job.id, instance.id
    note = f"Job “{job.name}” ({data.mode}) writes it: instance at {scheduled.isoformat()}."
    if row.status == "open":
        move(session, row, "in_progress", actor, note)
    else:
        row.updated_at = utcnow()
        written(session, row, row.status, actor, note)
    await session.flush()
    return schemas.ActionJobCreated(
        action=record(row), job=job, instance=JobInstance.model_validate(instance)
    )


async def draft_published(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID, url: str | None
) -> None:
    """A draft went live: the open or in-progress action its job instance was planned for (or
    its job was made for) is done, with the draft."""
    draft = await drafts.require_or_none(session, tenant_id, draft_id)
    if draft is None or (draft.job_id is None and draft.instance_id is None):
        return
    job = await jobs.find(session, tenant_id, draft.job_id) if draft.job_id else None
    rows = await repository.of_draft(
        session, tenant_id, draft.instance_id, job.seo_action_id if job else None
    )
    for row in rows:
        row.draft_id = draft.id
        where = url or draft.published_url
        move(
            session,
            row,
            "done",
            SYSTEM,
            f"Its draft “{draft.title}” was published" + (f" at {where}." if where else "."),
        )
