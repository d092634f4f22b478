"""Content analytics' reads: what our published drafts earned, from the daily page rows the
sources stored (sums in the database, per day or group), beside the platform's own figures
(drafts published, their SEO scores).

Which source a figure comes from: views, visitors and sessions from the traffic sources, clicks,
impressions, ctr and avg_position from Search Console. Two providers measuring the same site
would count each visit twice, so each figure is read from one provider, the first of PRIORITY
that reports it and is usable (connected or disconnected with its history, synced at least
once, not in error): every usable source of that provider is summed (two Plausible sites add
up). With `source`, that source alone. A figure no usable source reports is null, never 0: a
source in error or not yet synced gives nulls. `data_through` is the earliest last complete
day of the sources read, and a bucket past it is null.

Only our drafts' pages count (a row tied to a draft); the pages that are not ours are stored
apart and never reach these figures."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.analytics import service as analytics
from contentplatform.analytics.content import providers, schemas
from contentplatform.analytics.content import repository as repo
from contentplatform.analytics.content.errors import SourceNotFound
from contentplatform.analytics.models import AnalyticsSource
from contentplatform.analytics.schemas import Group
from contentplatform.credits import service as credits
from contentplatform.drafts import service as drafts
from contentplatform.jobs import service as jobs
from contentplatform.kit import series
from contentplatform.kit.schemas import offset_of
from contentplatform.publishers import service as publishers
from contentplatform.seo.pages import inventory
from contentplatform.seo.search_console import service as search_console
from contentplatform.workflows import service as workflows

EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
PRIORITY = ("ga4", "plausible", "umami", "search_console")
TRAFFIC = ("views", "visitors", "sessions")
SEARCH = ("clicks", "impressions", "ctr", "avg_position")
# The index of each figure in repository.FIGURES.
INDEX = {name: index for index, name in enumerate(repo.FIGURES)}
MANY = 100_000
SCORE_RANGES = (("0-49", 0, 49), ("50-69", 50, 69), ("70-84", 70, 84), ("85-100", 85, 100))

Sums = list[float]


@dataclass
class Selection:
    """The sources a read may use, our drafts it is about (None: all of ours), and for each
    provider figure the sources it is read from (None: no usable source reports it)."""

    sources: list[AnalyticsSource]
    draft_ids: list[uuid.UUID] | None
    chosen: dict[str, list[uuid.UUID] | None]
    # With publisherConnectionId: only the rows of the URLs published on that target.
    urls: list[str] | None = None

    @property
    def used(self) -> list[uuid.UUID]:
        return sorted({id for ids in self.chosen.values() if ids for id in ids})

    def data_through(self) -> date | None:
        days = [s.data_through for s in self.sources if s.id in self.used and s.data_through]
        return min(days) if days else None


def usable(row: AnalyticsSource) -> bool:
    return row.status != "error" and row.data_through is not None


def _reports(provider: str, figure: str) -> bool:
    metrics = providers.METRICS.get(provider, [])
    return figure in metrics or (figure == "sessions" and provider == "ga4")


def _current(sources: Sequence[AnalyticsSource]) -> list[AnalyticsSource]:
    """One source per provider and property: the connected one, else the latest disconnected
    one (a property connected again would otherwise count the days both hold twice; the old
    source's history still reads with `source=<its id>`). `sources` are oldest first."""
    kept: dict[tuple[str, str], AnalyticsSource] = {}
    for row in sources:
        key = (row.provider, row.property)
        held = kept.get(key)
        if row.status != "disconnected" or held is None or held.status == "disconnected":
            kept[key] = row
    return list(kept.values())


def choose(sources: Sequence[AnalyticsSource], figure: str) -> list[uuid.UUID] | None:
    candidates = [s for s in _current(sources) if usable(s) and _reports(s.provider, figure)]
    if not candidates:
        return None
    best = min(candidates, key=lambda s: PRIORITY.index(s.provider)).provider
    return [s.id for s in candidates if s.provider == best]


async def select_sources(session: AsyncSession, tenant_id: uuid.UUID, data: Any) -> Selection:
    """The read's sources (`source` alone, or all) and drafts (job, workflow, publisher
    connection filters); another organization's filter 404s."""
    rows = await repo.sources(session, tenant_id)
    wanted = getattr(data, "source", None)
    if wanted is not None:
        rows = [row for row in rows if row.id == wanted]
        if not rows:
            raise SourceNotFound(f"No analytics source {wanted} in this organization.")
    draft_ids, urls = await _draft_filter(session, tenant_id, data)
    chosen = {figure: choose(rows, figure) for figure in (*TRAFFIC, *SEARCH)}
    return Selection(rows, draft_ids, chosen, urls)


async def _draft_filter(
    session: AsyncSession, tenant_id: uuid.UUID, data: Any
) -> tuple[list[uuid.UUID] | None, list[str] | None]:
    """The drafts the filters keep (None: all of ours), and with a publisher connection the
    normalized URLs it published at (None: any)."""
    kept: set[uuid.UUID] | None = None
    urls: list[str] | None = None

    def narrow(found: set[uuid.UUID]) -> None:
        nonlocal kept
        kept = found if kept is None else kept & found

    job_id = getattr(data, "job_id", None)
    workflow_id = getattr(data, "workflow_id", None)
    connection_id = getattr(data, "publisher_connection_id", None)
    if job_id is not None:
        await jobs.require(session, tenant_id, job_id)
        narrow({d.id for d in await drafts.of_job(session, tenant_id, job_id, MANY)})
    if workflow_id is not None:
        await workflows.require(session, tenant_id, workflow_id)
        found: set[uuid.UUID] = set()
        for job in await jobs.naming_workflow(session, tenant_id, workflow_id):
            found |= {d.id for d in await drafts.of_job(session, tenant_id, job, MANY)}
        narrow(found)
    if connection_id is not None:
        await publishers.require(session, tenant_id, connection_id)
        on_target = [
            (draft, url)
            for draft, connection, url, _at in await publishers.publications(session, tenant_id)
            if connection == connection_id
        ]
        narrow({draft for draft, _ in on_target})
        urls = sorted({key[0] for _, url in on_target if (key := inventory.key_of(url))})
    return (sorted(kept) if kept is not None else None), urls


def value(figure: str, per_source: dict[uuid.UUID, Sums], selection: Selection) -> float | None:
    """A figure from the sums of each source (those `selection` reads it from)."""
    base = {"ctr": "clicks", "avg_position": "impressions"}.get(figure, figure)
    ids = selection.chosen.get(base)
    if ids is None:
        return None

    def total(name: str) -> float:
        return sum(per_source.get(id, _zero())[INDEX[name]] for id in ids)

    if figure == "ctr":
        shown = total("impressions")
        return round(total("clicks") / shown, 4) if shown else None
    if figure == "avg_position":
        shown = total("impressions")
        return round(total("position_sum") / shown, 2) if shown else None
    found = total(figure)
    return int(found) if float(found).is_integer() else found


def _zero() -> Sums:
    return [0.0] * len(repo.FIGURES)


def _add(into: Sums, row: Sequence[Any]) -> None:
    for index, figure in enumerate(row):
        into[index] += float(figure or 0)


async def _per_source(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    selection: Selection,
    first: date,
    last: date,
    draft_ids: list[uuid.UUID] | None = None,
) -> dict[uuid.UUID, Sums]:
    found: dict[uuid.UUID, Sums] = defaultdict(_zero)
    rows = await repo.sums_by(
        session,
        tenant_id,
        selection.used,
        first,
        last,
        draft_ids=draft_ids if draft_ids is not None else selection.draft_ids,
        urls=selection.urls,
        by=("source_id",),
    )
    for source_id, *figures in rows:
        _add(found[source_id], figures)
    return found


# --- the platform's own figures: drafts published, SEO scores ----------------------------------


async def _published(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    draft_ids: list[uuid.UUID] | None,
    start: datetime,
    end: datetime,
) -> list[datetime]:
    if draft_ids is None:
        return [at for at, _ in await drafts.published_between(session, tenant_id, start, end)]
    rows = await drafts.by_ids(session, tenant_id, draft_ids)
    return [r.published_at for r in rows if r.published_at and start <= r.published_at < end]


async def _scores(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    draft_ids: list[uuid.UUID] | None,
    start: datetime,
    end: datetime,
) -> list[tuple[datetime, int]]:
    return [
        (at, score)
        for _d, _v, at, score, _a in await drafts.score_history(
            session, tenant_id, draft_ids, start, end
        )
    ]


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 1) if values else None


