"""The draft's side of publishing (the publishers domain decides): auto-publish's approval or
hold, whether a draft may go, its publication with its slug, and the public blog's reads.
Never commits."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.drafts import repository, service, states
from contentplatform.drafts.html import slugify
from contentplatform.drafts.models import Draft
from contentplatform.drafts.states import Status
from contentplatform.events import service as events
from contentplatform.kit.db import utcnow

AUTO_APPROVER = "system:auto_publish"


def approve_automatically(draft: Draft, note: dict[str, Any]) -> None:
    """Auto-publish approves a draft in review: approved_by says it was the system, and the
    decision with its reason stays on the draft."""
    service.mark_approved(service.session_of(draft), draft, AUTO_APPROVER)
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
    service.announce_move(session, draft, before)
    events.emit(
        session,
        draft.tenant_id,
        "draft.published",
        resource_id=draft.id,
        payload={
            **service.event_payload(draft),
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
