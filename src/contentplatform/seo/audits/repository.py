"""Every query of the audits, the tenant first (but for the reconciler's, which looks across
tenants for audits still to finish)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import Owned, cross_tenant, page_of
from contentplatform.seo.audits.rules import Page
from contentplatform.seo.models import (
    SeoAuditCheckSetting,
    SeoAuditFinding,
    SeoAuditIssue,
    SeoAuditRun,
)
from contentplatform.website_scan.models import CrawlPage

get_audit = Owned(SeoAuditRun)
_BATCH = 500


# --- check settings ---------------------------------------------------------------------------


async def overrides(session: AsyncSession, tenant_id: uuid.UUID) -> list[SeoAuditCheckSetting]:
    statement = select(SeoAuditCheckSetting).where(SeoAuditCheckSetting.tenant_id == tenant_id)
    return list((await session.execute(statement)).scalars())


async def override(
    session: AsyncSession, tenant_id: uuid.UUID, check_id: str
) -> SeoAuditCheckSetting | None:
    statement = select(SeoAuditCheckSetting).where(
        SeoAuditCheckSetting.tenant_id == tenant_id, SeoAuditCheckSetting.check_id == check_id
    )
    return (await session.execute(statement)).scalar_one_or_none()


# --- audits -----------------------------------------------------------------------------------


async def audits_page(
    session: AsyncSession, tenant_id: uuid.UUID, *, status: str | None, limit: int, offset: int
) -> tuple[list[SeoAuditRun], int]:
    statement = select(SeoAuditRun).where(SeoAuditRun.tenant_id == tenant_id)
    if status is not None:
        statement = statement.where(SeoAuditRun.status == status)
    return await page_of(
        session,
        statement,
        SeoAuditRun.created_at.desc(),
        SeoAuditRun.id,
        limit=limit,
        offset=offset,
    )


async def existing(
    session: AsyncSession, tenant_id: uuid.UUID, snapshot_id: uuid.UUID, checks_version: str
) -> SeoAuditRun | None:
    """The newest audit of the snapshot with these checks that did not fail."""
    statement = (
        select(SeoAuditRun)
        .where(
            SeoAuditRun.tenant_id == tenant_id,
            SeoAuditRun.snapshot_id == snapshot_id,
            SeoAuditRun.checks_version == checks_version,
            SeoAuditRun.status != "failed",
        )
        .order_by(SeoAuditRun.created_at.desc())
        .limit(1)
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def previous_completed(
    session: AsyncSession, tenant_id: uuid.UUID, config_id: uuid.UUID, before: SeoAuditRun
) -> SeoAuditRun | None:
    """The site's newest completed audit other than `before`, finished before it started."""
    statement = (
        select(SeoAuditRun)
        .where(
            SeoAuditRun.tenant_id == tenant_id,
            SeoAuditRun.config_id == config_id,
            SeoAuditRun.status == "completed",
            SeoAuditRun.id != before.id,
        )
        .order_by(SeoAuditRun.finished_at.desc())
        .limit(1)
    )
    return (await session.execute(statement)).scalar_one_or_none()


@cross_tenant("the reconciler's sweep of every tenant's audits still to finish")
async def unfinished(session: AsyncSession) -> list[tuple[uuid.UUID, uuid.UUID, datetime]]:
    """(tenant, audit, created at) of every queued or running audit."""
    statement = select(SeoAuditRun.tenant_id, SeoAuditRun.id, SeoAuditRun.created_at).where(
        SeoAuditRun.status.in_(("queued", "running"))
    )
    return [tuple(row) for row in (await session.execute(statement)).all()]  # type: ignore[misc]


# --- what an audit reads of the snapshot ------------------------------------------------------

_PAGE_COLUMNS = (
    CrawlPage.id,
    CrawlPage.url,
    CrawlPage.final_url,
    CrawlPage.status_code,
    CrawlPage.error,
    CrawlPage.redirect_chain,
    CrawlPage.content_type,
    CrawlPage.title,
    CrawlPage.meta_description,
    CrawlPage.canonical_url,
    CrawlPage.noindex,
    CrawlPage.robots_meta,
    CrawlPage.x_robots_tag,
    CrawlPage.headings,
    CrawlPage.hreflang,
    CrawlPage.json_ld,
    CrawlPage.links,
    CrawlPage.word_count,
    CrawlPage.content_hash,
    CrawlPage.ttfb_ms,
    CrawlPage.audit,
    CrawlPage.size_bytes,
    CrawlPage.language,
)


async def snapshot_pages(
    session: AsyncSession, tenant_id: uuid.UUID, snapshot_id: uuid.UUID
) -> AsyncIterator[Page]:
    """The snapshot's pages as an audit reads them (never their content), _BATCH at a time."""
    statement = select(*_PAGE_COLUMNS).where(
        CrawlPage.tenant_id == tenant_id, CrawlPage.snapshot_id == snapshot_id
    )
    result = await session.stream(statement.execution_options(yield_per=_BATCH))
    async for row in result:
        yield Page(*row)