# --- contentOverview ----------------------------------------------------------------------------


async def overview(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ContentOverviewInput
) -> schemas.ContentOverview:
    period = await analytics.period(session, tenant_id, data)
    selection = await select_sources(session, tenant_id, data)
    now = await _figures(session, tenant_id, selection, period.dates, period)
    before = (
        await _figures(session, tenant_id, selection, period.previous_dates, period)
        if period.previous_dates is not None
        else {}
    )
    compared = period.previous_dates is not None
    return schemas.ContentOverview(
        date_from=period.dates.first,
        date_to=period.dates.last,
        data_through=selection.data_through(),
        metrics={
            name: analytics.metric(now[name], before.get(name), compared)
            for name in schemas.CONTENT_METRICS
        },
    )


async def _figures(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    selection: Selection,
    dates: series.DateRange,
    period: analytics.Period,
) -> dict[str, float | None]:
    per_source = await _per_source(session, tenant_id, selection, dates.first, dates.last)
    start, end = dates.instants(period.zone)
    figures: dict[str, float | None] = {
        name: value(name, per_source, selection)
        for name in ("views", "visitors", "clicks", "impressions", "ctr", "avg_position")
    }
    scores = await _scores(session, tenant_id, selection.draft_ids, start, end)
    figures["seo_score_avg"] = _mean([score for _, score in scores])
    figures["published_count"] = len(
        await _published(session, tenant_id, selection.draft_ids, start, end)
    )
    return figures


