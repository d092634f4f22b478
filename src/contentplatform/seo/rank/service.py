"""The rules of rank tracking. Never commits.

seo.checkRankings holds the check's credits (kind `seo.checkRankings`: one per SERP page of 10
results, keyword and device, so keywords x devices x depth/10), opens a sync run of kind
`rank_check` with one pending position row per tracked keyword, and queues the run's durable
workflow (durable.py) once this commits; the workflow reads the SERPs and commits the credits
of the tasks that succeeded. Reads never call a provider. The same start (start_check) serves
the first check of keywords just added (checkNow) and the scheduled checks (schedule.py).
"""

from __future__ import annotations

import uuid
from collections import Counter, defaultdict
from datetime import date, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.config import Settings
from contentplatform.credits import pricing
from contentplatform.credits import service as credits
from contentplatform.credits.errors import InsufficientCredits
from contentplatform.kit.db import Required, utcnow
from contentplatform.kit.schemas import window_of
from contentplatform.seo import repository as seo_repository
from contentplatform.seo import service as seo
from contentplatform.seo.connections import access as connections
from contentplatform.seo.models import SeoKeywordPosition, SeoSyncRun, SeoTrackedKeyword
from contentplatform.seo.rank import checks, repository, schemas, visibility
from contentplatform.seo.rank import durable as workflows
from contentplatform.seo.rank.errors import (
    NothingToCheck,
    SerpNotFound,
    SerpProviderNotConnected,
    TrackedKeywordNotFound,
)
from contentplatform.seo.sync_runs import schemas as sync_schemas
from contentplatform.seo.sync_runs import service as sync_runs
from contentplatform.tenants import service as tenants

require = Required(repository.get, TrackedKeywordNotFound)

KIND = pricing.RANK_CHECK
# The catalog's default cap of tracked keywords (keyword x market x device) per organization;
# the excess of an add is skipped (`plan_limit`), not refused.
MAX_TRACKED = 500
DEFAULT_LOCATION = 2840  # United States
DEFAULT_LANGUAGE = "en"
HISTORY_DAYS = 90
OVERVIEW_DAYS = 30
# The overview reads a keyword's position as of a day from its checks up to this far back.
LOOKBACK_DAYS = 366


def record(row: SeoTrackedKeyword) -> schemas.TrackedKeyword:
    return schemas.TrackedKeyword(
        id=row.id,
        keyword=row.keyword,
        location_code=row.location_code,
        language_code=row.language_code,
        device=row.device,
        tags=list(row.tags),
        target_url=row.target_url,
        status=row.status,
        search_volume=row.search_volume,
        keyword_difficulty=row.keyword_difficulty,
        cpc=row.cpc,
        intent=row.intent,
        position=row.position,
        url=row.url,
        previous_position=row.previous_position,
        movement=row.movement,
        change_1d=row.change_1d,
        change_7d=row.change_7d,
        change_30d=row.change_30d,
        best_position=row.best_position,
        estimated_traffic=row.estimated_traffic,
        serp_features=list(row.serp_features),
        ai_overview=schemas.AiOverview(
            present=row.ai_overview_present, cited=row.ai_overview_cited
        ),
        competitors=[schemas.CompetitorPosition(**item) for item in row.competitors],
        cannibalization=[schemas.CompetingUrl(**item) for item in row.cannibalization],
        last_checked_at=row.last_checked_at,
        created_at=row.created_at,
    )


# --- tracked keywords -----------------------------------------------------------------------


async def list_keywords(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListTrackedKeywordsInput
) -> schemas.TrackedKeywordPage:
    filters = data.model_dump(
        include={"search", "tag", "status", "device", "location_code", "bucket", "movement"}
    )
    rows, total = await repository.keywords_page(
        session,
        tenant_id,
        filters=filters,
        sort_by=data.sort_by,
        descending=data.sort_order == "desc",
        **window_of(data),
    )
    return schemas.TrackedKeywordPage(
        data=[record(row) for row in rows], total=total, page=data.page, limit=data.limit
    )


