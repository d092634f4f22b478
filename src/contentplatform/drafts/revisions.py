"""Revisions of a draft: listing and reading them, restoring one (as a new revision, by
the edit rules in service.py), and comparing two (drafts.compareVersions). Never commits."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.drafts import diff, repository, schemas, service
from contentplatform.drafts.errors import DraftVersionNotFound
from contentplatform.drafts.models import DraftRevision
from contentplatform.events import service as events
from contentplatform.kit.schemas import offset_of


async def list_versions(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListVersionsInput
) -> schemas.VersionPage:
    await service.require(session, tenant_id, data.id)
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
    await service.require(session, tenant_id, draft_id)
    return schemas.Version.model_validate(await _revision(session, tenant_id, draft_id, version))


async def restore_version(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    author: service.Author,
    data: schemas.RestoreVersionInput,
) -> schemas.Draft:
    """The old revision's content becomes a new revision; the status moves as an edit does."""
    draft = await service.require(session, tenant_id, data.id, for_update=True)
    service.check_expected_version(draft, data.expected_version)
    old = await _revision(session, tenant_id, data.id, data.version)
    changes = {
        "title": old.title,
        "content": old.content,
        "excerpt": old.excerpt,
        "seo_meta": old.seo_meta,
    }
    service.edit(session, draft, author, changes, f"Restored version {old.version}", old.provenance)
    if old.provenance:
        draft.provenance = old.provenance
    return schemas.Draft.model_validate(draft)


async def compare_versions(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.CompareVersionsInput
) -> schemas.VersionDiff:
    """What changed from revision `from` to revision `to` (default: the current one), word by
    word, and how much of the latest AI revision at or before `to` it keeps."""
    draft = await service.require(session, tenant_id, data.id)
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
    return {key: value for key, value in seo_meta.items() if key != service.SCORE_KEY}