# --- contentTimeseries, and draftPerformance's series --------------------------------------


async def _series(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    selection: Selection,
    period: analytics.Period,
    metrics: list[str],
    draft_ids: list[uuid.UUID] | None,
) -> list[schemas.ContentPoint]:
    spans = period.spans()
    slots = series.Slots(spans)
    buckets: list[dict[uuid.UUID, Sums]] = [defaultdict(_zero) for _ in spans]
    rows = await repo.sums_by(
        session,
        tenant_id,
        selection.used,
        period.dates.first,
        period.dates.last,
        draft_ids=draft_ids,
        urls=selection.urls,
        by=("day", "source_id"),
    )
    for day, source_id, *figures in rows:
        index = slots.index(series.midnight(day, period.zone))
        if index is not None:
            _add(buckets[index][source_id], figures)
    through = selection.data_through()
    own: dict[str, list[list[float]]] = {
        "seo_score_avg": [[] for _ in spans],
        "published_count": [[] for _ in spans],
    }
    if "seo_score_avg" in metrics:
        for at, score in await _scores(session, tenant_id, draft_ids, period.start, period.end):
            index = slots.index(at)
            if index is not None:
                own["seo_score_avg"][index].append(score)
    if "published_count" in metrics:
        for at in await _published(session, tenant_id, draft_ids, period.start, period.end):
            index = slots.index(at)
            if index is not None:
                own["published_count"][index].append(1)
    points = []
    for index, span in enumerate(spans):
        values: schemas.Values = {}
        for name in metrics:
            if name == "seo_score_avg":
                values[name] = _mean(own[name][index])
            elif name == "published_count":
                values[name] = len(own[name][index])
            elif through is None or span.local_date(period.zone) > through:
                values[name] = None
            else:
                values[name] = value(name, buckets[index], selection)
        points.append(schemas.ContentPoint(start=span.start, end=span.end, values=values))
    return points


async def timeseries(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ContentTimeseriesInput
) -> schemas.ContentSeries:
    period = await analytics.period(session, tenant_id, data)
    selection = await select_sources(session, tenant_id, data)
    draft_ids = selection.draft_ids
    if data.draft_id is not None:
        await drafts.require(session, tenant_id, data.draft_id)
        draft_ids = [data.draft_id] if draft_ids is None or data.draft_id in draft_ids else []
    return schemas.ContentSeries(
        granularity=period.granularity,
        date_from=period.dates.first,
        date_to=period.dates.last,
        data_through=selection.data_through(),
        data=await _series(session, tenant_id, selection, period, data.metric_list, draft_ids),
    )


# --- contentBreakdown ---------------------------------------------------------------------------

DIMENSIONS = {"channel", "referrer", "country", "device"}


