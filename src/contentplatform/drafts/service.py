"""The rules of drafts: review moves, edits with revisions, the SEO score, comments and
bulk actions. Never commits.

Every write of content goes through `_write`: the HTML is sanitized, the SEO score recomputed,
and a revision stored (version + 1) saying who changed what, AI or human.

Every change someone would want to hear about is an event written in the change's own
transaction (events.service.emit): `draft.created` for each new draft (by hand or by the
generation pipeline), `draft.status_changed` for each move of the state machine
(`announce_move`, called by every function that moves a status, and nowhere else moves one),
`draft.published`, `draft.assigned`, `draft.commented` and `comment.mentioned`.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_object_session

from contentplatform.auth.context import Role
from contentplatform.drafts import diff, html, repository, schemas, seo, states
from contentplatform.drafts.errors import (
    AnchorOutOfRange,
    AssigneeNotMember,
    BulkActionNeedsField,
    BulkDeleteNeedsAdmin,
    CommentNotFound,
    CommentThreadFull,
    DraftNotFound,
    DraftVersionNotFound,
    IllegalDraftTransition,
    MentionNotMember,
    ReplyToReply,
    SeoMetaInvalid,
    StaleDraftVersion,
)
from contentplatform.drafts.html import slugify
from contentplatform.drafts.models import Draft, DraftComment, DraftRevision
from contentplatform.drafts.states import Status
from contentplatform.events import service as events
from contentplatform.kit import errors, text
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import FieldError, PlatformError
from contentplatform.kit.schemas import offset_of
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
    session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID
) -> tuple[dict[str, int], float | None]:
    """A job's drafts counted by status, and their mean SEO score (None: none scored)."""
    return await repository.job_figures(session, tenant_id, job_id)


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
    _check_expected_version(draft, data.expected_version)
    changes: dict[str, Any] = {}
    if data.title is not None:
        changes["title"] = data.title
    if data.content is not None:
        changes["content"] = data.content
    if data.excerpt is not None:
        changes["excerpt"] = data.excerpt
    if data.seo_meta is not None:
        changes["seo_meta"] = _merged_seo_meta(draft.seo_meta, data.seo_meta)
    _edit(session, draft, author, changes, summary=None)
    return schemas.Draft.model_validate(draft)


def _check_expected_version(draft: Draft, expected: int | None) -> None:
    if expected is not None and expected != draft.version:
        raise StaleDraftVersion(
            f"The draft is at version {draft.version}; this change was based on version "
            f"{expected}. Reload the draft and make the change again."
        )