async def add_keywords(
    session: AsyncSession,
    settings: Settings,
    tenant_id: uuid.UUID,
    requested_by: str,
    data: schemas.AddTrackedKeywordsInput,
) -> schemas.AddedKeywords:
    # One add at a time per organization: two cannot pass the cap together.
    await tenants.lock_tenant(session, tenant_id)
    profile = await seo.get(session, tenant_id)
    location = data.location_code or profile.location_code or DEFAULT_LOCATION
    language = data.language_code or profile.language or DEFAULT_LANGUAGE
    devices = list(data.devices or profile.devices)
    keywords = list(dict.fromkeys(data.keywords))
    tracked = await repository.markets_of(session, tenant_id, keywords, location, language)
    room = MAX_TRACKED - await repository.count(session, tenant_id)
    created: list[SeoTrackedKeyword] = []
    skipped: list[schemas.SkippedKeyword] = []
    now = utcnow()
    for keyword in keywords:
        for device in devices:
            reason = (
                "duplicate"
                if (keyword, device) in tracked
                else "plan_limit"
                if len(created) >= room
                else None
            )
            if reason is not None:
                skipped.append(
                    schemas.SkippedKeyword(keyword=keyword, device=device, reason=reason)
                )
                continue
            row = SeoTrackedKeyword(
                id=uuid.uuid4(),
                tenant_id=tenant_id,
                keyword=keyword,
                location_code=location,
                language_code=language,
                device=device,
                tags=list(data.tags or []),
                target_url=data.target_url,
                status="active",
                serp_features=[],
                ai_overview_present=False,
                ai_overview_cited=False,
                competitors=[],
                cannibalization=[],
                created_at=now,
                updated_at=now,
            )
            session.add(row)
            created.append(row)
    await session.flush()
    if created:
        await seo.start_rank_clock(session, tenant_id)
    run, reason = await _first_check(session, settings, tenant_id, requested_by, data, created)
    return schemas.AddedKeywords(
        created=[record(row) for row in created],
        skipped=skipped,
        check=None if run is None else sync_runs.record(run),
        check_skipped=reason,
    )


async def _first_check(
    session: AsyncSession,
    settings: Settings,
    tenant_id: uuid.UUID,
    requested_by: str,
    data: schemas.AddTrackedKeywordsInput,
    created: list[SeoTrackedKeyword],
) -> tuple[SeoSyncRun | None, schemas.CheckSkipped | None]:
    """The first check of the keywords just added (checkNow), or why none started. Short
    credits skip it rather than refuse the add: the keywords are tracked all the same, and
    the next scheduled check reads them."""
    if not data.check_now:
        return None, "not_requested"
    if not created:
        return None, "nothing_added"
    found = await connections.serp_provider(session, tenant_id, settings)
    if found is None:
        return None, "no_provider"
    try:
        async with session.begin_nested():
            run, started = await start_check(
                session,
                settings,
                tenant_id,
                created,
                provider=found[0],
                keys=manual_keys(f"added:{uuid.uuid4()}"),
                trigger="manual",
                created_by=requested_by,
            )
    except InsufficientCredits:
        return None, "insufficient_credits"
    return (run, None) if started else (None, "check_running")


async def update_keyword(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.UpdateTrackedKeywordInput
) -> schemas.TrackedKeyword:
    row = await require(session, tenant_id, data.id, for_update=True)
    given = data.model_fields_set
    if data.tags is not None:
        row.tags = list(data.tags)
    if "target_url" in given:
        row.target_url = data.target_url
    if data.status is not None:
        row.status = data.status
    row.updated_at = utcnow()
    await session.flush()
    return record(row)


async def delete_keyword(
    session: AsyncSession, tenant_id: uuid.UUID, keyword_id: uuid.UUID
) -> None:
    await require(session, tenant_id, keyword_id, for_update=True)
    await repository.delete_keyword(session, tenant_id, keyword_id)


async def ranking(session: AsyncSession, tenant_id: uuid.UUID) -> list[SeoTrackedKeyword]:
    """The tracked keywords whose newest check found one of our URLs (`url`, `position`): what
    the page inventory shows on each page."""
    return await repository.ranking(session, tenant_id)


# --- history and SERPs ----------------------------------------------------------------------