async def breakdown(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ContentBreakdownInput
) -> schemas.ContentBreakdownPage:
    period = await analytics.period(session, tenant_id, data)
    selection = await select_sources(session, tenant_id, data)
    first, last = period.dates.first, period.dates.last
    groups: dict[str | None, dict[uuid.UUID, Sums]] = defaultdict(lambda: defaultdict(_zero))
    labels: dict[str | None, str] = {}
    if data.group_by in DIMENSIONS:
        rows = await repo.sums_by(
            session,
            tenant_id,
            selection.used,
            first,
            last,
            draft_ids=selection.draft_ids,
            urls=selection.urls,
            dimension=data.group_by,
            by=("value", "source_id"),
        )
        for key, source_id, *figures in rows:
            _add(groups[key][source_id], figures)
            labels[key] = key or "(none)"
    elif data.group_by == "source":
        own: dict[str, Selection] = {}
        for row in selection.sources:
            key = str(row.id)
            labels[key] = f"{row.provider}: {row.property}"
            own[key] = Selection(
                [row],
                selection.draft_ids,
                {f: choose([row], f) for f in (*TRAFFIC, *SEARCH)},
                selection.urls,
            )
            groups[key] = await _per_source(session, tenant_id, own[key], first, last)
        return _page(data, groups, labels, own, selection)
    elif data.group_by == "publisher_connection":
        targets = await _targets_of_urls(session, tenant_id, selection.draft_ids)
        rows = await repo.sums_by(
            session,
            tenant_id,
            selection.used,
            first,
            last,
            draft_ids=selection.draft_ids,
            urls=selection.urls,
            by=("url", "source_id"),
        )
        for url, source_id, *figures in rows:
            for key, label in targets.get(url, [(None, "(unknown target)")]):
                labels[key] = label
                _add(groups[key][source_id], figures)
    else:
        by_draft: dict[uuid.UUID, dict[uuid.UUID, Sums]] = defaultdict(lambda: defaultdict(_zero))
        rows = await repo.sums_by(
            session,
            tenant_id,
            selection.used,
            first,
            last,
            draft_ids=selection.draft_ids,
            urls=selection.urls,
            by=("draft_id", "source_id"),
        )
        for draft_id, source_id, *figures in rows:
            _add(by_draft[draft_id][source_id], figures)
        jobs_of = await _jobs_of_drafts(session, tenant_id, list(by_draft))
        for draft_id, per_source in by_draft.items():
            key, label = jobs_of.get(draft_id, (None, "(no job)"))
            labels[key] = label
            for source_id, figures in per_source.items():
                _add(groups[key][source_id], figures)
    return _page(data, groups, labels, {}, selection)


async def _jobs_of_drafts(
    session: AsyncSession, tenant_id: uuid.UUID, draft_ids: list[uuid.UUID]
) -> dict[uuid.UUID, tuple[str | None, str]]:
    """Each draft's job: (its id, its name), or (None, "(no job)")."""
    found: dict[uuid.UUID, tuple[str | None, str]] = {}
    names: dict[uuid.UUID, str] = {}
    for draft in await drafts.by_ids(session, tenant_id, draft_ids):
        if draft.job_id is None:
            found[draft.id] = (None, "(no job)")
            continue
        if draft.job_id not in names:
            job = await jobs.find(session, tenant_id, draft.job_id)
            names[draft.job_id] = job.name if job else str(draft.job_id)
        found[draft.id] = (str(draft.job_id), names[draft.job_id])
    return found


async def _targets_of_urls(
    session: AsyncSession, tenant_id: uuid.UUID, draft_ids: list[uuid.UUID] | None
) -> dict[str, list[tuple[str | None, str]]]:
    """The publisher connections (id, name) each normalized URL of ours was published on."""
    found: dict[str, list[tuple[str | None, str]]] = {}
    names: dict[uuid.UUID, str] = {}
    for _draft, connection, url, _at in await publishers.publications(
        session, tenant_id, draft_ids
    ):
        key = inventory.key_of(url)
        if key is None:
            continue
        if connection not in names:
            target = await publishers.find(session, tenant_id, connection)
            names[connection] = target.name if target else str(connection)
        listed = found.setdefault(key[0], [])
        if (str(connection), names[connection]) not in listed:
            listed.append((str(connection), names[connection]))
    return found


