"""seo.listPages and seo.getPage over REST and RPC: the page inventory filled through the paths
that keep it (a website scan's `crawl.completed`, the end of a Search Console sync run, a
draft's `draft.published`, the end of a URL-inspection run), one row per normalized URL joining
them, its filters and orders, the 360 view, the first read that builds the inventory of an
organization that had data before, and another organization that sees none of it."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from contentplatform.config import Settings
from contentplatform.drafts import publication
from contentplatform.drafts.models import Draft
from contentplatform.kit.db import Database
from contentplatform.seo.models import SeoUrlInspection
from contentplatform.seo.pages import repository
from contentplatform.seo.search_console.repository import Figures
from contentplatform.seo.sync_runs import service as sync_runs
from contentplatform.website_scan.crawling.urls import normalize
from tests.conftest import Run
from tests.notifications.support import emit, settled
from tests.seo.search_console.support import Day, days, make_property, p, plant, q
from tests.support.database import run_on
from tests.support.orgs import Org
from tests.support.problems import problem
from tests.website_scan.seed import crawled, seed_snapshot
from tests.website_scan.support import SITE, site_url

pytestmark = pytest.mark.shared_org

FIRST = date(2026, 1, 1)
LAST = FIRST + timedelta(days=55)  # 56 stored days: the 28 before, then the last 28
SPLIT = LAST - timedelta(days=27)
SCANNED_AT = datetime(2026, 2, 20, 12, tzinfo=UTC)
PUBLISHED_AT = datetime(2026, 2, 10, 9, tzinfo=UTC)
COMPOST = f"{SITE}/blog/compost"
OLD = f"{SITE}/blog/old"
LANDING = f"{SITE}/landing"
HOWTO = {
    "@context": "https://schema.org",
    "@type": "HowTo",
    "name": "How to compost",
    "author": {"@type": "Person", "name": "Ada Gardener"},
    "dateModified": "2026-02-01",
}
COMPOST_TEXT = (
    "Compost is rotted organic matter that feeds soil.\n\n"
    "## What is compost?\n\nIt is what leaves and scraps become in about 50% of a year.\n\n"
    "- Gather greens\n- Add browns\n- Turn weekly\n"
)
_planted: dict[str, dict[str, str]] = {}


def scan_pages(*, with_old: bool = True) -> list[Any]:
    found = [
        crawled(f"{SITE}/", title="Garden shop", text="We sell garden tools.", depth=0),
        crawled(
            COMPOST,
            title="How to compost",
            text=COMPOST_TEXT,
            headings=[("h1", "How to compost"), ("h2", "What is compost?"), ("h2", "Steps")],
            links=[("https://extension.example/soil", "Soil study", False)],
            json_ld=[HOWTO],
            word_count=350,
        ),
        crawled(f"{SITE}/private", title="Hidden", noindex=True),
        crawled(f"{SITE}/gone", status=404),
    ]
    if with_old:
        found.append(crawled(OLD, title="Old post", text="An old post.", depth=2))
    return found


def one_day(day: date) -> Day:
    """COMPOST: 5 clicks a day in the 28 days before, 10 in the last 28 (as two URLs Search
    Console tells apart and the inventory does not); OLD: 1 a day in the last 28; LANDING, a
    page no scan found: 2 a day in the last 28."""
    recent = day >= SPLIT
    pages = [p(COMPOST, 6 if recent else 5, 60, 3.0)]
    queries = [q("how to compost", COMPOST, 3, 30, 2.0)]
    if recent:
        pages += [
            p(f"{COMPOST}?utm_source=news", 4, 40, 3.0),
            p(OLD, 1, 50, 8.0),
            p(LANDING, 2, 20, 5.0),
        ]
        queries.append(q("compost bin", f"{COMPOST}?utm_source=news", 1, 10, 4.0))
    return Day(day, Figures(30, 300, 4.0), pages=pages, queries=queries)


def scan(org: Org, run: Run, pages: list[Any], at: datetime, config_id: str) -> str:
    """A snapshot of `pages` and its `crawl.completed`, heard by the inventory."""

    async def scenario(db: Database) -> str:
        seeded = await seed_snapshot(db, org.tenant_id, uuid.UUID(config_id), pages, created_at=at)
        return str(seeded.snapshot_id)

    snapshot_id: str = run(scenario)
    emit(run, org.tenant_id, "crawl.completed", payload={"snapshot_id": snapshot_id})
    return snapshot_id


def end_run(settings: Settings, tenant_id: uuid.UUID, kind: str, **more: Any) -> uuid.UUID:
    """A sync run of `kind` opened and ended (what the sync's workflow does last)."""

    async def scenario(db: Database) -> uuid.UUID:
        async with db.unit_of_work() as session:
            opened, _ = await sync_runs.open_run(
                session,
                tenant_id,
                kind=kind,
                provider="google_search_console",
                run_key=f"{kind}:{uuid.uuid4().hex}",
                trigger="manual",
                params={},
                property_id=more.get("property_id"),
                created_by=None,
            )
            for url, verdict in more.get("inspections", ()):
                session.add(
                    SeoUrlInspection(
                        tenant_id=tenant_id,
                        run_id=opened.id,
                        url=url,
                        status="completed",
                        verdict=verdict,
                        coverage_state="Submitted and indexed",
                        completed_at=SCANNED_AT,
                    )
                )
            await session.flush()
            await sync_runs.mark_running(session, tenant_id, opened.id)
            await sync_runs.finish(session, tenant_id, opened.id, status="succeeded")
            return opened.id

    result: uuid.UUID = run_on(settings, scenario)
    return result


def publish(run: Run, tenant_id: uuid.UUID, url: str) -> str:
    """A draft taken live at `url` by a target, as the publishers record it."""

    async def scenario(db: Database) -> str:
        async with db.unit_of_work() as session:
            draft = Draft(tenant_id=tenant_id, title="Compost guide", content="", status="approved")
            session.add(draft)
            await session.flush()
            await publication.mark_published(session, draft, url, PUBLISHED_AT)
            return str(draft.id)

    draft_id: str = run(scenario)
    settled(run, tenant_id)
    return draft_id


def plant_all(org: Org, run: Run, settings: Settings) -> dict[str, str]:
    # No audit after these scans: what an audit writes on the rows is tested with the audits
    # (tests/seo/audits/test_audits.py).
    org.ok("seo.updateSettings", {"audit": {"trigger": "manual"}}, role="admin")
    config = org.ok(
        "websiteScan.createConfig", {"name": "Shop", "startUrl": site_url()}, role="editor"
    )
    property_id = make_property(settings, org.tenant_id, SITE + "/")
    scan(org, run, scan_pages(), SCANNED_AT - timedelta(days=7), config["id"])
    # The newest scan no longer finds OLD.
    scan(org, run, scan_pages(with_old=False), SCANNED_AT, config["id"])
    plant(settings, org.tenant_id, property_id, [one_day(day) for day in days(FIRST, 56)])
    end_run(settings, org.tenant_id, "search_console", property_id=property_id)
    draft_id = publish(run, org.tenant_id, f"{COMPOST}#comments")
    end_run(settings, org.tenant_id, "url_inspection", inspections=[(COMPOST, "PASS")])
    return {"draft": draft_id, "config": config["id"], "property": str(property_id)}


@pytest.fixture
def planted(tenant: Org, run: Run, settings: Settings) -> tuple[Org, dict[str, str]]:
    if tenant.org not in _planted:
        _planted[tenant.org] = plant_all(tenant, run, settings)
    return tenant, _planted[tenant.org]


def listed(org: Org, **query: Any) -> dict[str, Any]:
    answer: dict[str, Any] = org.ok("seo.listPages", query, role="member")
    return answer


def by_url(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["url"]: row for row in answer["data"]}


def test_one_row_per_url_joins_every_source(planted: tuple[Org, dict[str, str]]) -> None:
    org, ids = planted
    answer = listed(org, sortBy="url", sortOrder="asc")
    rows = by_url(answer)
    assert list(rows) == [f"{SITE}/", COMPOST, OLD, f"{SITE}/gone", LANDING, f"{SITE}/private"]
    assert answer["total"] == 6 and answer["page"] == 1 and answer["limit"] == 50
    compost = rows[COMPOST]
    assert compost["title"] == "How to compost" and compost["status_code"] == 200
    assert compost["indexable"] is True and compost["in_latest_snapshot"] is True
    # 10 clicks a day over the last 28 days, from both of Search Console's URLs of it.
    assert (compost["clicks_28d"], compost["impressions_28d"]) == (280, 2800)
    assert compost["ctr_28d"] == 0.1 and compost["position_28d"] == 3.0
    assert compost["clicks_change_pct"] == 100.0
    assert compost["draft_id"] == ids["draft"]
    assert compost["published_at"].startswith("2026-02-10T09:00:00")
    assert compost["inspection_verdict"] == "PASS"
    assert compost["citability_score"] is not None and compost["citability_score"] >= 70
    assert compost["last_seen_at"].startswith("2026-02-20T12:00:00")
    assert compost["ai_citations_28d"] is None and compost["tracked_keywords"] == 0
    assert compost["open_issues"] is None and compost["performance_score"] is None
    # Found by the older scan only: kept, out of the newest one.
    assert rows[OLD]["in_latest_snapshot"] is False and rows[OLD]["clicks_28d"] == 28
    assert rows[OLD]["clicks_change_pct"] is None
    # Known to Search Console alone.
    landing = rows[LANDING]
    assert landing["title"] is None and landing["indexable"] is None
    assert landing["last_seen_at"] is None and landing["clicks_28d"] == 56
    assert rows[f"{SITE}/private"]["indexable"] is False
    assert rows[f"{SITE}/private"]["citability_score"] is None
    assert rows[f"{SITE}/gone"]["status_code"] == 404
    assert rows[f"{SITE}/gone"]["indexable"] is False


def test_sources_filters_and_orders(planted: tuple[Org, dict[str, str]]) -> None:
    org, _ = planted
    urls = lambda answer: [row["url"] for row in answer["data"]]  # noqa: E731
    assert urls(listed(org))[:3] == [COMPOST, LANDING, OLD]
    assert urls(listed(org, sortBy="clicks", sortOrder="asc"))[-3:] == [OLD, LANDING, COMPOST]
    assert urls(listed(org, source="search_console", sortBy="position", sortOrder="asc")) == [
        COMPOST,
        LANDING,
        OLD,
    ]
    assert urls(listed(org, source="published")) == [COMPOST]
    assert len(listed(org, source="snapshot")["data"]) == 5
    assert LANDING not in urls(listed(org, source="snapshot"))
    assert urls(listed(org, search="COMPOST")) == [COMPOST]
    assert urls(listed(org, search="garden")) == [f"{SITE}/"]
    # LIKE's wildcards are plain characters.
    assert listed(org, search="%")["total"] == 0 and listed(org, search="_")["total"] == 0
    assert set(urls(listed(org, indexable=False))) == {f"{SITE}/private", f"{SITE}/gone"}
    assert urls(listed(org, verdict="PASS")) == [COMPOST]
    assert listed(org, verdict="FAIL")["total"] == 0
    # No audit has run: no page has issues.
    assert listed(org, hasIssues=True)["total"] == 0
    assert listed(org, hasIssues=False)["total"] == 6
    assert listed(org, severity="error")["total"] == 0
    # Pages without the value come last, either way.
    assert urls(listed(org, sortBy="clicks_change"))[0] == COMPOST
    unscored = {LANDING, f"{SITE}/private", f"{SITE}/gone"}
    assert set(urls(listed(org, sortBy="citability", sortOrder="asc"))[-3:]) == unscored
    assert set(urls(listed(org, sortBy="citability"))[-3:]) == unscored
    paged = listed(org, sortBy="url", sortOrder="asc", page=2, limit=2)
    assert urls(paged) == [OLD, f"{SITE}/gone"] and paged["total"] == 6


@pytest.mark.parametrize(
    "query",
    [
        {"search": "x" * 256},
        {"search": "a\x00b"},
        {"source": "crawl"},
        {"sortBy": "title"},
        {"sortOrder": "up"},
        {"verdict": "pass"},
        {"severity": "critical"},
        {"limit": 101},
        {"page": 0},
    ],
)
def test_invalid_list_input_is_400(tenant: Org, query: dict[str, Any]) -> None:
    problem(tenant.request("seo.listPages", query, role="member"), 400, "BAD_REQUEST")


def test_a_page_in_360(planted: tuple[Org, dict[str, str]]) -> None:
    org, ids = planted
    page_id = by_url(listed(org, search="compost"))[COMPOST]["id"]
    seen = org.ok("seo.getPage", {"id": page_id}, role="member")
    assert seen["url"] == COMPOST and seen["draft_id"] == ids["draft"]
    assert [point["date"] for point in seen["series"]] == [
        (SPLIT + timedelta(days=offset)).isoformat() for offset in range(28)
    ]
    assert seen["series"][-1] == {
        "date": LAST.isoformat(),
        "clicks": 10,
        "impressions": 100,
        "position": 3.0,
    }
    assert seen["top_queries"] == [
        {
            "query": "how to compost",
            "clicks": 84,
            "impressions": 840,
            "ctr": 0.1,
            "position": 2.0,
        },
        {"query": "compost bin", "clicks": 28, "impressions": 280, "ctr": 0.1, "position": 4.0},
    ]
    inspection = seen["latest_inspection"]
    assert inspection["url"] == COMPOST and inspection["verdict"] == "PASS"
    assert inspection["coverage_state"] == "Submitted and indexed"
    assert seen["geo"]["url"] == COMPOST
    assert seen["geo"]["citability_score"] == seen["citability_score"]
    assert seen["geo"]["clicks_28d"] == 168  # the exact URL's clicks, as listGeoPages counts
    assert seen["issues"] == [] and seen["pagespeed"] == {"mobile": None, "desktop": None}
    assert seen["tracked_keywords"] == [] and seen["ai_citations"] == []
    assert seen["actions"] == []

    longer = org.ok("seo.getPage", {"id": page_id, "period": "90d"}, role="member")
    assert len(longer["series"]) == 56 and longer["series"][0]["clicks"] == 5
    assert longer["top_queries"][0]["clicks"] == 168
    assert (
        len(org.ok("seo.getPage", {"id": page_id, "period": "16m"}, role="member")["series"]) == 56
    )

    landing = by_url(listed(org, search="landing"))[LANDING]
    alone = org.ok("seo.getPage", {"id": landing["id"]}, role="member")
    assert alone["geo"] is None and alone["latest_inspection"] is None
    assert alone["top_queries"] == [] and len(alone["series"]) == 28
    problem(
        org.request("seo.getPage", {"id": page_id, "period": "1y"}, role="member"),
        400,
        "BAD_REQUEST",
    )


def test_another_organization_sees_none_of_it(
    planted: tuple[Org, dict[str, str]], other_tenant: Org
) -> None:
    org, _ = planted
    page_id = listed(org)["data"][0]["id"]
    assert listed(other_tenant)["total"] == 0
    problem(other_tenant.request("seo.getPage", {"id": page_id}, role="member"), 404, "NOT_FOUND")
    problem(org.request("seo.getPage", {"id": str(uuid.uuid4())}, role="member"), 404, "NOT_FOUND")


def test_needs_a_member(planted: tuple[Org, dict[str, str]]) -> None:
    org, _ = planted
    page_id = listed(org)["data"][0]["id"]
    problem(org.call("seo.listPages", {}), 401, "UNAUTHORIZED")
    problem(org.call("seo.getPage", {"id": page_id}), 401, "UNAUTHORIZED")


@pytest.mark.own_org
def test_the_first_read_builds_the_inventory_of_data_stored_before(
    tenant: Org, run: Run, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scan and Search Console data stored with no event heard: the first read builds the
    rows (two at a time, written while the scan's pages stream), and the next scan's event
    updates them."""
    monkeypatch.setattr(repository, "BATCH", 2)
    config = tenant.ok(
        "websiteScan.createConfig", {"name": "Shop", "startUrl": site_url()}, role="editor"
    )
    property_id = make_property(settings, tenant.tenant_id, SITE + "/")
    plant(settings, tenant.tenant_id, property_id, [one_day(day) for day in days(FIRST, 56)])

    async def scenario(db: Database) -> None:
        await seed_snapshot(
            db, tenant.tenant_id, uuid.UUID(config["id"]), scan_pages(), created_at=SCANNED_AT
        )

    run(scenario)
    rows = by_url(listed(tenant))
    assert len(rows) == 6
    assert rows[COMPOST]["clicks_28d"] == 280 and rows[COMPOST]["title"] == "How to compost"
    assert rows[OLD]["in_latest_snapshot"] is True
    scan(tenant, run, scan_pages(with_old=False), SCANNED_AT + timedelta(days=1), config["id"])
    assert by_url(listed(tenant))[OLD]["in_latest_snapshot"] is False


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        (
            "https://Example.COM/a?utm_source=x&utm_medium=email&b=2#top",
            "https://example.com/a?b=2",
        ),
        ("https://example.com/a?gclid=1&fbclid=2", "https://example.com/a"),
        ("HTTPS://example.com:443/a#section", "https://example.com/a"),
    ],
)
def test_urls_are_normalized_as_the_catalog_says(given: str, kept: str) -> None:
    assert normalize(given) == kept


@pytest.mark.own_org
def test_a_copy_taken_down_leaves_the_published_pages(tenant: Org, run: Run) -> None:
    """A page only our publication knows: listed as published, and gone once taken down."""
    url = f"{SITE}/news/launch"
    draft_id = publish(run, tenant.tenant_id, f"{url}?utm_campaign=launch")
    (row,) = listed(tenant, source="published")["data"]
    assert (row["url"], row["draft_id"]) == (url, draft_id)
    assert row["title"] is None and row["clicks_28d"] == 0
    emit(
        run,
        tenant.tenant_id,
        "draft.unpublished",
        resource_id=draft_id,
        payload={"draft_id": draft_id, "external_url": url},
    )
    assert listed(tenant, source="published")["total"] == 0
    assert listed(tenant)["total"] == 0