async def history(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.RankHistoryInput
) -> schemas.RankHistory:
    row = await require(session, tenant_id, data.id)
    first, last = data.dates(HISTORY_DAYS)
    points = await repository.positions(session, tenant_id, [row.id], first, last)
    competitors: list[schemas.CompetitorSeries] = []
    if data.include_competitors:
        by_id: dict[str, list[schemas.CompetitorPoint]] = defaultdict(list)
        for point in points:
            for item in point.competitors:
                by_id[str(item["competitor_id"])].append(
                    schemas.CompetitorPoint(
                        date=point.check_date,
                        position=item.get("position"),
                        url=item.get("url"),
                        known=bool(item.get("known", True)),
                    )
                )
        for competitor in await seo_repository.competitors(session, tenant_id):
            series = by_id.get(str(competitor.id))
            if series:
                competitors.append(
                    schemas.CompetitorSeries(
                        competitor_id=competitor.id, name=competitor.name, series=series
                    )
                )
    return schemas.RankHistory(
        keyword=record(row),
        series=[
            schemas.HistoryPoint(
                date=point.check_date,
                position=point.position,
                url=point.url,
                serp_features=list(point.serp_features),
                ai_overview_cited=point.ai_overview_cited,
            )
            for point in points
        ],
        competitors=competitors,
    )


def _shown(item: dict[str, Any], depth: int) -> bool:
    """Within the first `depth` results: an organic result by its organic position, any
    other element by its place on the page."""
    rank = item.get("rank_group") if item.get("type") == "organic" else item.get("rank_absolute")
    return rank is None or rank <= depth


async def serp(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.KeywordSerpInput
) -> schemas.SerpSnapshot:
    await require(session, tenant_id, data.id)
    found = await repository.snapshot(session, tenant_id, data.id, data.date)
    if found is None:
        raise SerpNotFound(
            f"No stored SERP for this keyword{f' on {data.date}' if data.date else ''}."
        )
    items = [item for item in found.items if _shown(item, data.depth)]
    ours = [
        {"url": item["url"], "position": item["rank_group"]}
        for item in found.items
        if item.get("type") == "organic" and item.get("owner") == "self" and item.get("url")
    ]
    return schemas.SerpSnapshot(
        keyword_id=found.keyword_id,
        checked_at=found.checked_at,
        location_code=found.location_code,
        language_code=found.language_code,
        device=found.device,
        provider=found.provider,
        depth=found.depth,
        stopped_at_own_domain=found.stopped_at_own_domain,
        item_types=list(found.item_types),
        items=[schemas.SerpItem.model_validate(item) for item in items],
        cannibalization=[schemas.CompetingUrl(**item) for item in ours] if len(ours) > 1 else [],
    )


# --- checkRankings --------------------------------------------------------------------------


async def _rank_block(session: AsyncSession, tenant_id: uuid.UUID) -> dict[str, Any]:
    return seo.blocks_of(await seo_repository.stored_settings(session, tenant_id))["rank"]


async def check(
    session: AsyncSession,
    settings: Settings,
    tenant_id: uuid.UUID,
    requested_by: str,
    data: schemas.CheckRankingsInput,
) -> sync_schemas.SyncRun | schemas.RankCheckPreview:
    keywords = await repository.to_check(session, tenant_id, data.keyword_ids)
    if not keywords:
        raise NothingToCheck("There is no active tracked keyword to check among those asked for.")
    if data.preview:
        pages = int((await _rank_block(session, tenant_id))["depth"]) // 10
        amount = len(keywords) * pages
        balance = await credits.balance(session, tenant_id)
        return schemas.RankCheckPreview(
            preview=True,
            keywords=len({(k.keyword, k.location_code, k.language_code) for k in keywords}),
            devices=len({k.device for k in keywords}),
            tasks=len(keywords),
            pages=pages,
            credits=amount,
            mode="live" if len(keywords) <= settings.rank_live_max_tasks else "task",
            available=balance.available,
            sufficient=balance.available >= amount,
        )
    found = await connections.serp_provider(session, tenant_id, settings)
    if found is None:
        raise SerpProviderNotConnected(
            "No SERP provider is connected: connect dataforseo (seo.connect) first."
        )
    key = data.idempotency_key or str(uuid.uuid4())
    run, _ = await start_check(
        session,
        settings,
        tenant_id,
        keywords,
        provider=found[0],
        keys=manual_keys(key),
        trigger="manual",
        created_by=requested_by,
    )
    return sync_runs.record(run)


