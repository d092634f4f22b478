"""The control center: one read over the SEO parts' own stored data. Never calls a provider,
never commits.

Cached 60 s per tenant under a key that holds when the tenant's newest sync run and audit
ended and how many runs are in flight (one small indexed read a request), so a run or audit
that ends shows at once, in every process, with no invalidation to deliver."""

from __future__ import annotations

import uuid
from datetime import date, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core.runtime import Runtime
from contentplatform.kit.db import utcnow
from contentplatform.seo.actions import repository as actions
from contentplatform.seo.ai_visibility import reports as ai_visibility
from contentplatform.seo.connections import service as connections
from contentplatform.seo.geo import service as geo
from contentplatform.seo.geo.errors import NoCompleteScan
from contentplatform.seo.geo.schemas import ReadinessInput
from contentplatform.seo.overview import repository, schemas
from contentplatform.seo.rank import repository as rank_repository
from contentplatform.seo.rank import service as rank
from contentplatform.seo.rank.schemas import RankOverviewInput
from contentplatform.seo.search_console import repository as search_console_repository
from contentplatform.seo.search_console import service as search_console
from contentplatform.seo.search_console.schemas import QueryPerformanceInput
from contentplatform.seo.sync_runs import service as sync_runs

CACHE_SECONDS = 60.0


async def overview(
    session: AsyncSession, runtime: Runtime, tenant_id: uuid.UUID, data: schemas.OverviewInput
) -> schemas.Overview:
    synced, audited, active = await repository.last_endings(session, tenant_id)
    key = f"{data.period}:{synced}:{audited}:{active}:{utcnow().date()}"

    async def produce() -> str:
        return (await _overview(session, tenant_id, data)).model_dump_json()

    text = await runtime.cache.get_or_set(f"seo-overview:{tenant_id}", key, CACHE_SECONDS, produce)
    return schemas.Overview.model_validate_json(text)


async def _overview(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.OverviewInput
) -> schemas.Overview:
    prop = await search_console_repository.selected_property(session, tenant_id)
    # The window ends on the newest day Search Console data is stored for (it lags two or
    # three days), so a period never compares a partial week with a full one.
    end = (prop.fresh_through if prop is not None else None) or utcnow().date()
    start = end - timedelta(days=schemas.DAYS[data.period] - 1)
    listed = await connections.list_connections(session, tenant_id)
    return schemas.Overview(
        period=data.period,
        range=schemas.OverviewRange(start=start, end=end),
        search=(
            await _search(session, tenant_id, start, end)
            if prop is not None and prop.last_synced_at is not None
            else None
        ),
        audit=await _audit(session, tenant_id),
        actions=await _actions(session, tenant_id),
        rank=await _rank(session, tenant_id, schemas.DAYS[data.period]),
        ai_visibility=await _ai_visibility(session, tenant_id, schemas.DAYS[data.period]),
        geo=await _geo(session, tenant_id),
        connections=[
            schemas.OverviewConnection(
                provider=row.provider,
                status=row.status,
                last_sync_at=row.last_sync_at,
                last_error=row.last_error,
            )
            for row in listed.data
        ],
        running=[sync_runs.record(run) for run in await repository.running(session, tenant_id)],
    )


async def _search(
    session: AsyncSession, tenant_id: uuid.UUID, start: date, end: date
) -> schemas.OverviewSearch:
    report = await search_console.query_performance(
        session,
        tenant_id,
        QueryPerformanceInput(start_date=start, end_date=end, compare="previous_period"),
    )
    before = report.previous_totals or report.totals.model_copy(
        update={"clicks": 0, "impressions": 0, "ctr": 0.0, "position": None}
    )
    return schemas.OverviewSearch(
        **report.totals.model_dump(),
        change=search_console.change(report.totals, before),
        last_synced_at=report.last_synced_at,
    )


async def _audit(session: AsyncSession, tenant_id: uuid.UUID) -> schemas.OverviewAudit | None:
    audit = await actions.latest_audit(session, tenant_id)
    if audit is None:
        return None
    return schemas.OverviewAudit(
        audit_id=audit.id,
        health_score=audit.health_score,
        errors=audit.issue_counts.get("error", 0),
        warnings=audit.issue_counts.get("warning", 0),
        notices=audit.issue_counts.get("notice", 0),
        new_issues=audit.new_issue_count,
        finished_at=audit.finished_at,
    )


async def _actions(session: AsyncSession, tenant_id: uuid.UUID) -> schemas.OverviewActions:
    counts = await actions.active_counts(session, tenant_id)
    return schemas.OverviewActions(
        open=sum(n for (status, _), n in counts.items() if status == "open"),
        in_progress=sum(n for (status, _), n in counts.items() if status == "in_progress"),
        by_priority=schemas.OverviewByPriority(
            **{
                name: sum(n for (_, priority), n in counts.items() if priority == name)
                for name in schemas.OverviewByPriority.model_fields
            }
        ),
    )


async def _ai_visibility(
    session: AsyncSession, tenant_id: uuid.UUID, days: int
) -> schemas.OverviewAiVisibility | None:
    # Answers are read up to today, as rank checks are.
    today = utcnow().date()
    found = await ai_visibility.headline(
        session, tenant_id, today - timedelta(days=days - 1), today
    )
    return schemas.OverviewAiVisibility(**found) if found is not None else None


async def _rank(
    session: AsyncSession, tenant_id: uuid.UUID, days: int
) -> schemas.OverviewRank | None:
    tracked = await rank_repository.in_scope(
        session, tenant_id, tag=None, device=None, location_code=None
    )
    if not tracked:
        return None
    # Checks are read up to today: unlike Search Console's, their data does not lag.
    today = utcnow().date()
    shown = await rank.overview(
        session,
        tenant_id,
        RankOverviewInput(start_date=today - timedelta(days=days - 1), end_date=today),
    )
    return schemas.OverviewRank(
        tracked=len(tracked),
        visibility=shown.visibility,
        visibility_change=shown.visibility_change,
        avg_position=shown.avg_position,
        top3=shown.distribution.top3,
        top10=shown.distribution.top3 + shown.distribution.top4_10,
    )


async def _geo(session: AsyncSession, tenant_id: uuid.UUID) -> schemas.OverviewGeo | None:
    try:
        readiness = await geo.readiness(session, tenant_id, ReadinessInput())
    except NoCompleteScan:
        return None
    return schemas.OverviewGeo(readiness_score=readiness.score, snapshot_id=readiness.snapshot_id)