def _page(
    data: schemas.ContentBreakdownInput,
    groups: dict[str | None, dict[uuid.UUID, Sums]],
    labels: dict[str | None, str],
    own: dict[str, Selection],
    selection: Selection,
) -> schemas.ContentBreakdownPage:
    metrics = data.metric_list
    rows = []
    for key, per_source in groups.items():
        chosen = own.get(key or "", selection)
        values: schemas.Values = {
            name: (
                value(name, per_source, chosen)
                if name not in ("seo_score_avg", "published_count")
                else None
            )
            for name in metrics
        }
        rows.append(
            schemas.ContentBreakdownRow(
                group=Group(key=key, label=labels.get(key, "(none)")), values=values
            )
        )
    sort = data.sort_by or metrics[0]
    present = [r for r in rows if r.values.get(sort) is not None]
    absent = [r for r in rows if r.values.get(sort) is None]
    present.sort(
        key=lambda r: (float(r.values[sort] or 0), r.group.label), reverse=data.sort_order == "desc"
    )
    ordered = present + sorted(absent, key=lambda r: r.group.label)
    start = offset_of(data.page, data.limit)
    return schemas.ContentBreakdownPage(
        data=ordered[start : start + data.limit],
        total=len(ordered),
        page=data.page,
        limit=data.limit,
    )


# --- topContent ---------------------------------------------------------------------------------


async def top(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ContentTopInput
) -> schemas.ContentTopPage:
    """Our published drafts (of the filters) by the metric over the period, nulls last; each
    with its change against the period as long just before. `bottom` leaves out the drafts
    published fewer than minDaysPublished days ago (their figures have not had time)."""
    period = await analytics.period(session, tenant_id, data)
    selection = await select_sources(session, tenant_id, data)
    published = await publishers.publications(session, tenant_id, selection.draft_ids)
    urls: dict[uuid.UUID, str] = {}
    for draft_id, _connection, url, _at in published:
        urls.setdefault(draft_id, url)
    rows = await drafts.by_ids(session, tenant_id, list(urls))
    if data.direction == "bottom":
        young = period.now - timedelta(days=data.min_days_published)
        rows = [r for r in rows if r.published_at is not None and r.published_at <= young]
    previous = period.dates.previous_period()
    now_sums = await _by_draft(session, tenant_id, selection, period.dates)
    before_sums = await _by_draft(session, tenant_id, selection, previous)
    spent = await credits.debited_by_resource(session, tenant_id, "draft", EPOCH, period.now)
    found = []
    for row in rows:
        if data.metric == "seo_score_avg":
            figure: float | None = row.seo_score
            earlier: float | None = None
        else:
            figure = value(data.metric, now_sums.get(row.id, {}), selection)
            earlier = value(data.metric, before_sums.get(row.id, {}), selection)
        found.append(
            schemas.ContentTopRow(
                draft_id=row.id,
                title=row.title,
                url=row.published_url or urls.get(row.id),
                published_at=row.published_at,
                value=figure,
                change_pct=analytics.change_pct(figure, earlier),
                seo_score=row.seo_score,
                credits_spent=spent.get(str(row.id), 0),
            )
        )
    present = [r for r in found if r.value is not None]
    present.sort(key=lambda r: (r.value or 0.0, r.title), reverse=data.direction == "top")
    ordered = present + sorted((r for r in found if r.value is None), key=lambda r: r.title)
    return schemas.ContentTopPage(
        data=ordered[: data.limit], total=len(ordered), page=1, limit=data.limit
    )


async def _by_draft(
    session: AsyncSession, tenant_id: uuid.UUID, selection: Selection, dates: series.DateRange
) -> dict[uuid.UUID, dict[uuid.UUID, Sums]]:
    found: dict[uuid.UUID, dict[uuid.UUID, Sums]] = defaultdict(lambda: defaultdict(_zero))
    rows = await repo.sums_by(
        session,
        tenant_id,
        selection.used,
        dates.first,
        dates.last,
        draft_ids=selection.draft_ids,
        urls=selection.urls,
        by=("draft_id", "source_id"),
    )
    for draft_id, source_id, *figures in rows:
        _add(found[draft_id][source_id], figures)
    return found


# --- draftPerformance ---------------------------------------------------------------------------

TOTALS = ("views", "visitors", "clicks", "impressions", "ctr", "avg_position")