def manual_keys(key: str) -> tuple[str, str]:
    """The run key and the credit hold's key of a check asked for under `key`."""
    run_key = f"rank_check:{key}"[: sync_runs.MAX_RUN_KEY]
    return run_key, f"seo.checkRankings:{key}"[: credits.MAX_KEY_LENGTH]


def scheduled_keys(period: str) -> tuple[str, str]:
    """The keys of the scheduled check of `period`: `@` where a manual key has `:`, so no key a
    client sends can name them."""
    return f"rank_check@{period}", f"seo.checkRankings@{period}"


async def start_check(
    session: AsyncSession,
    settings: Settings,
    tenant_id: uuid.UUID,
    keywords: list[SeoTrackedKeyword],
    *,
    provider: str,
    keys: tuple[str, str],
    trigger: str,
    created_by: str | None,
) -> tuple[SeoSyncRun, bool]:
    """A check of `keywords` opened under `keys` (run key, credit key), its credits held (402
    when short) and its workflow queued once this commits: (the run, True). The run already
    under the run key, or the organization's check already running, is answered instead
    (with False): one check at a time per organization, and one hold per key."""
    block = await _rank_block(session, tenant_id)
    depth = int(block["depth"])
    pages = depth // 10
    tasks = len(keywords)
    amount = tasks * pages
    mode = "live" if tasks <= settings.rank_live_max_tasks else "task"
    # One check at a time per organization: the one running is the answer.
    await tenants.lock_tenant(session, tenant_id)
    running = await sync_runs.active_run(session, tenant_id, "rank_check")
    if running is not None:
        return running, False
    run_key, credit_key = keys
    run, created = await sync_runs.open_run(
        session,
        tenant_id,
        kind="rank_check",
        provider=provider,
        run_key=run_key,
        trigger=trigger,
        params={
            "keywords": len({(k.keyword, k.location_code, k.language_code) for k in keywords}),
            "devices": len({k.device for k in keywords}),
            "tasks": tasks,
            "depth": depth,
            "pages": pages,
            "credits": amount,
            "mode": "live" if provider == connections.OFFLINE else mode,
            "stop_at_own_domain": bool(block["stop_at_own_domain"]),
        },
        created_by=created_by,
    )
    if not created:
        return run, False
    ttl = min(
        24 * 3600,
        max(
            settings.credit_reservation_ttl_seconds, int(settings.rank_task_timeout_seconds) + 3600
        ),
    )
    hold = await credits.reserve(
        session,
        tenant_id,
        kind=KIND,
        idempotency_key=credit_key,
        amount=amount,
        ttl_seconds=ttl,
        monthly_grant=settings.monthly_credit_grant,
        creator=credits.Creator(resource_type="seo_sync_run", resource_id=str(run.id)),
    )
    run.params = {**run.params, "reservation_id": str(hold.id)}
    run.credits_reserved = amount
    today = checks.today()
    now = utcnow()
    for keyword in keywords:
        session.add(
            SeoKeywordPosition(
                id=uuid.uuid4(),
                tenant_id=tenant_id,
                keyword_id=keyword.id,
                sync_run_id=run.id,
                status="pending",
                check_date=today,
                serp_features=[],
                ai_overview_present=False,
                ai_overview_cited=False,
                competitors=[],
                cannibalization=[],
                pages=0,
                created_at=now,
                updated_at=now,
            )
        )
    await session.flush()
    await sync_runs.record_progress(session, tenant_id, run.id, done=0, total=tasks)
    await session.refresh(run)
    workflows.enqueue_after_commit(session, tenant_id, run.id)
    return run, True


# --- rankOverview ---------------------------------------------------------------------------


def _as_of(points: list[SeoKeywordPosition], day: date) -> SeoKeywordPosition | None:
    """The newest of `points` (oldest first) checked on or before `day`."""
    found = None
    for point in points:
        if point.check_date > day:
            break
        found = point
    return found


def _movement(before: SeoKeywordPosition | None, now: SeoKeywordPosition | None) -> str:
    if now is None:
        return "unchanged"
    return checks.movement(before.position if before else None, now.position, before is None)


