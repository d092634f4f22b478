"""Content analytics over REST and RPC: sources connected (Plausible, GA4 through Google's OAuth
with PKCE, Umami, Search Console from SEO's facts), synced as durable work through each
provider's own protocol (the stand-ins), joined to our published drafts, and read back.

The acceptance: the same visits through GA4 and through Plausible give the same per-draft
totals; a 429 backs off, and the days still refused end the sync `partial`, named; a disconnect
keeps the figures unless purged; a source in error or never synced gives null, never 0."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import update

from contentplatform.analytics.content import durable
from contentplatform.analytics.models import AnalyticsSource
from contentplatform.config import Settings
from contentplatform.credits.models import CreditLedgerEntry
from contentplatform.kit.db import Database, utcnow
from contentplatform.seo.search_console.schemas import Figures
from tests.analytics.content.standin import (
    PLAUSIBLE_KEY,
    UMAMI_PASSWORD,
    UMAMI_USER,
    ContentStandIn,
)
from tests.analytics.content.support import (
    A_VIEWS,
    A_VISITORS,
    B_VIEWS,
    B_VISITORS,
    REDIRECT_URI,
    Content,
    publish,
    serve,
    today,
    wait_synced,
)
from tests.seo.search_console.support import Day, make_property, p, plant, q
from tests.support.database import run_on
from tests.support.google import GoogleStandIn
from tests.support.orgs import org_fixture
from tests.support.problems import problem

content = org_fixture(Content)
other = org_fixture(Content, second=True)


@pytest.fixture(autouse=True)
def _providers(content_providers: ContentStandIn) -> ContentStandIn:
    return content_providers


def period() -> dict[str, str]:
    return {
        "dateFrom": (today() - timedelta(days=6)).isoformat(),
        "dateTo": (today() - timedelta(days=1)).isoformat(),
    }


def totals(found: dict[str, Any]) -> tuple[Any, Any]:
    return found["views"], found["visitors"]


def set_status(settings: Settings, source_id: str, status: str) -> None:
    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(
                update(AnalyticsSource)
                .where(AnalyticsSource.id == uuid.UUID(source_id))
                .values(status=status)
            )

    run_on(settings, scenario)


def test_ga4_and_plausible_holding_the_same_visits_give_the_same_per_draft_totals(
    content: Content,
    content_providers: ContentStandIn,
    google: GoogleStandIn,
    settings: Settings,
) -> None:
    fixture = publish(content, settings)
    serve(content_providers, content.host, content.ga4_property, host=content.host)
    plausible = content.connect_plausible()
    ga4 = content.connect_ga4(google)
    assert plausible["status"] == "syncing" and ga4["status"] == "syncing"
    for source in (plausible, ga4):
        synced = wait_synced(content, settings, source["id"])
        assert (synced["status"], synced["sync_status"]) == ("connected", "succeeded")
        # Plausible is complete through yesterday; GA4 a day later (lag_days 1).
        lag = 1 + synced["lag_days"]
        assert synced["data_through"] == (today() - timedelta(days=lag)).isoformat()
        assert synced["missing_days"] == [] and synced["error"] is None
    # GA4's runReport was asked with its property quota; Plausible v2 with the page dimension.
    asked = content_providers.asked(content.ga4_property)
    assert all(body["returnPropertyQuota"] for body in asked)
    assert any(d["name"] == "pagePath" for d in asked[0]["dimensions"])
    assert content_providers.asked(content.host)[1]["dimensions"] == ["time:day", "event:page"]

    # GA4's property quota nearly spent (under 50 tokens): it stops asking, not retrying; the
    # days it did not ask are missing, for the next sync.
    content_providers.tokens_left = 55
    try:
        content.ok("analytics.syncSource", {"id": ga4["id"], "days": 10}, role="editor")
        short = wait_synced(content, settings, ga4["id"])
    finally:
        content_providers.tokens_left = 20000
    assert short["sync_status"] == "partial" and len(short["missing_days"]) == 10
    assert short["data_through"] == (today() - timedelta(days=2)).isoformat()  # kept

    a = content.ok("analytics.draftPerformance", {"id": fixture.a, **period()}, role="member")
    by = {row["provider"]: row["totals"] for row in a["by_source"]}
    # A is live at two URLs (one with a tracking parameter, its host in capitals): both count.
    assert totals(by["plausible"]) == totals(by["ga4"]) == (A_VIEWS, A_VISITORS)
    assert by["ga4"]["clicks"] is None  # neither reports search figures
    assert totals(a["totals"]) == (A_VIEWS, A_VISITORS)
    assert {(row["url"], row["publisher_connection_id"]) for row in a["published"]} == {
        (f"https://{content.host}/a-post", fixture.blog),
        (f"https://{content.host.upper()}/mirror/a-post?utm_source=feed", fixture.mirror),
    }
    assert [point["reason"] for point in a["seo_score_history"]] == ["generated", "optimized"]
    for source in (plausible, ga4):
        one = content.ok(
            "analytics.contentOverview",
            {**period(), "source": source["id"], "compare": "none"},
            role="member",
        )["metrics"]
        # /about is not ours: it is kept apart, out of every content figure.
        assert one["views"]["value"] == A_VIEWS + B_VIEWS
        assert one["visitors"]["value"] == A_VISITORS + B_VISITORS
        assert one["clicks"]["value"] is None and one["published_count"]["value"] == 0
        top = content.ok(
            "analytics.topContent", {**period(), "source": source["id"]}, role="member"
        )
        assert [(row["draft_id"], row["value"]) for row in top["data"]] == [
            (fixture.a, A_VIEWS),
            (fixture.b, B_VIEWS),
        ]


def test_the_reads_group_by_channel_target_country_and_day(
    content: Content, content_providers: ContentStandIn, settings: Settings
) -> None:
    fixture = publish(content, settings)
    serve(content_providers, content.host, host=content.host)
    source = content.connect_plausible()
    wait_synced(content, settings, source["id"])

    def grouped(by: str, **more: Any) -> dict[Any, Any]:
        found = content.ok(
            "analytics.contentBreakdown",
            {**period(), "groupBy": by, "metrics": "views,visitors", **more},
            role="member",
        )
        return {row["group"]["key"]: row["values"]["views"] for row in found["data"]}

    # AI assistants are a channel of their own: chatgpt.com and perplexity.ai.
    assert grouped("channel") == {"search": 20, "ai_assistant": 6, "direct": 5}
    assert grouped("country") == {"GB": 20, "US": 9, "DE": 2}
    assert grouped("device") == {"desktop": 25, "mobile": 6}
    # Each target counts the views of the URL it published at.
    assert grouped("publisher_connection") == {fixture.blog: 27, fixture.mirror: 4}
    assert grouped("channel", publisherConnectionId=fixture.mirror) == {"ai_assistant": 4}
    assert grouped("source") == {source["id"]: A_VIEWS + B_VIEWS}
    page = content.ok(
        "analytics.contentBreakdown",
        {**period(), "groupBy": "channel", "sortOrder": "asc", "limit": 2},
        role="member",
    )
    assert [row["group"]["key"] for row in page["data"]] == ["direct", "ai_assistant"]
    assert page["total"] == 3

    series = content.ok(
        "analytics.contentTimeseries",
        {**period(), "metrics": "views,clicks,seo_score_avg"},
        role="member",
    )
    values = {point["start"][:10]: point["values"] for point in series["data"]}
    d1, d2 = ((today() - timedelta(days=n)).isoformat() for n in (3, 2))
    assert values[d1]["views"] == 21 and values[d2]["views"] == 10
    assert values[(today() - timedelta(days=6)).isoformat()]["views"] == 0
    assert all(v["clicks"] is None for v in values.values())  # no source reports clicks
    assert series["data_through"] == (today() - timedelta(days=1)).isoformat()
    one = content.ok(
        "analytics.contentTimeseries",
        {**period(), "metrics": "views", "draftId": fixture.b},
        role="member",
    )
    assert sum(point["values"]["views"] for point in one["data"]) == B_VIEWS

    weekly = content.ok(
        "analytics.seoScoreTrend",
        {"dateFrom": (today() - timedelta(days=6)).isoformat(), "dateTo": today().isoformat()},
        role="member",
    )
    assert sum(bucket["count"] for bucket in weekly["data"]) == 4
    assert {r["range"]: r["count"] for r in weekly["distribution"]} == {
        "0-49": 0,
        "50-69": 2,
        "70-84": 1,
        "85-100": 1,
    }
    bottom = content.ok(
        "analytics.topContent",
        {**period(), "direction": "bottom", "minDaysPublished": 30},
        role="member",
    )
    assert bottom["data"] == []  # both are younger than 30 days
    scored = content.ok("analytics.topContent", {**period(), "metric": "seo_score_avg"})
    assert [row["value"] for row in scored["data"]] == [72, 55]

    # Cost to outcome: the credits A's generation was debited beside what A earned.
    async def debit(db: Database) -> None:
        async with db.unit_of_work() as session:
            session.add(
                CreditLedgerEntry(
                    tenant_id=content.tenant_id,
                    entry_type="debit",
                    amount=-6,
                    balance_after=0,
                    kind="generation.article",
                    resource_type="draft",
                    resource_id=fixture.a,
                    description="Article generation",
                )
            )

    run_on(settings, debit)
    a = content.ok("analytics.draftPerformance", {"id": fixture.a, **period()}, role="member")
    assert a["cost"] == {
        "credits_spent": 6,
        "views_per_credit": round(A_VIEWS / 6, 2),
        "clicks_per_credit": None,
    }
    top = content.ok("analytics.topContent", period(), role="member")
    assert [row["credits_spent"] for row in top["data"]] == [6, 0]


def test_a_429_backs_off_and_the_days_still_refused_end_the_sync_partial(
    content: Content, content_providers: ContentStandIn, settings: Settings
) -> None:
    publish(content, settings)
    serve(content_providers, content.host, host=content.host)
    source = content.connect_plausible()
    wait_synced(content, settings, source["id"])
    before = len(content_providers.asked(content.host))
    # Twice refused, then answered: backed off (Retry-After: 0) and asked again.
    content_providers.throttle_next(content.host, 2)
    started = content.ok("analytics.syncSource", {"id": source["id"], "days": 3}, role="editor")
    assert started["status"] == "syncing"
    assert started["from"] == (today() - timedelta(days=3)).isoformat()
    assert started["to"] == (today() - timedelta(days=1)).isoformat()
    synced = wait_synced(content, settings, source["id"])
    assert (synced["sync_status"], synced["missing_days"]) == ("succeeded", [])
    assert len(content_providers.asked(content.host)) == before + 2 + 4
    # Always refused for the last three days: those are named, the others kept.
    content_providers.throttle(content.host, today() - timedelta(days=2))
    content.ok("analytics.syncSource", {"id": source["id"], "days": 10}, role="editor")
    synced = wait_synced(content, settings, source["id"])
    missing = [(today() - timedelta(days=n)).isoformat() for n in (3, 2, 1)]
    assert (synced["status"], synced["sync_status"]) == ("connected", "partial")
    assert synced["missing_days"] == missing
    # The days before the first missing one are complete; the first sync had reached further.
    assert synced["data_through"] == (today() - timedelta(days=1)).isoformat()
    # A key the provider no longer takes: the sync fails and the source is in error, its
    # figures null (never 0) until it works again.
    content_providers.revoke(content.host)
    content.ok("analytics.syncSource", {"id": source["id"], "days": 2}, role="editor")
    failed = wait_synced(content, settings, source["id"])
    assert (failed["status"], failed["sync_status"]) == ("error", "failed")
    assert failed["error"]["code"] == "refused" and "401" in failed["error"]["message"]
    overview = content.ok("analytics.contentOverview", period(), role="member")
    assert overview["metrics"]["views"]["value"] is None and overview["data_through"] is None


def test_a_disconnect_keeps_the_history_unless_purged_and_an_unusable_source_is_null(
    content: Content, content_providers: ContentStandIn, settings: Settings
) -> None:
    fixture = publish(content, settings)
    nothing = content.ok("analytics.contentOverview", period(), role="member")
    # No source: null, never 0.
    assert nothing["metrics"]["views"]["value"] is None and nothing["data_through"] is None
    serve(content_providers, content.host, host=content.host)
    source = content.connect_plausible()
    wait_synced(content, settings, source["id"])
    problem(
        content.request("analytics.disconnectSource", {"id": source["id"]}, role="editor"),
        403,
        "FORBIDDEN",
    )
    assert content.ok("analytics.disconnectSource", {"id": source["id"]}) == {"success": True}
    listed = content.source(source["id"])
    assert listed["status"] == "disconnected"
    kept = content.ok("analytics.contentOverview", period(), role="member")["metrics"]
    assert kept["views"]["value"] == A_VIEWS + B_VIEWS
    problem(
        content.request("analytics.syncSource", {"id": source["id"]}, role="editor"),
        409,
        "CONFLICT",
    )
    # Connected again: a new source; the old one purged, its figures gone.
    again = content.connect_plausible()
    assert again["id"] != source["id"]
    wait_synced(content, settings, again["id"])
    # The property's days are read once: from the new source, not from both.
    twice = content.ok("analytics.contentOverview", period(), role="member")["metrics"]
    assert twice["views"]["value"] == A_VIEWS + B_VIEWS
    old = content.ok(
        "analytics.contentOverview", {**period(), "source": source["id"]}, role="member"
    )
    assert old["metrics"]["views"]["value"] == A_VIEWS + B_VIEWS
    content.ok("analytics.disconnectSource", {"id": source["id"], "purgeData": True})
    assert content.source(source["id"])["data_through"] is None
    # A source in error reports nothing: null.
    set_status(settings, again["id"], "error")
    errored = content.ok("analytics.contentOverview", period(), role="member")
    assert errored["metrics"]["views"]["value"] is None
    performance = content.ok("analytics.draftPerformance", {"id": fixture.a, **period()})
    assert performance["totals"]["views"] is None


def test_umami_and_search_console_sources(
    content: Content, content_providers: ContentStandIn, settings: Settings
) -> None:
    fixture = publish(content, settings)
    website = f"umami-{content.org[-8:]}"
    serve(content_providers, website, host=content.host)
    umami = content.ok(
        "analytics.connectSource",
        {
            "provider": "umami",
            "property": website,
            "siteUrl": f"https://{content.host}",
            "credentials": {
                "baseUrl": content_providers.url,
                "username": UMAMI_USER,
                "password": UMAMI_PASSWORD,
            },
        },
    )["source"]
    synced = wait_synced(content, settings, umami["id"])
    assert synced["sync_status"] == "succeeded" and synced["metrics"] == ["views"]
    a = content.ok("analytics.draftPerformance", {"id": fixture.a, **period()})
    assert a["totals"]["views"] == A_VIEWS and a["totals"]["visitors"] is None

    site = f"https://{content.host}/"
    prop = make_property(settings, content.tenant_id, site)
    d1 = today() - timedelta(days=5)
    plant(
        settings,
        content.tenant_id,
        prop,
        [
            Day(
                d1,
                Figures(30, 300, 4.0),
                pages=[
                    p(f"https://{content.host}/a-post", 20, 200, 3.0),
                    p(f"https://{content.host}/about", 10, 100, 6.0),
                ],
                queries=[q("alpha guide", f"https://{content.host}/a-post", 15, 150, 2.0)],
            )
        ],
    )
    problem(
        content.request(
            "analytics.connectSource", {"provider": "search_console", "property": "https://x.test/"}
        ),
        400,
        "BAD_REQUEST",
    )
    gsc = content.ok("analytics.connectSource", {"provider": "search_console", "property": site})[
        "source"
    ]
    synced = wait_synced(content, settings, gsc["id"])
    assert synced["data_through"] == d1.isoformat()
    a = content.ok("analytics.draftPerformance", {"id": fixture.a, **period()})
    assert (a["totals"]["clicks"], a["totals"]["impressions"], a["totals"]["ctr"]) == (20, 200, 0.1)
    assert a["totals"]["avg_position"] == 3.0
    assert a["top_queries"] == [
        {"query": "alpha guide", "clicks": 15, "impressions": 150, "position": 2.0}
    ]
    # Traffic still from Umami, search from Search Console.
    assert a["totals"]["views"] == A_VIEWS


def test_connect_refusals_and_roles(
    content: Content, content_providers: ContentStandIn, google: GoogleStandIn
) -> None:
    serve(content_providers, content.host, host=content.host)
    problem(
        content.request(
            "analytics.connectSource",
            {
                "provider": "plausible",
                "property": content.host,
                "credentials": {"apiKey": "nope-nope"},
            },
        ),
        400,
        "BAD_REQUEST",
    )
    problem(
        content.request(
            "analytics.connectSource", {"provider": "plausible", "property": content.host}
        ),
        400,
        "BAD_REQUEST",
    )
    problem(
        content.request("analytics.connectSource", {"provider": "webhook", "property": "x"}),
        400,
        "BAD_REQUEST",
    )
    body = {
        "provider": "plausible",
        "property": content.host,
        "credentials": {"apiKey": PLAUSIBLE_KEY},
    }
    problem(content.request("analytics.connectSource", body, role="editor"), 403, "FORBIDDEN")
    source = content.connect_plausible()
    problem(content.request("analytics.connectSource", body), 409, "CONFLICT")
    # GA4: a redirect URI not allowed; a state not issued.
    problem(
        content.request(
            "analytics.connectSource",
            {"provider": "ga4", "property": "123", "redirectUri": "https://evil.test/cb"},
        ),
        400,
        "BAD_REQUEST",
    )
    problem(
        content.request(
            "analytics.connectSource",
            {"provider": "ga4", "property": "123", "credentials": {"code": "c", "state": "s" * 20}},
        ),
        400,
        "BAD_REQUEST",
    )
    # A code Google refuses spends the state: the right code after it is refused too.
    started = content.ok(
        "analytics.connectSource",
        {"provider": "ga4", "property": content.ga4_property, "redirectUri": REDIRECT_URI},
    )
    url = started["authorize_url"]
    state = parse_qs(urlsplit(url).query)["state"][0]
    assert "analytics.readonly" in parse_qs(urlsplit(url).query)["scope"][0]
    body = {"provider": "ga4", "property": content.ga4_property}
    refused = problem(
        content.request(
            "analytics.connectSource", {**body, "credentials": {"code": "4/bad", "state": state}}
        ),
        400,
        "BAD_REQUEST",
    )
    assert "Google refused" in refused["detail"]
    code = google.authorize(url)
    problem(
        content.request(
            "analytics.connectSource", {**body, "credentials": {"code": code, "state": state}}
        ),
        400,
        "BAD_REQUEST",
    )
    pending = [s for s in content.sources() if s["provider"] == "ga4"]
    assert [s["status"] for s in pending] == ["pending_auth"]
    assert [s["id"] for s in content.sources()] == [source["id"], pending[0]["id"]]
    problem(
        content.request("analytics.syncSource", {"id": source["id"]}, role="member"),
        403,
        "FORBIDDEN",
    )
    problem(
        content.request("analytics.syncSource", {"id": source["id"], "days": 481}, role="editor"),
        400,
        "BAD_REQUEST",
    )


def test_another_organization_sees_none_of_it(
    content: Content, other: Content, content_providers: ContentStandIn, settings: Settings
) -> None:
    fixture = publish(content, settings)
    serve(content_providers, content.host, host=content.host)
    source = content.connect_plausible()
    wait_synced(content, settings, source["id"])
    assert other.sources() == []
    for operation, data in (
        ("analytics.disconnectSource", {"id": source["id"]}),
        ("analytics.syncSource", {"id": source["id"]}),
        ("analytics.draftPerformance", {"id": fixture.a}),
        ("analytics.contentOverview", {"source": source["id"]}),
        ("analytics.contentTimeseries", {"source": source["id"]}),
        ("analytics.contentBreakdown", {"source": source["id"], "groupBy": "channel"}),
        ("analytics.topContent", {"source": source["id"]}),
        ("analytics.seoScoreTrend", {"source": source["id"]}),
        ("analytics.contentOverview", {"publisherConnectionId": fixture.blog}),
    ):
        problem(other.request(operation, data), 404, "NOT_FOUND")
    mine = other.ok("analytics.contentOverview", period(), role="member")
    assert mine["metrics"]["views"]["value"] is None
    assert other.ok("analytics.topContent", period())["data"] == []


def test_the_daily_sync_asks_the_last_days_and_moves_to_the_next_local_hour(
    content: Content, content_providers: ContentStandIn, settings: Settings
) -> None:
    serve(content_providers, content.host, host=content.host)
    source = content.connect_plausible()
    wait_synced(content, settings, source["id"])

    async def due(db: Database) -> dict[str, int]:
        async with db.unit_of_work() as session:
            await session.execute(
                update(AnalyticsSource)
                .where(AnalyticsSource.id == uuid.UUID(source["id"]))
                .values(next_sync_at=utcnow() - timedelta(minutes=1))
            )
        return await durable.tick(db, utcnow())

    assert run_on(settings, due)["started"] >= 1
    synced = wait_synced(content, settings, source["id"])
    assert synced["sync_status"] == "succeeded"
    assert (synced["sync_from"], synced["sync_to"]) == (
        (today() - timedelta(days=3)).isoformat(),
        (today() - timedelta(days=1)).isoformat(),
    )

    async def next_at(db: Database) -> Any:
        async with db.unit_of_work() as session:
            row = await session.get(AnalyticsSource, uuid.UUID(source["id"]))
            assert row is not None
            return row.next_sync_at

    moment = run_on(settings, next_at)
    # 06:00 of the organization's zone (UTC here), within the next day.
    assert (moment.hour, moment.minute) == (6, 0)
    assert timedelta(0) < moment - utcnow() <= timedelta(days=1)