def reasons(
    history: Sequence[tuple[uuid.UUID, int, datetime, int, str]],
) -> list[schemas.ContentScorePoint]:
    """Each scored revision with why it was scored: the first AI one `generated`, later AI ones
    `optimized`, a person's `edited`, the system's `rescored`."""
    points, seen = [], set()
    for draft_id, _version, at, score, author in history:
        if author == "ai":
            reason = "optimized" if draft_id in seen else "generated"
        else:
            reason = "edited" if author == "human" else "rescored"
        seen.add(draft_id)
        points.append(schemas.ContentScorePoint(at=at, score=score, reason=reason))
    return points


async def draft_performance(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ContentDraftPerformanceInput
) -> schemas.ContentDraftPerformance:
    draft = await drafts.require(session, tenant_id, data.id)
    period = await analytics.period(session, tenant_id, data)
    history = reasons(await drafts.score_history(session, tenant_id, [draft.id]))
    published = await publishers.publications(session, tenant_id, [draft.id])
    selection = await select_sources(session, tenant_id, data)
    nothing: schemas.Values = {name: None for name in TOTALS}
    answer = schemas.ContentDraftPerformance(
        draft_id=draft.id,
        title=draft.title,
        status=draft.status,
        published=[
            schemas.ContentPublication(publisher_connection_id=connection, url=url, published_at=at)
            for _d, connection, url, at in published
        ],
        totals=nothing,
        by_source=[],
        timeseries=[],
        seo_score_history=history,
        top_queries=[],
        cost=schemas.ContentCost(credits_spent=0, views_per_credit=None, clicks_per_credit=None),
        data_through=None,
    )
    spent = await credits.debited_by_resource(session, tenant_id, "draft", EPOCH, period.now)
    answer.cost.credits_spent = spent.get(str(draft.id), 0)
    if not published:
        return answer
    first, last = period.dates.first, period.dates.last
    per_source = await _per_source(session, tenant_id, selection, first, last, [draft.id])
    answer.totals = {name: value(name, per_source, selection) for name in TOTALS}
    used = answer.cost.credits_spent
    for figure in ("views", "clicks"):
        earned = answer.totals[figure]
        if used and earned is not None:
            setattr(answer.cost, f"{figure}_per_credit", round(float(earned) / used, 2))
    answer.data_through = selection.data_through()
    for row in selection.sources:
        one = Selection([row], [draft.id], {f: choose([row], f) for f in (*TRAFFIC, *SEARCH)})
        sums = await _per_source(session, tenant_id, one, first, last, [draft.id])
        answer.by_source.append(
            schemas.ContentSourceTotals(
                source_id=row.id,
                provider=row.provider,
                totals={name: value(name, sums, one) for name in TOTALS},
            )
        )
    answer.timeseries = await _series(
        session,
        tenant_id,
        selection,
        period,
        ["views", "visitors", "clicks", "impressions"],
        [draft.id],
    )
    queries = await search_console.top_queries(
        session, tenant_id, [url for _d, _c, url, _a in published], first, last
    )
    answer.top_queries = [
        schemas.ContentQueryRow(
            query=query,
            clicks=clicks,
            impressions=shown,
            position=round(position / shown, 2) if shown else None,
        )
        for query, clicks, shown, position in queries
    ]
    return answer


# --- seoScoreTrend ------------------------------------------------------------------------------


async def score_trend(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ContentScoreTrendInput
) -> schemas.ContentScoreTrend:
    """The scores given in the period (a draft's score when it was finalized, and each re-score
    in the bucket it happened in): per bucket their mean, median and count; and how they spread
    over the four ranges."""
    period = await analytics.period(session, tenant_id, data)
    selection = await select_sources(session, tenant_id, data)
    spans = period.spans()
    slots = series.Slots(spans)
    placed: list[list[float]] = [[] for _ in spans]
    scores = await _scores(session, tenant_id, selection.draft_ids, period.start, period.end)
    for at, score in scores:
        index = slots.index(at)
        if index is not None:
            placed[index].append(score)
    buckets = [
        schemas.ContentScoreBucket(
            start=span.start,
            end=span.end,
            avg=_mean(values),
            p50=analytics.percentile(sorted(values), 0.5),
            count=len(values),
        )
        for span, values in zip(spans, placed, strict=True)
    ]
    distribution = [
        schemas.ContentScoreRange(
            range=name,
            count=sum(1 for _, score in scores if low <= score <= high),
        )
        for name, low, high in SCORE_RANGES
    ]
    return schemas.ContentScoreTrend(
        data=buckets,
        distribution=distribution,
        date_from=period.dates.first,
        date_to=period.dates.last,
    )
