"""Our own content events beside Search Console's series, and whether a page's change worked:
what Search Console cannot know, since it never sees the edit.

Events: a draft published here (its first copy on a target), updated (a later publish of it to
the same target), and a page a website scan found changed against the scan before it. Each is
dated in Search Console's days (Pacific Time), so it lines up with the series' date keys, and
kept only when its URL is on the property's site and passes the pageFilter. URLs are compared
as written (the page inventory of SEO part 2 normalizes them).

Impact: the page's clicks in the `event_days` before the event's day against as many days after
it (the day itself in neither; fewer days when fewer are stored after it), held against the rest
of the site (its totals minus the page's) over the same days: the page's clicks before, moved as
the rest of the site moved, are what it would have earned without the change.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.publishers import service as publishers
from contentplatform.seo import service as seo
from contentplatform.seo.search_console.schemas import (
    MIN_IMPACT_DAYS,
    ContentEvent,
    EventImpact,
    ImpactSide,
    Verdict,
    Window,
)
from contentplatform.website_scan.snapshots import service as snapshots

# Search Console's days are Pacific Time (its documentation: "all dates are in PT").
SEARCH_CONSOLE_ZONE = ZoneInfo("America/Los_Angeles")
MAX_EVENTS = 200
# Publications read at most before the site and page filters keep theirs.
_PUBLICATIONS_READ = 2_000
# Website scans compared at most for a series (each against the scan before it).
PAGE_CHANGE_SNAPSHOTS = 12
# Below this many clicks in both windows together, a lift is noise.
MIN_IMPACT_CLICKS = 20
CLEAR_LIFT_PCT = 10.0


def day_of(moment: datetime) -> date:
    return moment.astimezone(SEARCH_CONSOLE_ZONE).date()


def _start_of(day: date) -> datetime:
    return datetime.combine(day, time(), SEARCH_CONSOLE_ZONE)


async def content_events(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    site_url: str,
    first: date,
    last: date,
    *,
    page_test: Callable[[str], bool] | None,
    exact_page: str | None,
) -> tuple[list[ContentEvent], bool]:
    """The window's events on the site (and passing `page_test`), newest first, at most
    MAX_EVENTS; and whether more happened. `exact_page`: the one URL asked for (its scans are
    then read for it alone)."""
    start, end = _start_of(first), _start_of(last + timedelta(days=1))
    found = [
        ContentEvent(
            date=day_of(at),
            at=at,
            kind="published" if is_first else "updated",
            page=url,
            draft_id=draft_id,
            title=title,
            snapshot_id=None,
            fields_changed=[],
        )
        for at, url, draft_id, title, is_first in await publishers.published_copies(
            session, tenant_id, start, end, _PUBLICATIONS_READ
        )
    ]
    changes = await snapshots.page_changes(
        session,
        tenant_id,
        start,
        end,
        urls=None if exact_page is None else [exact_page],
        max_snapshots=PAGE_CHANGE_SNAPSHOTS,
    )
    found += [
        ContentEvent(
            date=day_of(change.at),
            at=change.at,
            kind="page_changed",
            page=change.url,
            draft_id=None,
            title=None,
            snapshot_id=change.snapshot_id,
            fields_changed=list(change.fields_changed),
        )
        for change in changes
    ]
    kept = [
        event
        for event in found
        if seo.within_property(site_url, event.page)
        and (page_test is None or page_test(event.page))
    ]
    kept.sort(key=lambda event: (event.at, event.page), reverse=True)
    return kept[:MAX_EVENTS], len(kept) > MAX_EVENTS


def impact_windows(event: date, days: int, stored_through: date | None) -> int:
    """Days on each side: `days`, or as many as are stored after the event's day."""
    if stored_through is None:
        return 0
    return max(0, min(days, (stored_through - event).days))


def windows(event: date, days: int) -> tuple[tuple[date, date], tuple[date, date]]:
    before = (event - timedelta(days=days), event - timedelta(days=1))
    after = (event + timedelta(days=1), event + timedelta(days=days))
    return before, after


def judge(event: date, days: int, page: ImpactSide, rest: ImpactSide) -> EventImpact:
    """The impact of a change on the page, against the rest of the site's trend."""
    expected: float | None = None
    if page.before.clicks:
        trend = rest.after.clicks / rest.before.clicks if rest.before.clicks else 1.0
        expected = page.before.clicks * trend
    lift = (page.after.clicks - expected) * 100.0 / expected if expected else None
    verdict: Verdict
    if days < MIN_IMPACT_DAYS or page.before.clicks + page.after.clicks < MIN_IMPACT_CLICKS:
        verdict = "insufficient_data"
    elif lift is None:
        verdict = "improved" if page.after.clicks else "no_clear_change"
    elif lift >= CLEAR_LIFT_PCT:
        verdict = "improved"
    elif lift <= -CLEAR_LIFT_PCT:
        verdict = "declined"
    else:
        verdict = "no_clear_change"
    before, after = windows(event, days)
    return EventImpact(
        event_date=event,
        days=days,
        before=Window(start=before[0], end=before[1]) if days else None,
        after=Window(start=after[0], end=after[1]) if days else None,
        page=page,
        rest_of_site=rest,
        expected_clicks=expected,
        lift_pct=lift,
        verdict=verdict,
    )