def _distribution(positions: list[int | None]) -> schemas.Distribution:
    def between(low: int, high: int) -> int:
        return sum(1 for p in positions if p is not None and low <= p <= high)

    return schemas.Distribution(
        top3=between(1, 3),
        top4_10=between(4, 10),
        top11_20=between(11, 20),
        top21_100=between(21, 100),
        not_ranking=sum(1 for p in positions if p is None),
    )


async def overview(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.RankOverviewInput
) -> schemas.RankOverview:
    first, last = data.dates(OVERVIEW_DAYS)
    keywords = await repository.in_scope(
        session, tenant_id, tag=data.tag, device=data.device, location_code=data.location_code
    )
    volume = {row.id: row.search_volume for row in keywords}
    points = await repository.positions(
        session, tenant_id, list(volume), first - timedelta(days=LOOKBACK_DAYS), last
    )
    by_keyword: dict[uuid.UUID, list[SeoKeywordPosition]] = defaultdict(list)
    for point in points:
        by_keyword[point.keyword_id].append(point)
    end = {kid: _as_of(found, last) for kid, found in by_keyword.items()}
    start = {kid: _as_of(found, first) for kid, found in by_keyword.items()}
    checked = {kid: point for kid, point in end.items() if point is not None}

    def pairs(
        at: dict[uuid.UUID, SeoKeywordPosition | None],
    ) -> list[tuple[int | None, int | None]]:
        return [(volume[kid], point.position) for kid, point in at.items() if point is not None]

    now_pairs, then_pairs = pairs(end), pairs(start)
    shown = visibility.visibility(now_pairs)
    before = visibility.visibility(then_pairs) if then_pairs else None
    moves = Counter(_movement(start.get(kid), point) for kid, point in checked.items())
    features: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for point in checked.values():
        for kind in point.serp_features:
            features[kind][0] += 1
            if kind == "ai_overview" and point.ai_overview_cited:
                features[kind][1] += 1
    trend_days = sorted({point.check_date for point in points if point.check_date >= first})
    trend = []
    for day in trend_days:
        at = {kid: _as_of(found, day) for kid, found in by_keyword.items()}
        day_pairs = pairs(at)
        trend.append(
            schemas.TrendPoint(
                date=day,
                visibility=visibility.visibility(day_pairs),
                avg_position=visibility.avg_position(position for _, position in day_pairs),
                estimated_traffic=visibility.total_traffic(day_pairs),
            )
        )
    return schemas.RankOverview(
        visibility=shown,
        visibility_change=(
            round(shown - before, 2) if shown is not None and before is not None else None
        ),
        estimated_traffic=visibility.total_traffic(now_pairs),
        avg_position=visibility.avg_position(position for _, position in now_pairs),
        distribution=_distribution([position for _, position in now_pairs]),
        movement=schemas.MovementCounts(
            **{name: moves.get(name, 0) for name in schemas.MovementCounts.model_fields}
        ),
        serp_features=[
            schemas.FeatureCount(type=kind, keywords=counts[0], owned=counts[1])
            for kind, counts in sorted(features.items())
        ],
        ai_overview=schemas.AiOverviewCounts(
            keywords_with=sum(1 for point in checked.values() if point.ai_overview_present),
            cited=sum(1 for point in checked.values() if point.ai_overview_cited),
        ),
        trend=trend,
        competitors=await _competitors(session, tenant_id, checked, volume),
    )


async def _competitors(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    checked: dict[uuid.UUID, SeoKeywordPosition],
    volume: dict[uuid.UUID, int | None],
) -> list[schemas.CompetitorFigures]:
    """Each tracked competitor measured on the same SERPs; a keyword where its position is
    unknown (the check stopped at our domain first) is left out of its figures."""
    seen: dict[str, list[tuple[int | None, int | None]]] = defaultdict(list)
    for kid, point in checked.items():
        for item in point.competitors:
            if item.get("known", True):
                seen[str(item["competitor_id"])].append((volume[kid], item.get("position")))
    answer = []
    for competitor in await seo_repository.competitors(session, tenant_id):
        if not competitor.track_rank:
            continue
        found = seen.get(str(competitor.id), [])
        answer.append(
            schemas.CompetitorFigures(
                competitor_id=competitor.id,
                name=competitor.name,
                visibility=visibility.visibility(found),
                avg_position=visibility.avg_position(position for _, position in found),
                estimated_traffic=visibility.total_traffic(found),
            )
        )
    return answer