def _edit(
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
    _approve(session, draft, approver)
    return schemas.Draft.model_validate(draft)


def _approve(session: AsyncSession, draft: Draft, approver: str) -> None:
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
    _assign(session, draft, await _assignee(session, tenant_id, assignee))


async def _assignee(session: AsyncSession, tenant_id: uuid.UUID, assignee: str) -> str:
    """The identity provider's user id of the member `assignee` names; 400 for anyone else."""
    subject = await tenants.member_subject(session, tenant_id, assignee)
    if subject is None:
        raise AssigneeNotMember(
            f"{assignee!r} is not a member of this organization.",
            errors=[FieldError("assigneeId", "must be a member of this organization")],
        )
    return subject


def _assign(session: AsyncSession, draft: Draft, subject: str) -> None:
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


# --- revisions --------------------------------------------------------------------------------


async def list_versions(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListVersionsInput
) -> schemas.VersionPage:
    await require(session, tenant_id, data.id)
    rows, total = await repository.revisions(
        session, tenant_id, data.id, data.limit, offset_of(data.page, data.limit)
    )
    return schemas.VersionPage(data=rows, total=total)


async def _revision(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID, version: int
) -> DraftRevision:
    found = await repository.revision(session, tenant_id, draft_id, version)
    if found is None:
        raise DraftVersionNotFound(f"Draft {draft_id} has no version {version}.")
    return found


async def get_version(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID, version: int
) -> schemas.Version:
    await require(session, tenant_id, draft_id)
    return schemas.Version.model_validate(await _revision(session, tenant_id, draft_id, version))


async def restore_version(
    session: AsyncSession, tenant_id: uuid.UUID, author: Author, data: schemas.RestoreVersionInput
) -> schemas.Draft:
    """The old revision's content becomes a new revision; the status moves as an edit does."""
    draft = await require(session, tenant_id, data.id, for_update=True)
    _check_expected_version(draft, data.expected_version)
    old = await _revision(session, tenant_id, data.id, data.version)
    changes = {
        "title": old.title,
        "content": old.content,
        "excerpt": old.excerpt,
        "seo_meta": old.seo_meta,
    }
    _edit(session, draft, author, changes, f"Restored version {old.version}", old.provenance)
    if old.provenance:
        draft.provenance = old.provenance
    return schemas.Draft.model_validate(draft)


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
    now = utcnow()
    ids = [uuid.uuid4() for _ in drafts]
    rows: list[dict[str, Any]] = [
        {
            "id": draft_id,
            "title": text.plain_text(draft.title) or UNTITLED,
            "content": "<p></p>",
            "content_text": "",
            "seo_meta": {},
            "status": Status.generating.value,
            "provenance": {},
            "version": 0,
            "run_id": draft.run_id,
            "job_id": draft.job_id,
            "instance_id": draft.instance_id,
            "created_at": now,
            "updated_at": now,
        }
        for draft_id, draft in zip(ids, drafts, strict=True)
    ]
    await repository.add_many(session, tenant_id, rows)
    # One event row each, flushed together with the rest of the transaction.
    for row in rows:
        events.emit(
            session,
            tenant_id,
            "draft.created",
            resource_id=row["id"],
            payload={
                **_payload(row["id"], row["title"], row["status"], row["job_id"], None),
                "origin": "generated",
                "run_id": row["run_id"],
            },
        )
    return ids


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
    announce_move(_session_of(draft), draft, before, run_id=draft.run_id)


def fail_generation(draft: Draft, reason: str) -> None:
    """A failed generation never leaves a draft generating: it is rejected with the reason."""
    before = draft.status
    draft.status = states.check_move(draft.status, Status.rejected, by_pipeline=True).value
    draft.rejection_reason = reason
    draft.updated_at = utcnow()
    announce_move(_session_of(draft), draft, before, reason=reason, run_id=draft.run_id)


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
    announce_move(_session_of(draft), draft, before, run_id=run_id)


def _session_of(draft: Draft) -> AsyncSession:
    """The session `draft` was read in, for the moves whose callers pass none: their event is
    written in the same transaction as the move."""
    session = async_object_session(draft)
    if session is None:
        raise RuntimeError("a draft moves only within the session that read it")
    return session


# --- publishing (the publishers domain decides; these keep the draft's side) -----------------

AUTO_APPROVER = "system:auto_publish"


def approve_automatically(draft: Draft, note: dict[str, Any]) -> None:
    """Auto-publish approves a draft in review: approved_by says it was the system, and the
    decision with its reason stays on the draft."""
    _approve(_session_of(draft), draft, AUTO_APPROVER)
    draft.auto_publish = note


def hold_for_review(draft: Draft, note: dict[str, Any]) -> None:
    """Auto-publish declined: the draft stays in review with the reason on it (no move, so no
    event: the decision is on the draft)."""
    draft.auto_publish = note
    draft.updated_at = utcnow()


def check_publishable(draft: Draft) -> None:
    """Approved drafts publish, published ones republish; anything else is 409."""
    if draft.status != Status.published:
        states.check_move(draft.status, Status.published)


async def mark_published(
    session: AsyncSession, draft: Draft, url: str | None, published_at: datetime | None
) -> None:
    """A target took the draft live. The first publication fixes its URL, slug and date.
    Each one is announced (`draft.published`, with the URL this target gave)."""
    before = draft.status
    if draft.status != Status.published:
        draft.status = states.check_move(draft.status, Status.published).value
    draft.published_at = draft.published_at or published_at or utcnow()
    draft.published_url = draft.published_url or url
    if draft.slug is None:
        draft.slug = await _free_slug(session, draft)
    draft.updated_at = utcnow()
    announce_move(session, draft, before)
    events.emit(
        session,
        draft.tenant_id,
        "draft.published",
        resource_id=draft.id,
        payload={
            **event_payload(draft),
            "url": url,
            "published_url": draft.published_url,
            "published_at": draft.published_at,
            "republished": before == Status.published,
        },
    )


def slug_of(draft: Draft) -> str:
    """The draft's slug: its fixed one, else its SEO slug, else one made from its title."""
    if draft.slug:
        return draft.slug
    wanted = draft.seo_meta.get("slug")
    return slugify(wanted if isinstance(wanted, str) and wanted.strip() else draft.title)


async def _free_slug(session: AsyncSession, draft: Draft) -> str:
    """slug_of(draft), with -2, -3, ... when another published draft of the tenant has it."""
    base = slug_of(draft)[:190]
    taken = await repository.slugs_like(session, draft.tenant_id, base, draft.id)
    if base not in taken:
        return base
    number = 2
    while f"{base}-{number}" in taken:
        number += 1
    return f"{base}-{number}"


async def published_page(
    session: AsyncSession, tenant_id: uuid.UUID, limit: int, offset: int
) -> tuple[list[Draft], int]:
    """Published drafts of a tenant, newest publication first (the public blog)."""
    return await repository.published(session, tenant_id, limit, offset)


async def published_by_slug(session: AsyncSession, tenant_id: uuid.UUID, slug: str) -> Draft | None:
    return await repository.published_by_slug(session, tenant_id, slug)


# --- bulk actions (drafts.bulk) -----------------------------------------------------------------


async def bulk(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    role: Role,
    actor: str,
    data: schemas.BulkDraftsInput,
) -> schemas.DraftBulkOutcome:
    """One action on each draft, each through the state machine on its own: a draft that cannot
    take it (missing or another tenant's: NOT_FOUND; a status that forbids it: CONFLICT) is
    reported and leaves the others going. `actor` approves; `delete` needs an admin."""
    if data.action == "delete" and not role.includes(Role.admin):
        raise BulkDeleteNeedsAdmin(f"Deleting drafts needs the admin role; you are {role.value}.")
    needed = {"reject": ("reason", data.reason), "assign": ("assigneeId", data.assignee_id)}
    if data.action in needed and needed[data.action][1] is None:
        field = needed[data.action][0]
        raise BulkActionNeedsField(
            f"To {data.action} drafts, give {field}.",
            errors=[FieldError(field, f"is required to {data.action}")],
        )
    # The tenant before any draft, as every transaction that locks both does: two bulk actions
    # over the same drafts in other orders wait for each other instead of deadlocking.
    await tenants.lock_tenant(session, tenant_id)
    assignee = None
    if data.action == "assign":
        assert data.assignee_id is not None  # required above
        assignee = await _assignee(session, tenant_id, data.assignee_id)
    results = []
    for draft_id in data.draft_ids:
        try:
            await _act(session, tenant_id, draft_id, data, actor, assignee)
        except PlatformError as error:
            failed = schemas.DraftBulkError(code=error.code, detail=error.detail)
            results.append(schemas.DraftBulkResult(id=draft_id, ok=False, error=failed))
        else:
            results.append(schemas.DraftBulkResult(id=draft_id, ok=True, error=None))
    affected = sum(result.ok for result in results)
    return schemas.DraftBulkOutcome(
        success=affected == len(results), affected=affected, results=results
    )


async def _act(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    draft_id: uuid.UUID,
    data: schemas.BulkDraftsInput,
    actor: str,
    assignee: str | None,
) -> None:
    """One draft's part of a bulk action. Each refusal comes before any change to the draft."""
    if data.action == "approve":
        await approve(session, tenant_id, draft_id, actor)
    elif data.action == "reject":
        assert data.reason is not None  # required by bulk()
        await reject(session, tenant_id, draft_id, data.reason)
    elif data.action == "archive":
        await archive(session, tenant_id, draft_id, data.reason)
    elif data.action == "assign":
        assert assignee is not None
        _assign(session, await require(session, tenant_id, draft_id, for_update=True), assignee)
    else:
        await delete(session, tenant_id, draft_id)


# --- comparing revisions (drafts.compareVersions) ------------------------------------------------


async def compare_versions(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.CompareVersionsInput
) -> schemas.VersionDiff:
    """What changed from revision `from` to revision `to` (default: the current one), word by
    word, and how much of the latest AI revision at or before `to` it keeps."""
    draft = await require(session, tenant_id, data.id)
    to = data.to if data.to is not None else draft.version
    older = await _revision(session, tenant_id, draft.id, data.from_)
    newer = await _revision(session, tenant_id, draft.id, to)
    written = await repository.latest_ai_revision(session, tenant_id, draft.id, to)
    # Pure CPU work over up to two contents of a million characters: off the event loop.
    content, retained = await asyncio.to_thread(
        _compare_content, older.content, newer.content, written.content if written else None
    )
    counted = diff.stats(content)
    return schemas.VersionDiff.model_validate(
        {
            "from": older.version,
            "to": newer.version,
            "title_diff": _text_changes(older.title, newer.title),
            "excerpt_diff": _text_changes(older.excerpt or "", newer.excerpt or ""),
            "seo_meta_changes": events.changes_between(
                _without_score(older.seo_meta), _without_score(newer.seo_meta)
            ),
            "content_diff": [{"op": c.op, "html": c.text} for c in content],
            "stats": {
                "words_added": counted.words_added,
                "words_removed": counted.words_removed,
                "ai_words_retained_pct": retained,
            },
        }
    )


def _compare_content(
    older: str, newer: str, written: str | None
) -> tuple[list[diff.Change], float | None]:
    retained = diff.retained_pct(written, newer) if written is not None else None
    return diff.compare(older, newer), retained


def _text_changes(older: str, newer: str) -> list[dict[str, str]]:
    return [{"op": c.op, "text": c.text} for c in diff.compare(older, newer, html=False)]


def _without_score(seo_meta: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in seo_meta.items() if key != SCORE_KEY}


# --- comments (drafts.listComments, drafts.addComment) -------------------------------------------

# `@` and a user id (the identity provider's, e.g. `@user_2abc`, or ours), not inside a word
# (`ann@example.com` mentions no one); a trailing `.`, `:`, `|` or `-` ends the sentence.
MENTION = re.compile(r"(?<![\w@])@([A-Za-z0-9](?:[A-Za-z0-9_.:|-]*[A-Za-z0-9_])?)")
# The most replies one thread holds: a page of threads stays bounded.
MAX_REPLIES = 100
# The most of a comment's body its events carry.
EXCERPT = 200


async def add_comment(
    session: AsyncSession, tenant_id: uuid.UUID, author: str, data: schemas.AddCommentInput
) -> schemas.Comment:
    """A comment on the draft, or a reply to one of its threads (which `resolve` resolves, and
    any other reply reopens). Comments never move the draft."""
    draft = await require(session, tenant_id, data.id)
    parent = await _thread(session, tenant_id, draft, data.parent_id)
    mentions = await _mentions(session, tenant_id, data.body)
    anchor = None
    if data.anchor is not None:
        if data.anchor.end > len(draft.content_text):
            raise AnchorOutOfRange(
                f"The anchor ends at {data.anchor.end}, past the end of the draft's text "
                f"({len(draft.content_text)} characters at version {draft.version}).",
                errors=[FieldError("anchor.end", "must not be past the end of the draft's text")],
            )
        anchor = {**data.anchor.model_dump(), "version": draft.version}
    now = utcnow()
    comment = DraftComment(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        draft_id=draft.id,
        parent_id=parent.id if parent is not None else None,
        author_id=author,
        body=data.body,
        anchor=anchor,
        mentions=mentions,
        created_at=now,
        updated_at=now,
    )
    session.add(comment)
    if parent is not None:
        parent.resolved_at = now if data.resolve else None
        parent.resolved_by = author if data.resolve else None
        parent.updated_at = now
    said = {
        **event_payload(draft),
        "comment_id": comment.id,
        "parent_id": comment.parent_id,
        "excerpt": _excerpt(comment.body),
    }
    events.emit(
        session,
        tenant_id,
        "draft.commented",
        resource_id=draft.id,
        payload={**said, "resolved_thread": data.resolve},
    )
    if mentions:
        events.emit(
            session,
            tenant_id,
            "comment.mentioned",
            resource_id=draft.id,
            payload={**said, "mentions": mentions},
        )
    await session.flush()
    return schemas.Comment.model_validate(comment)


async def _thread(
    session: AsyncSession, tenant_id: uuid.UUID, draft: Draft, parent_id: uuid.UUID | None
) -> DraftComment | None:
    """The thread a reply goes to, locked (a reply may resolve it); None for a new thread."""
    if parent_id is None:
        return None
    parent = await repository.comment(session, tenant_id, parent_id, for_update=True)
    if parent is None or parent.draft_id != draft.id:
        raise CommentNotFound(parent_id)
    if parent.parent_id is not None:
        raise ReplyToReply(
            "That comment is a reply; replies are one level deep: reply to its thread "
            f"({parent.parent_id}).",
            errors=[FieldError("parentId", "must be the first comment of a thread")],
        )
    if await repository.reply_count(session, tenant_id, parent.id) >= MAX_REPLIES:
        raise CommentThreadFull(
            f"The thread has {MAX_REPLIES} replies, the most a thread holds; start a new comment."
        )
    return parent


async def _mentions(session: AsyncSession, tenant_id: uuid.UUID, body: str) -> list[str]:
    """The members the body @mentions, by the identity provider's user id, in order; 400 naming
    each mention that is not an active member."""
    named = list(dict.fromkeys(MENTION.findall(body)))
    if len(named) > schemas.MAX_MENTIONS:
        raise MentionNotMember(
            f"A comment mentions at most {schemas.MAX_MENTIONS} people; this one mentions "
            f"{len(named)}.",
            errors=[FieldError("body", f"must mention at most {schemas.MAX_MENTIONS} people")],
        )
    found: list[str] = []
    strangers: list[str] = []
    for ref in named:
        subject = await tenants.member_subject(session, tenant_id, ref)
        if subject is None:
            strangers.append(f"@{ref}")
        elif subject not in found:
            found.append(subject)
    if strangers:
        listed = ", ".join(strangers)
        raise MentionNotMember(
            f"Not members of this organization: {listed}.",
            errors=[FieldError("body", f"mentions people who are not members: {listed}")],
        )
    return found


def _excerpt(body: str) -> str:
    return body if len(body) <= EXCERPT else body[: EXCERPT - 1].rstrip() + "…"


async def list_comments(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListCommentsInput
) -> schemas.CommentPage:
    """A page of the draft's threads, oldest first, each first comment followed by its replies
    (oldest first); resolved threads only with `include_resolved`. `total` counts threads."""
    await require(session, tenant_id, data.id)
    threads, total = await repository.threads(
        session,
        tenant_id,
        data.id,
        include_resolved=data.include_resolved,
        limit=data.limit,
        offset=offset_of(data.page, data.limit),
    )
    replies: defaultdict[uuid.UUID, list[DraftComment]] = defaultdict(list)
    for reply in await repository.replies(session, tenant_id, [t.id for t in threads]):
        assert reply.parent_id is not None
        replies[reply.parent_id].append(reply)
    ordered = [comment for thread in threads for comment in (thread, *replies[thread.id])]
    return schemas.CommentPage.model_validate({"data": ordered, "total": total})


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
    return _payload(draft.id, draft.title, draft.status, draft.job_id, draft.assignee_id)


def _payload(
    draft_id: uuid.UUID,
    title: str,
    status: str,
    job_id: uuid.UUID | None,
    assignee_id: str | None,
) -> dict[str, Any]:
    """event_payload's fields, for drafts inserted without an object (start_generating_many)."""
    return {
        "draft_id": draft_id,
        "title": title,
        "status": status,
        "job_id": job_id,
        "assignee_id": assignee_id,
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