# --- findings and issues ----------------------------------------------------------------------


async def clear_results(session: AsyncSession, tenant_id: uuid.UUID, audit_id: uuid.UUID) -> None:
    """What an interrupted attempt stored of the audit: a resumed one starts over."""
    for model in (SeoAuditFinding, SeoAuditIssue):
        await session.execute(
            delete(model).where(model.tenant_id == tenant_id, model.audit_id == audit_id)
        )


async def add_rows(
    session: AsyncSession, tenant_id: uuid.UUID, model: Any, rows: list[dict[str, Any]]
) -> None:
    """Insert the tenant's rows of `model` (findings or issues), _BATCH at a time."""
    assert all(row["tenant_id"] == tenant_id for row in rows)
    for start in range(0, len(rows), _BATCH):
        await session.execute(insert(model), rows[start : start + _BATCH])


async def finding_keys(
    session: AsyncSession, tenant_id: uuid.UUID, audit_id: uuid.UUID
) -> dict[str, set[str]]:
    """The URL hashes each check found in the audit (its fixed rows aside)."""
    statement = select(SeoAuditFinding.check_id, SeoAuditFinding.url_hash).where(
        SeoAuditFinding.tenant_id == tenant_id,
        SeoAuditFinding.audit_id == audit_id,
        SeoAuditFinding.change != "fixed",
    )
    found: dict[str, set[str]] = {}
    for check_id, key in (await session.execute(statement)).tuples():
        found.setdefault(check_id, set()).add(key)
    return found


async def findings_of(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    audit_id: uuid.UUID,
    wanted: dict[str, set[str]],
) -> list[SeoAuditFinding]:
    """The audit's live findings of these (check, URL hash) pairs."""
    found: list[SeoAuditFinding] = []
    for check_id, keys in wanted.items():
        ordered = sorted(keys)
        for start in range(0, len(ordered), _BATCH):
            statement = select(SeoAuditFinding).where(
                SeoAuditFinding.tenant_id == tenant_id,
                SeoAuditFinding.audit_id == audit_id,
                SeoAuditFinding.check_id == check_id,
                SeoAuditFinding.change != "fixed",
                SeoAuditFinding.url_hash.in_(ordered[start : start + _BATCH]),
            )
            found += list((await session.execute(statement)).scalars())
    return found


async def issues_page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    audit_id: uuid.UUID,
    *,
    severity: str | None,
    category: str | None,
    change: str | None,
    check_ids: Sequence[str] | None,
    limit: int,
    offset: int,
) -> tuple[list[SeoAuditIssue], int]:
    """The audit's issues (checks failing now, or fixed since the previous audit), by severity
    then affected URLs (most first). `change`: new, persisting, fixed, or failing (either of
    the first two)."""
    statement = select(SeoAuditIssue).where(
        SeoAuditIssue.tenant_id == tenant_id,
        SeoAuditIssue.audit_id == audit_id,
        SeoAuditIssue.change.is_not(None),
    )
    if severity is not None:
        statement = statement.where(SeoAuditIssue.severity == severity)
    if category is not None:
        statement = statement.where(SeoAuditIssue.category == category)
    if change == "failing":  # new or persisting
        statement = statement.where(SeoAuditIssue.change != "fixed")
    elif change is not None:
        statement = statement.where(SeoAuditIssue.change == change)
    if check_ids is not None:
        statement = statement.where(SeoAuditIssue.check_id.in_(list(check_ids)))
    return await page_of(
        session,
        statement,
        SeoAuditIssue.severity_rank,
        SeoAuditIssue.affected_urls.desc(),
        SeoAuditIssue.previous_affected_urls.desc(),
        SeoAuditIssue.check_id,
        limit=limit,
        offset=offset,
    )


async def urls_page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    audit_id: uuid.UUID,
    check_id: str,
    *,
    change: str | None,
    search: str | None,
    limit: int,
    offset: int,
) -> tuple[list[SeoAuditFinding], int]:
    statement = select(SeoAuditFinding).where(
        SeoAuditFinding.tenant_id == tenant_id,
        SeoAuditFinding.audit_id == audit_id,
        SeoAuditFinding.check_id == check_id,
    )
    if change is not None:
        statement = statement.where(SeoAuditFinding.change == change)
    if search:
        statement = statement.where(
            func.lower(SeoAuditFinding.url).contains(search.lower(), autoescape=True)
        )
    return await page_of(
        session, statement, SeoAuditFinding.url, SeoAuditFinding.id, limit=limit, offset=offset
    )
