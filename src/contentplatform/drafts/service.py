"""The rules of drafts: review moves, edits with revisions, the SEO score, and what the
generation pipeline does to a draft. Never commits. Beside it by concern: revisions.py (listing,
restoring, comparing), comments.py, bulk_actions.py (drafts.bulk) and publication.py (the
draft's side of publishing, the public blog's reads).

Every write of content goes through `_write`: the HTML is sanitized, the SEO score recomputed,
and a revision stored (version + 1) saying who changed what, AI or human.

Every change someone would want to hear about is an event written in the change's own
transaction (events.service.emit): `draft.created` for each new draft (by hand or by the
generation pipeline), `draft.status_changed` for each move of the state machine
(`announce_move`, called by every function that moves a status, and nowhere else moves one),
`draft.published`, `draft.assigned`, `draft.commented` and `comment.mentioned`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_object_session

from contentplatform.drafts import html, repository, schemas, seo, states
from contentplatform.drafts.errors import (
    AssigneeNotMember,
    DraftNotFound,
    IllegalDraftTransition,
    SeoMetaInvalid,
    StaleDraftVersion,
)
from contentplatform.drafts.models import Draft, DraftRevision
from contentplatform.drafts.states import Status
from contentplatform.events import service as events
from contentplatform.kit import errors, text
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import FieldError
from contentplatform.tenants import service as tenants

SCORE_KEY = "score_breakdown"
CONTENT_FIELDS = ("title", "content", "excerpt", "seo_meta")
# The seo_meta keys the service reads, and the type each must have.
SEO_META_TYPES: dict[str, type] = {
    "seo_title": str,
    "meta_description": str,
    "slug": str,
    "focus_keywords": list,
}
# The seo_meta keys that are plain text, like the title and the excerpt (kit/text.py).
SEO_META_TEXT = ("seo_title", "meta_description")
# The title of a draft whose given title was nothing but markup (a generation's topic).
UNTITLED = "Untitled"


@dataclass(frozen=True)
class Author:
    type: schemas.AuthorType
    id: str | None

    @classmethod
    def human(cls, subject: str) -> Author:
        return cls("human", subject)


def to_schema(draft: Draft) -> schemas.Draft:
    return schemas.Draft.model_validate(draft)


async def require(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID, *, for_update: bool = False
) -> Draft:
    draft = await repository.get(session, tenant_id, draft_id, for_update=for_update)
    return errors.require(draft, DraftNotFound, draft_id)


async def require_or_none(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID, *, for_update: bool = False
) -> Draft | None:
    """The draft, or None when it was deleted (for background work that outlives a request)."""
    return await repository.get(session, tenant_id, draft_id, for_update=for_update)


# --- reading ----------------------------------------------------------------------------------


async def list_drafts(
    session: AsyncSession, tenant_id: uuid.UUID, query: schemas.ListDraftsInput
) -> schemas.DraftPage:
    rows, total = await repository.page(session, tenant_id, query)
    return schemas.DraftPage(data=rows, total=total)


async def stats(session: AsyncSession, tenant_id: uuid.UUID) -> schemas.DraftStats:
    counts = await repository.count_by_status(session, tenant_id)
    return schemas.DraftStats(
        total=sum(counts.values()), byStatus={status: counts.get(status, 0) for status in Status}
    )


async def published_between(
    session: AsyncSession, tenant_id: uuid.UUID, start: datetime, end: datetime
) -> list[tuple[datetime, int | None]]:
    """When each live draft published in [start, end) was first published, and its SEO score
    (the dashboard's published posts, their mean score and sparkline)."""
    return await repository.published_between(session, tenant_id, start, end)


async def titles_since(
    session: AsyncSession, tenant_id: uuid.UUID, since: datetime, limit: int = 500
) -> list[str]:
    """What the organization wrote lately: the titles of its drafts created since `since`
    (SEO plans leave out what was targeted recently)."""
    return await repository.titles_since(session, tenant_id, since, limit)


async def score_history(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    draft_ids: list[uuid.UUID] | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
    limit: int = 100_000,
) -> list[tuple[uuid.UUID, int, datetime, int, str]]:
    """(draft, version, when, SEO score, author type: ai | human | system) of each revision
    that scored a draft, oldest first (content analytics' SEO score trend)."""
    return await repository.scores(session, tenant_id, draft_ids, start, end, limit)


async def by_ids(
    session: AsyncSession, tenant_id: uuid.UUID, draft_ids: list[uuid.UUID]
) -> list[Draft]:
    """The organization's drafts of `draft_ids` (others' and absent ones left out)."""
    return await repository.by_ids(session, tenant_id, draft_ids)


async def in_review(session: AsyncSession, tenant_id: uuid.UUID, limit: int) -> list[Draft]:
    """The live drafts in review, least recently changed first (the dashboard's queue)."""
    return await repository.in_review(session, tenant_id, limit)


async def publishable(session: AsyncSession, tenant_id: uuid.UUID) -> list[schemas.Draft]:
    rows = await repository.publishable(session, tenant_id)
    return [schemas.Draft.model_validate(row) for row in rows]


async def of_job(
    session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID, limit: int
) -> list[schemas.Draft]:
    """A job's drafts, newest first."""
    rows = await repository.of_job(session, tenant_id, job_id, limit)
    return [schemas.Draft.model_validate(row) for row in rows]


async def job_figures(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    job_ids: list[uuid.UUID] | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> dict[uuid.UUID, tuple[dict[str, int], float | None]]:
    """Per job (these, or every job of the organization), its drafts made in [start, end)
    (all of them when unbounded) counted by status, and their mean SEO score (None: none
    scored). A job with no such draft is absent."""
    return await repository.job_figures(session, tenant_id, job_ids, start, end)


async def job_drafts_made(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    job_ids: list[uuid.UUID] | None,
    start: datetime,
    end: datetime,
) -> list[tuple[datetime, str]]:
    """When each draft of these jobs (of any job when None) made in [start, end) was made, and
    its status now (job_figures' drafts, one by one, for a series)."""
    return await repository.job_drafts_made(session, tenant_id, job_ids, start, end)


async def take_approved(
    session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID, instance_id: uuid.UUID
) -> Draft | None:
    """Give a job instance an approved draft no other instance took (its job's own first)."""
    draft = await repository.unclaimed_approved(session, tenant_id, job_id)
    if draft is not None:
        draft.instance_id = instance_id
        draft.updated_at = utcnow()
    return draft


# --- writing ----------------------------------------------------------------------------------


async def create(
    session: AsyncSession, tenant_id: uuid.UUID, author: Author, data: schemas.CreateDraftInput
) -> schemas.Draft:
    draft = _new(tenant_id, title=data.title, status=Status.reviewing)
    draft.job_id, draft.instance_id = data.job_id, data.instance_id
    session.add(draft)
    _write(session, draft, author, "Created", {"title": data.title, "content": data.content})
    events.emit(
        session,
        tenant_id,
        "draft.created",
        resource_id=draft.id,
        payload={**event_payload(draft), "origin": "written"},
    )
    await session.flush()
    return schemas.Draft.model_validate(draft)


def _new(tenant_id: uuid.UUID, *, title: str, status: Status) -> Draft:
    now = utcnow()
    return Draft(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        title=text.plain_text(title) or UNTITLED,
        content="<p></p>",
        content_text="",
        seo_meta={},
        status=status.value,
        provenance={},
        version=0,
        created_at=now,
        updated_at=now,
    )


async def update(
    session: AsyncSession, tenant_id: uuid.UUID, author: Author, data: schemas.UpdateDraftInput
) -> schemas.Draft:
    draft = await require(session, tenant_id, data.id, for_update=True)
    check_expected_version(draft, data.expected_version)
    changes: dict[str, Any] = {}
    if data.title is not None:
        changes["title"] = data.title
    if data.content is not None:
        changes["content"] = data.content
    if data.excerpt is not None:
        changes["excerpt"] = data.excerpt
    if data.seo_meta is not None:
        changes["seo_meta"] = _merged_seo_meta(draft.seo_meta, data.seo_meta)
    edit(session, draft, author, changes, summary=None)
    return schemas.Draft.model_validate(draft)


def check_expected_version(draft: Draft, expected: int | None) -> None:
    if expected is not None and expected != draft.version:
        raise StaleDraftVersion(
            f"The draft is at version {draft.version}; this change was based on version "
            f"{expected}. Reload the draft and make the change again."
        )


def edit(
    session: AsyncSession,
    draft: Draft,
    author: Author,
    changes: dict[str, Any],
    summary: str | None,
    provenance: dict[str, Any] | None = None,
) -> None:
    """A person's change of content, moving the status as an edit does (states.after_edit)."""
    target = states.after_edit(draft.status)
    if not _write(session, draft, author, summary, changes, provenance):
        return
    before = draft.status
    if target != draft.status:
        states.check_move(draft.status, target)
        if draft.status == Status.approved:
            draft.approved_at = draft.approved_by = None
        draft.status = target.value
    announce_move(session, draft, before)


def _merged_seo_meta(current: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    merged = {key: value for key, value in current.items() if key != SCORE_KEY}
    for key, value in patch.items():
        if key == SCORE_KEY:
            continue  # the service's own, recomputed below
        if value is None:
            merged.pop(key, None)
            continue
        wanted = SEO_META_TYPES.get(key)
        if wanted is not None and not _is_a(value, wanted):
            kind = "a list of strings" if wanted is list else "a string"
            raise SeoMetaInvalid(
                f"seo_meta.{key} must be {kind}.",
                errors=[FieldError(f"seo_meta.{key}", f"must be {kind}")],
            )
        merged[key] = value
    return merged


def _is_a(value: object, wanted: type) -> bool:
    if wanted is list:
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    return isinstance(value, wanted)


def _write(
    session: AsyncSession,
    draft: Draft,
    author: Author,
    summary: str | None,
    changes: dict[str, Any],
    provenance: dict[str, Any] | None = None,
) -> bool:
    """Apply content `changes` (sanitized, the text fields plain) and store a revision; False
    when nothing changed."""
    if "content" in changes:
        changes["content"] = html.sanitize(changes["content"])
    _as_plain_text(changes, draft.title)
    if "seo_meta" in changes:
        changes["seo_meta"] = {k: v for k, v in changes["seo_meta"].items() if k != SCORE_KEY}
    current = {name: getattr(draft, name) for name in CONTENT_FIELDS}
    current["seo_meta"] = {k: v for k, v in draft.seo_meta.items() if k != SCORE_KEY}
    if draft.version == 0:  # the first revision holds everything it was given
        changed = [name for name in CONTENT_FIELDS if name in changes]
    else:
        changed = [
            name for name in CONTENT_FIELDS if name in changes and changes[name] != current[name]
        ]
    if not changed:  # an edit that gives nothing (even to a draft with no revision yet)
        return False
    for name in changed:
        if name != "seo_meta":
            setattr(draft, name, changes[name])
    seo_meta = changes.get("seo_meta", current["seo_meta"])
    draft.content_text = html.plain_text(draft.content)
    scored = seo.score(draft.title, draft.content, seo_meta)
    draft.seo_meta = {**seo_meta, SCORE_KEY: scored.as_json()}
    draft.seo_score = scored.total
    draft.version += 1
    draft.updated_at = utcnow()
    session.add(
        DraftRevision(
            id=uuid.uuid4(),
            tenant_id=draft.tenant_id,
            draft_id=draft.id,
            version=draft.version,
            title=draft.title,
            content=draft.content,
            excerpt=draft.excerpt,
            seo_meta=draft.seo_meta,
            seo_score=draft.seo_score,
            author_type=author.type,
            author_id=author.id,
            change_summary=summary or _summary(changed),
            fields_changed=changed,
            provenance=provenance,
        )
    )
    return True


def _as_plain_text(changes: dict[str, Any], current_title: str) -> None:
    """The title, the excerpt and seo_meta's texts as plain text, whoever writes them: inputs
    are plain already; the generation pipeline's answer and old revisions may not be."""
    if changes.get("title") is not None:
        changes["title"] = text.plain_text(changes["title"]) or current_title
    if changes.get("excerpt") is not None:
        changes["excerpt"] = text.plain_text(changes["excerpt"])
    seo_meta = changes.get("seo_meta")
    if seo_meta is None:
        return
    plain = dict(seo_meta)
    for key in SEO_META_TEXT:
        if isinstance(plain.get(key), str):
            plain[key] = text.plain_text(plain[key])
    keywords = plain.get("focus_keywords")
    if isinstance(keywords, list):
        stripped = (text.plain_text(k) if isinstance(k, str) else k for k in keywords)
        plain["focus_keywords"] = [k for k in stripped if k != ""]
    changes["seo_meta"] = plain


def _summary(fields: list[str]) -> str:
    names = [name.replace("seo_meta", "SEO metadata") for name in fields]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"Edited the {listed}"


async def delete(session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID) -> None:
    """Soft delete; a generation still writing it stops at its next step and releases credits."""
    draft = await require(session, tenant_id, draft_id, for_update=True)
    draft.deleted_at = utcnow()


async def approve(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID, approver: str
) -> schemas.Draft:
    draft = await require(session, tenant_id, draft_id, for_update=True)
    mark_approved(session, draft, approver)
    return schemas.Draft.model_validate(draft)


def mark_approved(session: AsyncSession, draft: Draft, approver: str) -> None:
    before = draft.status
    draft.status = states.check_move(draft.status, Status.approved).value
    draft.approved_at = draft.updated_at = utcnow()
    draft.approved_by = approver
    draft.rejection_reason = None
    announce_move(session, draft, before, approved_by=approver)


async def reject(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID, reason: str
) -> schemas.Draft:
    draft = await require(session, tenant_id, draft_id, for_update=True)
    before = draft.status
    draft.status = states.check_move(draft.status, Status.rejected).value
    draft.rejection_reason = reason
    draft.updated_at = utcnow()
    announce_move(session, draft, before, reason=reason)
    return schemas.Draft.model_validate(draft)


async def assign(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID, assignee: str
) -> None:
    draft = await require(session, tenant_id, draft_id, for_update=True)
    mark_assigned(session, draft, await assignee_subject(session, tenant_id, assignee))


async def assignee_subject(session: AsyncSession, tenant_id: uuid.UUID, assignee: str) -> str:
    """The identity provider's user id of the member `assignee` names; 400 for anyone else."""
    subject = await tenants.member_subject(session, tenant_id, assignee)
    if subject is None:
        raise AssigneeNotMember(
            f"{assignee!r} is not a member of this organization.",
            errors=[FieldError("assigneeId", "must be a member of this organization")],
        )
    return subject


def mark_assigned(session: AsyncSession, draft: Draft, subject: str) -> None:
    """Assign the draft to `subject`; announced unless it was assigned to them already."""
    previous = draft.assignee_id
    if previous == subject:
        return
    draft.assignee_id = subject
    events.emit(
        session,
        draft.tenant_id,
        "draft.assigned",
        resource_id=draft.id,
        payload={**event_payload(draft), "previous_assignee_id": previous},
    )


async def unassign_member(session: AsyncSession, tenant_id: uuid.UUID, subject: str) -> int:
    """A member left the organization: none of its drafts stays assigned to them (`subject`,
    the identity provider's user id drafts name assignees by). How many drafts changed. Not
    announced per draft: `member.removed` tells of it."""
    return await repository.unassign(session, tenant_id, subject)


# --- what the generation pipeline does to a draft ----------------------------------------------


@dataclass(frozen=True)
class Generating:
    """A draft `start_generating_many` makes: its title and the run that writes it."""

    title: str
    run_id: uuid.UUID
    job_id: uuid.UUID | None = None
    instance_id: uuid.UUID | None = None


async def start_generating_many(
    session: AsyncSession, tenant_id: uuid.UUID, drafts: Sequence[Generating]
) -> list[uuid.UUID]:
    """New drafts in `generating`, at version 0 (no revision until the pipeline writes each),
    inserted together: their ids, in order."""
    return (await start_generating_across(session, {tenant_id: drafts}))[tenant_id]


async def start_generating_across(
    session: AsyncSession, by_tenant: Mapping[uuid.UUID, Sequence[Generating]]
) -> dict[uuid.UUID, list[uuid.UUID]]:
    """`start_generating_many` for many tenants at once (the scheduler's tick), in one insert:
    the ids of each tenant's drafts, in order."""
    now = utcnow()
    made = {
        tenant_id: [
            Draft(
                id=uuid.uuid4(),
                tenant_id=tenant_id,
                title=text.plain_text(draft.title) or UNTITLED,
                content="<p></p>",
                content_text="",
                seo_meta={},
                status=Status.generating.value,
                provenance={},
                version=0,
                run_id=draft.run_id,
                job_id=draft.job_id,
                instance_id=draft.instance_id,
                created_at=now,
                updated_at=now,
            )
            for draft in drafts
        ]
        for tenant_id, drafts in by_tenant.items()
    }
    rows = [row for tenant_rows in made.values() for row in tenant_rows]
    # Through the session's unit of work, which inserts them in one statement at the flush.
    session.add_all(rows)
    for row in rows:
        events.emit(
            session,
            row.tenant_id,
            "draft.created",
            resource_id=row.id,
            payload={**event_payload(row), "origin": "generated", "run_id": row.run_id},
        )
    if rows:
        await session.flush()  # before the runs that name them
    return {tenant_id: [row.id for row in tenant_rows] for tenant_id, tenant_rows in made.items()}


async def generating(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID, run_id: uuid.UUID
) -> Draft | None:
    """The draft, locked, if it still exists and is being generated by `run_id`."""
    draft = await repository.get(session, tenant_id, draft_id, for_update=True)
    if draft is None or draft.status != Status.generating or draft.run_id != run_id:
        return None
    return draft


async def of_run(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID, run_id: uuid.UUID
) -> Draft | None:
    """The draft, locked, if it still exists and was last written by `run_id` (in whatever
    status: a run past a review gate keeps its draft in review or approved)."""
    draft = await repository.get(session, tenant_id, draft_id, for_update=True)
    if draft is None or draft.run_id != run_id:
        return None
    return draft


async def published_links(
    session: AsyncSession, tenant_id: uuid.UUID, limit: int = 200
) -> list[tuple[str, str]]:
    """(title, URL) of the organization's newest published posts, for internal links."""
    return await repository.published_links(session, tenant_id, limit)


def revise_by_pipeline(
    session: AsyncSession,
    draft: Draft,
    *,
    changes: dict[str, Any],
    provenance: dict[str, Any],
    summary: str,
) -> None:
    """A run's steps after a review gate changed the draft a person approved there: a new AI
    revision, the status kept (the team's workflow put those steps after its gate)."""
    _write(session, draft, Author("ai", None), summary, dict(changes), provenance)
    draft.provenance = provenance
    draft.updated_at = utcnow()


def finish_generation(
    session: AsyncSession,
    draft: Draft,
    *,
    title: str,
    content: str,
    excerpt: str | None,
    seo_meta: dict[str, Any],
    provenance: dict[str, Any],
    summary: str,
) -> None:
    """The pipeline's article becomes an AI revision and the draft goes to review."""
    changes = {"title": title, "content": content, "excerpt": excerpt, "seo_meta": seo_meta}
    _write(session, draft, Author("ai", None), summary, changes, provenance)
    draft.provenance = provenance
    before = draft.status
    draft.status = states.check_move(draft.status, Status.reviewing, by_pipeline=True).value
    announce_move(session, draft, before, run_id=draft.run_id)


def discard_generated(draft: Draft) -> None:
    """A test run keeps no draft (workflows.testRun without createDraft): the draft it wrote
    into is deleted, never having been shown for review."""
    draft.deleted_at = draft.updated_at = utcnow()


def back_to_review(draft: Draft) -> None:
    """A second review gate: the approved draft goes back to review."""
    before = draft.status
    draft.status = states.check_move(draft.status, Status.reviewing).value
    draft.approved_at = draft.approved_by = None
    draft.updated_at = utcnow()
    announce_move(session_of(draft), draft, before, run_id=draft.run_id)


def fail_generation(draft: Draft, reason: str) -> None:
    """A failed generation never leaves a draft generating: it is rejected with the reason."""
    before = draft.status
    draft.status = states.check_move(draft.status, Status.rejected, by_pipeline=True).value
    draft.rejection_reason = reason
    draft.updated_at = utcnow()
    announce_move(session_of(draft), draft, before, reason=reason, run_id=draft.run_id)


def generate_again(draft: Draft, run_id: uuid.UUID) -> None:
    """A new generation run writes the draft (generation.retryRun, generation.regenerateDraft):
    it goes to `generating` under `run_id`, which alone may move it out again. An approval no
    longer holds (the content will change) and a rejection's reason goes with the rejection.
    IllegalDraftTransition from any status but reviewing, rejected and approved."""
    before = draft.status
    draft.status = states.check_move(draft.status, Status.generating).value
    draft.run_id = run_id
    draft.approved_at = draft.approved_by = None
    draft.rejection_reason = None
    draft.updated_at = utcnow()
    announce_move(session_of(draft), draft, before, run_id=run_id)


def session_of(draft: Draft) -> AsyncSession:
    """The session `draft` was read in, for the moves whose callers pass none: their event is
    written in the same transaction as the move."""
    session = async_object_session(draft)
    if session is None:
        raise RuntimeError("a draft moves only within the session that read it")
    return session


# --- moves that tell (issue 20) ---------------------------------------------------------------


def announce_move(session: AsyncSession, draft: Draft, before: str, **extra: Any) -> None:
    """Emit `draft.status_changed` when the draft's status is no longer `before`: every move of
    the state machine calls this, so watchers and webhooks hear of each one."""
    if draft.status == before:
        return
    events.emit(
        session,
        draft.tenant_id,
        "draft.status_changed",
        resource_id=draft.id,
        payload={**event_payload(draft), "from": before, "to": draft.status, **extra},
    )


def event_payload(draft: Draft) -> dict[str, Any]:
    """What every draft event carries about its draft."""
    return {
        "draft_id": draft.id,
        "title": draft.title,
        "status": draft.status,
        "job_id": draft.job_id,
        "assignee_id": draft.assignee_id,
    }


async def archive(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID, reason: str | None
) -> Draft:
    """Any status but generating (409, as archived is). It leaves the public blog at once."""
    draft = await require(session, tenant_id, draft_id, for_update=True)
    before = draft.status
    draft.status = states.check_move(draft.status, Status.archived).value
    draft.updated_at = utcnow()
    announce_move(session, draft, before, reason=reason)
    return draft


async def unarchive(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID
) -> schemas.Draft:
    """Archived drafts only (409 otherwise); back to review, to be approved again."""
    draft = await require(session, tenant_id, draft_id, for_update=True)
    before = draft.status
    # The state machine takes approved and rejected drafts to reviewing too (by an edit):
    # unarchiving is for archived ones alone.
    if draft.status != Status.archived:
        raise IllegalDraftTransition(
            f"The draft is {draft.status}; only an archived draft can be unarchived."
        )
    draft.status = states.check_move(draft.status, Status.reviewing).value
    draft.approved_at = draft.approved_by = None
    draft.updated_at = utcnow()
    announce_move(session, draft, before)
    return schemas.Draft.model_validate(draft)


def mark_unpublished(session: AsyncSession, draft: Draft) -> None:
    """No target keeps the draft live any more: published -> approved (drafts.unpublish)."""
    before = draft.status
    draft.status = states.check_move(draft.status, Status.approved, unpublishing=True).value
    draft.updated_at = utcnow()
    announce_move(session, draft, before)
