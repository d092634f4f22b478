"""queryPerformance: Search Console's stored facts read back, grouped, filtered and compared,
from our tables only (reads never call Google).

Which fact answers: query rows when the query is grouped by or filtered on (the query dimension,
a query filter, a brand filter); else page totals when a page, country or device is; else the
site's totals. Totals come from the same fact as the rows, so they always add up; when query
rows are read, `hidden` says what they leave out (anonymized and unreturned queries).

Filters other than `equals` are matched here, in Python, over the distinct values of the
window (a few thousand queries or pages against millions of rows), and the matches are handed
to the database as one array: the same semantics on SQLite and PostgreSQL, and RE2's (never a
backtracking engine, and not PostgreSQL's `~`, whose syntax differs) for regular expressions.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import date, timedelta

import re2  # type: ignore[import-untyped]
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.schemas import offset_of
from contentplatform.seo import service as seo
from contentplatform.seo.models import SeoProperty
from contentplatform.seo.search_console import content_events, repository
from contentplatform.seo.search_console.errors import InvalidPattern
from contentplatform.seo.search_console.repository import Condition, Fact, Scope, Sums
from contentplatform.seo.search_console.schemas import (
    Change,
    DataState,
    EventImpact,
    Hidden,
    ImpactSide,
    Metrics,
    Operator,
    PerformanceKeys,
    PerformanceReport,
    PerformanceRow,
    QueryPerformanceInput,
)

Match = Callable[[str], bool]
PAGE_SCOPED = ("page", "country", "device")


async def selected_property(session: AsyncSession, tenant_id: uuid.UUID) -> SeoProperty | None:
    """The property chosen on the tenant's Search Console connection (None: none chosen, or not
    connected): the one every read of stored data is about."""
    return await repository.selected_property(session, tenant_id)


def metrics(sums: Sums) -> Metrics:
    impressions = sums.impressions
    return Metrics(
        clicks=sums.clicks,
        impressions=impressions,
        ctr=sums.clicks / impressions if impressions else 0.0,
        position=sums.position_sum / impressions if impressions else None,
    )


def change(now: Metrics, before: Metrics) -> Change:
    def pct(current: int, previous: int) -> float | None:
        return (current - previous) * 100.0 / previous if previous else None

    moved = (
        now.position - before.position
        if now.position is not None and before.position is not None
        else None
    )
    return Change(
        clicks_pct=pct(now.clicks, before.clicks),
        impressions_pct=pct(now.impressions, before.impressions),
        ctr_pts=(now.ctr - before.ctr) * 100.0,
        position=moved,
    )


def matcher(field: str, operator: Operator, value: str) -> Match:
    """The test a filter puts each distinct value to. contains, not_contains and starts_with
    ignore case; equals is exact; regex/not_regex are RE2 searches (a partial match, as Search
    Console's: anchor with ^ and $ for a whole one)."""
    if operator in ("regex", "not_regex"):
        try:
            pattern = re2.compile(value)
        except re2.error as error:
            raise InvalidPattern(field, str(error)) from error
        if operator == "regex":
            return lambda text: pattern.search(text) is not None
        return lambda text: pattern.search(text) is None
    if operator == "equals":
        return lambda text: text == value
    folded = value.casefold()
    if operator == "contains":
        return lambda text: folded in text.casefold()
    if operator == "not_contains":
        return lambda text: folded not in text.casefold()
    return lambda text: text.casefold().startswith(folded)


def brand_matcher(terms: Sequence[str], brand: str) -> Match | None:
    """branded: the query holds one of the terms (ignoring case); non_branded: none of them.
    With no terms set, every query is non-branded."""
    if brand == "all":
        return None
    folded = [term.casefold() for term in terms if term.strip()]

    def branded(text: str) -> bool:
        query = text.casefold()
        return any(term in query for term in folded)

    return branded if brand == "branded" else (lambda text: not branded(text))


def previous_window(data: QueryPerformanceInput) -> tuple[date, date] | None:
    if data.compare == "previous_period":
        days = (data.end_date - data.start_date).days + 1
        return data.start_date - timedelta(days=days), data.start_date - timedelta(days=1)
    if data.compare == "previous_year":
        return _year_before(data.start_date), _year_before(data.end_date)
    return None


def _year_before(day: date) -> date:
    # 29 February's year before is the 28th.
    return day.replace(year=day.year - 1, day=min(day.day, 28 if day.month == 2 else day.day))


class Reader:
    """One queryPerformance read: the fact it reads, and its filters made conditions for a
    window of days (the compared period has values of its own)."""

    def __init__(self, data: QueryPerformanceInput, property_id: uuid.UUID, tenant_id: uuid.UUID):
        self.data = data
        self.tenant_id = tenant_id
        self.property_id = property_id
        self.equal: list[Condition] = []
        self.matches: dict[str, list[Match]] = {}
        # The sums of every query row of a scope under the page, country and device filters,
        # when listing the queries to match has summed them.
        self.all_queries: dict[Scope, Sums] = {}
        dims = set(data.dimensions)
        self.source = "site"
        if "query" in dims or data.query_filter is not None or data.brand != "all":
            self.source = "query"
        elif dims & set(PAGE_SCOPED) or data.page_filter or data.country or data.device:
            self.source = "page"
        self.fact: Fact = repository.FACTS[self.source]
        if data.country:
            self.equal.append(Condition("country", data.country.lower()))
        if data.device:
            self.equal.append(Condition("device", data.device))
        self._filter("page", "pageFilter", data.page_operator, data.page_filter)
        self._filter("query", "queryFilter", data.query_operator, data.query_filter)

    def _filter(self, column: str, field: str, operator: Operator, value: str | None) -> None:
        if value is None:
            return
        if operator == "equals":
            self.equal.append(Condition(column, value))
        else:
            self.matches.setdefault(column, []).append(matcher(field, operator, value))

    def add_brand(self, match: Match | None) -> None:
        if match is not None:
            self.matches.setdefault("query", []).append(match)

    def scope(self, first: date, last: date) -> Scope:
        return Scope(self.property_id, self.data.search_type, first, last)

    async def conditions(self, session: AsyncSession, scope: Scope) -> list[Condition]:
        found = list(self.equal)
        for column, tests in self.matches.items():
            if column == "query" and not any(c.column == "query" for c in found):
                # The scan that lists the queries also sums them: the hidden share's query
                # rows, kept for it (one scan of the query rows fewer).
                values, self.all_queries[scope] = await repository.values_with_sums(
                    session, self.tenant_id, self.fact, scope, column, found
                )
            else:
                values = await repository.distinct_values(
                    session, self.tenant_id, self.fact, scope, column, found
                )
            kept = tuple(value for value in values if all(test(value) for test in tests))
            found.append(Condition(column, values=kept))
        return found

    async def hidden(self, session: AsyncSession, scope: Scope, read: Sums) -> Hidden:
        """The scope of the page, country and device filters: its totals (site or page fact)
        minus its query rows. `read`: the totals of the rows just read, which are those query
        rows when no query filter narrowed them (one scan of the query rows saved)."""
        scoped = [c for c in self.equal if c.column in PAGE_SCOPED]
        page_tests = {"page": self.matches["page"]} if "page" in self.matches else {}
        whole_fact: Fact = repository.FACTS["page" if scoped or page_tests else "site"]
        whole_conditions = list(scoped)
        query_conditions = list(scoped)
        for column, tests in page_tests.items():
            for fact, conditions in (
                (whole_fact, whole_conditions),
                (repository.FACTS["query"], query_conditions),
            ):
                values = await repository.distinct_values(
                    session, self.tenant_id, fact, scope, column, scoped
                )
                kept = tuple(value for value in values if all(test(value) for test in tests))
                conditions.append(Condition(column, values=kept))
        whole = await repository.totals(
            session, self.tenant_id, whole_fact, scope, whole_conditions
        )
        narrowed = "query" in self.matches or any(c.column == "query" for c in self.equal)
        if not narrowed:
            shown = read
        elif scope in self.all_queries:
            shown = self.all_queries[scope]
        else:
            shown = await repository.totals(
                session, self.tenant_id, repository.FACTS["query"], scope, query_conditions
            )
        clicks = max(whole.clicks - shown.clicks, 0)
        impressions = max(whole.impressions - shown.impressions, 0)
        return Hidden(
            clicks=clicks,
            impressions=impressions,
            clicks_share=clicks / whole.clicks if whole.clicks else 0.0,
            impressions_share=impressions / whole.impressions if whole.impressions else 0.0,
        )


def _empty(data: QueryPerformanceInput, source: str) -> PerformanceReport:
    zero = metrics(Sums(0, 0, 0.0))
    return PerformanceReport(
        data=[],
        total=0,
        page=data.page,
        limit=data.limit,
        source=source,
        totals=zero,
        previous_totals=zero if data.compare != "none" else None,
        hidden=None,
        data_state=DataState(final_through=None, fresh_through=None),
        last_synced_at=None,
    )


async def query_performance(
    session: AsyncSession, tenant_id: uuid.UUID, data: QueryPerformanceInput
) -> PerformanceReport:
    prop = await repository.selected_property(session, tenant_id)
    reader = Reader(data, prop.id if prop else uuid.UUID(int=0), tenant_id)
    if prop is None:
        return _empty(data, reader.source)
    if data.brand != "all":
        reader.add_brand(brand_matcher(await seo.brand_terms(session, tenant_id), data.brand))
    scope = reader.scope(data.start_date, data.end_date)
    conditions = await reader.conditions(session, scope)
    groups, total, whole = await repository.grouped(
        session,
        tenant_id,
        reader.fact,
        scope,
        conditions,
        data.dimensions,
        sort_by=data.sort_by,
        descending=data.sort_order == "desc",
        limit=data.limit,
        offset=offset_of(data.page, data.limit),
    )
    if whole is None:
        whole = await repository.totals(session, tenant_id, reader.fact, scope, conditions)
        total = 0 if whole.impressions == 0 and whole.clicks == 0 else total
    rows = [
        PerformanceRow(keys=PerformanceKeys(**group.keys), **metrics(group.sums).model_dump())
        for group in groups
    ]
    previous_totals = None
    window = previous_window(data)
    if window is not None:
        previous_totals = await _compare(session, reader, window, groups, rows)
    events, truncated = None, False
    if "date" in data.dimensions:
        events, truncated = await content_events.content_events(
            session,
            tenant_id,
            prop.site_url,
            data.start_date,
            data.end_date,
            page_test=(
                matcher("pageFilter", data.page_operator, data.page_filter)
                if data.page_filter is not None
                else None
            ),
            exact_page=data.page_filter if data.page_operator == "equals" else None,
        )
    report = _empty(data, reader.source)
    return report.model_copy(
        update={
            "events": events,
            "events_truncated": truncated,
            "impact": (
                await _impact(session, reader, data.event_date, prop.fresh_through)
                if data.event_date is not None
                else None
            ),
            "data": rows,
            "total": total,
            "totals": metrics(whole),
            "previous_totals": previous_totals,
            "hidden": (
                await reader.hidden(session, scope, whole) if reader.source == "query" else None
            ),
            "data_state": DataState(
                final_through=prop.final_through, fresh_through=prop.fresh_through
            ),
            "last_synced_at": prop.last_synced_at,
        }
    )


async def _impact(
    session: AsyncSession, reader: Reader, event: date, stored_through: date | None
) -> EventImpact:
    """The filtered rows (the pageFilter's page) before and after the event's day, against
    the rest of the site over the same days: the site's totals (the page totals of the country
    and device filters, when given) minus the page's."""
    days = content_events.impact_windows(event, reader.data.event_days, stored_through)
    whole_fact: Fact = repository.FACTS["site"]
    whole_conditions = [c for c in reader.equal if c.column in ("country", "device")]
    if whole_conditions:
        whole_fact = repository.FACTS["page"]
    sides: dict[str, tuple[Sums, Sums]] = {}
    for name, window in zip(("before", "after"), content_events.windows(event, days), strict=True):
        if not days:
            sides[name] = (Sums(0, 0, 0.0), Sums(0, 0, 0.0))
            continue
        scope = reader.scope(*window)
        conditions = await reader.conditions(session, scope)
        page = await repository.totals(session, reader.tenant_id, reader.fact, scope, conditions)
        whole = await repository.totals(
            session, reader.tenant_id, whole_fact, scope, whole_conditions
        )
        rest = Sums(
            max(whole.clicks - page.clicks, 0),
            max(whole.impressions - page.impressions, 0),
            max(whole.position_sum - page.position_sum, 0.0),
        )
        sides[name] = (page, rest)

    def side(index: int) -> ImpactSide:
        before, after = metrics(sides["before"][index]), metrics(sides["after"][index])
        return ImpactSide(before=before, after=after, change=change(after, before))

    return content_events.judge(event, days, side(0), side(1))


async def _compare(
    session: AsyncSession,
    reader: Reader,
    window: tuple[date, date],
    groups: list[repository.Group],
    rows: list[PerformanceRow],
) -> Metrics:
    """Fill each row's `previous` and `change` from the compared window (a date key is shifted
    by the windows' distance), and the compared window's totals."""
    data = reader.data
    scope = reader.scope(*window)
    conditions = await reader.conditions(session, scope)
    previous_totals = metrics(
        await repository.totals(session, reader.tenant_id, reader.fact, scope, conditions)
    )
    if not groups:
        return previous_totals
    # Only the keys of this page are looked up in the compared window.
    for name in data.dimensions:
        if name != "date":
            seen = tuple(sorted({str(group.keys[name]) for group in groups}))
            conditions.append(Condition(name, values=seen))
    before, _, _ = await repository.grouped(
        session,
        reader.tenant_id,
        reader.fact,
        scope,
        conditions,
        data.dimensions,
        sort_by="clicks",
        descending=True,
        limit=None,
    )

    def shifted(day: date) -> date:
        if data.compare == "previous_year":
            return (
                day.replace(year=day.year + 1)
                if not (day.month == 2 and day.day == 29)
                else (day + timedelta(days=365))
            )
        return day + (data.start_date - window[0])

    found = {}
    for group in before:
        keys = dict(group.keys)
        if "date" in keys:
            keys["date"] = shifted(keys["date"])
        found[tuple(sorted(keys.items()))] = group.sums
    for index, (group, row) in enumerate(zip(groups, rows, strict=True)):
        sums = found.get(tuple(sorted(group.keys.items())), Sums(0, 0, 0.0))
        previous = metrics(sums)
        rows[index] = row.model_copy(update={"previous": previous, "change": change(row, previous)})
    return previous_totals


# --- content analytics' reads (analytics/content: its search_console source) -------------------


async def page_days(
    session: AsyncSession, tenant_id: uuid.UUID, first: date, last: date
) -> tuple[date | None, list[tuple[date, str, str, str, int, int, float]]]:
    """The stored web page facts of the property in use over [first, last] (day, page,
    country, device, clicks, impressions, position_sum), and the last final day stored (None:
    no property, or nothing synced yet). Content analytics' `search_console` source reads these:
    no second sync of Google."""
    chosen = await repository.selected_property(session, tenant_id)
    if chosen is None or chosen.final_through is None:
        return None, []
    last = min(last, chosen.final_through)
    if last < first:
        return chosen.final_through, []
    return chosen.final_through, await repository.page_days(
        session, tenant_id, chosen.id, first, last
    )


async def top_queries(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    pages: Sequence[str],
    first: date,
    last: date,
    limit: int = 10,
) -> list[tuple[str, int, int, float]]:
    """The queries that showed `pages` (as Search Console names them) in [first, last]:
    (query, clicks, impressions, position_sum), most clicked first."""
    chosen = await repository.selected_property(session, tenant_id)
    if chosen is None:
        return []
    return await repository.top_queries(session, tenant_id, chosen.id, pages, first, last, limit)
